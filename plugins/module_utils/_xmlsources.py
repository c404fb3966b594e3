# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Read the topology model from hwloc XML (``lstopo --of xml``) and NCCL topology XML."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from xml.etree import ElementTree

from ansible_collections.gpuops.fabric.plugins.module_utils._cpulist import (
    format_cpulist,
    parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._model import (
    NetDev,
    NumaNode,
    PciDevice,
    RdmaDevice,
    RdmaPort,
    Topology,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._pcie import (
    parse_link_speed,
    parse_link_width,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._sysfs import normalize_pci_address

_MAX_XML_BYTES = 64 * 1024 * 1024
# 1.6 Tb/s: above any Ethernet or InfiniBand port shipping today.
MAX_PLAUSIBLE_MBPS = 1600000

# hwloc OS device types. XML format 2.x numbers them; format 3.x uses bit flags.
_HWLOC2_OSDEV = {"0": "storage", "1": "gpu", "2": "network", "3": "openfabrics", "4": "dma", "5": "coproc"}
_HWLOC3_NETWORK = 16
_HWLOC3_OPENFABRICS = 32


def load_xml(path, expected_root):
    """Parse an XML file; any problem becomes a TopologyError naming the path."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_XML_BYTES + 1)
    except (IOError, OSError) as exc:
        raise TopologyError("%s: cannot read (%s)" % (path, exc))
    if len(data) > _MAX_XML_BYTES:
        raise TopologyError("%s: larger than %d bytes, refusing to parse" % (path, _MAX_XML_BYTES))
    if b"<!ENTITY" in data:
        raise TopologyError("%s: XML entity declarations are not accepted" % path)
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise TopologyError("%s: malformed XML (%s)" % (path, exc))
    if root.tag != expected_root:
        raise TopologyError("%s: root element is <%s>, expected <%s>" % (path, root.tag, expected_root))
    return root


def _hex_or_none(text):
    try:
        return int(text, 16)
    except (TypeError, ValueError):
        return None


def _mask_to_cpus(mask):
    if not mask:
        return None
    return parse_cpumask(mask)


def _single_node(nodeset, ignore=()):
    nodes = [n for n in (_mask_to_cpus(nodeset) or []) if n not in ignore]
    return nodes[0] if len(nodes) == 1 else None


# ---- hwloc ------------------------------------------------------------------------------------
def read_hwloc_xml(path):
    root = load_xml(path, "topology")
    topo = Topology(source="hwloc_xml")
    version = root.get("version", "2.0")
    bitflag_osdev = version.split(".")[0] not in ("1", "2")
    if version.startswith("1."):
        topo.warn("%s: hwloc XML format %s (hwloc 1.x) is read on a best-effort basis" % (path, version))
    # Memory-only nodes (GPU memory, HBM: they carry a subtype) sit in the nodesets of the
    # packages they are attached to; they say nothing about where a PCI device is.
    memory_only = set(int(o.get("os_index")) for o in root.iter("object")
                      if o.get("type") == "NUMANode" and o.get("subtype") and (o.get("os_index") or "").isdecimal())
    state = {"host_bridges": 0, "memory_only": memory_only}
    for child in root:
        if child.tag == "object":
            _hwloc_walk(topo, child, None, None, None, bitflag_osdev, state, path)
    _hwloc_distances(topo, root, path)
    for rdma in topo.rdma.values():
        rdma.netdevs = sorted(n.name for n in topo.netdevs.values()
                              if n.pci_address and n.pci_address == rdma.pci_address)
    return topo


def _hwloc_walk(topo, obj, locality, host_bridge, parent_pci, bitflag_osdev, state, path):
    kind = obj.get("type")
    if kind in ("Bridge", "PCIDev"):
        busid = obj.get("pci_busid")
        if busid is None:
            # A host bridge: everything below it shares one root complex.
            state["host_bridges"] += 1
            host_bridge = "hostbridge%d:%s" % (state["host_bridges"], obj.get("bridge_pci", ""))
            parent_pci = None
        else:
            address = normalize_pci_address(busid)
            if address is None:
                topo.warn("%s: PCI object with pci_busid %r ignored" % (path, busid))
                return
            dev = _hwloc_pci_device(topo, obj, address, locality, host_bridge, parent_pci, path,
                                    state["memory_only"])
            topo.pci[address] = dev
            parent_pci = address
    elif kind == "OSDev":
        _hwloc_osdev(topo, obj, parent_pci, bitflag_osdev)
        return
    elif obj.get("nodeset") is not None or obj.get("cpuset") is not None:
        locality = (obj.get("nodeset"), obj.get("cpuset"))
        if kind == "NUMANode":
            _hwloc_numa(topo, obj)
    for child in obj:
        if child.tag == "object":
            _hwloc_walk(topo, child, locality, host_bridge, parent_pci, bitflag_osdev, state, path)


def _hwloc_pci_device(topo, obj, address, locality, host_bridge, parent_pci, path, memory_only):
    dev = PciDevice(address=address, host_bridge=host_bridge or "hostbridge:unknown", parent=parent_pci)
    fields = (obj.get("pci_type") or "").replace("[", " ").replace("]", " ").replace(":", " ").split()
    # "0200 [8086:1521] [1028:0000] 01" -> class, vendor, device, subvendor, subdevice, revision
    if len(fields) >= 5:
        klass = _hex_or_none(fields[0])
        dev.class_code = (klass << 8) if klass is not None else None
        dev.vendor_id, dev.device_id = _hex_or_none(fields[1]), _hex_or_none(fields[2])
        dev.subsystem_vendor_id, dev.subsystem_device_id = _hex_or_none(fields[3]), _hex_or_none(fields[4])
    else:
        topo.warn("%s: %s has pci_type %r, not understood" % (path, address, obj.get("pci_type")))
    try:
        speed = float(obj.get("pci_link_speed", "0"))
    except ValueError:
        speed = 0.0
    dev.current_gbytes_hint = speed if speed > 0 else None
    if locality is not None:
        dev.numa_node = _single_node(locality[0], memory_only)
        cpus = _mask_to_cpus(locality[1])
        dev.local_cpus = format_cpulist(cpus) if cpus else None
    for info in obj.findall("info"):
        if info.get("name") == "PCIDevice":
            dev.name = info.get("value")
    return dev


def _hwloc_osdev(topo, obj, parent_pci, bitflag_osdev):
    name = obj.get("name")
    raw_type = obj.get("osdev_type", "")
    if bitflag_osdev:
        flags = int(raw_type) if raw_type.isdecimal() else 0
        is_rdma = bool(flags & _HWLOC3_OPENFABRICS)
        is_net = bool(flags & _HWLOC3_NETWORK) and not is_rdma
    else:
        kind = _HWLOC2_OSDEV.get(raw_type)
        is_rdma, is_net = kind == "openfabrics", kind == "network"
    infos = dict((i.get("name"), i.get("value")) for i in obj.findall("info"))
    if is_rdma and name:
        rdma = RdmaDevice(name=name, pci_address=parent_pci)
        topo.rdma[name] = rdma
        if parent_pci in topo.pci:
            topo.pci[parent_pci].has_rdma = True
    elif is_net and name:
        dev = NetDev(name=name, pci_address=parent_pci)
        address = infos.get("Address")
        # IPoIB hardware addresses are 20 bytes; Ethernet MACs 6.
        if address and address.count(":") == 19:
            dev.kind = "ipoib"
        dev.mac = address
        port = infos.get("Port")
        dev.dev_port = int(port) - 1 if port and port.isdecimal() and int(port) > 0 else None
        if parent_pci is None:
            dev.kind = "virtual"
        topo.netdevs[name] = dev


def _hwloc_numa(topo, obj):
    node_id = obj.get("os_index")
    if node_id is None or not node_id.isdecimal():
        return
    # hwloc gives memory-only nodes (GPU memory, HBM, CXL: those with a subtype) the cpuset of
    # the CPUs they are local to; the kernel lists no CPUs in them.
    cpus = [] if obj.get("subtype") else _mask_to_cpus(obj.get("cpuset"))
    memory = obj.get("local_memory")
    topo.numa[int(node_id)] = NumaNode(
        node_id=int(node_id),
        cpus=format_cpulist(cpus) if cpus is not None else None,
        memory_bytes=int(memory) if memory and memory.isdecimal() else None,
    )


def _hwloc_distances(topo, root, path):
    for dist in root.iter("distances2"):
        if dist.get("type") != "NUMANode" or dist.get("name", "NUMALatency") != "NUMALatency":
            continue
        indexes_el, values_el = dist.find("indexes"), dist.find("u64values")
        try:
            indexes = [int(v) for v in (indexes_el.text or "").split()]
            values = [int(v) for v in (values_el.text or "").split()]
        except (AttributeError, ValueError):
            topo.warn("%s: NUMA distance matrix not understood" % path)
            return
        count = len(indexes)
        if count * count != len(values):
            topo.warn("%s: NUMA distance matrix has %d values for %d nodes" % (path, len(values), count))
            return
        for row, node_id in enumerate(indexes):
            if node_id in topo.numa:
                topo.numa[node_id].distances = dict(zip(indexes, values[row * count:(row + 1) * count]))


# ---- NCCL -------------------------------------------------------------------------------------
def read_nccl_xml(path):
    """NCCL/RCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format).

    NCCL records the maximum link of each device (max_link_speed/max_link_width),
    so the links read here are maxima; current links stay unknown.
    """
    root = load_xml(path, "system")
    topo = Topology(source="nccl_xml", root_ports_omitted=True)
    for cpu in root.findall("cpu"):
        numaid = cpu.get("numaid")
        node_id = int(numaid) if numaid is not None and numaid.lstrip("-").isdecimal() and int(numaid) >= 0 else None
        cpus = _mask_to_cpus(cpu.get("affinity"))
        if node_id is not None:
            topo.numa[node_id] = NumaNode(node_id=node_id, cpus=format_cpulist(cpus) if cpus is not None else None)
        context = {
            "numa": node_id,
            "cpus": format_cpulist(cpus) if cpus else None,
            "host_bridge": "cpu%s" % (numaid if numaid is not None else len(topo.numa)),
        }
        for child in cpu:
            _nccl_walk(topo, child, None, context, path)
    return topo


def _nccl_walk(topo, element, parent_pci, context, path):
    if element.tag == "pci":
        address = normalize_pci_address(element.get("busid"))
        if address is None:
            topo.warn("%s: <pci busid=%r> ignored" % (path, element.get("busid")))
            return
        dev = PciDevice(address=address, host_bridge=context["host_bridge"], parent=parent_pci)
        dev.class_code = _hex_or_none(element.get("class"))
        dev.vendor_id = _hex_or_none(element.get("vendor"))
        dev.device_id = _hex_or_none(element.get("device"))
        dev.subsystem_vendor_id = _hex_or_none(element.get("subsystem_vendor"))
        dev.subsystem_device_id = _hex_or_none(element.get("subsystem_device"))
        dev.max_gts = parse_link_speed(element.get("link_speed"))
        dev.max_width = parse_link_width(element.get("link_width"))
        dev.numa_node = context["numa"]
        dev.local_cpus = context["cpus"]
        topo.pci[address] = dev
        for child in element:
            _nccl_walk(topo, child, address, context, path)
    elif element.tag == "nic":
        for net in element.findall("net"):
            _nccl_net(topo, net, parent_pci, path)


def _nccl_net(topo, net, pci_address, path):
    name = net.get("name")
    if not name:
        return
    speed = net.get("speed")
    speed_mbps = int(speed) if speed and speed.isdecimal() and int(speed) > 0 else None
    if speed_mbps is not None and speed_mbps > MAX_PLAUSIBLE_MBPS:
        topo.warn("%s: <net name=%r speed=%r> is not a plausible speed in Mb/s, ignored" % (path, name, speed))
        speed_mbps = None
    port_text = net.get("port") or "1"
    dev = topo.pci.get(pci_address)
    # NCCL lists IB/RoCE HCAs by verbs device name (and marks them GPUDirect-capable);
    # socket transports by interface name.
    is_rdma = net.get("gdr") is not None or net.get("guid") is not None or (
        dev is not None and dev.class_code is not None and (dev.class_code >> 8) in (0x0207, 0x0C06))
    if is_rdma:
        rdma = topo.rdma.setdefault(name, RdmaDevice(name=name, pci_address=pci_address))
        rdma.ports.append(RdmaPort(
            port=int(port_text) if port_text.isdecimal() else 1,
            rate_gbps=speed_mbps / 1000.0 if speed_mbps else None,
        ))
        if dev is not None:
            dev.has_rdma = True
    else:
        topo.netdevs[name] = NetDev(name=name, pci_address=pci_address, speed_mbps=speed_mbps,
                                    kind="physical" if pci_address else "virtual")
