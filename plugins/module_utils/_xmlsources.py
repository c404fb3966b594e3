# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Read the topology model from hwloc XML (``lstopo --of xml``) and NCCL topology XML.

Whatever the file holds, reading it is bounded: only regular files are opened (without blocking,
so a FIFO or a device node named as the path is refused, not waited on), at most
``MAX_XML_BYTES`` are read, elements may nest at most ``MAX_XML_DEPTH`` deep and a document may
hold at most ``MAX_XML_ELEMENTS`` elements; DTD entity declarations are refused (no entity
expansion). A file that cannot give a topology raises TopologyError naming the path; odd values
inside a good file become None plus a note in ``warnings``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import math
import os
import stat
from xml.etree import ElementTree
from xml.parsers import expat

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

# The hwloc export of a 4096-core machine with full I/O is a few MB; NCCL's files are tens of KB.
MAX_XML_BYTES = 32 * 1024 * 1024
MAX_XML_DEPTH = 256
MAX_XML_ELEMENTS = 500000
# More PCI functions than any machine enumerates (SR-IOV included); paths are computed per pair.
MAX_PCI_DEVICES = 4096
# Linux allows at most 1024 NUMA nodes (NODES_SHIFT 10): a matrix of 1024 x 1024 values.
MAX_NUMA_NODES = 1024
# Notes kept per file; the rest are counted in one last note.
MAX_WARNINGS = 100
_MAX_SHOWN = 40  # characters of a value quoted in a note
_READ_CHUNK = 1024 * 1024
_MAX_XML_BYTES = MAX_XML_BYTES  # older name
# 1.6 Tb/s: above any Ethernet or InfiniBand port shipping today.
MAX_PLAUSIBLE_MBPS = 1600000
# Per-lane rate and usable link bandwidth far above PCIe 7.0 (128 GT/s, x32 = 484 GB/s).
MAX_PLAUSIBLE_GTS = 1024.0
MAX_PLAUSIBLE_GBYTES = 4096.0

# hwloc OS device types. XML format 1.x and 2.x number them; format 3.x uses bit flags.
_HWLOC2_OSDEV = {"0": "storage", "1": "gpu", "2": "network", "3": "openfabrics", "4": "dma", "5": "coproc"}
_HWLOC3_GPU = 4
_HWLOC3_COPROC = 8
_HWLOC3_NETWORK = 16
_HWLOC3_OPENFABRICS = 32
# OS devices through which a PCI function computes (CUDA, OpenCL, NVML, ROCm SMI, oneAPI Level Zero).
# DRM nodes (card0, renderD128) are GPU-type OS devices too, but BMC display chips have them.
_COMPUTE_SUBTYPES = frozenset(("cuda", "opencl", "nvml", "rsmi", "levelzero"))
_COMPUTE_NAME_PREFIXES = ("cuda", "opencl", "nvml", "rsmi", "ze")
_NOT_COMPUTE_SUBTYPES = frozenset(("mic", "drm", "display"))


class _Refused(Exception):
    """Raised from inside the expat handlers to stop a document that breaks a bound."""


def _shown(value):
    """A value for a note: repr, cut to a few tens of characters."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "...(%d characters)" % len(str(value))


def _read_bounded(path):
    """The bytes of a regular file, at most MAX_XML_BYTES; anything else raises TopologyError."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (IOError, OSError) as exc:
        if exc.errno == errno.EISDIR:
            raise TopologyError("%s: cannot read (a directory, not a regular file)" % path)
        raise TopologyError("%s: cannot read (%s)" % (path, exc))
    try:
        try:
            info = os.fstat(fd)
        except (IOError, OSError) as exc:
            raise TopologyError("%s: cannot read (%s)" % (path, exc))
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a plain file")
            raise TopologyError("%s: cannot read (%s, not a regular file)" % (path, kind))
        if info.st_size > MAX_XML_BYTES:
            raise TopologyError("%s: %d bytes, larger than the %d bytes (%d MiB) read at most; refusing to parse"
                                % (path, info.st_size, MAX_XML_BYTES, MAX_XML_BYTES // (1024 * 1024)))
        chunks, total = [], 0
        while total <= MAX_XML_BYTES:
            try:
                chunk = os.read(fd, min(_READ_CHUNK, MAX_XML_BYTES + 1 - total))
            except (IOError, OSError) as exc:
                raise TopologyError("%s: cannot read (%s)" % (path, exc))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > MAX_XML_BYTES:
        raise TopologyError("%s: larger than the %d bytes (%d MiB) read at most; refusing to parse"
                            % (path, MAX_XML_BYTES, MAX_XML_BYTES // (1024 * 1024)))
    return b"".join(chunks)


def parse_xml_bytes(data, path):
    """Parse bytes into an ElementTree element with the bounds above; problems raise TopologyError."""
    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()
    counts = {"depth": 0, "elements": 0}

    def start(tag, attrs):
        counts["depth"] += 1
        counts["elements"] += 1
        if counts["depth"] > MAX_XML_DEPTH:
            raise _Refused("elements nested deeper than %d levels" % MAX_XML_DEPTH)
        if counts["elements"] > MAX_XML_ELEMENTS:
            raise _Refused("more than %d elements" % MAX_XML_ELEMENTS)
        builder.start(tag, attrs)

    def end(tag):
        counts["depth"] -= 1
        builder.end(tag)

    def entity_declaration(*_args):
        raise _Refused("XML entity declarations are not accepted")

    def skipped_entity(*_args):
        return None  # an entity of an external DTD that is not read: left out

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = entity_declaration
    parser.SkippedEntityHandler = skipped_entity
    try:
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    except (AttributeError, expat.ExpatError):
        pass
    try:
        parser.Parse(data, True)
        root = builder.close()
    except _Refused as exc:
        raise TopologyError("%s: %s" % (path, exc))
    except (expat.ExpatError, ValueError, TypeError, AssertionError, IndexError, LookupError) as exc:
        # TreeBuilder.close() asserts that a root element was seen.
        raise TopologyError("%s: malformed XML (%s)" % (path, exc or "no root element"))
    return root


def load_xml(path, expected_root):
    """Read and parse an XML file; any problem becomes a TopologyError naming the path."""
    data = _read_bounded(path)
    if not data.strip():
        raise TopologyError("%s: malformed XML (empty file)" % path)
    root = parse_xml_bytes(data, path)
    if root.tag != expected_root:
        tag = root.tag if len(root.tag) <= _MAX_SHOWN else root.tag[:_MAX_SHOWN] + "..."
        raise TopologyError("%s: root element is <%s>, expected <%s>" % (path, tag, expected_root))
    return root


class _Notes:
    """Warnings of one file, at most MAX_WARNINGS of them plus a count of the rest."""

    def __init__(self, topo, path):
        self.topo = topo
        self.path = path
        self.dropped = 0

    def __call__(self, message):
        if len(self.topo.warnings) < MAX_WARNINGS:
            self.topo.warn("%s: %s" % (self.path, message))
        else:
            self.dropped += 1

    def close(self):
        if self.dropped:
            self.topo.warn("%s: %d more notes like the above left out" % (self.path, self.dropped))


def _hex_or_none(text, maximum=0xFFFF):
    """Hex text (with or without 0x) -> int up to ``maximum``; anything else None."""
    if text is None:
        return None
    text = str(text).strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if not 0 < len(text) <= 8 or not all(c in "0123456789abcdef" for c in text):
        return None
    value = int(text, 16)
    return value if value <= maximum else None


def _small_int(text, maximum):
    """ASCII decimal text -> int in 0..maximum; anything else (other scripts' digits, 400 digits) None."""
    if text is None:
        return None
    text = str(text).strip()
    if not 0 < len(text) <= 20 or not all(c in "0123456789" for c in text):
        return None
    value = int(text)
    return value if value <= maximum else None


def _mask_to_cpus(mask):
    if not mask:
        return None
    return parse_cpumask(mask)


def _single_node(nodeset, ignore=()):
    nodes = [n for n in (_mask_to_cpus(nodeset) or []) if n not in ignore]
    return nodes[0] if len(nodes) == 1 else None


def _add_pci(topo, dev, note, state):
    """Put a PCI device in the model unless its bus id is there already (that is noted) or too many are."""
    if dev.address in topo.pci:
        note("PCI bus id %s appears more than once; the first entry is kept, the later one ignored" % dev.address)
        return False
    if len(topo.pci) >= MAX_PCI_DEVICES:
        state["pci_dropped"] = state.get("pci_dropped", 0) + 1
        return False
    topo.pci[dev.address] = dev
    return True


def _note_dropped(state, note):
    if state.get("pci_dropped"):
        note("more than %d PCI devices; %d more left out" % (MAX_PCI_DEVICES, state["pci_dropped"]))


# ---- hwloc ------------------------------------------------------------------------------------
def read_hwloc_xml(path):
    root = load_xml(path, "topology")
    topo = Topology(source="hwloc_xml")
    note = _Notes(topo, path)
    version = root.get("version") or "2.0"
    major = version.split(".")[0]
    bitflag_osdev = major not in ("1", "2")
    if major == "1":
        note("hwloc XML format %s (hwloc 1.x) is read on a best-effort basis" % _shown(version))
    # Memory-only nodes (GPU memory, HBM: they carry a subtype) sit in the nodesets of the
    # packages they are attached to; they say nothing about where a PCI device is.
    memory_only = set()
    numa_by_gp = {}
    for obj in root.iter("object"):
        if obj.get("type") != "NUMANode":
            continue
        node_id = _small_int(obj.get("os_index"), MAX_NUMA_NODES * 64)
        if node_id is None:
            continue
        if obj.get("subtype"):
            memory_only.add(node_id)
        gp_index = _small_int(obj.get("gp_index"), 2 ** 64)
        if gp_index is not None:
            numa_by_gp[gp_index] = node_id
    state = {"host_bridges": 0, "memory_only": memory_only, "numa_by_gp": numa_by_gp}
    for child in root:
        if child.tag == "object":
            _hwloc_walk(topo, child, None, None, None, bitflag_osdev, state, note)
    _hwloc_distances(topo, root, state, note)
    for rdma in topo.rdma.values():
        rdma.netdevs = sorted(n.name for n in topo.netdevs.values()
                              if n.pci_address and n.pci_address == rdma.pci_address)
    _note_dropped(state, note)
    note.close()
    return topo


def _hwloc_walk(topo, obj, locality, host_bridge, parent_pci, bitflag_osdev, state, note):
    # Iterative (an explicit stack) so that no file depth can exhaust Python's recursion limit;
    # children are visited in document order.
    stack = [(obj, locality, host_bridge, parent_pci)]
    while stack:
        obj, locality, host_bridge, parent_pci = stack.pop()
        kind = obj.get("type")
        if kind in ("Bridge", "PCIDev"):
            busid = obj.get("pci_busid")
            if busid is None:
                # A host bridge: everything below it shares one root complex.
                state["host_bridges"] += 1
                host_bridge = "hostbridge%d:%s" % (state["host_bridges"], (obj.get("bridge_pci") or "")[:_MAX_SHOWN])
                parent_pci = None
            else:
                address = normalize_pci_address(busid[:_MAX_SHOWN])
                if address is None:
                    note("PCI object with pci_busid %s ignored" % _shown(busid))
                    continue
                dev = _hwloc_pci_device(obj, address, locality, host_bridge, parent_pci, note,
                                        state["memory_only"])
                _add_pci(topo, dev, note, state)
                parent_pci = address
        elif kind == "OSDev":
            _hwloc_osdev(topo, obj, parent_pci, bitflag_osdev)
            continue
        elif obj.get("nodeset") is not None or obj.get("cpuset") is not None:
            locality = (obj.get("nodeset"), obj.get("cpuset"))
            if kind == "NUMANode":
                _hwloc_numa(topo, obj, note)
        children = [c for c in obj if c.tag == "object"]
        for child in reversed(children):
            stack.append((child, locality, host_bridge, parent_pci))


def _hwloc_pci_device(obj, address, locality, host_bridge, parent_pci, note, memory_only):
    dev = PciDevice(address=address, host_bridge=host_bridge or "hostbridge:unknown", parent=parent_pci)
    pci_type = obj.get("pci_type") or ""
    fields = pci_type[:200].replace("[", " ").replace("]", " ").replace(":", " ").split()
    # "0200 [8086:1521] [1028:0000] 01" -> class, vendor, device, subvendor, subdevice, revision
    if len(fields) >= 5:
        klass = _hex_or_none(fields[0])
        dev.class_code = (klass << 8) if klass is not None else None
        dev.vendor_id, dev.device_id = _hex_or_none(fields[1]), _hex_or_none(fields[2])
        dev.subsystem_vendor_id, dev.subsystem_device_id = _hex_or_none(fields[3]), _hex_or_none(fields[4])
    else:
        note("%s has pci_type %s, not understood" % (address, _shown(pci_type)))
    dev.current_gbytes_hint = _hwloc_link_speed(obj.get("pci_link_speed"), address, note)
    if locality is not None:
        dev.numa_node = _single_node(locality[0], memory_only)
        cpus = _mask_to_cpus(locality[1])
        dev.local_cpus = format_cpulist(cpus) if cpus else None
    for info in obj.findall("info"):
        if info.get("name") == "PCIDevice":
            dev.name = info.get("value")
    return dev


def _hwloc_link_speed(text, address, note):
    """hwloc's pci_link_speed (GB/s of the current link, 0 when unknown) -> float or None."""
    if text is None or len(text) > 64:
        if text is not None:
            note("%s has pci_link_speed %s, not a number; ignored" % (address, _shown(text)))
        return None
    try:
        speed = float(text)
    except ValueError:
        note("%s has pci_link_speed %s, not a number; ignored" % (address, _shown(text)))
        return None
    if math.isnan(speed) or speed <= 0:
        return None
    if math.isinf(speed) or speed > MAX_PLAUSIBLE_GBYTES:
        note("%s has pci_link_speed %s, not a plausible PCIe bandwidth in GB/s; ignored" % (address, _shown(text)))
        return None
    return speed


def _osdev_computes(obj, raw_type, bitflag_osdev, name, infos):
    """Whether an OS device is a compute interface of its PCI function (CUDA, OpenCL, NVML, RSMI, ...)."""
    subtype = (obj.get("subtype") or infos.get("CoProcType") or infos.get("Backend") or "").lower()
    if subtype in _COMPUTE_SUBTYPES:
        return True
    if subtype in _NOT_COMPUTE_SUBTYPES:
        return False
    if bitflag_osdev:
        flags = _small_int(raw_type, 2 ** 32) or 0
        coproc = bool(flags & _HWLOC3_COPROC)
    else:
        coproc = _HWLOC2_OSDEV.get(raw_type) == "coproc"
    lowered = (name or "").lower()
    return coproc or (lowered.startswith(_COMPUTE_NAME_PREFIXES) and lowered[-1:].isdigit())


def _hwloc_osdev(topo, obj, parent_pci, bitflag_osdev):
    name = obj.get("name")
    raw_type = (obj.get("osdev_type") or "").strip()
    if bitflag_osdev:
        flags = _small_int(raw_type, 2 ** 32) or 0
        is_rdma = bool(flags & _HWLOC3_OPENFABRICS)
        is_net = bool(flags & _HWLOC3_NETWORK) and not is_rdma
        is_gpu_type = bool(flags & (_HWLOC3_GPU | _HWLOC3_COPROC))
    else:
        kind = _HWLOC2_OSDEV.get(raw_type)
        is_rdma, is_net = kind == "openfabrics", kind == "network"
        is_gpu_type = kind in ("gpu", "coproc")
    infos = dict((i.get("name"), i.get("value")) for i in obj.findall("info"))
    if is_gpu_type and parent_pci in topo.pci and _osdev_computes(obj, raw_type, bitflag_osdev, name, infos):
        # A display-class function (VGA 0x0300 from a vendor the classifier does not know, an AMD
        # Tahiti say) is a GPU when CUDA, OpenCL, NVML, ROCm SMI or Level Zero drives it.
        # _model._endpoint_kind reads this.
        dev = topo.pci[parent_pci]
        dev.compute_osdevs = sorted(set(dev.compute_osdevs + [name or "?"]))
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
        port = _small_int(infos.get("Port"), 65536)
        dev.dev_port = port - 1 if port else None
        if parent_pci is None:
            dev.kind = "virtual"
        topo.netdevs[name] = dev


def _hwloc_numa(topo, obj, note):
    node_id = _small_int(obj.get("os_index"), MAX_NUMA_NODES * 64)
    if node_id is None:
        if obj.get("os_index") is not None:
            note("NUMANode with os_index %s ignored" % _shown(obj.get("os_index")))
        return
    # hwloc gives memory-only nodes (GPU memory, HBM, CXL: those with a subtype) the cpuset of
    # the CPUs they are local to; the kernel lists no CPUs in them.
    cpus = [] if obj.get("subtype") else _mask_to_cpus(obj.get("cpuset"))
    memory = obj.get("local_memory")
    memory_bytes = _small_int(memory, 2 ** 64)
    if memory is not None and memory_bytes is None:
        note("NUMANode %d has local_memory %s, not a byte count; ignored" % (node_id, _shown(memory)))
    topo.numa[node_id] = NumaNode(
        node_id=node_id,
        cpus=format_cpulist(cpus) if cpus is not None else None,
        memory_bytes=memory_bytes,
    )


def _split_values(elements, limit):
    """Integers from the text of several elements (hwloc writes at most 10 per element), in order.

    Returns (values, ok): ok is False when some token is not a u64 or more than ``limit`` values come.
    """
    values = []
    for element in elements:
        for token in (element.text or "").split():
            value = _small_int(token, 2 ** 64 - 1)
            if value is None or len(values) >= limit:
                return values, False
            values.append(value)
    return values, True


def _hwloc_distances(topo, root, state, note):
    """The NUMA latency matrix of hwloc v2+ (``<distances2>``), split over several elements or not."""
    for dist in root.iter("distances2"):
        if dist.get("type") != "NUMANode" or (dist.get("name") or "NUMALatency") != "NUMALatency":
            continue
        declared = dist.get("nbobjs")
        count = _small_int(declared, MAX_NUMA_NODES)
        if count is None:
            note("NUMA distance matrix with nbobjs %s ignored (at most %d nodes are read)"
                 % (_shown(declared), MAX_NUMA_NODES))
            return
        indexes, ok_i = _split_values(dist.findall("indexes"), count)
        values, ok_v = _split_values(dist.findall("u64values"), count * count)
        if not ok_i or not ok_v:
            note("NUMA distance matrix not understood (a value that is not a number, or more than nbobjs=%d "
                 "indexes or nbobjs^2=%d values)" % (count, count * count))
            return
        if len(indexes) != count or len(values) != count * count:
            note("NUMA distance matrix has %d indexes and %d values for nbobjs=%d (expected %d and %d); ignored"
                 % (len(indexes), len(values), count, count, count * count))
            return
        if (dist.get("indexing") or "os") == "gp":
            mapped = [state["numa_by_gp"].get(i) for i in indexes]
            if None in mapped:
                note("NUMA distance matrix indexes NUMA nodes by gp_index and names one that is not in the file")
                return
            indexes = mapped
        if len(set(indexes)) != count:
            note("NUMA distance matrix names a NUMA node twice; ignored")
            return
        for row, node_id in enumerate(indexes):
            if node_id in topo.numa:
                topo.numa[node_id].distances = dict(zip(indexes, values[row * count:(row + 1) * count]))
        return


# ---- NCCL -------------------------------------------------------------------------------------
def read_nccl_xml(path):
    """NCCL/RCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format).

    NCCL records the maximum link of each device (max_link_speed/max_link_width),
    so the links read here are maxima; current links stay unknown. NCCL climbs sysfs two
    levels at a time, so each ``<pci>`` bridge element is one PCIe switch (its upstream port)
    and a ``<pci>`` nested in another is a switch below a switch, never a downstream port.
    """
    root = load_xml(path, "system")
    topo = Topology(source="nccl_xml", root_ports_omitted=True)
    note = _Notes(topo, path)
    state = {}
    for cpu in root.findall("cpu"):
        numaid = cpu.get("numaid")
        node_id = _small_int(numaid, MAX_NUMA_NODES * 64)
        if numaid is not None and node_id is None and numaid.strip() != "-1":
            note("<cpu numaid=%s> is not a NUMA node number; locality unknown" % _shown(numaid))
        cpus = _mask_to_cpus(cpu.get("affinity"))
        if node_id is not None:
            topo.numa[node_id] = NumaNode(node_id=node_id, cpus=format_cpulist(cpus) if cpus is not None else None)
        context = {
            "numa": node_id,
            "cpus": format_cpulist(cpus) if cpus else None,
            "host_bridge": "cpu%s" % (numaid[:_MAX_SHOWN] if numaid is not None else len(topo.numa)),
        }
        _nccl_walk(topo, cpu, context, note, state)
    _note_dropped(state, note)
    note.close()
    return topo


def _nccl_link(element, address, note):
    speed_text, width_text = element.get("link_speed"), element.get("link_width")
    gts = parse_link_speed(speed_text[:64]) if speed_text is not None and len(speed_text) <= 64 else None
    if gts is not None and (math.isinf(gts) or gts > MAX_PLAUSIBLE_GTS):
        gts = None
    if gts is None and speed_text is not None and speed_text.strip() not in ("", "Unknown", "Unknown speed"):
        note("<pci busid=%s> link_speed %s is not a PCIe rate; ignored" % (address, _shown(speed_text)))
    width = parse_link_width(width_text[:8]) if width_text is not None and len(width_text) <= 8 else None
    if width is None and width_text is not None and width_text.strip() not in ("", "0", "255"):
        note("<pci busid=%s> link_width %s is not a PCIe width; ignored" % (address, _shown(width_text)))
    return gts, width


def _nccl_walk(topo, cpu, context, note, state):
    # An explicit stack: no depth of nesting reaches Python's recursion limit.
    stack = [(child, None) for child in reversed(list(cpu))]
    while stack:
        element, parent_pci = stack.pop()
        if element.tag == "pci":
            busid = element.get("busid")
            address = normalize_pci_address(busid[:_MAX_SHOWN]) if busid else None
            if address is None:
                note("<pci busid=%s> ignored" % _shown(busid))
                continue
            dev = PciDevice(address=address, host_bridge=context["host_bridge"], parent=parent_pci)
            dev.class_code = _hex_or_none(element.get("class"), 0xFFFFFF)
            dev.vendor_id = _hex_or_none(element.get("vendor"))
            dev.device_id = _hex_or_none(element.get("device"))
            dev.subsystem_vendor_id = _hex_or_none(element.get("subsystem_vendor"))
            dev.subsystem_device_id = _hex_or_none(element.get("subsystem_device"))
            dev.max_gts, dev.max_width = _nccl_link(element, address, note)
            dev.numa_node = context["numa"]
            dev.local_cpus = context["cpus"]
            if (dev.class_code is not None and dev.class_code >> 8 == 0x0604
                    and parent_pci is not None and parent_pci in topo.pci):
                # One <pci> bridge per switch: a bridge inside a bridge is a nested switch.
                dev.nccl_nested_switch = True
            _add_pci(topo, dev, note, state)
            for child in reversed(list(element)):
                stack.append((child, address))
        elif element.tag == "nic":
            for net in element.findall("net"):
                _nccl_net(topo, net, parent_pci, note)


def _nccl_net(topo, net, pci_address, note):
    name = net.get("name")
    if not name:
        return
    speed = net.get("speed")
    speed_mbps = _small_int(speed, 2 ** 63)
    if speed is not None and speed_mbps is None and speed.strip() not in ("", "0", "-1"):
        note("<net name=%s speed=%s> is not a speed in Mb/s, ignored" % (_shown(name), _shown(speed)))
    if speed_mbps is not None and speed_mbps > MAX_PLAUSIBLE_MBPS:
        note("<net name=%s speed=%s> is not a plausible speed in Mb/s, ignored" % (_shown(name), _shown(speed)))
        speed_mbps = None
    speed_mbps = speed_mbps or None
    port = _small_int(net.get("port") or "1", 65536)
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
                                    kind="physical" if pci_address else "virtual")
