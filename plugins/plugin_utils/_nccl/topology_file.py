# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The NCCL topology file (NCCL_TOPO_FILE) written from the facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import INTERNAL_KINDS, NETDEV_PHYSICAL


# ---- NCCL topology XML (opt-in: NCCL_TOPO_FILE) ----------------------------------------------------------
def _cpumask(cpulist):
    """NCCL's affinity attribute: the CPU set as comma-separated 32-bit hex words, most significant first."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import parse_cpulist
    cpus = parse_cpulist(cpulist) if cpulist else None
    if not cpus:
        return None
    words = [0] * (max(cpus) // 32 + 1)
    for cpu in cpus:
        words[cpu // 32] |= 1 << (cpu % 32)
    return ",".join("%08x" % w for w in reversed(words))


def topology_xml(facts):
    """An NCCL topology file (the NCCL_TOPO_FILE format, version 1) from the facts: per NUMA node a <cpu>, the
    PCIe switches and devices below it with their maximum links, and the NICs' nets (RDMA ports by verbs name,
    sockets by interface name). Root ports and switch downstream ports are left out, as NCCL's own dump does: a
    device directly below a root port hangs off the CPU, and one below a downstream port hangs off the switch's
    element (NCCL climbs sysfs two levels at a time, one <pci> per switch). NCCL fills in the GPUs' details itself.
    """
    from xml.sax.saxutils import quoteattr
    pci = dict((d["address"], d) for d in facts.get("pci") or [])
    children = {}
    for dev in pci.values():
        parent = dev.get("parent")
        while parent in pci and pci[parent]["kind"] in INTERNAL_KINDS:
            parent = pci[parent].get("parent")
        if dev["kind"] in INTERNAL_KINDS:
            continue
        children.setdefault(parent if parent in pci else None, []).append(dev["address"])
    gdr = "1" if (facts.get("kernel_modules") or {}).get("nvidia_peermem") or \
        (facts.get("kernel_modules") or {}).get("nv_peer_mem") else "0"
    nets = {}
    for rdma in facts.get("rdma") or []:
        for port in rdma.get("ports") or []:
            speed = ' speed="%d"' % int(port["rate_gbps"] * 1000) if port.get("rate_gbps") else ""
            net = '<net name=%s port="%d"%s gdr="%s"/>' % (quoteattr(rdma["name"]), port["port"], speed, gdr)
            nets.setdefault(rdma.get("address"), []).append(net)
    rdma_pci = set(r.get("address") for r in facts.get("rdma") or [])
    for nic in facts.get("nics") or []:
        if nic.get("address") and nic["address"] not in rdma_pci and nic.get("kind") == NETDEV_PHYSICAL:
            nets.setdefault(nic["address"], []).append(
                '<net name=%s%s/>' % (quoteattr(nic["name"]), ' speed="%d"' % nic["speed_mbps"]
                                      if nic.get("speed_mbps") else ""))

    def element(address, depth):
        dev = pci[address]
        link = (dev.get("link") or {}).get("max") or {}
        attrs = ['busid="%s"' % address, 'class="%s"' % dev["class"]]
        for key, name in (("vendor_id", "vendor"), ("device_id", "device"), ("subsystem_vendor_id", "subsystem_vendor"),
                          ("subsystem_device_id", "subsystem_device")):
            if dev.get(key):
                attrs.append('%s="%s"' % (name, dev[key]))
        if link.get("speed_gts"):
            attrs.append('link_speed="%s GT/s PCIe"' % ("%.1f" % link["speed_gts"]))
        if link.get("width"):
            attrs.append('link_width="%d"' % link["width"])
        pad = "  " * depth
        inner = ["%s  <nic>" % pad] + ["%s    %s" % (pad, n) for n in nets.get(address, [])] + ["%s  </nic>" % pad] \
            if address in nets else []
        for child in sorted(children.get(address, [])):
            inner += element(child, depth + 1)
        if not inner:
            return ["%s<pci %s/>" % (pad, " ".join(attrs))]
        return ["%s<pci %s>" % (pad, " ".join(attrs))] + inner + ["%s</pci>" % pad]

    lines = ['<system version="1">']
    by_numa = {}
    for address in sorted(children.get(None, [])):
        by_numa.setdefault(pci[address].get("numa_node"), []).append(address)
    cpus = dict((n["id"], n.get("cpus")) for n in (facts.get("numa") or {}).get("nodes") or [])
    for numa in sorted(by_numa, key=lambda n: -1 if n is None else n):
        mask = _cpumask(cpus.get(numa))
        lines.append('  <cpu numaid="%s"%s>' % (numa if numa is not None else -1,
                                                ' affinity="%s"' % mask if mask else ""))
        for address in by_numa[numa]:
            lines += element(address, 2)
        lines.append("  </cpu>")
    lines.append("</system>")
    return "\n".join(lines) + "\n"
