# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Facts assembly: a Topology read from a source becomes the gpuops_fabric facts (schema in docs/topology_facts.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.build import build_facts
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import classify_devices, KIND_GPU, VENDOR_NVIDIA
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import ethtool as _ethtool, lldp as _lldp
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import dcb as _dcb
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import ethtool_stats as _ethtool_stats
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nccl_conf import read_nccl_conf

# the subsets' names and their expansion: a module of their own, which the action plugin imports without the readers
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.subsets import SOURCES, resolve_subsets


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
    "counters": ("pci", "net", "rdma", "counters"),
}


def reader_parts(subsets):
    parts = set()
    for subset in subsets:
        parts.update(_READER_PARTS[subset])
    return parts


def load_topology(source="sysfs", root="/", path=None, parts=None):
    """Read a topology from one of the sources; errors raise TopologyError naming the input."""
    if source == "sysfs":
        from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader
        reader = SysfsReader(root or "/")
        topo = reader.read_all(parts or ("pci", "numa", "net", "rdma", "bond", "vlan"))
    elif source in ("hwloc_xml", "nccl_xml"):
        if not path:
            raise TopologyError("path is required when source is %s" % source)
        if source == "hwloc_xml":
            from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.hwloc import read_hwloc_xml
            topo = read_hwloc_xml(path)
        else:
            from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ncclxml import read_nccl_xml
            topo = read_nccl_xml(path)
    else:
        raise TopologyError("source: %r is not one of %s" % (source, ", ".join(SOURCES)))
    classify_devices(topo)
    return topo


# ---- facts ---------------------------------------------------------------------------------------
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
        from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvml import read_nvml
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
    physical = [n["name"] for n in facts.get("nics") or [] if n.get("address")]
    if "link_modes" in subsets and physical:
        modes = _ethtool.gather(run, which("ethtool"), physical)
        for nic in facts["nics"]:
            if nic["name"] in modes:
                nic["link_modes"] = modes[nic["name"]]
    if "counters" in subsets and isinstance(facts.get("counters"), dict):
        # the NIC's own counters (discards at its buffers, pause frames): only its driver knows them
        facts["counters"]["nic_stats"] = _ethtool_stats.gather(run, which("ethtool"), physical) if physical else {}
        # the PFC of the RoCE ports (dcb, else mlnx_qos): configuration only the driver's DCB interface knows
        lag = facts["counters"].get("roce_lag") or {}
        roce = sorted(set(leg for n in (facts["counters"].get("roce_ports") or {}).values() for leg in lag.get(n, [n])))
        facts["counters"]["roce_pfc"] = _dcb.gather(run, which("dcb"), which("mlnx_qos"), roce) if roce else {}
