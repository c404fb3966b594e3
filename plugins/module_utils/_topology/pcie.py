# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""PCIe: link speeds, widths and generations, usable bandwidth, PCI addresses, the path types (PIX..SYS) and their
ranks, and the one judgement of a GPU's link."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import ACCELERATOR_KINDS, INTERNAL_KINDS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite, is_hex


def device_links(dev):
    current = link_dict(dev.current_gts, dev.current_width)
    if current["gbytes_per_s"] is None and dev.current_gbytes_hint is not None:
        # hwloc XML records only the usable bandwidth of the current link.
        current["gbytes_per_s"] = round(dev.current_gbytes_hint, 3)
    return {"current": current, "max": link_dict(dev.max_gts, dev.max_width)}


PATH_TYPES = ("PIX", "PXB", "PHB", "NODE", "SYS")
# "Near": a GPU and a NIC below one PCIe switch (or a tree of switches), not through a host bridge: where GPUDirect RDMA
# pays (NCCL's default NCCL_NET_GDR_LEVEL is PXB). The one definition: rules, NCCL settings and reports import it.
NEAR = PATH_TYPES[:2]


def path_rank(path_type):
    return PATH_TYPES.index(path_type) if path_type in PATH_TYPES else len(PATH_TYPES)


def is_near(path_type):
    """Whether a GPU and a NIC this far apart are near (NEAR)."""
    return path_type in NEAR


def gpu_link_values(link, nvml):
    """A GPU's current and maximum link width and generation, and its performance state: NVML's word where it has
    one (it sees the link as the driver trained it), else the PCIe link's. ``link``: the facts' ``link`` of the GPU
    ({"current": {...}, "max": {...}}), ``nvml``: its ``nvml`` facts or None."""
    nvml = nvml or {}
    current, maximum = (link or {}).get("current") or {}, (link or {}).get("max") or {}
    return {
        "current_width": nvml.get("current_width") or current.get("width"),
        "max_width": nvml.get("max_width") or maximum.get("width"),
        "current_generation": nvml.get("current_generation") or current.get("generation"),
        "max_generation": nvml.get("max_generation") or maximum.get("generation"),
        "performance_state": nvml.get("performance_state"),
    }


def gpu_link_state(values):
    """Judge a GPU's link (``values`` from gpu_link_values): ok, degraded, idle (cannot judge), or unknown.

    GPUs drop to Gen1 when idle to save power, so a lower generation is only a fault when
    NVML says the GPU is busy (performance state P0). Width does not drop at idle.
    """
    cur_gen, max_gen = values["current_generation"], values["max_generation"]
    cur_w, max_w = values["current_width"], values["max_width"]
    if cur_w is not None and max_w is not None and cur_w < max_w:
        return "degraded", "link width x%d below its maximum x%d" % (cur_w, max_w)
    if cur_gen is None or max_gen is None or cur_w is None or max_w is None:
        return "unknown", "link generation or width not reported"
    if cur_gen < max_gen:
        pstate = values["performance_state"]
        if pstate == 0:
            return "degraded", "Gen%d below its maximum Gen%d while busy (P0)" % (cur_gen, max_gen)
        if pstate is not None:
            return "idle", "Gen%d below its maximum Gen%d at P%d: power saving, cannot judge at idle" % (
                cur_gen, max_gen, pstate)
        return "idle", "Gen%d below its maximum Gen%d; without NVML the GPU may be idle, cannot judge" % (
            cur_gen, max_gen)
    return "ok", None


# Kinds of device that lower their link *generation* to save power when idle and raise it under load (GPUs and other
# accelerators; NVIDIA: "downgrading the PCIe link when not in use is an important integral part of the GPU's power
# management"): a lower generation there is "idle, cannot judge"; width does not drop at idle. NICs, HCAs, drives
# and bridges keep the link they trained to, so below its best is a fault.
LOWERS_GENERATION_AT_IDLE = ACCELERATOR_KINDS
LINK_VERDICTS = ("below", "capped", "idle", "ok", "unknown")
_GPU_STATES = {"degraded": "below", "idle": "idle", "ok": "ok", "unknown": "unknown"}


# The reading of a link fact ({"current": {generation, width, gbytes_per_s}, "max": {...}}, the same keys for every
# kind of device): the plausible range of each field; anything else (text, a bool, NaN, Gen 40) is not known.
LINK_BOUNDS = {"generation": (1, 16), "width": (1, 64), "gbytes_per_s": (0, 10000)}


def _field(name, value):
    kind = type(value)
    if kind is int:  # the usual generation or width, quickly: never a bool
        low, high = LINK_BOUNDS[name]
        return value if low <= value <= high else None
    if kind is float:  # the usual gbytes_per_s, quickly: NaN and the infinities fail the bounds as finite() would
        low, high = LINK_BOUNDS[name]
        return value if name == "gbytes_per_s" and low <= value <= high else None
    value = finite(value, *LINK_BOUNDS[name])
    if name != "gbytes_per_s" and not isinstance(value, int):
        return None  # a generation or a width is a whole number
    return value


def link_sides(link):
    """The one reading of a link fact: {"current": {generation, width, gbytes_per_s}, "max": {...}}, each field a
    number in its range or None (a side that is missing or not an object has all None). Every consumer (the
    verdict, the report rows, the tree) reads a link through this."""
    link = link if isinstance(link, dict) else {}
    sides = {}
    for side in ("current", "max"):  # written out: the audit reads hundreds of links per 8-GPU node
        part = link.get(side)
        part = part if isinstance(part, dict) else {}
        sides[side] = {"generation": _field("generation", part.get("generation")),
                       "width": _field("width", part.get("width")),
                       "gbytes_per_s": _field("gbytes_per_s", part.get("gbytes_per_s"))}
    return sides


def nic_link(nic):
    """An interface's PCIe link fact: ``link`` (the same keys as a GPU's and a PCI device's), else the deprecated
    ``pci_link`` that facts gathered by an earlier version carry (facts.json captures, fact caches)."""
    if not isinstance(nic, dict):
        return None
    link = nic.get("link")
    return link if isinstance(link, dict) else nic.get("pci_link")


def link_verdict(kind, link, slot_max=None, gpu_state=None):
    """The one verdict of a device's own PCIe link, which the rules, the reports' tree and the metrics import.

    ``link``: {"current": {generation, width}, "max": {...}} (the facts' link, the same keys for every kind);
    ``slot_max``: the maximum of the port above it (its slot), which caps what the link can train to; ``gpu_state``:
    a GPU's link_state from the gpus facts (gpu_link_state, judged with NVML's view), which decides for that GPU.
    Returns {"verdict", "generation_low", "width_low", "reach": (generation, width) the card and slot allow}:
    below (under what card and slot allow: width always, generation unless the kind lowers it at idle), idle (a
    lower generation on a kind that lowers it at idle: cannot judge), capped (at what the slot allows, below the
    card's own best), ok, unknown (current and best not both known)."""
    return _verdict(kind, link_sides(link), link_sides({"max": slot_max})["max"], gpu_state)


def _verdict(kind, sides, slot, gpu_state=None):
    """link_verdict of a link and its slot's maximum already read (link_sides)."""
    cur_gen, cur_width = sides["current"]["generation"], sides["current"]["width"]
    max_gen, max_width = sides["max"]["generation"], sides["max"]["width"]
    slot_gen, slot_width = slot["generation"], slot["width"]
    reach_gen = min(max_gen, slot_gen) if max_gen and slot_gen else max_gen
    reach_width = min(max_width, slot_width) if max_width and slot_width else max_width
    result = {"verdict": "unknown", "generation_low": bool(cur_gen and reach_gen and cur_gen < reach_gen),
              "width_low": bool(cur_width and reach_width and cur_width < reach_width),
              "reach": (reach_gen, reach_width)}
    if gpu_state is not None:
        result["verdict"] = _GPU_STATES.get(gpu_state, "unknown")
        return result
    if not ((cur_gen and max_gen) or (cur_width and max_width)):
        return result
    capped = bool((max_gen and reach_gen and reach_gen < max_gen) or (max_width and reach_width and
                                                                      reach_width < max_width))
    if result["width_low"] or (result["generation_low"] and kind not in LOWERS_GENERATION_AT_IDLE):
        result["verdict"] = "below"
    elif result["generation_low"]:
        result["verdict"] = "idle"
    elif capped:
        result["verdict"] = "capped"
    else:
        result["verdict"] = "ok"
    return result


# Transfer rate (GT/s per lane) and line-code efficiency per generation.
# Gen1/2 use 8b/10b, Gen3-5 use 128b/130b. Gen6 and later run in FLIT mode with
# 1b/1b encoding; of each 256-byte flit, 236 bytes carry TLPs and 6 bytes DLLPs,
# the rest is CRC and FEC, so 242/256 of the raw rate is usable.
GENERATIONS = {
    1: (2.5, 8.0 / 10.0),
    2: (5.0, 8.0 / 10.0),
    3: (8.0, 128.0 / 130.0),
    4: (16.0, 128.0 / 130.0),
    5: (32.0, 128.0 / 130.0),
    6: (64.0, 242.0 / 256.0),
    7: (128.0, 242.0 / 256.0),
}
_GEN_BY_RATE = dict((rate, gen) for gen, (rate, _eff) in GENERATIONS.items())
VALID_WIDTHS = (1, 2, 4, 8, 12, 16, 32)
_SPEED_RE = re.compile(r"^\s*([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*GT/s(?:\s+PCIe)?\s*$")


# No rate above this is a PCIe rate (Gen7 is 128 GT/s, Gen8 is planned at 256): larger is junk.
MAX_GTS = 1024


def generation_from_gts(gts):
    """Map a per-lane transfer rate in GT/s to a PCIe generation, or None."""
    if gts is None:
        return None
    return _GEN_BY_RATE.get(round(gts, 1))


def gts_from_generation(gen):
    entry = GENERATIONS.get(gen)
    return entry[0] if entry else None


def parse_link_speed(text):
    """Parse a sysfs ``*_link_speed`` value.

    Both kernel spellings are accepted: ``"8 GT/s"`` (older kernels) and
    ``"8.0 GT/s PCIe"`` (5.x and later). ``"Unknown"`` and anything else that
    does not look like a rate, or is above ``MAX_GTS``, gives None.
    """
    if text is None:
        return None
    match = _SPEED_RE.match(str(text))
    if not match:
        return None
    value = float(match.group(1))
    return value if 0 < value <= MAX_GTS else None


def parse_link_width(text):
    """Parse a sysfs ``*_link_width``; 0, 255 (link down/unknown) and junk give None."""
    if text is None:
        return None
    digits = str(text).strip().lstrip("x")
    if not 0 < len(digits) <= 3 or not all(c in "0123456789" for c in digits):
        return None
    width = int(digits, 10)
    return width if width in VALID_WIDTHS else None


def pcie_bandwidth(gen, width):
    """Usable bandwidth of a PCIe link, one direction, in GB/s (10^9 bytes).

    ``gen`` is a generation number (1..7) and ``width`` a lane count.
    Returns None when either is unknown.
    """
    if gen is None or width is None:
        return None
    try:
        gen = int(gen)
        width = int(width)
    except (TypeError, ValueError, OverflowError):
        return None
    entry = GENERATIONS.get(gen)
    if entry is None or width <= 0:
        return None
    rate, efficiency = entry
    return rate * width * efficiency / 8.0


def link_dict(gts, width):
    """The facts shape of one link end: rate, generation, width and usable GB/s."""
    gen = generation_from_gts(gts)
    gbps = pcie_bandwidth(gen, width)
    return {
        "speed_gts": gts,
        "generation": gen,
        "width": width,
        "gbytes_per_s": round(gbps, 3) if gbps is not None else None,
    }


PCI_ADDRESS_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def normalize_pci_address(address):
    """``"00000000:3B:00.0"`` (NVML) or ``"0000:3b:00.0"`` -> ``"0000:3b:00.0"``; junk -> None."""
    if not address:
        return None
    domain, sep, rest = address.strip().lower().partition(":")
    candidate = "%04x:%s" % (int(domain, 16), rest) if sep and is_hex(domain) else None
    return candidate if candidate and PCI_ADDRESS_RE.match(candidate) else None


def path_hops(address, by_address):
    """The links on a device's way to the CPU, hop by hop, as the facts give them: the device's own link, then each
    bridge above it that has a link of its own (a switch's upstream port, another bridge; a root port and a switch's
    downstream ports are the ends of those links, not links), up to its root port.

    ``by_address``: {PCI address: the facts' pci entry}. Each hop: {"address", "kind", "slot" (the port above: the
    link's other end), "link" (link_sides of it), "verdict" (link_verdict against the lower of the two ends'
    maxima), "gbytes_per_s" (now; for a GPU idling at a lower generation, what it reaches under load; None where
    unknown), "slot_known" (whether the port above gave its maximum)}. A device the facts do not have gives []."""
    hops = []
    device = by_address.get(address)
    chain = device.get("chain") if isinstance(device, dict) else None
    steps = [address]
    for step in chain if isinstance(chain, list) else []:
        if isinstance(step, str) and step not in steps:  # a chain that names the device or a bridge twice
            steps.append(step)
    for step in steps:
        entry = by_address.get(step)
        if not isinstance(entry, dict) or entry.get("kind") in INTERNAL_KINDS:
            continue
        parent = by_address.get(entry.get("parent")) if isinstance(entry.get("parent"), str) else None
        slot_max = (parent.get("link") or {}).get("max") if isinstance(parent, dict) and isinstance(
            parent.get("link"), dict) else None
        sides = link_sides(entry.get("link"))
        slot = link_sides({"max": slot_max})["max"]
        verdict = _verdict(entry.get("kind"), sides, slot)
        rate = sides["current"]["gbytes_per_s"]
        if verdict["verdict"] == "idle":  # a GPU that lowered its generation to save power carries what it reaches
            reach = pcie_bandwidth(*verdict["reach"]) if None not in verdict["reach"] else None
            rate = round(reach, 3) if reach is not None else rate
        hops.append({"address": step, "kind": entry.get("kind"), "slot": entry.get("parent") if parent else None,
                     "slot_known": slot["width"] is not None or slot["generation"] is not None,
                     "link": sides, "verdict": verdict, "gbytes_per_s": rate})
    return hops


def path_bottleneck(hops):
    """The hop whose link carries least now (the first of equals, nearest the device), or None where no hop's
    bandwidth is known."""
    known = [hop for hop in hops if hop["gbytes_per_s"] is not None]
    return min(known, key=lambda hop: hop["gbytes_per_s"]) if known else None
