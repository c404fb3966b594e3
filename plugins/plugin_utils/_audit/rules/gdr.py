# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family GDR: GPUDirect RDMA prerequisites."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable, host_rule

# ---- GPUDirect RDMA ---------------------------------------------------------------------------------


@host_rule(
    "GDR-001", "GPUDirect RDMA module not loaded", "fail",
    """With RDMA, NCCL moves data between GPU memory and the NIC directly only when nvidia_peermem (or the
    older nv_peer_mem) is loaded; without it every transfer is staged through host memory.""",
    """Load it (`modprobe nvidia_peermem`) and make it persistent (/etc/modules-load.d), or install the
    MLNX_OFED/DOCA package that provides nv_peer_mem.""")
def gdr_peermem(ctx):
    if not ctx.expect.get("rdma"):
        raise NotApplicable("RDMA not intended (fabric_expectations.rdma is false)")
    ctx.need("gpus")
    if not any(g["vendor"] == "nvidia" for g in ctx.facts["gpus"]):
        raise NotApplicable("no NVIDIA GPU")
    modules = ctx.facts.get("kernel_modules")
    if modules is None:
        raise NotApplicable("kernel module state not in these facts (capture without /sys/module)")
    if not (modules.get("nvidia_peermem") or modules.get("nv_peer_mem")):
        ctx.finding("nvidia_peermem", "neither nvidia_peermem nor nv_peer_mem is loaded",
                    {"nvidia_peermem": modules.get("nvidia_peermem"), "nv_peer_mem": modules.get("nv_peer_mem")})


@host_rule(
    "GDR-002", "ACS redirect on a PCIe switch port between a GPU and its NIC", "fail",
    """PCIe Access Control Services with request/completion redirect force peer-to-peer traffic up to the
    root complex, so GPUDirect RDMA between a GPU and the NIC beside it either fails or crawls through the
    CPU. Many BIOSes enable it by default for virtualization isolation.""",
    """Disable ACS on the switch ports (BIOS option "ACS" / "PCIe ACS control", or `setpci` on the ports at boot)
    on bare-metal GPU nodes that use GPUDirect; keep it only where VMs need IOMMU isolation.""")
def gdr_acs(ctx):
    if not ctx.expect.get("rdma"):
        raise NotApplicable("RDMA not intended (fabric_expectations.rdma is false)")
    ctx.need("gpus", "pci")
    pci = ctx.pci()
    unreadable = []
    checked = 0
    for gpu in ctx.facts["gpus"]:
        for near in gpu.get("nearest_nics") or []:
            if near["type"] not in ("PIX", "PXB"):
                continue  # only a shared switch gives GPU<->NIC peer-to-peer below the root complex
            nic = pci.get(near["nic"])
            if nic is None:
                continue
            for bridge in p2p_bridges(pci, gpu["address"], near["nic"]):
                acs = (pci.get(bridge) or {}).get("acs")
                if not acs or not acs["readable"]:
                    unreadable.append(bridge)
                    continue
                checked += 1
                if acs["redirects_p2p"]:
                    ctx.finding("%s->%s" % (gpu["address"], near["nic"]),
                                "ACS redirect on %s %s between GPU %s and NIC %s (control %s)" % (
                                    pci[bridge]["kind"].replace("_", " "), bridge, gpu["address"],
                                    "/".join(near["nic_names"]) or near["nic"], acs["control"]),
                                {"bridge": bridge, "acs": acs})
                    break
    if not checked and unreadable:
        raise NotApplicable("ACS not readable on %d bridge(s): extended config space needs root on the live node"
                            % len(set(unreadable)))
    if not checked:
        raise NotApplicable("no GPU shares a PCIe switch with a NIC")


def p2p_bridges(pci, gpu, nic):
    """The bridges peer-to-peer traffic between a GPU and a NIC passes: those below their lowest common one, and
    that one (where the turn is made), sorted."""
    gpu_up, nic_up = gpu_chain(pci, gpu), gpu_chain(pci, nic)
    shared = set(gpu_up) & set(nic_up)
    lowest = _lowest(shared, pci)
    return sorted(set(b for b in gpu_up + nic_up if b not in shared or b == lowest))


def gpu_chain(pci, address):
    return (pci.get(address) or {}).get("chain") or []


def _lowest(bridges, pci):
    """The deepest of a set of bridges (the one with the longest chain above it)."""
    return max(bridges, key=lambda b: len((pci.get(b) or {}).get("chain") or [])) if bridges else None
