# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The path classifier: the PCIe path between two devices (PIX, PXB, PHB, NODE, SYS) and its bottleneck link."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import INTERNAL_KINDS, KIND_SWITCH_DOWN
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import link_dict

# ---- links and paths ------------------------------------------------------------------------------


def hex_id(value, digits=4):
    return None if value is None else "0x%0*x" % (digits, value)


def _link_above(topo, address):
    """The link between a device and its parent bridge, or None inside a switch.

    A root port's or downstream port's own link registers describe the link *below*
    it, so the link above such a port is internal to the switch or root complex.
    """
    dev = topo.pci[address]
    if dev.kind in INTERNAL_KINDS:
        return None
    parent = topo.pci.get(dev.parent) if dev.parent else None
    entry = {"device": address, "basis": "current"}
    gts, width = dev.current_gts, dev.current_width
    if (gts is None or width is None) and parent is not None and parent.kind in INTERNAL_KINDS:
        gts, width = gts or parent.current_gts, width or parent.current_width
    link = link_dict(gts, width)
    if link["gbytes_per_s"] is None and dev.current_gbytes_hint is not None:
        link["gbytes_per_s"] = round(dev.current_gbytes_hint, 3)
        entry["basis"] = "hwloc"
    if link["gbytes_per_s"] is None and dev.max_gts is not None:
        link = link_dict(dev.max_gts, dev.max_width)
        entry["basis"] = "max"
    entry.update(link)
    return entry


def _switch_id(topo, address):
    """Bridges of one PCIe switch (upstream port + its downstream ports) count as one hop."""
    dev = topo.pci[address]
    if dev.kind == KIND_SWITCH_DOWN and dev.parent in topo.pci:
        return dev.parent
    return address


class PathCache:
    """Ancestors and link-above per device, computed once for all pairs of one topology; ``used`` keeps the links
    of the paths classified so far by device (a path names its links by device, each link's figures are kept once:
    an 8-GPU node's paths name about 60 links some 500 times)."""

    def __init__(self, topo):
        self.topo = topo
        self._up = {}
        self._link = {}
        self.used = {}

    def links(self):
        """The links on the paths classified so far, one per device, in address order (copies)."""
        return [dict(link) for _device, link in sorted(self.used.items())]

    def up(self, address):
        if address not in self._up:
            self._up[address] = [address] + self.topo.ancestors(address)
        return self._up[address]

    def link(self, address):
        if address not in self._link:
            self._link[address] = _link_above(self.topo, address)
        return self._link[address]


def pci_path(topo, a, b, cache=None):
    """Path type (as ``nvidia-smi topo -m`` names it), the devices whose link is on it (``via``, from ``a`` up and
    down to ``b``; their links' figures: ``cache.links()``) and the bottleneck between two devices."""
    cache = cache or PathCache(topo)
    up_a, up_b = cache.up(a), cache.up(b)
    in_b = set(up_b)
    common = next((x for x in up_a if x in in_b), None)
    dev_a, dev_b = topo.pci[a], topo.pci[b]
    if common is not None:
        seg_a, seg_b = up_a[:up_a.index(common)], up_b[:up_b.index(common)]
        bridges = seg_a[1:] + seg_b[1:]
        if common not in (a, b):
            bridges.append(common)
        switches = set(_switch_id(topo, x) for x in bridges)
        path_type = "PIX" if len(switches) <= 1 else "PXB"
        on_path = seg_a + seg_b
    else:
        on_path = up_a + up_b
        if dev_a.host_bridge == dev_b.host_bridge and not dev_a.host_bridge.startswith("unknown:"):
            path_type = "PHB"
        elif dev_a.numa_node is not None and dev_b.numa_node is not None:
            path_type = "NODE" if dev_a.numa_node == dev_b.numa_node else "SYS"
        else:
            path_type = None  # locality unknown: the firmware gave no NUMA node
    links = [link for link in (cache.link(x) for x in on_path) if link is not None]
    cache.used.update((link["device"], link) for link in links)
    known = [link for link in links if link["gbytes_per_s"] is not None]
    narrowest = min(known, key=lambda link: link["gbytes_per_s"]) if known else None
    return {
        "type": path_type,
        "common_bridge": common if common not in (a, b) else None,
        "via": [link["device"] for link in links],
        "bottleneck_gbytes_per_s": narrowest["gbytes_per_s"] if narrowest else None,
        "bottleneck_device": narrowest["device"] if narrowest else None,
    }
