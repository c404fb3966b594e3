# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The planner: for one node's facts, what limits each GPU's path to the network, and what that means for a
data-parallel step on 2..N such nodes.

The model (documented in docs/nccl.md, and deliberately simple):

- Each GPU's path to the network is a list of segments: its own PCIe link, the links above it up to where it
  meets its NIC, the NIC's slot, the NIC's line rate (TCP goodput at the MTU for tcp; the port rate for rdma),
  and, when GPU and NIC sit on different sockets (SYS), the socket crossing (a figure the user gives).
- tcp: NCCL's sockets use the one training interface; the node's inter-node bandwidth is its goodput, capped by
  the slots of the ports under it. rdma: every NIC nearest some GPU is a rail; the node's bandwidth is the sum over
  rails of the slowest segment of that rail (line rate, slot, or the GPU side of the GPUs on it).
- A step's gradient allreduce across n nodes takes 2 (n - 1) / n x bytes / bandwidth (ring; latency left out)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import nic_by_name, ports_under
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import link_sides, nic_link, path_rank
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import (
    allreduce_time, ethernet_goodput, ModelError, path_bottleneck,
)

LINK_SPEEDS_GBE = (10, 25, 100, 200, 400)


def _path(facts, gpu, nic_address):
    for path in (facts.get("paths") or {}).get("gpu_nic") or []:
        if path["gpu"] == gpu["address"] and path["nic"] == nic_address:
            return path
    return None


def _slot(link):
    """The usable GB/s of a link fact's current side (pcie.link_sides), None when not known."""
    return link_sides(link)["current"]["gbytes_per_s"]


def _gpu_side(gpu, path, own, socket_gbytes):
    """Segments from the GPU to the NIC's slot: GPU link, upstream links, socket crossing."""
    segments = [{"name": "GPU link", "gbytes_per_s": _slot(gpu.get("link"))}]
    upstream = [link["gbytes_per_s"] for link in (path or {}).get("links") or []
                if link["device"] not in own and link.get("gbytes_per_s") is not None]
    if upstream:
        segments.append({"name": "upstream link", "gbytes_per_s": min(upstream)})
    if path and path.get("type") == "SYS":
        segments.append({"name": "socket crossing", "gbytes_per_s": socket_gbytes})
    return segments


def _line_rate(nic, mode, mtu, facts):
    if mode == "rdma":
        rates = [p.get("rate_gbps") for r in facts.get("rdma") or [] if r.get("address") == nic.get("address")
                 for p in r.get("ports") or [] if p.get("rate_gbps")]
        return rates[0] / 8.0 if rates else None
    if not nic.get("speed_mbps"):
        return None
    return ethernet_goodput(nic["speed_mbps"], mtu) / 8.0


def node_paths(facts, mode="tcp", interface=None, mtu=1500, socket_gbytes=None):
    """Per GPU: its NIC, path type, segments and bottleneck; and the node's inter-node bandwidth with what sets it.

    Returns {"gpus": [...], "node": {"gbytes_per_s", "limited_by", "rails": [...]}}; raises ModelError on input the
    model cannot use (no GPUs, no interface in tcp mode, no RDMA NIC near any GPU in rdma mode).
    """
    gpus = facts.get("gpus") or []
    if not gpus:
        raise ModelError("facts: no GPUs on this node; nothing to plan")
    rows, rails = [], {}
    if mode == "tcp":
        ports = ports_under(facts, interface) if interface else []
        if not ports:
            raise ModelError("interface: %r has no PCIe port under it in the facts" % (interface,))
        for gpu in gpus:
            best = None
            for port in ports:
                path = _path(facts, gpu, port["address"])
                rank = path_rank(path.get("type") if path else None)
                if best is None or rank < best[0]:
                    best = (rank, port, path)
            _rank, port, path = best
            own = (gpu["address"], port["address"])
            gpu_side = _gpu_side(gpu, path, own, socket_gbytes)
            segments = gpu_side + [
                {"name": "NIC slot", "gbytes_per_s": _slot(nic_link(port))},
                {"name": "NIC line rate", "gbytes_per_s": _line_rate(port, mode, mtu, facts)}]
            rows.append(_row(gpu, port["name"], path, segments))
        iface = nic_by_name(facts, interface)
        under = nic_by_name(facts, iface["vlan"]["parent"]) if iface.get("vlan") else iface
        network = ethernet_goodput(under["speed_mbps"], mtu) / 8.0 if under.get("speed_mbps") else None
        slots = [_slot(nic_link(p)) for p in ports]
        gpu_side = [r["gpu_side_gbytes_per_s"] for r in rows]
        node = path_bottleneck([
            {"name": "NIC line rate", "gbytes_per_s": network},
            {"name": "NIC slot", "gbytes_per_s": sum(slots) if all(s is not None for s in slots) else None},
            {"name": "GPU side", "gbytes_per_s": sum(gpu_side) if all(g is not None for g in gpu_side) else None}])
        rails = {interface: {"rail": interface, "gpus": [r["gpu"] for r in rows], "ports": len(ports),
                             "slot_gbytes_per_s": sum(slots) if all(s is not None for s in slots) else None,
                             "gbytes_per_s": node["gbytes_per_s"] if node else None,
                             "limited_by": node["name"] if node else None, "line_gbytes_per_s": network}}
    else:
        rdma_pci = dict((r.get("address"), r["name"]) for r in facts.get("rdma") or [] if r.get("address"))
        pci = dict((n["address"], n) for n in facts.get("nics") or [] if n.get("address"))
        for gpu in gpus:
            near = [n["nic"] for n in gpu.get("nearest_nics") or [] if n["nic"] in rdma_pci]
            if not near:
                raise ModelError("facts: GPU %s has no RDMA NIC near it" % gpu["address"])
            address = near[0]
            path = _path(facts, gpu, address)
            nic = pci.get(address) or {"address": address, "name": rdma_pci[address], "link": None}
            own = (gpu["address"], address)
            segments = _gpu_side(gpu, path, own, socket_gbytes) + [
                {"name": "NIC slot", "gbytes_per_s": _slot(nic_link(nic))},
                {"name": "NIC line rate", "gbytes_per_s": _line_rate(nic, mode, mtu, facts)}]
            rows.append(_row(gpu, rdma_pci[address], path, segments))
            rail = rails.setdefault(rdma_pci[address], {
                "rail": rdma_pci[address], "gpus": [], "segments": segments[-2:], "gpu_side": []})
            rail["gpus"].append(gpu["address"])
            rail["gpu_side"].append(rows[-1]["gpu_side_gbytes_per_s"])
        for rail in rails.values():
            gpu_side = min((g for g in rail.pop("gpu_side") if g is not None), default=None)
            found = path_bottleneck(rail.pop("segments") + [{"name": "GPU side", "gbytes_per_s": gpu_side}])
            rail["gbytes_per_s"] = found["gbytes_per_s"] if found else None
            rail["limited_by"] = found["name"] if found else None
        total = [r["gbytes_per_s"] for r in rails.values()]
        limits = sorted(set(r["limited_by"] for r in rails.values() if r["limited_by"]))
        node = {"name": ", ".join(limits), "gbytes_per_s": sum(total)} if all(t is not None for t in total) else None
    return {"gpus": rows, "rails": [rails[k] for k in sorted(rails)],
            "node": {"gbytes_per_s": node["gbytes_per_s"] if node else None,
                     "limited_by": node["name"] if node else None}}


def _row(gpu, nic_name, path, segments):
    found = path_bottleneck(segments)
    gpu_side = path_bottleneck([s for s in segments if s["name"] not in ("NIC slot", "NIC line rate")])
    return {"gpu": gpu["address"], "index": gpu.get("index"), "nic": nic_name,
            "path_type": (path or {}).get("type"), "segments": segments,
            "bottleneck": found["name"] if found else None,
            "bottleneck_gbytes_per_s": found["gbytes_per_s"] if found else None,
            "unknown": found["unknown"] if found else [s["name"] for s in segments],
            "gpu_side_gbytes_per_s": gpu_side["gbytes_per_s"] if gpu_side else None}


def scaling(gradient_bytes, node_gbytes_per_s, max_nodes, compute_seconds=None):
    """Rows for 2..max_nodes: allreduce seconds per step, and with a compute time, the communication share and
    scaling efficiency (no overlap of communication and compute assumed: the pessimistic case)."""
    if max_nodes is None or int(max_nodes) < 2:
        raise ModelError("nodes: %r must be 2 or more" % (max_nodes,))
    rows = []
    for n in range(2, int(max_nodes) + 1):
        comm = allreduce_time(gradient_bytes, n, node_gbytes_per_s)
        row = {"nodes": n, "allreduce_s": comm}
        if compute_seconds:
            row["comm_share"] = comm / (comm + compute_seconds)
            row["efficiency"] = compute_seconds / (compute_seconds + comm)
        rows.append(row)
    return rows


def by_link_speed(plan, mode, mtu, gradient_bytes, max_nodes, compute_seconds=None, speeds=LINK_SPEEDS_GBE):
    """The same node with every NIC at each of ``speeds`` (GbE): its bandwidth (the PCIe side still caps it)
    and the scaling rows; the first node count where communication takes as long as compute (the ceiling)."""
    out = []
    for speed in speeds:
        total = 0.0
        for rail in plan["rails"]:
            # tcp: the interface's ports (a bond's legs) all at this speed; rdma: each rail's port
            line = (ethernet_goodput(speed * 1000 * rail.get("ports", 1), mtu) if mode == "tcp"
                    else float(speed)) / 8.0
            others = _caps_without_line_rate(plan, rail, mode)
            total += min([line] + [c for c in others if c is not None])
        rows = scaling(gradient_bytes, total, max_nodes, compute_seconds)
        ceiling = next((r["nodes"] for r in rows if compute_seconds and r["allreduce_s"] >= compute_seconds), None)
        out.append({"speed_gbe": speed, "gbytes_per_s": total, "rows": rows, "ceiling_nodes": ceiling})
    return out


def _caps_without_line_rate(plan, rail, mode):
    gpus = [g for g in plan["gpus"] if g["gpu"] in rail["gpus"]]
    slots = [s["gbytes_per_s"] for g in gpus for s in g["segments"] if s["name"] == "NIC slot"]
    gpu_side = [g["gpu_side_gbytes_per_s"] for g in gpus]
    if mode == "tcp":
        # one interface: the GPUs' sides add up, and so do the slots of its ports
        return [sum(gpu_side) if all(x is not None for x in gpu_side) else None, rail.get("slot_gbytes_per_s")]
    return [min(slots) if slots and all(s is not None for s in slots) else None,
            min(gpu_side) if gpu_side and all(x is not None for x in gpu_side) else None]


def table(host, plan, scale, compute_seconds=None):
    """Markdown: the per-GPU bottlenecks, the node's bandwidth, and the time per step by node count."""
    lines = ["## %s" % host, "", "| GPU | NIC | path | bottleneck | GB/s |", "|---|---|---|---|---|"]
    for row in plan["gpus"]:
        lines.append("| %s | %s | %s | %s | %s |" % (
            row["index"], row["nic"], row["path_type"] or "?", row["bottleneck"] or "unknown",
            "%.2f" % row["bottleneck_gbytes_per_s"] if row["bottleneck_gbytes_per_s"] is not None else "?"))
    node = plan["node"]
    lines += ["", "Node to network: %s GB/s, set by %s." % (
        "%.2f" % node["gbytes_per_s"] if node["gbytes_per_s"] is not None else "?", node["limited_by"] or "unknown"),
        ""]
    header = "| nodes | allreduce per step (ms) |" + (" comm share | efficiency |" if compute_seconds else "")
    lines += [header, "|---|---|" + ("---|---|" if compute_seconds else "")]
    for row in scale:
        cells = "| %d | %.2f |" % (row["nodes"], row["allreduce_s"] * 1000)
        if compute_seconds:
            cells += " %.0f%% | %.0f%% |" % (row["comm_share"] * 100, row["efficiency"] * 100)
        lines.append(cells)
    return "\n".join(lines) + "\n"


def chart(path, host, speeds, actual=None, compute_seconds=None):
    """A PNG of allreduce time per step against node count, one line per link speed (and the node as it is)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ModelError("chart: matplotlib is not installed on the controller (pip install matplotlib)")
    figure, axes = plt.subplots(figsize=(8, 5), dpi=100)
    for entry in speeds:
        label = "%d GbE (%.1f GB/s per node)" % (entry["speed_gbe"], entry["gbytes_per_s"])
        axes.plot([r["nodes"] for r in entry["rows"]], [r["allreduce_s"] * 1000 for r in entry["rows"]],
                  marker="o", markersize=3, label=label)
    if actual:
        axes.plot([r["nodes"] for r in actual["rows"]], [r["allreduce_s"] * 1000 for r in actual["rows"]],
                  color="black", linewidth=2, linestyle="--", label="as configured (%.1f GB/s)" % actual["gbytes_per_s"])
    if compute_seconds:
        axes.axhline(compute_seconds * 1000, color="grey", linestyle=":", label="compute per step")
    axes.set_xlabel("nodes")
    axes.set_ylabel("allreduce per step (ms)")
    axes.set_yscale("log")
    axes.set_title("%s: gradient allreduce per step by link speed" % host)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
    return path
