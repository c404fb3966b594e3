# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The topology model every reader fills and every consumer reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Dict, List, Optional

# PCI vendor ids that matter for classification.
VENDOR_NVIDIA = 0x10DE
VENDOR_AMD = 0x1002
VENDOR_INTEL = 0x8086


# Kernel modules whose presence the checks need (GPUDirect RDMA, bonding, VLANs, drivers).
RELEVANT_MODULES = ("nvidia", "nvidia_peermem", "nv_peer_mem", "amdgpu", "ib_core", "mlx5_core", "rdma_rxe", "siw",
                    "bonding", "8021q")
KIND_GPU = "gpu"
KIND_ACCELERATOR = "accelerator"
KIND_NIC = "nic"
KIND_RDMA = "rdma"
KIND_NVME = "nvme"
KIND_ROOT_PORT = "root_port"
KIND_SWITCH_UP = "switch_upstream"
KIND_SWITCH_DOWN = "switch_downstream"
KIND_OTHER_BRIDGE = "other_bridge"
KIND_OTHER = "other"
BRIDGE_KINDS = (KIND_ROOT_PORT, KIND_SWITCH_UP, KIND_SWITCH_DOWN, KIND_OTHER_BRIDGE)
# The facts' contract on kinds: every consumer (rules, the report's tree, the NCCL topology file) names these groups
# and never spells a kind itself (tests/unit/plugins/module_utils/_topology/test_kinds.py holds that).
ACCELERATOR_KINDS = (KIND_GPU, KIND_ACCELERATOR)  # an APU's GPU function is a gpu (MI300A), no kind of its own
NETWORK_KINDS = (KIND_NIC, KIND_RDMA)
ENDPOINT_KINDS = ACCELERATOR_KINDS + NETWORK_KINDS + (KIND_NVME,)
# A root port hangs off its host bridge and a switch's downstream port off its upstream port, inside the chip: no
# PCIe link of their own there (their link figures are those of the link below them).
INTERNAL_KINDS = (KIND_ROOT_PORT, KIND_SWITCH_DOWN)
KINDS = ENDPOINT_KINDS + BRIDGE_KINDS + (KIND_OTHER,)

# The kinds of a network interface (facts' nics[].kind), the same contract: consumers name these and the groups.
NETDEV_PHYSICAL = "physical"  # a port on a PCI function of its own (Ethernet, RoCE)
NETDEV_IPOIB = "ipoib"        # IP over an InfiniBand port (also a PCI function's)
NETDEV_BOND = "bond"
NETDEV_VLAN = "vlan"
NETDEV_BRIDGE = "bridge"
NETDEV_VIRTUAL = "virtual"    # veth, tunnels, a captured link whose target was not captured
NETDEV_LOOPBACK = "loopback"
PORT_NETDEVS = (NETDEV_PHYSICAL, NETDEV_IPOIB)  # on a device of their own: a slot, a NUMA node, a PCIe link
# what can carry a training or storage network: a port, or a bond or VLAN over ports
CARRIER_NETDEVS = PORT_NETDEVS + (NETDEV_BOND, NETDEV_VLAN)
SOFTWARE_NETDEVS = (NETDEV_BRIDGE, NETDEV_VIRTUAL)  # in the kernel only: no port of their own below
NETDEV_KINDS = CARRIER_NETDEVS + SOFTWARE_NETDEVS + (NETDEV_LOOPBACK,)


@dataclass
class PciDevice:
    address: str                      # dddd:bb:dd.f, lower case
    host_bridge: str                  # e.g. "pci0000:00"; devices on one host bridge share a root complex
    parent: Optional[str] = None      # address of the parent bridge, None below the host bridge
    class_code: Optional[int] = None  # 24-bit class/subclass/prog-if
    vendor_id: Optional[int] = None
    device_id: Optional[int] = None
    subsystem_vendor_id: Optional[int] = None
    subsystem_device_id: Optional[int] = None
    driver: Optional[str] = None
    numa_node: Optional[int] = None
    local_cpus: Optional[str] = None  # cpulist form, "0-7,16-23"
    current_gts: Optional[float] = None
    current_width: Optional[int] = None
    max_gts: Optional[float] = None
    max_width: Optional[int] = None
    # Some sources (hwloc XML) give only the usable bandwidth of the current link.
    current_gbytes_hint: Optional[float] = None
    name: Optional[str] = None
    has_rdma: bool = False
    # ACS Control register of a bridge, when its extended config space was readable (root, live sysfs).
    acs_control: Optional[int] = None
    acs_readable: bool = False
    # The PCI Express capability's Device Capabilities and Device Control (payload and read request sizes, relaxed
    # ordering), when the config space held it: None when not read, {"readable": False} when it stopped short.
    pcie_control: Optional[Dict[str, object]] = None
    # The IOMMU group (sysfs iommu_group link) and its default domain type (identity, DMA, DMA-FQ, ...).
    iommu_group: Optional[int] = None
    iommu_type: Optional[str] = None
    # OS devices a compute runtime gives the function (hwloc: CUDA, OpenCL, NVML, ROCm SMI, Level Zero): a
    # GPU by what software sees, whatever its class and vendor say.
    compute_osdevs: List[str] = field(default_factory=list)
    # NCCL topology XML: a <pci> bridge inside another one (NCCL writes one element per switch).
    nccl_nested_switch: bool = False
    kind: str = KIND_OTHER


@dataclass
class NumaNode:
    node_id: int
    cpus: Optional[str] = None        # cpulist; "" for CPU-less (memory-only) nodes
    memory_bytes: Optional[int] = None
    distances: Dict[int, int] = field(default_factory=dict)


@dataclass
class NetDev:
    name: str
    pci_address: Optional[str] = None
    kind: str = NETDEV_PHYSICAL       # one of NETDEV_KINDS
    driver: Optional[str] = None
    speed_mbps: Optional[int] = None
    duplex: Optional[str] = None
    mtu: Optional[int] = None
    operstate: Optional[str] = None
    carrier: Optional[bool] = None
    mac: Optional[str] = None
    dev_port: Optional[int] = None
    # "address/prefix" strings; None when the source has no addresses (captures, XML).
    ipv4: Optional[List[str]] = None
    ipv6: Optional[List[str]] = None


@dataclass
class GidEntry:
    index: int
    gid: str
    gid_type: Optional[str] = None    # "IB/RoCE v1" or "RoCE v2"
    netdev: Optional[str] = None
    ipv4: Optional[str] = None


@dataclass
class RdmaPort:
    port: int
    state: Optional[str] = None       # ACTIVE, DOWN, INIT, ...
    rate_gbps: Optional[float] = None
    rate: Optional[str] = None        # verbatim, "56 Gb/sec (4X FDR)"
    link_layer: Optional[str] = None  # InfiniBand or Ethernet
    active_mtu: Optional[int] = None
    netdev: Optional[str] = None
    gids: List[GidEntry] = field(default_factory=list)


@dataclass
class RdmaDevice:
    name: str
    pci_address: Optional[str] = None
    netdevs: List[str] = field(default_factory=list)
    ports: List[RdmaPort] = field(default_factory=list)
    # a driver over a netdev instead of a PCI function: "rxe" (Soft-RoCE) or "siw" (soft iWARP); None for hardware
    software: Optional[str] = None


@dataclass
class BondMember:
    name: str
    mii_status: Optional[str] = None
    speed_mbps: Optional[int] = None
    duplex: Optional[str] = None
    aggregator_id: Optional[int] = None
    partner_mac: Optional[str] = None
    link_failure_count: Optional[int] = None


@dataclass
class Bond:
    name: str
    mode: Optional[str] = None        # kernel short name: 802.3ad, active-backup, balance-xor, ...
    miimon: Optional[int] = None
    xmit_hash_policy: Optional[str] = None
    lacp_rate: Optional[str] = None
    mii_status: Optional[str] = None
    active_aggregator_id: Optional[int] = None
    partner_mac: Optional[str] = None
    members: List[BondMember] = field(default_factory=list)


@dataclass
class Vlan:
    name: str
    vlan_id: Optional[int] = None
    parent: Optional[str] = None
    source: str = "kernel"            # "kernel" (/proc/net/vlan/config) or "name" (inferred)


@dataclass
class GpuInfo:
    """What NVML (or another vendor library) adds to a GPU's PCI device."""

    address: str
    index: Optional[int] = None
    name: Optional[str] = None
    uuid: Optional[str] = None
    max_generation: Optional[int] = None
    max_width: Optional[int] = None
    current_generation: Optional[int] = None
    current_width: Optional[int] = None
    performance_state: Optional[int] = None
    # NVML's NVLink answer: {"links": active links, "version": NVLink version, "remotes": {address: {"links", "type"}}}
    # ("type" gpu, switch or None), {"links": 0, ...} where NVML says the GPU has none, None where it could not tell
    nvlink: Optional[Dict[str, object]] = None


@dataclass
class Topology:
    source: str
    pci: Dict[str, PciDevice] = field(default_factory=dict)
    numa: Dict[int, NumaNode] = field(default_factory=dict)
    netdevs: Dict[str, NetDev] = field(default_factory=dict)
    rdma: Dict[str, RdmaDevice] = field(default_factory=dict)
    bonds: Dict[str, Bond] = field(default_factory=dict)
    vlans: Dict[str, Vlan] = field(default_factory=dict)
    gpu_info: Dict[str, GpuInfo] = field(default_factory=dict)
    # NVLinks a source other than NVML gives (an NCCL topology dump's <nvlink>), per GPU address, in GpuInfo.nvlink's form
    nvlink: Dict[str, Dict[str, object]] = field(default_factory=dict)
    # Loaded state of the kernel modules in RELEVANT_MODULES; None when the source cannot tell.
    kernel_modules: Optional[Dict[str, bool]] = None
    # the kernel's PCIe bandwidth lines (sysfs/kernel_log.py): {"source", "entries"}; None for XML sources
    kernel_pcie: Optional[Dict[str, object]] = None
    # What GPUDirect needs of the kernel and the driver (sources/sysfs/kernel.py): release, IOMMU options of the
    # command line, IOMMU groups present, the NVIDIA driver's version line.
    kernel: Optional[Dict[str, object]] = None
    # Stability counters (sources/sysfs/counters.py): interfaces, AER, RDMA ports, TCP, boot time; None when the
    # source has none (XML) or they were not asked for.
    counters: Optional[Dict[str, object]] = None
    # NCCL's topology files leave root ports out: a bridge right below a <cpu> sits below a root port.
    root_ports_omitted: bool = False
    warnings: List[str] = field(default_factory=list)

    def warn(self, message):
        self.warnings.append(message)

    def ancestors(self, address):
        """Bridges from the device's parent up to the bridge below the host bridge."""
        chain = []
        seen = set()
        current = self.pci[address].parent
        while current is not None and current in self.pci and current not in seen:
            seen.add(current)
            chain.append(current)
            current = self.pci[current].parent
        return chain

    def children(self, address):
        return [dev.address for dev in self.pci.values() if dev.parent == address]


def classify_devices(topo):
    """Set ``kind`` on every PCI device from its class, vendor, driver and place in the tree."""
    has_bridge_child = set()
    for dev in topo.pci.values():
        if dev.parent is not None and _is_pci_bridge(dev):
            has_bridge_child.add(dev.parent)
    for dev in topo.pci.values():
        dev.kind = _endpoint_kind(dev)
    # Bridges second: a downstream port is recognised by its parent being an upstream port.
    for dev in sorted(topo.pci.values(), key=lambda d: len(topo.ancestors(d.address))):
        if not _is_pci_bridge(dev):
            continue
        parent = topo.pci.get(dev.parent) if dev.parent else None
        if parent is None and topo.root_ports_omitted:
            dev.kind = KIND_SWITCH_UP if dev.address in has_bridge_child else KIND_OTHER_BRIDGE
        elif topo.root_ports_omitted and _is_pci_bridge(parent):
            # NCCL's files leave out downstream ports too: a bridge element inside a switch's element is the next
            # switch down (its link is that switch's uplink), not a port of the one above.
            dev.kind = KIND_SWITCH_UP
        elif parent is None:
            dev.kind = KIND_ROOT_PORT
        elif parent.kind == KIND_SWITCH_UP:
            dev.kind = KIND_SWITCH_DOWN
        elif parent.kind in INTERNAL_KINDS and dev.address in has_bridge_child:
            dev.kind = KIND_SWITCH_UP
        else:
            dev.kind = KIND_OTHER_BRIDGE


def _is_pci_bridge(dev):
    return dev.class_code is not None and (dev.class_code >> 8) == 0x0604


def _endpoint_kind(dev):
    code = dev.class_code
    if code is None:
        return KIND_OTHER
    base, sub = code >> 16, (code >> 8) & 0xFF
    vendor = dev.vendor_id
    if base == 0x03:
        # 3D controllers and "other display" are compute GPUs; a VGA controller is a GPU
        # only for NVIDIA or under amdgpu: BMC display chips (ASPEED, Matrox, ATI ES1000)
        # are VGA too.
        if sub in (0x02, 0x80) or vendor == VENDOR_NVIDIA or dev.driver == "amdgpu" or dev.compute_osdevs:
            return KIND_GPU
        return KIND_OTHER
    if base == 0x12 or (base == 0x0B and sub == 0x40):
        # Processing accelerators; AMD Instinct MI300 and NVIDIA parts in this class are GPUs.
        return KIND_GPU if vendor in (VENDOR_NVIDIA, VENDOR_AMD) else KIND_ACCELERATOR
    if base == 0x02:
        return KIND_RDMA if (sub == 0x07 or dev.has_rdma) else KIND_NIC
    if base == 0x0C and sub == 0x06:
        return KIND_RDMA  # InfiniBand serial bus controller (QLogic, older Mellanox)
    if base == 0x01 and sub == 0x08:
        return KIND_NVME
    if base == 0x06 and sub != 0x04:
        return KIND_OTHER_BRIDGE if sub not in (0x00, 0x01) else KIND_OTHER
    if dev.has_rdma:
        return KIND_RDMA
    return KIND_OTHER
