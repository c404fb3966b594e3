# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The planner: for one node's shape (node_shape.shape_from_facts), what NCCL's all_reduce is allowed on the node and
on N nodes like it, what a data-parallel step's gradient all_reduce costs on 2..N nodes, and the same node with its
NICs at other speeds. Every figure is the model of NCCL's collectives (collective.py), the one the audit uses: this
module only asks it at the sizes and node counts a plan needs, and lays the answers out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import (
    at_line_rate, check_shape, predict, seconds, summary,
)

LINK_SPEEDS_GBE = (10, 25, 100, 200, 400)
EVERY_COUNT_UP_TO = 64  # node counts in a plan's table: each one up to here, then doubling, and the last


def node_counts(max_nodes):
    """The node counts a plan shows: 2..64 each, then 128, 256, ... and ``max_nodes`` itself."""
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 2:
        raise ModelError("nodes: %r must be a whole number, 2 or more" % (max_nodes,))
    counts = list(range(2, min(max_nodes, EVERY_COUNT_UP_TO) + 1))
    while counts[-1] < max_nodes:
        counts.append(min(max_nodes, counts[-1] * 2))
    return counts


def _step(shape, nodes, gradient_bytes, compute_seconds):
    found = seconds(shape, nodes, gradient_bytes)
    if found["seconds"] is None:
        raise ModelError("the bus bandwidth on %d nodes is not known: %s" % (nodes, found["limited_by"]))
    row = {"nodes": nodes, "allreduce_s": found["seconds"], "protocol": found["protocol"],
           "busbw_gbytes_per_s": found["busbw_gbytes_per_s"], "algorithm": found["algorithm"],
           "limited_by": found["limited_by"]}
    if compute_seconds:
        row["comm_share"] = found["seconds"] / (found["seconds"] + compute_seconds)
        row["efficiency"] = compute_seconds / (compute_seconds + found["seconds"])
    return row


def scaling(shape, gradient_bytes, max_nodes, compute_seconds=None):
    """Rows for the node counts of node_counts(): the gradient all_reduce of ``gradient_bytes`` (each GPU holds the
    whole gradient: data parallel) over every GPU of ``nodes`` nodes, in seconds, with the protocol NCCL would pick and
    the bus bandwidth at that size; with a compute time, the communication share and scaling efficiency (no overlap
    of communication and compute assumed: the pessimistic case). ModelError where the figure is not known."""
    shape = check_shape(shape)
    return [_step(shape, n, gradient_bytes, compute_seconds) for n in node_counts(max_nodes)]


def ceiling(shape, rows, gradient_bytes, compute_seconds):
    """The first node count where the all_reduce takes as long as the compute (the network becomes the ceiling),
    exact between the rows' counts (the time grows with the node count beyond two), or None within the rows."""
    if not compute_seconds:
        return None
    previous = None
    for row in rows:
        if row["allreduce_s"] >= compute_seconds:
            low, high = (previous or row)["nodes"], row["nodes"]
            while high - low > 1:
                middle = (low + high) // 2
                if _step(shape, middle, gradient_bytes, None)["allreduce_s"] >= compute_seconds:
                    high = middle
                else:
                    low = middle
            return high if previous else row["nodes"]
        previous = row
    return None


def plan_node(shape, gradient_bytes, max_nodes, compute_seconds=None, speeds=LINK_SPEEDS_GBE):
    """A node's plan: {"node": summary on the node alone, "across": on ``max_nodes`` nodes, "rails": [...],
    "scaling": rows, "ceiling_nodes", "by_link_speed": [{"speed_gbe", "across", "rows", "ceiling_nodes"}],
    "notes"}. ModelError where the model has no figure for it."""
    shape = check_shape(shape)
    alone, across = predict(shape, 1), predict(shape, max_nodes)
    rows = scaling(shape, gradient_bytes, max_nodes, compute_seconds)
    rails = dict((r["rail"], r) for r in (across["inter"] or {}).get("rails") or [])
    out = {"node": summary(alone), "across": summary(across), "nodes": max_nodes, "notes": list(across["notes"]),
           "scaling": rows, "ceiling_nodes": ceiling(shape, rows, gradient_bytes, compute_seconds), "rails": [
               {"rail": r["name"], "gpus": r["gpus"], "transport": r["transport"], "gbits": r["gbits"],
                "mtu": r["mtu"] if r["transport"] == "socket" else None,
                "gbytes_per_s": rails.get(r["name"], {}).get("gbytes_per_s"),
                "limited_by": rails.get(r["name"], {}).get("limit")} for r in shape["rails"]],
           "by_link_speed": []}
    for speed in speeds:
        other = at_line_rate(shape, speed)
        other_rows = scaling(other, gradient_bytes, max_nodes, compute_seconds)
        out["by_link_speed"].append({"speed_gbe": speed, "across": summary(predict(other, max_nodes)),
                                     "rows": other_rows,
                                     "ceiling_nodes": ceiling(other, other_rows, gradient_bytes, compute_seconds)})
    return out


def _gb(value):
    return "%.4g" % value if value is not None else "?"


def _cell(text):
    return str(text).replace("|", "\\|")


def table(host, plan, compute_seconds=None):
    """Markdown: the node's figures, its rails, the time per step by node count, and the node at other speeds."""
    node, across = plan["node"], plan["across"]
    lines = ["## %s" % _cell(host), "",
             "NCCL's all_reduce, large messages: %s GB/s on the node alone (%s); %s GB/s on %d nodes like it (%s, %s)."
             % (_gb(node["busbw_gbytes_per_s"]), node["limited_by"], _gb(across["busbw_gbytes_per_s"]), plan["nodes"],
                across["limited_by"], across["algorithm"]), ""]
    if plan["rails"]:
        lines += ["| rail | GPUs | transport | Gbit/s | GB/s to NCCL | limited by |", "|---|---|---|---|---|---|"]
        for rail in plan["rails"]:
            lines.append("| %s | %s | %s%s | %g | %s | %s |" % (
                _cell(rail["rail"]), _cell(", ".join(rail["gpus"]) or "-"), rail["transport"],
                " (MTU %d)" % rail["mtu"] if rail["mtu"] else "", rail["gbits"], _gb(rail["gbytes_per_s"]),
                _cell(rail["limited_by"] or "?")))
        lines.append("")
    lines += ["Notes: %s." % _cell("; ".join(plan["notes"])), ""] if plan["notes"] else []
    header = "| nodes | all_reduce per step (ms) | bus GB/s | protocol |" + (
        " comm share | efficiency |" if compute_seconds else "")
    lines += [header, "|---|---|---|---|" + ("---|---|" if compute_seconds else "")]
    for row in plan["scaling"]:
        cells = "| %d | %.3f | %s | %s |" % (
            row["nodes"], row["allreduce_s"] * 1000, _gb(row["busbw_gbytes_per_s"]), row["protocol"])
        if compute_seconds:
            cells += " %.0f%% | %.0f%% |" % (row["comm_share"] * 100, row["efficiency"] * 100)
        lines.append(cells)
    if plan["by_link_speed"]:
        lines += ["", "| NICs at | bus GB/s on %d nodes | limited by | all_reduce at %d nodes (ms) |%s" % (
            plan["nodes"], plan["nodes"], " network becomes the ceiling at |" if compute_seconds else ""),
            "|---|---|---|---|" + ("---|" if compute_seconds else "")]
        for entry in plan["by_link_speed"]:
            cell = ""
            if compute_seconds:
                cell = " %s |" % ("%d nodes" % entry["ceiling_nodes"] if entry["ceiling_nodes"] else
                                  "not within %d nodes" % plan["nodes"])
            lines.append("| %d GbE | %s | %s | %.3f |%s" % (
                entry["speed_gbe"], _gb(entry["across"]["busbw_gbytes_per_s"]), _cell(entry["across"]["limited_by"]),
                entry["rows"][-1]["allreduce_s"] * 1000, cell))
    return "\n".join(lines) + "\n"


def chart(path, host, plan, compute_seconds=None):
    """A PNG of all_reduce time per step against node count, one line per link speed and the node as it is."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ModelError("chart: matplotlib is not installed on the controller (pip install matplotlib)")
    figure, axes = plt.subplots(figsize=(8, 5), dpi=100)
    for entry in plan["by_link_speed"]:
        label = "%d GbE (%s GB/s bus on %d nodes)" % (
            entry["speed_gbe"], _gb(entry["across"]["busbw_gbytes_per_s"]), plan["nodes"])
        axes.plot([r["nodes"] for r in entry["rows"]], [r["allreduce_s"] * 1000 for r in entry["rows"]],
                  marker="o", markersize=3, label=label)
    axes.plot([r["nodes"] for r in plan["scaling"]], [r["allreduce_s"] * 1000 for r in plan["scaling"]],
              color="black", linewidth=2, linestyle="--",
              label="as it is (%s GB/s)" % _gb(plan["across"]["busbw_gbytes_per_s"]))
    if compute_seconds:
        axes.axhline(compute_seconds * 1000, color="grey", linestyle=":", label="compute per step")
    axes.set_xlabel("nodes")
    axes.set_ylabel("all_reduce per step (ms)")
    axes.set_yscale("log")
    if plan["nodes"] > EVERY_COUNT_UP_TO:
        axes.set_xscale("log", base=2)
    axes.set_title("%s: gradient all_reduce per step by link speed" % host)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
    return path
