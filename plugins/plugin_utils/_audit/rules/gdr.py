# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family GDR: GPUDirect RDMA prerequisites."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import is_near
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable, host_rule
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.gpudirect import dmabuf_state

# ---- GPUDirect RDMA ---------------------------------------------------------------------------------


@host_rule(
    "GDR-001", "GPUDirect RDMA module not loaded", "fail",
    """With RDMA, NCCL moves data between GPU memory and the NIC directly only when nvidia_peermem (or the
    older nv_peer_mem) is loaded, or through DMA-BUF (kernel 5.12 or later with the open GPU kernel module, NCCL 2.13
    or later, NCCL_DMABUF_ENABLE not 0); without either every transfer is staged through host memory.""",
    """Load it (`modprobe nvidia_peermem`) and make it persistent (/etc/modules-load.d), or install the
    MLNX_OFED/DOCA package that provides nv_peer_mem; or use DMA-BUF: the open GPU kernel module on a 5.12+
    kernel.""")
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
        dmabuf, why = dmabuf_state(ctx.facts)
        if dmabuf:
            # likely DMA-BUF, unconfirmed by the files: NCCL 2.13+, CUDA 11.7+ and an RDMA stack with
            # ibv_reg_dmabuf_mr are needed too (NCCL's "DMA-BUF is available" line says so for a run)
            ctx.finding("nvidia_peermem", "no peer-memory module: GPUDirect RDMA relies on DMA-BUF (kernel %s, the open "
                        "GPU kernel module %s), which also needs NCCL 2.13+, CUDA 11.7+ and an RDMA stack with "
                        "dma-buf support; NCCL_DEBUG=INFO prints \"DMA-BUF is available\" where it works" % (
                            (ctx.facts.get("gpudirect") or {}).get("kernel_release"),
                            ((ctx.facts.get("gpudirect") or {}).get("nvidia_driver") or {}).get("version")),
                        {"dmabuf": (ctx.facts.get("gpudirect") or {}).get("dmabuf")}, severity="info")
            return
        ctx.finding("nvidia_peermem", "neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF %s" % why,
                    {"nvidia_peermem": modules.get("nvidia_peermem"), "nv_peer_mem": modules.get("nv_peer_mem"),
                     "dmabuf": (ctx.facts.get("gpudirect") or {}).get("dmabuf")})


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
            if not is_near(near["type"]):
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


IOMMU_TRANSLATING = ("DMA", "DMA-FQ")


@host_rule(
    "GDR-003", "IOMMU translates the DMA of a GPU or its NIC", "warn",
    """With the IOMMU translating device DMA (default domain DMA or DMA-FQ), every peer-to-peer transfer between a
    GPU and the NIC beside it is translated and, with ACS, routed up through the root complex: NCCL documents hangs
    and a fraction of the bandwidth for GPUDirect RDMA and GPU peer-to-peer unless the IOMMU is off or in
    passthrough on bare metal.""",
    """Boot with `iommu=pt` (keeps the IOMMU for VMs, identity for the host's devices) or turn it off
    (`intel_iommu=off` / `amd_iommu=off`) on bare-metal GPU nodes; check /sys/kernel/iommu_groups/*/type says
    identity.""")
def gdr_iommu(ctx):
    if not ctx.expect.get("rdma"):
        raise NotApplicable("RDMA not intended (fabric_expectations.rdma is false)")
    ctx.need("gpus", "pci")
    pci = ctx.pci()
    seen = [a for a in pci if (pci[a].get("iommu") or {}).get("type")]
    if not seen:
        raise NotApplicable("no IOMMU group types in these facts (no IOMMU, or a capture without "
                            "/sys/kernel/iommu_groups)")
    options = ((ctx.facts.get("gpudirect") or {}).get("iommu") or {}).get("options") or {}
    translated, judged = {}, 0
    for gpu in ctx.facts["gpus"]:
        nics = [n["nic"] for n in gpu.get("nearest_nics") or [] if is_near(n["type"])]
        if not nics:
            continue  # no NIC beside it: NCCL does not use GPUDirect RDMA through the CPU by default
        judged += 1
        for address in [gpu["address"]] + nics:
            iommu = (pci.get(address) or {}).get("iommu") or {}
            if iommu.get("type") in IOMMU_TRANSLATING:
                translated[address] = iommu
    if not judged:
        raise NotApplicable("no GPU shares a PCIe switch with a NIC")
    if translated:  # one host setting: one finding, the devices in its evidence
        names = sorted(translated)
        ctx.finding("iommu", "the IOMMU translates DMA of %d of the GPUs and NICs that share a PCIe switch (%s): %s%s; "
                    "kernel options %s" % (len(names), ", ".join(sorted(set(i["type"] for i in translated.values()))),
                                           ", ".join(names[:6]), " and %d more" % (len(names) - 6) if len(names) > 6
                                           else "", " ".join("%s=%s" % kv for kv in sorted(options.items())) or "none"),
                    {"devices": dict(sorted(translated.items())), "kernel_options": options})


@host_rule(
    "GDR-004", "PCIe payload sizes differ between a GPU and its NIC, or the NIC's relaxed ordering is off", "info",
    """Peer-to-peer packets between a GPU and the NIC beside it are cut to the smaller Max Payload Size of the two,
    and a NIC with relaxed ordering turned off serialises its writes to GPU memory (NCCL asks for relaxed ordering
    where the NIC has it: "[RO]" in its NET/IB line). Usually firmware defaults; worth knowing where GPUDirect RDMA is
    slower than the link. Each GPU's and NIC's Max Read Request Size is in the evidence.""",
    """Compare `lspci -vvv` DevCtl of the GPU, the NIC and the switch ports between them; set the BIOS's PCIe
    payload options alike. Relaxed ordering: enable it on the NIC where the platform supports it (the BIOS, mlxconfig
    PCI_WR_ORDERING); the kernel turns it off on purpose behind root ports known to mishandle it (some older Xeon
    generations), and there it stays off.""")
def gdr_payload(ctx):
    if not ctx.expect.get("rdma"):
        raise NotApplicable("RDMA not intended (fabric_expectations.rdma is false)")
    ctx.need("gpus", "pci")
    pci = ctx.pci()
    judged = 0
    for gpu in ctx.facts["gpus"]:
        mine = (pci.get(gpu["address"]) or {}).get("pcie_control") or {}
        for near in gpu.get("nearest_nics") or []:
            theirs = (pci.get(near["nic"]) or {}).get("pcie_control") or {}
            if not is_near(near["type"]) or not (mine.get("readable") and theirs.get("readable")):
                continue
            judged += 1
            odd = []
            if mine["mps"] and theirs["mps"] and mine["mps"] != theirs["mps"]:
                odd.append("Max Payload Size %s (GPU) vs %s (NIC)" % (mine["mps"], theirs["mps"]))
            if theirs["relaxed_ordering"] is False:
                odd.append("relaxed ordering off on the NIC")
            if odd:
                ctx.finding("%s->%s" % (gpu["address"], near["nic"]), "GPU %s and NIC %s: %s" % (
                    gpu["address"], "/".join(near["nic_names"]) or near["nic"], "; ".join(odd)),
                    {"gpu": mine, "nic": theirs})
    if not judged:
        raise NotApplicable("no PCIe control registers of a GPU and a NIC beside it (config space past 64 bytes "
                            "needs root on the live node)")
