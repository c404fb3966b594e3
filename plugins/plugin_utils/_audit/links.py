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

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_LOOPBACK
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    link_sides, nic_link, path_bottleneck, path_hops,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite

MAX_NAME = 64  # a device or interface name longer than this is cut (sysfs names are at most 15; GPU names ~40)
SPEED_MBPS_MAX = 100000000  # 100 Tbit/s
MTU_MAX = 1 << 20


def utf8(text):
    """``text`` that encodes as UTF-8: a lone surrogate (a byte of a name that was not UTF-8, as a node's listing
    carries it) becomes its escape ``\\udcff``."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def text_or_none(value):
    """A name for the reports: at most MAX_NAME characters, valid UTF-8 (utf8); None when not a non-empty string."""
    if not isinstance(value, str) or not value:
        return None
    return utf8(value[:MAX_NAME])


def pcie_fields(link):
    """A link fact as a report row carries it (pcie.link_sides): the sides with any field known; None without any."""
    found = dict((side, values) for side, values in link_sides(link).items() if any(v is not None for v in values.values()))
    return found or None


def path_fields(address, by_address):
    """A device's way to the CPU as a report row carries it (pcie.path_hops): the hop that carries least now
    (``bottleneck``, its ``kind`` and ``gbytes_per_s``) and the hops running below what both their ends allow
    (``below``); None where the facts have no PCI device at that address."""
    hops = path_hops(address, by_address) if isinstance(address, str) and address in by_address else []
    if not hops:
        return None
    narrowest = path_bottleneck(hops)
    return {"bottleneck": text_or_none(narrowest["address"]) if narrowest else None,
            "bottleneck_kind": text_or_none(narrowest["kind"]) if narrowest else None,
            "gbytes_per_s": narrowest["gbytes_per_s"] if narrowest else None,
            "hops": len(hops), "below": [text_or_none(h["address"]) for h in hops if h["verdict"]["verdict"] == "below"]}


def link_rows(facts_by_host):
    """One row per GPU (by its kind: gpu, apu ...) and per interface (not loopback) of each host, sorted by host, then
    GPUs before interfaces, then name."""
    rows = []
    for host in sorted(facts_by_host):
        facts = facts_by_host[host] if isinstance(facts_by_host[host], dict) else {}
        gpus, nics = [], []
        by_address = dict((d["address"], d) for d in (facts.get("pci") if isinstance(facts.get("pci"), list) else [])
                          if isinstance(d, dict) and isinstance(d.get("address"), str))
        for gpu in facts.get("gpus") if isinstance(facts.get("gpus"), list) else []:
            if not isinstance(gpu, dict):
                continue
            index = finite(gpu.get("index"), 0, 4096)
            address = text_or_none(gpu.get("address"))
            name = ("gpu%d" % index) if isinstance(index, int) else address
            if not name:
                continue
            gpus.append({"host": host, "class": "gpu", "device": name, "kind": text_or_none(gpu.get("kind")) or "gpu",
                         "address": address, "model": text_or_none(gpu.get("name")), "pcie": pcie_fields(gpu.get("link")),
                         "path": path_fields(address, by_address)})
        for nic in facts.get("nics") if isinstance(facts.get("nics"), list) else []:
            if not isinstance(nic, dict) or nic.get("kind") == NETDEV_LOOPBACK or not text_or_none(nic.get("name")):
                continue
            operstate = text_or_none(nic.get("operstate"))
            nics.append({"host": host, "class": "nic", "device": text_or_none(nic.get("name")), "kind": "nic",
                         "interface_kind": text_or_none(nic.get("kind")), "address": text_or_none(nic.get("address")),
                         "speed_mbps": finite(nic.get("speed_mbps"), 1, SPEED_MBPS_MAX),
                         "mtu": finite(nic.get("mtu"), 1, MTU_MAX), "operstate": operstate,
                         "pcie": pcie_fields(nic_link(nic)), "path": path_fields(text_or_none(nic.get("address")), by_address)})
        seen = set()
        for row in sorted(gpus, key=lambda r: (r["device"], r["address"] or "")) + \
                sorted(nics, key=lambda r: (r["device"], r["address"] or "")):
            # a GPU and an interface never hide each other; two facts of one name and address: the first stands
            key = (row["class"], row["device"], row["address"])
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return rows
