# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""NCCL's topology dump (NCCL_TOPO_DUMP_FILE) as a topology source."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import format_cpulist
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    NETDEV_PHYSICAL, NETDEV_VIRTUAL, NetDev, NumaNode, PciDevice, RdmaDevice, RdmaPort, Topology,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    normalize_pci_address, parse_link_speed, parse_link_width,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.xmlfile import (
    add_pci, hex_or_none, mask_to_cpus, MAX_SHOWN, note_dropped, FileNotes, shown_value, small_int, load_xml, load_xml_excerpt,
    MAX_NUMA_NODES, MAX_PLAUSIBLE_GTS, MAX_PLAUSIBLE_MBPS,
)

# ---- NCCL -------------------------------------------------------------------------------------
# The facts an NCCL topology dump is read into when it is compared with the node's (NCCLRUN-006).
MAX_NVLINK_TARGETS = 64
DUMP_SUBSETS = ("numa", "pci", "gpu", "nic", "rdma", "paths")


def read_nccl_xml(path, excerpt=False):
    """NCCL/RCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format).

    NCCL records the maximum link of each device (max_link_speed/max_link_width),
    so the links read here are maxima; current links stay unknown. NCCL climbs sysfs two
    levels at a time, so each ``<pci>`` bridge element is one PCIe switch (its upstream port)
    and a ``<pci>`` nested in another is a switch below a switch, never a downstream port.
    ``excerpt``: a dump as posted or logged, possibly cut short (xmlfile.load_xml_excerpt); the cut is a warning.
    """
    root, truncated = load_xml_excerpt(path, "system") if excerpt else (load_xml(path, "system"), False)
    topo = Topology(source="nccl_xml", root_ports_omitted=True)
    note = FileNotes(topo, path)
    if truncated:
        note("the dump stops early (an excerpt): read as far as it goes; devices after the cut are missing")
    state = {}
    for cpu in root.findall("cpu"):
        numaid = cpu.get("numaid")
        node_id = small_int(numaid, MAX_NUMA_NODES * 64)
        if numaid is not None and node_id is None and numaid.strip() != "-1":
            note("<cpu numaid=%s> is not a NUMA node number; locality unknown" % shown_value(numaid))
        cpus = mask_to_cpus(cpu.get("affinity"))
        if node_id is not None:
            topo.numa[node_id] = NumaNode(node_id=node_id, cpus=format_cpulist(cpus) if cpus is not None else None)
        context = {
            "numa": node_id,
            "cpus": format_cpulist(cpus) if cpus else None,
            "host_bridge": "cpu%s" % (numaid[:MAX_SHOWN] if numaid is not None else len(topo.numa)),
        }
        _nccl_walk(topo, cpu, context, note, state)
    note_dropped(state, note)
    note.close()
    return topo


def _nccl_link(element, address, note):
    speed_text, width_text = element.get("link_speed"), element.get("link_width")
    gts = parse_link_speed(speed_text[:64]) if speed_text is not None and len(speed_text) <= 64 else None
    if gts is not None and (math.isinf(gts) or gts > MAX_PLAUSIBLE_GTS):
        gts = None
    if gts is None and speed_text is not None and speed_text.strip() not in ("", "Unknown", "Unknown speed"):
        note("<pci busid=%s> link_speed %s is not a PCIe rate; ignored" % (address, shown_value(speed_text)))
    width = parse_link_width(width_text[:8]) if width_text is not None and len(width_text) <= 8 else None
    if width is None and width_text is not None and width_text.strip() not in ("", "0", "255"):
        note("<pci busid=%s> link_width %s is not a PCIe width; ignored" % (address, shown_value(width_text)))
    return gts, width


def _nccl_walk(topo, cpu, context, note, state):
    # An explicit stack: no depth of nesting reaches Python's recursion limit.
    stack = [(child, None) for child in reversed(list(cpu))]
    while stack:
        element, parent_pci = stack.pop()
        if element.tag == "pci":
            busid = element.get("busid")
            address = normalize_pci_address(busid[:MAX_SHOWN]) if busid else None
            if address is None:
                note("<pci busid=%s> ignored" % shown_value(busid))
                continue
            dev = PciDevice(address=address, host_bridge=context["host_bridge"], parent=parent_pci)
            dev.class_code = hex_or_none(element.get("class"), 0xFFFFFF)
            dev.vendor_id = hex_or_none(element.get("vendor"))
            dev.device_id = hex_or_none(element.get("device"))
            dev.subsystem_vendor_id = hex_or_none(element.get("subsystem_vendor"))
            dev.subsystem_device_id = hex_or_none(element.get("subsystem_device"))
            dev.max_gts, dev.max_width = _nccl_link(element, address, note)
            dev.numa_node = context["numa"]
            dev.local_cpus = context["cpus"]
            if (dev.class_code is not None and dev.class_code >> 8 == 0x0604
                    and parent_pci is not None and parent_pci in topo.pci):
                # One <pci> bridge per switch: a bridge inside a bridge is a nested switch.
                dev.nccl_nested_switch = True
            add_pci(topo, dev, note, state)
            for child in reversed(list(element)):
                stack.append((child, address))
        elif element.tag == "nic":
            for net in element.findall("net"):
                _nccl_net(topo, net, parent_pci, note)
        elif element.tag == "gpu" and parent_pci is not None:
            _nccl_nvlinks(topo, element, parent_pci, note)


NVSWITCH_CLASS = 0x068000  # NCCL's class for an NVSwitch target of <nvlink>
NVLINK_CPU_CLASS = 0x068001  # and for a CPU (POWER9's NVLink to the CPU)


def _nccl_nvlinks(topo, gpu, address, note):
    """A <gpu>'s <nvlink target= count= tclass=> children, in GpuInfo.nvlink's form (tclass 0x068000: an NVSwitch)."""
    out = {"links": 0, "version": None, "remotes": {}}
    for link in gpu.findall("nvlink")[:MAX_NVLINK_TARGETS]:
        target = link.get("target")
        remote = normalize_pci_address(target[:MAX_SHOWN]) if target else None
        count = small_int(link.get("count"), 64)
        if remote is None or not count:
            shown = (shown_value(target), shown_value(link.get("count")), address)
            note("<nvlink target=%s count=%s> of GPU %s ignored" % shown)
            continue
        tclass = hex_or_none(link.get("tclass"), 0xFFFFFF)
        kind = ("switch" if tclass == NVSWITCH_CLASS else "gpu" if tclass is not None and tclass >> 16 == 0x03 else
                "cpu" if tclass == NVLINK_CPU_CLASS else None)
        entry = out["remotes"].setdefault(remote, {"links": 0, "type": kind})
        entry["links"] += count
        out["links"] += count
    topo.nvlink[address] = out


def _nccl_net(topo, net, pci_address, note):
    name = net.get("name")
    if not name:
        return
    speed = net.get("speed")
    speed_mbps = small_int(speed, 2 ** 63)
    if speed is not None and speed_mbps is None and speed.strip() not in ("", "0", "-1"):
        note("<net name=%s speed=%s> is not a speed in Mb/s, ignored" % (shown_value(name), shown_value(speed)))
    if speed_mbps is not None and speed_mbps > MAX_PLAUSIBLE_MBPS:
        note("<net name=%s speed=%s> is not a plausible speed in Mb/s, ignored" % (shown_value(name), shown_value(speed)))
        speed_mbps = None
    speed_mbps = speed_mbps or None
    port = small_int(net.get("port") or "1", 65536)
    dev = topo.pci.get(pci_address)
    # NCCL lists IB/RoCE HCAs by verbs device name (and marks them GPUDirect-capable);
    # socket transports by interface name.
    is_rdma = net.get("gdr") is not None or net.get("guid") is not None or (
        dev is not None and dev.class_code is not None and (dev.class_code >> 8) in (0x0207, 0x0C06))
    if is_rdma:
        rdma = topo.rdma.setdefault(name, RdmaDevice(name=name, pci_address=pci_address))
        rdma.ports.append(RdmaPort(
            port=port if port is not None else 1,
            rate_gbps=speed_mbps / 1000.0 if speed_mbps else None,
        ))
        if dev is not None:
            dev.has_rdma = True
    else:
        topo.netdevs[name] = NetDev(name=name, pci_address=pci_address, speed_mbps=speed_mbps,
                                    kind=NETDEV_PHYSICAL if pci_address else NETDEV_VIRTUAL)
