# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family NUMA: GPU and NIC locality."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import ACCELERATOR_KINDS, NETWORK_KINDS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import path_rank
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import (
    management_functions, nearest_nics,
)


# ---- NUMA -------------------------------------------------------------------------------------------
@host_rule(
    "NUMA-001", "GPU's nearest NIC is on another NUMA node", "fail",
    """When the closest NIC to a GPU hangs off the other socket, every byte the GPU sends or receives over
    the network crosses the inter-socket link (UPI/xGMI) and the remote root complex: more latency, less
    bandwidth, and GPUDirect RDMA is disabled or slow.""",
    """Put a NIC on the GPU's socket (ideally under the same PCIe switch), or move the GPU; on cloud SKUs,
    check that the NIC-to-GPU mapping matches the vendor's topology.""")
def numa_nearest_nic(ctx):
    ctx.need("gpus", "nics")
    numa_of = dict((n["address"], n["numa_node"]) for n in ctx.facts["nics"] if n.get("address"))
    numa_of.update((r["address"], r["numa_node"]) for r in ctx.facts.get("rdma") or [] if r.get("address"))
    if not numa_of:
        raise NotApplicable("no PCI NIC on this host")
    # a management NIC beside a GPU carries none of its traffic: the GPU's nearest NIC is found among the others
    management = management_functions(ctx)
    for gpu in ctx.facts["gpus"]:
        nearest = gpu.get("nearest_nics") or []
        left_out = sorted(set(n["nic"] for n in nearest) & set(management))
        if left_out:
            nearest = [dict((k, p.get(k)) for k in ("nic", "nic_names", "type"))
                       for p in nearest_nics(ctx.facts, gpu["address"], management)]
        if gpu["numa_node"] is None or not nearest:
            continue
        nodes = [numa_of.get(n["nic"]) for n in nearest]
        if all(node is not None and node != gpu["numa_node"] for node in nodes):
            ctx.finding(gpu["address"], "GPU %s on NUMA %d: nearest NIC %s on NUMA %s%s"
                        % (gpu["address"], gpu["numa_node"], "/".join(nearest[0]["nic_names"]) or nearest[0]["nic"],
                           ",".join(str(n) for n in sorted(set(nodes))),
                           " (management NIC %s beside it left out)" % ", ".join(left_out) if left_out else ""),
                        {"gpu_numa_node": gpu["numa_node"], "nearest_nics": nearest, "management_left_out": left_out})


@host_rule(
    "NUMA-002", "GPU without a NIC of its own on its socket", "warn",
    """With one NIC per GPU (the usual rail layout), each GPU should have its own NIC behind the same PCIe
    switch or at least the same socket. When NICs and GPUs are paired one to one by closeness, a GPU whose
    partner NIC is across the socket link (SYS) sends its share of every collective through UPI/xGMI.""",
    """Balance NICs across sockets to match the GPUs (one per GPU, under the GPU's PCIe switch), or pin
    that GPU's traffic to a local NIC.""")
def numa_paired_nic(ctx):
    ctx.need("gpus", "paths")
    gpus = [g["address"] for g in ctx.facts["gpus"]]
    if not gpus:
        raise NotApplicable("no GPU on this host: nothing to pair a NIC with")
    fast = set(r["address"] for r in ctx.facts.get("rdma") or [] if r.get("address"))
    if not fast:
        fast = set(n["address"] for n in ctx.facts.get("nics") or [] if n.get("address") and (n.get("speed_mbps") or 0) >= 100000)
    # left out of the pairing: management NICs, and NICs on a NUMA node no GPU is on (storage or front-end NICs of
    # the other socket are no GPU's partner)
    gpu_nodes = set(g.get("numa_node") for g in ctx.facts["gpus"])
    node_of = dict((d["address"], d.get("numa_node")) for d in ctx.facts.get("pci") or [] if d.get("address"))
    left_out = dict((a, "management") for a in fast & set(management_functions(ctx)))
    if None not in gpu_nodes:
        left_out.update((a, "NUMA %s has no GPU" % node_of[a]) for a in fast - set(left_out)
                        if node_of.get(a) is not None and node_of[a] not in gpu_nodes)
    fast -= set(left_out)
    said = "; left out: %s" % ", ".join("%s (%s)" % kv for kv in sorted(left_out.items())) if left_out else ""
    if not gpus or len(fast) < len(gpus):
        raise NotApplicable("fewer high-speed NICs (%d) than GPUs (%d): no one-to-one pairing%s" % (
            len(fast), len(gpus), said))
    pairs = sorted((path_rank(p["type"]), p["gpu"], p["nic"], p)
                   for p in ctx.facts["paths"]["gpu_nic"] if p["nic"] in fast)
    taken_gpu, taken_nic = set(), set()
    for _rank, gpu, nic, path in pairs:
        if gpu in taken_gpu or nic in taken_nic:
            continue
        taken_gpu.add(gpu)
        taken_nic.add(nic)
        if path["type"] == "SYS":
            ctx.finding(gpu, "GPU %s pairs with NIC %s across the socket link (SYS)%s"
                        % (gpu, "/".join(path["nic_names"]) or nic, said), {"path": path, "left_out": left_out})


@host_rule(
    "NUMA-003", "GPU or NIC locality unknown", "warn",
    """When the firmware does not say which NUMA node a device belongs to (numa_node -1), neither the
    kernel nor NCCL can place memory and threads next to it, and path types between host bridges cannot be
    told apart from socket crossings.""",
    """Enable NUMA/SRAT reporting in the BIOS (e.g. "NUMA" on, sub-NUMA clustering consistent), update
    the firmware, and check /sys/bus/pci/devices/*/numa_node.""")
def numa_unknown(ctx):
    ctx.need("pci")
    if not ctx.facts.get("numa") or ctx.facts["numa"]["count"] < 2:
        raise NotApplicable("a single NUMA node: locality does not matter")
    for dev in ctx.facts["pci"]:
        if dev["kind"] in ACCELERATOR_KINDS + NETWORK_KINDS and dev["numa_node"] is None:
            ctx.finding(dev["address"], "%s %s has no NUMA node (firmware reports -1)" % (dev["kind"], dev["address"]),
                        {"numa_node": None, "local_cpus": dev["local_cpus"]})
