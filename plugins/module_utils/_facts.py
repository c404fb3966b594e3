# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Turn a topology model into ``ansible_facts.gpuops_fabric``: devices, paths, subsets."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils import _ethtool, _lldp
from ansible_collections.gpuops.fabric.plugins.module_utils._cpulist import parse_cpulist
from ansible_collections.gpuops.fabric.plugins.module_utils._errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._model import (
    KIND_ACCELERATOR,
    KIND_GPU,
    KIND_NIC,
    KIND_RDMA,
    KIND_ROOT_PORT,
    KIND_SWITCH_DOWN,
    VENDOR_AMD,
    VENDOR_INTEL,
    VENDOR_NVIDIA,
    classify_devices,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._pcie import (
    generation_from_gts,
    link_dict,
    pcie_bandwidth,
)

SCHEMA_VERSION = 1
SUBSETS = ("numa", "pci", "gpu", "nic", "rdma", "bond", "vlan", "paths", "nccl", "lldp", "link_modes")
MIN_SUBSETS = ("numa",)
PATH_TYPES = ("PIX", "PXB", "PHB", "NODE", "SYS")
SOURCES = ("sysfs", "hwloc_xml", "nccl_xml")

# What each subset needs the reader to load.
_READER_PARTS = {
    "numa": ("numa",),
    "pci": ("pci",),
    "gpu": ("pci",),
    "nic": ("pci", "net", "rdma"),
    "rdma": ("pci", "net", "rdma"),
    "bond": ("net", "bond"),
    # read on the live node by the module (lldpctl, ethtool), nothing from the reader beyond the NICs
    "lldp": ("net",),
    "link_modes": ("pci", "net"),
    "vlan": ("net", "vlan"),
    "paths": ("pci", "net", "rdma"),
    "nccl": (),
}


def resolve_subsets(requested):
    """Expand ``gather_subset`` (all, min, names, ``!name``, ``!all``) to a list in canonical order.

    As with Ansible's own facts: a list of only exclusions starts from ``all``; ``!all`` leaves
    just ``min`` plus what is named; ``min`` is always gathered unless ``!min`` is given.
    """
    items = [str(item).strip() for item in (requested or ["all"])]
    include, exclude = set(), set()
    for item in items:
        negate = item.startswith("!")
        name = item[1:] if negate else item
        if name not in SUBSETS and name not in ("all", "min"):
            raise ValueError("gather_subset: %r is not one of all, min, %s (optionally prefixed with !)"
                             % (item, ", ".join(SUBSETS)))
        if negate:
            if name not in ("all", "min"):
                exclude.add(name)
        elif name == "all":
            include.update(SUBSETS)
        elif name == "min":
            include.update(MIN_SUBSETS)
        else:
            include.add(name)
    if not any(not item.startswith("!") for item in items) and "!all" not in items:
        include.update(SUBSETS)
    if "!min" not in items:
        include.update(MIN_SUBSETS)
    else:
        exclude.update(set(MIN_SUBSETS) - set(n for n in items if n in MIN_SUBSETS))
    return [s for s in SUBSETS if s in include and s not in exclude]


def reader_parts(subsets):
    parts = set()
    for subset in subsets:
        parts.update(_READER_PARTS[subset])
    return parts


def load_topology(source="sysfs", root="/", path=None, parts=None):
    """Read a topology from one of the sources; errors raise TopologyError naming the input."""
    if source == "sysfs":
        from ansible_collections.gpuops.fabric.plugins.module_utils._sysfs import SysfsReader
        reader = SysfsReader(root or "/")
        topo = reader.read_all(parts or ("pci", "numa", "net", "rdma", "bond", "vlan"))
    elif source in ("hwloc_xml", "nccl_xml"):
        if not path:
            raise TopologyError("path is required when source is %s" % source)
        from ansible_collections.gpuops.fabric.plugins.module_utils import _xmlsources
        topo = _xmlsources.read_hwloc_xml(path) if source == "hwloc_xml" else _xmlsources.read_nccl_xml(path)
    else:
        raise TopologyError("source: %r is not one of %s" % (source, ", ".join(SOURCES)))
    classify_devices(topo)
    return topo


# ---- links and paths ------------------------------------------------------------------------------
def _hex(value, digits=4):
    return None if value is None else "0x%0*x" % (digits, value)


def device_links(dev):
    current = link_dict(dev.current_gts, dev.current_width)
    if current["gbytes_per_s"] is None and dev.current_gbytes_hint is not None:
        # hwloc XML records only the usable bandwidth of the current link.
        current["gbytes_per_s"] = round(dev.current_gbytes_hint, 3)
    return {"current": current, "max": link_dict(dev.max_gts, dev.max_width)}


def _link_above(topo, address):
    """The link between a device and its parent bridge, or None inside a switch.

    A root port's or downstream port's own link registers describe the link *below*
    it, so the link above such a port is internal to the switch or root complex.
    """
    dev = topo.pci[address]
    if dev.kind in (KIND_ROOT_PORT, KIND_SWITCH_DOWN):
        return None
    parent = topo.pci.get(dev.parent) if dev.parent else None
    entry = {"device": address, "basis": "current"}
    gts, width = dev.current_gts, dev.current_width
    if (gts is None or width is None) and parent is not None and parent.kind in (KIND_ROOT_PORT, KIND_SWITCH_DOWN):
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


class _PathCache:
    """Ancestors and link-above per device, computed once for all pairs of one topology."""

    def __init__(self, topo):
        self.topo = topo
        self._up = {}
        self._link = {}

    def up(self, address):
        if address not in self._up:
            self._up[address] = [address] + self.topo.ancestors(address)
        return self._up[address]

    def link(self, address):
        if address not in self._link:
            self._link[address] = _link_above(self.topo, address)
        return self._link[address]


def pci_path(topo, a, b, cache=None):
    """Path type (as ``nvidia-smi topo -m`` names it), links and bottleneck between two devices."""
    cache = cache or _PathCache(topo)
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
    links = [dict(link) for link in (cache.link(x) for x in on_path) if link is not None]
    known = [link for link in links if link["gbytes_per_s"] is not None]
    narrowest = min(known, key=lambda link: link["gbytes_per_s"]) if known else None
    return {
        "type": path_type,
        "common_bridge": common if common not in (a, b) else None,
        "links": links,
        "bottleneck_gbytes_per_s": narrowest["gbytes_per_s"] if narrowest else None,
        "bottleneck_device": narrowest["device"] if narrowest else None,
    }


def path_rank(path_type):
    return PATH_TYPES.index(path_type) if path_type in PATH_TYPES else len(PATH_TYPES)


# ---- facts ---------------------------------------------------------------------------------------
def _vendor_name(vendor_id):
    return {VENDOR_NVIDIA: "nvidia", VENDOR_AMD: "amd", VENDOR_INTEL: "intel"}.get(vendor_id, "other")


def _pci_fact(topo, dev):
    return {
        "address": dev.address,
        "class": _hex(dev.class_code, 6),
        "vendor_id": _hex(dev.vendor_id),
        "device_id": _hex(dev.device_id),
        "subsystem_vendor_id": _hex(dev.subsystem_vendor_id),
        "subsystem_device_id": _hex(dev.subsystem_device_id),
        "name": dev.name,
        "kind": dev.kind,
        "driver": dev.driver,
        "numa_node": dev.numa_node,
        "local_cpus": dev.local_cpus,
        "link": device_links(dev),
        "parent": dev.parent,
        "chain": topo.ancestors(dev.address),
        "acs": _acs_fact(dev),
        "host_bridge": dev.host_bridge,
    }


# ACS Control bits (PCIe base spec, ACS Extended Capability).
ACS_BITS = (("source_validation", 0x01), ("translation_blocking", 0x02), ("request_redirect", 0x04),
            ("completion_redirect", 0x08), ("upstream_forwarding", 0x10), ("egress_control", 0x20),
            ("direct_translated", 0x40))


def _acs_fact(dev):
    """For bridges: whether ACS could be read, is present, and which controls are on."""
    if dev.kind not in ("root_port", "switch_upstream", "switch_downstream", "other_bridge"):
        return None
    fact = {"readable": dev.acs_readable, "present": dev.acs_control is not None,
            "control": _hex(dev.acs_control) if dev.acs_control is not None else None}
    for name, bit in ACS_BITS:
        fact[name] = bool(dev.acs_control & bit) if dev.acs_control is not None else None
    # Request or completion redirect sends peer-to-peer traffic up through the root complex.
    fact["redirects_p2p"] = (bool(dev.acs_control & 0x0C) if dev.acs_control is not None else None)
    return fact


def _numa_facts(topo):
    nodes = []
    for node in sorted(topo.numa.values(), key=lambda n: n.node_id):
        cpus = parse_cpulist(node.cpus) if node.cpus is not None else None
        nodes.append({
            "id": node.node_id,
            "cpus": node.cpus,
            "cpu_count": len(cpus) if cpus is not None else None,
            "has_cpus": bool(cpus) if cpus is not None else None,
            "memory_bytes": node.memory_bytes,
            "distances": dict((str(k), v) for k, v in sorted(node.distances.items())),
        })
    return {"count": len(nodes), "nodes": nodes}


def gpu_link_state(dev, info):
    """Judge a GPU's link: ok, degraded, idle (cannot judge), or unknown.

    GPUs drop to Gen1 when idle to save power, so a lower generation is only a fault when
    NVML says the GPU is busy (performance state P0). Width does not drop at idle.
    """
    if info is not None and info.current_width is not None:
        cur_gen, max_gen = info.current_generation, info.max_generation
        cur_w, max_w = info.current_width, info.max_width
    else:
        cur_gen, max_gen = generation_from_gts(dev.current_gts), generation_from_gts(dev.max_gts)
        cur_w, max_w = dev.current_width, dev.max_width
    if cur_w is not None and max_w is not None and cur_w < max_w:
        return "degraded", "link width x%d below its maximum x%d" % (cur_w, max_w)
    if cur_gen is None or max_gen is None or cur_w is None or max_w is None:
        return "unknown", "link generation or width not reported"
    if cur_gen < max_gen:
        pstate = info.performance_state if info is not None else None
        if pstate == 0:
            return "degraded", "Gen%d below its maximum Gen%d while busy (P0)" % (cur_gen, max_gen)
        if pstate is not None:
            return "idle", "Gen%d below its maximum Gen%d at P%d: power saving, cannot judge at idle" % (
                cur_gen, max_gen, pstate)
        return "idle", "Gen%d below its maximum Gen%d; without NVML the GPU may be idle, cannot judge" % (
            cur_gen, max_gen)
    return "ok", None


def _nic_functions(topo):
    return [d for d in topo.pci.values() if d.kind in (KIND_NIC, KIND_RDMA)]


def _names_on_function(topo, address):
    names = sorted(n.name for n in topo.netdevs.values() if n.pci_address == address)
    names += sorted(r.name for r in topo.rdma.values() if r.pci_address == address)
    return names


def build_facts(topo, subsets, nvml_status=None):
    facts = {
        "schema_version": SCHEMA_VERSION,
        "source": topo.source,
        "gather_subset": list(subsets),
        "nvml": nvml_status or {"status": "not_used", "reason": None, "driver_version": None},
    }
    if "numa" in subsets:
        facts["numa"] = _numa_facts(topo)
    if "pci" in subsets:
        facts["pci"] = [_pci_fact(topo, d) for _a, d in sorted(topo.pci.items())]
    gpus = sorted((d for d in topo.pci.values() if d.kind in (KIND_GPU, KIND_ACCELERATOR)),
                  key=lambda d: d.address)
    nic_functions = sorted(_nic_functions(topo), key=lambda d: d.address)
    paths = None
    if "paths" in subsets or "gpu" in subsets:
        paths = _paths(topo, gpus, nic_functions)
    if "gpu" in subsets:
        facts["gpus"] = [_gpu_fact(topo, i, d, paths) for i, d in enumerate(gpus)]
    if "nic" in subsets:
        facts["nics"] = _nic_facts(topo)
    if "rdma" in subsets:
        facts["rdma"] = [_rdma_fact(topo, r) for _n, r in sorted(topo.rdma.items())]
        facts["kernel_modules"] = dict(topo.kernel_modules) if topo.kernel_modules is not None else None
    if "bond" in subsets:
        facts["bonds"] = [_bond_fact(topo, b) for _n, b in sorted(topo.bonds.items())]
    if "vlan" in subsets:
        facts["vlans"] = [
            {"name": v.name, "id": v.vlan_id, "parent": v.parent, "source": v.source,
             "mtu": topo.netdevs[v.name].mtu if v.name in topo.netdevs else None}
            for _n, v in sorted(topo.vlans.items())
        ]
    if "paths" in subsets:
        facts["paths"] = paths
    facts["warnings"] = list(topo.warnings)
    return facts


def _paths(topo, gpus, nic_functions):
    gpu_nic, gpu_gpu, nearest = [], [], {}
    cache = _PathCache(topo)
    for gpu in gpus:
        best = []
        for nic in nic_functions:
            entry = {"gpu": gpu.address, "nic": nic.address, "nic_names": _names_on_function(topo, nic.address)}
            entry.update(pci_path(topo, gpu.address, nic.address, cache))
            gpu_nic.append(entry)
            best.append((path_rank(entry["type"]), -(entry["bottleneck_gbytes_per_s"] or 0), nic.address, entry))
        best.sort(key=lambda item: item[:3])
        if best:
            top_rank = best[0][0]
            nearest[gpu.address] = [
                {"nic": e["nic"], "nic_names": e["nic_names"], "type": e["type"]}
                for rank, _bw, _addr, e in best if rank == top_rank
            ]
        else:
            nearest[gpu.address] = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            entry = {"gpu": a.address, "peer": b.address}
            entry.update(pci_path(topo, a.address, b.address, cache))
            gpu_gpu.append(entry)
    return {"gpu_nic": gpu_nic, "gpu_gpu": gpu_gpu, "nearest_nics": nearest}


def _gpu_fact(topo, index, dev, paths):
    info = topo.gpu_info.get(dev.address)
    state, reason = gpu_link_state(dev, info)
    nearest = paths["nearest_nics"].get(dev.address, []) if paths else []
    nvml = None
    if info is not None:
        nvml = {
            "index": info.index, "name": info.name, "uuid": info.uuid,
            "max_generation": info.max_generation, "max_width": info.max_width,
            "current_generation": info.current_generation, "current_width": info.current_width,
            "performance_state": info.performance_state,
            "max_gbytes_per_s": _round(pcie_bandwidth(info.max_generation, info.max_width)),
        }
    return {
        "index": index,
        "address": dev.address,
        "kind": dev.kind,
        "vendor": _vendor_name(dev.vendor_id),
        "vendor_id": _hex(dev.vendor_id),
        "device_id": _hex(dev.device_id),
        "name": (info.name if info is not None and info.name else dev.name),
        "driver": dev.driver,
        "numa_node": dev.numa_node,
        "local_cpus": dev.local_cpus,
        "link": device_links(dev),
        "link_state": state,
        "link_state_reason": reason,
        "nvml": nvml,
        "facts_from": "nvml" if info is not None else topo.source,
        "nearest_nics": nearest,
    }


def _round(value):
    return round(value, 3) if value is not None else None


def _nic_facts(topo):
    cards = {}
    for dev in _nic_functions(topo):
        cards.setdefault(dev.address.rsplit(".", 1)[0], []).append(dev.address)
    bond_of = {}
    for bond in topo.bonds.values():
        for member in bond.members:
            bond_of[member.name] = bond.name
    nics = []
    for _name, net in sorted(topo.netdevs.items()):
        dev = topo.pci.get(net.pci_address) if net.pci_address else None
        card = net.pci_address.rsplit(".", 1)[0] if net.pci_address else None
        rdma = sorted(r.name for r in topo.rdma.values() if net.pci_address and r.pci_address == net.pci_address)
        nics.append({
            "name": net.name,
            "kind": net.kind,
            "address": net.pci_address,
            "card": card,
            "ports_on_card": len(cards.get(card, [])) if card else None,
            "driver": net.driver or (dev.driver if dev else None),
            "speed_mbps": net.speed_mbps,
            "duplex": net.duplex,
            "mtu": net.mtu,
            "min_mtu": None,
            "max_mtu": None,
            "operstate": net.operstate,
            "carrier": net.carrier,
            "mac": net.mac,
            "numa_node": dev.numa_node if dev else None,
            "pci_link": device_links(dev) if dev else None,
            "rdma_devices": rdma,
            "ipv4": net.ipv4,
            "ipv6": net.ipv6,
            "bond_master": bond_of.get(net.name),
            "vlan": ({"id": topo.vlans[net.name].vlan_id, "parent": topo.vlans[net.name].parent}
                     if net.name in topo.vlans else None),
        })
    return nics


def _rdma_fact(topo, rdma):
    dev = topo.pci.get(rdma.pci_address) if rdma.pci_address else None
    ports = []
    for port in rdma.ports:
        v2 = [g for g in port.gids if g.gid_type == "RoCE v2" and g.ipv4]
        chosen = next((g for g in v2 if g.netdev == port.netdev), v2[0] if v2 else None)
        ports.append({
            "port": port.port,
            "state": port.state,
            "rate": port.rate,
            "rate_gbps": port.rate_gbps,
            "link_layer": port.link_layer,
            "active_mtu": port.active_mtu,
            "netdev": port.netdev,
            "roce_v2_gid_index": chosen.index if chosen else None,
            "roce_v2_ipv4": chosen.ipv4 if chosen else None,
            "gids": [{"index": g.index, "gid": g.gid, "type": g.gid_type, "netdev": g.netdev, "ipv4": g.ipv4}
                     for g in port.gids],
        })
    return {
        "name": rdma.name,
        "address": rdma.pci_address,
        "numa_node": dev.numa_node if dev else None,
        "netdevs": list(rdma.netdevs),
        "ports": ports,
    }


def _bond_fact(topo, bond):
    members = []
    for m in bond.members:
        net = topo.netdevs.get(m.name)
        members.append({
            "name": m.name,
            "mii_status": m.mii_status,
            "speed_mbps": m.speed_mbps if m.speed_mbps is not None else (net.speed_mbps if net else None),
            "duplex": m.duplex,
            "aggregator_id": m.aggregator_id,
            "partner_mac": m.partner_mac,
            "has_partner": (None if m.partner_mac is None
                            else m.partner_mac.replace(":", "").strip("0") != ""),
            "link_failure_count": m.link_failure_count,
        })
    net = topo.netdevs.get(bond.name)
    return {
        "name": bond.name,
        "mode": bond.mode,
        "miimon": bond.miimon,
        "xmit_hash_policy": bond.xmit_hash_policy,
        "lacp_rate": bond.lacp_rate,
        "mii_status": bond.mii_status,
        "mtu": net.mtu if net else None,
        "active_aggregator_id": bond.active_aggregator_id,
        "partner_mac": bond.partner_mac,
        "members": members,
    }


def merge_link_limits(facts, ip_json):
    """Add each NIC's MTU range from ``ip -json -details link show`` (the kernel's IFLA_MIN_MTU/IFLA_MAX_MTU).

    sysfs does not carry the range; only netlink does. 0 means the driver sets no limit: left unknown (None).
    Returns the number of NICs that got a range.
    """
    import json
    try:
        links = json.loads(ip_json)
    except ValueError:
        return 0
    limits = {}
    for link in links if isinstance(links, list) else []:
        if isinstance(link, dict) and isinstance(link.get("ifname"), str):
            limits[link["ifname"]] = (link.get("min_mtu") or None, link.get("max_mtu") or None)
    merged = 0
    for nic in facts.get("nics") or []:
        if nic["name"] in limits:
            nic["min_mtu"], nic["max_mtu"] = limits[nic["name"]]
            merged += nic["max_mtu"] is not None
    return merged


def gather(source="sysfs", root="/", path=None, gather_subset=None, nvml="auto", nvml_module=None):
    """Everything the topology_facts module does, as a function (also used by tests and benchmarks)."""
    subsets = resolve_subsets(gather_subset)
    topo = load_topology(source, root, path, reader_parts(subsets))
    nvml_status = {"status": "not_used", "reason": None, "driver_version": None}
    live = source == "sysfs" and (root or "/") == "/"
    gpus_present = any(d.kind == KIND_GPU and d.vendor_id == VENDOR_NVIDIA for d in topo.pci.values())
    if nvml == "no":
        nvml_status["reason"] = "disabled (nvml: no)"
    elif not live:
        nvml_status["reason"] = "facts read from a capture (%s), not the live machine" % source
        if nvml == "yes":
            raise TopologyError("nvml: yes needs the live machine (source sysfs, root /); got source %s, root %s"
                                % (source, root))
    elif "gpu" in subsets and (gpus_present or nvml == "yes"):
        from ansible_collections.gpuops.fabric.plugins.module_utils._nvml import read_nvml
        nvml_status, infos = read_nvml(nvml_module, warn=topo.warn)
        if nvml == "yes" and nvml_status["status"] != "used":
            raise TopologyError("nvml: yes but %s" % nvml_status["reason"])
        topo.gpu_info.update(infos)
    else:
        nvml_status["reason"] = "no NVIDIA GPU found"
    facts = build_facts(topo, subsets, nvml_status)
    if "nccl" in subsets:
        facts["nccl"] = read_nccl_conf(root, facts["warnings"].append) if source == "sysfs" else None
    if "lldp" in subsets:
        # filled by the module on a live node (lldpctl); a capture has no neighbours to ask
        facts["lldp"] = None
    return facts


def merge_switch_side(facts, run, which, subsets, lldp_socket=None):
    """Live node only: the ``lldp`` subset (neighbours from lldpd) and each physical NIC's ``link_modes`` (ethtool).
    ``run(argv) -> (rc, out, err)``; ``which(name)`` -> path or None."""
    if "lldp" in subsets:
        facts["lldp"] = _lldp.gather(run, which("lldpctl"), lldp_socket)
    if "link_modes" in subsets and facts.get("nics"):
        physical = [n["name"] for n in facts["nics"] if n.get("address")]
        modes = _ethtool.gather(run, which("ethtool"), physical)
        for nic in facts["nics"]:
            if nic["name"] in modes:
                nic["link_modes"] = modes[nic["name"]]


NCCL_CONF = "/etc/nccl.conf"
NCCL_CONF_MAX_BYTES = 1 << 20


def read_nccl_conf(root, warn=None):
    """The node's /etc/nccl.conf as NCCL reads it: {"path", "present", "values"}.

    Read like the sysfs files (regular files only, non-blocking, at most 1 MiB); anything odd is absent
    plus a note to ``warn``.
    """
    from ansible_collections.gpuops.fabric.plugins.module_utils._nccl import parse_conf
    from ansible_collections.gpuops.fabric.plugins.module_utils._sysfs import SysfsReader
    reader = SysfsReader(root or "/")
    data = reader.read_bytes(reader.path(NCCL_CONF), limit=NCCL_CONF_MAX_BYTES)
    text = None
    if data is not None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            reader.warn("%s: not UTF-8 text, ignored" % reader.path(NCCL_CONF))
    if warn is not None:
        for message in reader.topo.warnings:
            warn(message)
    if text is None:
        return {"path": NCCL_CONF, "present": False, "values": {}}
    return {"path": NCCL_CONF, "present": True, "values": parse_conf(text)}
