# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""A node's shape for the model of NCCL's collectives (collective.py), read off its facts: the GPUs, how they reach
each other, and the rails NCCL would use between nodes. Facts of any shape give a shape or a ModelError, nothing
else."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import link_sides, nic_link, path_hops
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.gpudirect import gdr_possible
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import ports_under
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import (
    CPU_LINK, CPU_LINK_DEFAULT, PCIE_LANE, pcie_gbytes,
)

# ---- from the facts -------------------------------------------------------------------------------------------
# A GPU's compute capability from its marketing name (NVML's name), for NCCL's per-NVLink figure: the first pattern
# found in the upper-cased name wins. Names from NVIDIA's CUDA GPUs list (developer.nvidia.com/cuda-gpus).
CC_BY_NAME = (("GB200", 10.0), ("B200", 10.0), ("B100", 10.0), ("GH200", 9.0), ("H100", 9.0), ("H200", 9.0),
              ("H800", 9.0), ("H20", 9.0), ("L40", 8.9), ("L4", 8.9), ("RTX 40", 8.9), ("RTX 6000 ADA", 8.9),
              ("A100", 8.0), ("A800", 8.0), ("A30", 8.0), ("A40", 8.6), ("A10", 8.6), ("A16", 8.6), ("A2", 8.6),
              ("RTX A", 8.6), ("RTX 30", 8.6), ("V100", 7.0), ("TITAN V", 7.0), ("T4", 7.5), ("RTX 20", 7.5),
              ("P100", 6.0))
_PATH_ORDER = ("NVL", "PIX", "PXB", "PXN", "PHB", "NODE", "SYS")


def compute_capability(name):
    """The compute capability a GPU name implies, or None."""
    upper = name.upper() if isinstance(name, str) else ""
    for pattern, value in CC_BY_NAME:
        if pattern in upper:
            return value
    return None


def _int(value, low, high):
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None


def _link_figure(link):
    """NCCL's GB/s of a link fact: the best generation (a GPU lowers it at idle) at the width it trained to now."""
    sides = link_sides(link)  # the one reading of a link fact
    best, now = sides["max"], sides["current"]
    generation = next((g for g in (best["generation"], now["generation"]) if g in PCIE_LANE), None)
    width = next((w for w in (now["width"], best["width"]) if w is not None and w <= 32), None)
    return generation, width, pcie_gbytes(generation, width)


def _records(value, key="address"):
    """The mappings of a facts list whose ``key`` is a text (facts of another shape give none)."""
    return [r for r in value if isinstance(r, dict) and isinstance(r.get(key), str)] if isinstance(value, list) else []


def _paths(facts, kind):
    paths = facts.get("paths") if isinstance(facts.get("paths"), dict) else {}
    return _records(paths.get(kind), "gpu")


def _worst_path(facts, gpus):
    addresses = set(g.get("address") for g in gpus)
    worst = None
    for path in _paths(facts, "gpu_gpu"):
        if path.get("gpu") not in addresses or not isinstance(path.get("peer"), str) or path["peer"] not in addresses:
            continue
        kind = path.get("type") if isinstance(path.get("type"), str) else None
        if kind in _PATH_ORDER and (worst is None or _PATH_ORDER.index(kind) > _PATH_ORDER.index(worst)):
            worst = kind
    return worst


def _gpu_nic_path(facts, gpu, nic):
    for path in _paths(facts, "gpu_nic"):
        if path.get("gpu") == gpu and path.get("nic") == nic:
            return path
    return None


def _path_links(facts, path):
    """The links on a path, each a mapping with its ``device``: the facts' links named by the path's ``via`` (facts
    schema 2), or the path's own ``links`` (schema 1: stored captures and fact caches written before)."""
    if isinstance(path.get("via"), list):
        paths = facts.get("paths") if isinstance(facts.get("paths"), dict) else {}
        table = dict((r["device"], r) for r in _records(paths.get("links"), "device"))
        return [table[d] for d in path["via"] if isinstance(d, str) and d in table]
    return _records(path.get("links"), "device")


def _gpu_names(gpus):
    """The GPUs of a rail as reports name them: their index where the facts have one, else their address."""
    return [str(g["index"]) if _int(g.get("index"), 0, 4096) is not None else str(g.get("address")) for g in gpus]


def _upstream_figures(pci, address):
    """NCCL's GB/s of each link above a device up to its CPU (pcie.path_hops without the device's own link, which a
    rail counts as its GPU link or NIC slot), named; ``pci``: the facts' PCI entries by address."""
    out = []
    for hop in (path_hops(address, pci) if address in pci else [])[1:]:
        now = hop["link"]["current"]
        figure = pcie_gbytes(now["generation"], now["width"] if now["width"] and now["width"] <= 32 else None)
        if figure is not None:
            out.append((figure, "upstream link %s" % hop["address"]))
    return out


def _rail_gpu_side(facts, gpus, nic_address, notes, cpu_link=None, through_host=False):
    """The narrowest GPU side of a rail: the GPUs' links, the links above them, a socket crossing (``cpu_link``: the
    socket interconnect's GB/s where the user knows it, else NCCL's figure of the CPU it assumes). GPU to NIC
    directly (GPUDirect RDMA): the links between them; ``through_host`` (sockets, or no GPUDirect RDMA: NCCL stages
    the data in host memory, its path from the GPU to the NIC goes through the CPU, NCCL's paths.cc): every link of
    the GPU and of the NIC up to the CPU."""
    figures, crossing = [], False
    pci = dict((p["address"], p) for p in _records(facts.get("pci"))) if through_host else {}
    for gpu in gpus:
        figure = _link_figure(gpu.get("link"))[2]
        if figure is not None:
            figures.append((figure, "GPU link"))
        path = _gpu_nic_path(facts, gpu.get("address"), nic_address) or {}
        if through_host:
            figures += _upstream_figures(pci, gpu.get("address"))
        else:
            for link in _path_links(facts, path):
                if link.get("device") not in (gpu.get("address"), nic_address):
                    upstream = pcie_gbytes(_int(link.get("generation"), 1, 6), _int(link.get("width"), 1, 32))
                    if upstream is not None:
                        figures.append((upstream, "upstream link %s" % link.get("device")))
        crossing = crossing or path.get("type") == "SYS"
    if through_host and isinstance(nic_address, str):
        figures += _upstream_figures(pci, nic_address)
    if crossing and cpu_link is not None:
        figures.append((cpu_link, "socket crossing"))
        notes.append("a GPU reaches its NIC across sockets: the socket interconnect counted at %g GB/s, as given"
                     % cpu_link)
    elif crossing:
        figures.append((CPU_LINK[CPU_LINK_DEFAULT], "socket crossing"))
        notes.append("a GPU reaches its NIC across sockets: the socket interconnect counted at NCCL's %s figure "
                     "(the CPU model is not in the facts)" % CPU_LINK_DEFAULT)
    if not figures:
        return None, "GPU link"
    return min(figures)


def _interface_rail(facts, interface, gpus, notes, cpu_link=None):
    """The one rail of NCCL's sockets on ``interface``: the ports under it (a VLAN's parent, a bond's legs, over
    which NCCL's flows hash) at their speeds added up, at the interface's own MTU; None (with a note) where the facts
    lack the interface or a port's speed."""
    named = [n for n in _records(facts.get("nics"), "name") if n.get("name") == interface]
    try:
        ports = ports_under(facts, interface) if named else []
    except (KeyError, TypeError, AttributeError):
        ports = []
    if not ports:
        notes.append("%s: not in the facts, or no PCIe port under it; no rail" % interface)
        return None
    speeds = [finite(p.get("speed_mbps"), 1) for p in ports]
    if None in speeds:
        notes.append("%s: a port under it has no link speed in the facts; no rail" % interface)
        return None
    slots = [_link_figure(nic_link(p))[2] for p in ports]
    mtu = named[0].get("mtu") if _int(named[0].get("mtu"), 576, 65536) else 1500
    side, what = _rail_gpu_side(facts, gpus, ports[0].get("address"), notes, cpu_link, through_host=True)
    if len(ports) > 1:
        count = len(ports)
        notes.append("%s: %d ports under it, their speeds added (NCCL's flows hash over them)" % (interface, count))
    return {"name": interface, "transport": "socket", "gbits": sum(speeds) / 1000.0, "mtu": mtu,
            "slot_gbytes_per_s": sum(slots) if None not in slots else None, "gpu_side_gbytes_per_s": side,
            "gpu_side": what, "ports": len(ports), "gpus": _gpu_names(gpus)}


def _nvlink_intra(gpus, shape, notes):
    """Set the shape's intra-node kind from the GPUs' NVLinks (gpus[].nvlink); False where NVLink does not carry a
    ring through all of them (then their PCIe paths do)."""
    links = [g.get("nvlink") if isinstance(g.get("nvlink"), dict) else None for g in gpus]
    if any(n is None for n in links):
        return False
    counts = [finite(n.get("links"), 0, 64) for n in links]
    if None in counts or min(counts) == 0:
        if max([c or 0 for c in counts]) == 0:
            notes.append("no NVLink between the GPUs (the facts say none)")
        else:
            notes.append("NVLink on some GPUs only: the GPUs' PCIe paths are the intra-node figure")
        return False
    switch = [finite(n.get("to_switch"), 0, 64) or 0 for n in links]
    if min(switch) > 0:
        shape.update(intra="nvswitch", nvlinks=min(64, *switch))
        if (shape["compute_capability"] or 0) >= 9.0:
            shape["nvls"] = True
            notes.append("NVLink SHARP assumed on NVSwitch (NCCL 2.17 and later, with the fabric manager)")
        notes.append("NVLink through NVSwitch: %d links per GPU (the fewest of the node's GPUs)" % min(switch))
        return True
    addresses = [g["address"] for g in gpus]
    reach, graph = [], {}
    for gpu, link in zip(gpus, links):
        peers = [p for p in _records(link.get("peers")) if p["address"] in addresses and p["address"] != gpu["address"]]
        reach.append((len(peers), sum(finite(p.get("links"), 0, 64) or 0 for p in peers)))
        graph[gpu["address"]] = set(p["address"] for p in peers)
    # one island: every GPU reached from the first over NVLink (both ways: a link is seen from both ends)
    seen, todo = set(), [addresses[0]]
    while todo:
        here = todo.pop()
        if here not in seen:
            seen.add(here)
            todo.extend(sorted(set(graph.get(here, ())) | set(a for a in graph if here in graph[a])))
    if (len(seen) == len(addresses) and min(r[0] for r in reach) >= (1 if len(gpus) == 2 else 2)
            and min(r[1] for r in reach) > 0):
        shape.update(intra="nvlink", nvlinks=min([64] + [r[1] for r in reach]))
        notes.append("NVLink GPU to GPU: %d links per GPU to the others (the fewest of the node's GPUs)"
                     % shape["nvlinks"])
        return True
    notes.append("NVLink pairs do not join every GPU in a ring: the GPUs' PCIe paths are the intra-node figure")
    return False


def shape_from_facts(facts, mode=None, interface=None, cpu_link=None):
    """A node shape for predict() from a node's facts, and the notes of what it assumed.

    ``mode`` rdma or tcp (None: rdma where an active RDMA port is nearest some GPU, else tcp); ``interface``: the
    training interface for tcp (None: the NIC nearest each GPU is its rail, as a host without an intent gets it).
    The GPUs meet over NVLink where the facts' gpus[].nvlink say so (through NVSwitches, or GPU to GPU where every
    GPU reaches two others or the pair each other), else over their PCIe paths (peer to peer up to a PCIe switch, shared
    memory through the CPU beyond: NCCL's default on Intel, the CPU model not being in the facts). ``cpu_link``: the
    socket interconnect's GB/s where the user knows it (else NCCL's figure of the CPU assumed)."""
    if not isinstance(facts, dict):
        raise ModelError("facts: expected a mapping, got %r" % (facts,))
    gpus = _records(facts.get("gpus"))
    if not gpus:
        raise ModelError("facts: no GPUs on this node; nothing to predict")
    others = sorted(set(str(g.get("vendor")) for g in gpus if g.get("vendor") not in (None, "nvidia")))
    if others:
        raise ModelError("facts: the node's GPUs are %s: the model holds NCCL's figures for NVIDIA GPUs (RCCL and "
                         "others are not modelled)" % ", ".join(others))
    notes = []
    names = sorted(set(g.get("name") for g in gpus if isinstance(g.get("name"), str)))
    capability = min([c for c in (compute_capability(n) for n in names) if c is not None] or [None]) \
        if names else None
    links = [_link_figure(g.get("link")) for g in gpus]
    known = [l for l in links if l[2] is not None]
    generation, width = (min(known, key=lambda l: l[2])[:2]) if known else (None, None)
    worst = _worst_path(facts, gpus)
    shape = {"gpus": len(gpus), "compute_capability": capability, "intra": "pcie", "pcie_generation": generation,
             "pcie_width": width, "rails": [], "notes": notes, "cpu_link_gbytes_per_s": cpu_link}
    if len(gpus) > 1 and _nvlink_intra(gpus, shape, notes):
        pass
    elif len(gpus) > 1:
        if worst in ("PHB", "NODE", "SYS"):
            shape["intra"] = "shm"
            shape["numa_crossing"] = worst == "SYS"
            notes.append("GPUs meet at the CPU (%s): NCCL's default on Intel moves their traffic through host memory"
                         % worst)
        if not all(isinstance(g.get("nvlink"), dict) for g in gpus):
            notes.append("NVLink is not in the facts: the GPUs' PCIe paths are the intra-node figure")
    active = {}
    for device in _records(facts.get("rdma")):
        ports = [p for p in _records(device.get("ports"), "state") if p["state"] == "ACTIVE"]
        if ports:
            active[device["address"]] = (device, ports[0])
    nics = dict((n["address"], n) for n in _records(facts.get("nics")))
    if mode is None:
        mode = "rdma" if any(n["nic"] in active for g in gpus for n in _records(g.get("nearest_nics"), "nic")) \
            else "tcp"
        if mode == "rdma":
            notes.append("fabric_nccl_mode is not set: RDMA, as the hardware allows (the nccl role's default, tcp, "
                         "writes NCCL_IB_DISABLE=1 and gets the sockets' figure)")
    by_rail = {}
    if mode == "rdma":
        gdr = gdr_possible(facts)
        if gdr is False:
            notes.append("no GPUDirect RDMA (neither nvidia_peermem nor nv_peer_mem loaded, DMA-BUF not possible): "
                         "NCCL stages the data in host memory, so each GPU's and NIC's links up to the CPU count")
        elif gdr is None:
            notes.append("GPUDirect RDMA assumed (the facts do not say which kernel modules are loaded, or whether "
                         "DMA-BUF works)")
        for gpu in gpus:
            near = [n["nic"] for n in _records(gpu.get("nearest_nics"), "nic") if n["nic"] in active]
            if near:
                by_rail.setdefault(near[0], []).append(gpu)
        for address in sorted(by_rail):
            device, port = active[address]
            side, what = _rail_gpu_side(facts, by_rail[address], address, notes, cpu_link, through_host=gdr is False)
            nic = nics.get(address) or {}
            rail = {"name": str(device.get("name") or address), "gbits": port.get("rate_gbps"),
                    "transport": "roce" if port.get("link_layer") == "Ethernet" else "ib",
                    "slot_gbytes_per_s": _link_figure(nic.get("link") or nic.get("pci_link"))[2],
                    "gpu_side_gbytes_per_s": side, "gpu_side": what, "gpus": _gpu_names(by_rail[address])}
            if finite(rail["gbits"], 0.001) is not None:
                shape["rails"].append(rail)
        notes.append("rails: the active RDMA port nearest each GPU (%s)" % ", ".join(r["name"] for r in shape["rails"]))
    else:
        candidates = []
        if interface:
            rail = _interface_rail(facts, interface, gpus, notes, cpu_link)
            if rail:
                shape["rails"].append(rail)
        else:
            for gpu in gpus:
                near = [nics[n["nic"]] for n in _records(gpu.get("nearest_nics"), "nic")
                        if n["nic"] in nics and nics[n["nic"]].get("carrier") is True]
                if near:
                    by_rail.setdefault(near[0]["address"], []).append(gpu)
            candidates = [nics[a] for a in sorted(by_rail)]
            notes.append("no training interface given: the NIC nearest each GPU is its rail (%s)"
                         % ", ".join(sorted(str(n.get("name") or "?") for n in candidates)))
        for nic in candidates:
            speed = nic.get("speed_mbps")
            if finite(speed, 1) is None:
                notes.append("%s: no link speed in the facts, left out" % nic.get("name"))
                continue
            mtu = nic.get("mtu") if _int(nic.get("mtu"), 576, 65536) else 1500
            on_rail = by_rail.get(nic.get("address")) or gpus
            side, what = _rail_gpu_side(facts, on_rail, nic.get("address"), notes, cpu_link, through_host=True)
            shape["rails"].append({"name": str(nic.get("name") or nic.get("address")), "transport": "socket",
                                   "gbits": speed / 1000.0, "mtu": mtu,
                                   "slot_gbytes_per_s": _link_figure(nic_link(nic))[2],
                                   "gpu_side_gbytes_per_s": side, "gpu_side": what, "gpus": _gpu_names(on_rail)})
    return shape
