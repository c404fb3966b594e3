# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The key link facts of each audited host, for the reports (report.json's ``links``, the Prometheus metrics): per
GPU and NIC its PCIe link now and at its best, per interface its speed, MTU and state. Facts come from the nodes: a
value of the wrong type or out of bounds is left out, never passed on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

MAX_NAME = 64  # a device or interface name longer than this is cut (sysfs names are at most 15; GPU names ~40)
LINK_FIELDS = ("generation", "width", "gbytes_per_s")
LINK_BOUNDS = {"generation": (1, 16), "width": (1, 64), "gbytes_per_s": (0, 10000)}
SPEED_MBPS_MAX = 100000000  # 100 Tbit/s
MTU_MAX = 1 << 20


def number_in(value, low, high):
    """``value`` when it is a finite int or float (not a bool) within ``low``..``high``, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if low <= value <= high else None


def utf8(text):
    """``text`` that encodes as UTF-8: a lone surrogate (a byte of a name that was not UTF-8, as a node's listing
    carries it) becomes its escape ``\\udcff``."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def _text(value):
    """A name for the reports: at most MAX_NAME characters, valid UTF-8 (utf8); None when not a non-empty string."""
    if not isinstance(value, str) or not value:
        return None
    return utf8(value[:MAX_NAME])


def _pcie(link):
    """{"current": {generation, width, gbytes_per_s}, "max": {...}} of a link fact, the fields that are numbers; None
    without any."""
    if not isinstance(link, dict):
        return None
    found = {}
    for side in ("current", "max"):
        part = link.get(side)
        if not isinstance(part, dict):
            continue
        values = dict((f, number_in(part.get(f), *LINK_BOUNDS[f])) for f in LINK_FIELDS)
        if any(v is not None for v in values.values()):
            found[side] = values
    return found or None


def link_rows(facts_by_host):
    """One row per GPU (by its kind: gpu, apu ...) and per interface (not loopback) of each host, sorted by host, then
    GPUs before interfaces, then name."""
    rows = []
    for host in sorted(facts_by_host):
        facts = facts_by_host[host] if isinstance(facts_by_host[host], dict) else {}
        gpus, nics = [], []
        for gpu in facts.get("gpus") if isinstance(facts.get("gpus"), list) else []:
            if not isinstance(gpu, dict):
                continue
            index = number_in(gpu.get("index"), 0, 4096)
            address = _text(gpu.get("address"))
            name = ("gpu%d" % index) if isinstance(index, int) else address
            if not name:
                continue
            gpus.append({"host": host, "class": "gpu", "device": name, "kind": _text(gpu.get("kind")) or "gpu",
                         "address": address, "model": _text(gpu.get("name")), "pcie": _pcie(gpu.get("link"))})
        for nic in facts.get("nics") if isinstance(facts.get("nics"), list) else []:
            if not isinstance(nic, dict) or nic.get("kind") == "loopback" or not _text(nic.get("name")):
                continue
            operstate = _text(nic.get("operstate"))
            nics.append({"host": host, "class": "nic", "device": _text(nic.get("name")), "kind": "nic",
                         "interface_kind": _text(nic.get("kind")), "address": _text(nic.get("address")),
                         "speed_mbps": number_in(nic.get("speed_mbps"), 1, SPEED_MBPS_MAX),
                         "mtu": number_in(nic.get("mtu"), 1, MTU_MAX), "operstate": operstate,
                         "pcie": _pcie(nic.get("pci_link"))})
        seen = set()
        for row in sorted(gpus, key=lambda r: (r["device"], r["address"] or "")) + \
                sorted(nics, key=lambda r: (r["device"], r["address"] or "")):
            # a GPU and an interface never hide each other; two facts of one name and address: the first stands
            key = (row["class"], row["device"], row["address"])
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return rows
