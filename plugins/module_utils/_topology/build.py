# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The gpuops_fabric facts built from a Topology (schema in docs/topology_facts.md): one dict per device, interface,
RDMA port and bond, the paths between GPUs and NICs, the counters, in a stable order. facts.py reads the Topology
and adds what only a live node says."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import parse_cpulist
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    ACCELERATOR_KINDS, BRIDGE_KINDS, NETWORK_KINDS, VENDOR_AMD, VENDOR_INTEL, VENDOR_NVIDIA,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.paths import hex_id, PathCache, pci_path
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    device_links, gpu_link_state, gpu_link_values, path_rank, pcie_bandwidth,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.kernel import DMABUF_KERNEL, parse_release

SCHEMA_VERSION = 2


def _vendor_name(vendor_id):
    return {VENDOR_NVIDIA: "nvidia", VENDOR_AMD: "amd", VENDOR_INTEL: "intel"}.get(vendor_id, "other")


def _pci_fact(topo, dev):
    return {
        "address": dev.address,
        "class": hex_id(dev.class_code, 6),
        "vendor_id": hex_id(dev.vendor_id),
        "device_id": hex_id(dev.device_id),
        "subsystem_vendor_id": hex_id(dev.subsystem_vendor_id),
        "subsystem_device_id": hex_id(dev.subsystem_device_id),
        "name": dev.name,
        "kind": dev.kind,
        "driver": dev.driver,
        "numa_node": dev.numa_node,
        "local_cpus": dev.local_cpus,
        "link": device_links(dev),
        "parent": dev.parent,
        "chain": topo.ancestors(dev.address),
        "acs": _acs_fact(dev),
        "pcie_control": dict(dev.pcie_control) if dev.pcie_control is not None else None,
        "iommu": {"group": dev.iommu_group, "type": dev.iommu_type} if dev.iommu_group is not None else None,
        "host_bridge": dev.host_bridge,
    }


# ACS Control bits (PCIe base spec, ACS Extended Capability).
ACS_BITS = (("source_validation", 0x01), ("translation_blocking", 0x02), ("request_redirect", 0x04),
            ("completion_redirect", 0x08), ("upstream_forwarding", 0x10), ("egress_control", 0x20),
            ("direct_translated", 0x40))


def _acs_fact(dev):
    """For bridges: whether ACS could be read, is present, and which controls are on."""
    if dev.kind not in BRIDGE_KINDS:
        return None
    fact = {"readable": dev.acs_readable, "present": dev.acs_control is not None,
            "control": hex_id(dev.acs_control) if dev.acs_control is not None else None}
    for name, bit in ACS_BITS:
        fact[name] = bool(dev.acs_control & bit) if dev.acs_control is not None else None
    # Request or completion redirect sends peer-to-peer traffic up through the root complex.
    fact["redirects_p2p"] = (bool(dev.acs_control & 0x0C) if dev.acs_control is not None else None)
    return fact


def _gpudirect_fact(topo):
    """What GPUDirect RDMA needs beyond the PCIe path: a peer-memory module or DMA-BUF (kernel 5.12+ and the open
    GPU kernel module), and how the IOMMU treats device DMA. None where the source has none of it (XML)."""
    kernel = topo.kernel
    if kernel is None:
        return None
    modules = topo.kernel_modules
    release = parse_release(kernel.get("release"))
    driver = kernel.get("nvidia_driver")
    kernel_ok = release >= DMABUF_KERNEL if release else None
    open_module = driver["open_module"] if driver else None
    types = sorted(set(d.iommu_type for d in topo.pci.values() if d.iommu_type))
    # the mode of the devices GPUDirect moves data between (one untrusted Thunderbolt port translated is no matter)
    data = sorted(set(d.iommu_type for d in topo.pci.values() if d.iommu_type and d.kind in (
        ACCELERATOR_KINDS + NETWORK_KINDS)))
    options = kernel.get("iommu_options") or {}
    passthrough = options.get("iommu") == "pt" or options.get("iommu.passthrough", "").lower() in ("1", "y", "on")
    off = "off" in (options.get("intel_iommu"), options.get("amd_iommu"), options.get("iommu"))
    if data:
        translated = [t for t in data if t.startswith("DMA")]
        mode = ("translated" if len(translated) == len(data) else "mixed") if translated else \
            "passthrough" if data == ["identity"] else "other"
    elif kernel.get("iommu_groups") == 0:
        mode = "off"
    elif passthrough:
        mode = "passthrough"
    elif off:
        mode = "off"
    else:
        mode = "unknown"
    return {
        "kernel_release": kernel.get("release"),
        "peermem": (("nvidia_peermem" if modules.get("nvidia_peermem") else "nv_peer_mem" if modules.get("nv_peer_mem")
                     else None) if modules is not None else None),
        "peermem_known": modules is not None,
        "nvidia_driver": dict(driver) if driver else None,
        "dmabuf": {"kernel": kernel_ok, "open_module": open_module,
                   "possible": (kernel_ok and open_module) if kernel_ok is not None and open_module is not None
                   else (False if kernel_ok is False or open_module is False else None)},
        "iommu": {"mode": mode, "options": dict(options), "cmdline_read": kernel.get("cmdline_read"),
                  "groups": kernel.get("iommu_groups"), "domain_types": types},
    }


def _counters_fact(counters):
    """The stability counters as read (None where the source has none): totals since boot; the audit turns two
    readings into rates."""
    if counters is None:
        return None
    return {
        "boot_time": counters["boot_time"], "uptime_s": counters["uptime_s"], "boot_id": counters.get("boot_id"),
        "interfaces": dict((n, dict(sorted(v.items()))) for n, v in sorted(counters["interfaces"].items())),
        "aer": dict((a, dict(sorted(v.items()))) for a, v in sorted(counters["aer"].items())),
        "rdma": dict((p, dict(sorted(v.items()))) for p, v in sorted(counters["rdma"].items())),
        "tcp": counters["tcp"],
        "roce_ecn": dict(sorted(counters.get("roce_ecn", {}).items())),
        "roce_ports": dict(sorted(counters.get("roce_ports", {}).items())),
        "roce_lag": dict(sorted(counters.get("roce_lag", {}).items())),
        # live nodes only (ethtool -S, dcb / mlnx_qos: merge_switch_side): a capture has no driver to ask
        "nic_stats": None,
        "roce_pfc": None,
    }


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


def _nic_functions(topo):
    return [d for d in topo.pci.values() if d.kind in NETWORK_KINDS]


def _names_on_function(topo, address):
    names = sorted(n.name for n in topo.netdevs.values() if n.pci_address == address)
    names += sorted(r.name for r in topo.rdma.values() if r.pci_address == address)
    return names


def _kernel_pcie_fact(found):
    """The kernel's own verdict on PCIe links, from its log: the source read and, per bandwidth line, the device,
    what it has and whether (and where) it is limited. None where the source has no kernel log (XML)."""
    if found is None:
        return None
    keep = ("driver", "device", "available_gbps", "limited", "limit_speed_gts", "limit_width", "limit_at",
            "capable_gbps", "capable_speed_gts", "capable_width")
    return {"source": found["source"], "oldest_s": found.get("oldest_s"),
            "entries": [dict((k, e.get(k)) for k in keep) for e in found["entries"]]}


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
        facts["kernel_pcie"] = _kernel_pcie_fact(topo.kernel_pcie)
    gpus = sorted((d for d in topo.pci.values() if d.kind in ACCELERATOR_KINDS),
                  key=lambda d: d.address)
    nic_functions = sorted(_nic_functions(topo), key=lambda d: d.address)
    paths = None
    if "paths" in subsets or "gpu" in subsets:
        paths = _paths(topo, gpus, nic_functions)
    if "gpu" in subsets:
        facts["gpus"] = [_gpu_fact(topo, i, d, paths) for i, d in enumerate(gpus)]
        addresses = set(d.address for d in gpus)
        for fact in facts["gpus"]:
            fact["nvlink"] = _nvlink_fact(topo, fact["address"], addresses)
    if "nic" in subsets:
        facts["nics"] = _nic_facts(topo)
    if "rdma" in subsets:
        facts["rdma"] = [_rdma_fact(topo, r) for _n, r in sorted(topo.rdma.items())]
        facts["kernel_modules"] = dict(topo.kernel_modules) if topo.kernel_modules is not None else None
        facts["gpudirect"] = _gpudirect_fact(topo)
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
    if "counters" in subsets:
        facts["counters"] = _counters_fact(topo.counters)
    facts["warnings"] = list(topo.warnings)
    return facts


def _paths(topo, gpus, nic_functions):
    gpu_nic, gpu_gpu, nearest = [], [], {}
    cache = PathCache(topo)
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
    return {"gpu_nic": gpu_nic, "gpu_gpu": gpu_gpu, "nearest_nics": nearest, "links": cache.links()}


def _gpu_fact(topo, index, dev, paths):
    info = topo.gpu_info.get(dev.address)
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
    link = device_links(dev)
    state, reason = gpu_link_state(gpu_link_values(link, nvml))
    return {
        "index": index,
        "address": dev.address,
        "kind": dev.kind,
        "vendor": _vendor_name(dev.vendor_id),
        "vendor_id": hex_id(dev.vendor_id),
        "device_id": hex_id(dev.device_id),
        "name": (info.name if info is not None and info.name else dev.name),
        "driver": dev.driver,
        "numa_node": dev.numa_node,
        "local_cpus": dev.local_cpus,
        "link": link,
        "link_state": state,
        "link_state_reason": reason,
        "nvml": nvml,
        "facts_from": "nvml" if info is not None else topo.source,
        "nearest_nics": nearest,
    }


def _nvlink_fact(topo, address, gpus):
    """A GPU's NVLinks: {"links", "version", "to_switch", "peers": [{"address", "links"}], "source"}, from NVML or
    else an NCCL dump; None where neither tells. A remote of unknown type is a peer when it is a GPU of the node and
    an NVSwitch otherwise (NVSwitches are PCI functions of their own, never GPUs); a CPU's NVLinks (POWER9) are
    neither; a link whose far end has no address counts by its type alone."""
    info = topo.gpu_info.get(address)
    found, source = (info.nvlink, "nvml") if info is not None and info.nvlink is not None else (
        topo.nvlink.get(address), topo.source)
    if not isinstance(found, dict):
        return None
    peers, to_switch = {}, 0
    for remote, entry in sorted((found.get("remotes") or {}).items()):
        addressed = not remote.startswith("unaddressed")
        far_end = entry.get("type") or (("gpu" if remote in gpus else "switch") if addressed else None)
        if far_end == "switch":
            to_switch += entry["links"]
        elif far_end == "gpu" and addressed and remote != address:
            peers[remote] = peers.get(remote, 0) + entry["links"]
    return {"links": found.get("links") or 0, "version": found.get("version"), "to_switch": to_switch,
            "peers": [{"address": a, "links": n} for a, n in sorted(peers.items())], "source": source}


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
            "link": device_links(dev) if dev else None,
            "pci_link": device_links(dev) if dev else None,  # deprecated: the same as link (removed in 2.0.0)
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
        "software": rdma.software,
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
