# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""One host's PCIe/NUMA tree as inline SVG for report.html (the tree of _audit/topology.py): NUMA nodes on the left,
then host bridges, ports and switches, the GPUs, NICs and drives on the right; each link coloured by its state, the
GPU-NIC pairs NCCL would use joined by a dashed curve, each finding's id beside its device. No external resources."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from html import escape

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    KIND_ACCELERATOR, KIND_GPU, KIND_NIC, KIND_NVME, KIND_OTHER, KIND_OTHER_BRIDGE, KIND_RDMA, KIND_ROOT_PORT,
    KIND_SWITCH_DOWN, KIND_SWITCH_UP,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import xml_safe

COLUMN, BOX_W, BOX_H, ROW = 230, 210, 22, 28
KIND_WORDS = {KIND_ROOT_PORT: "root port", KIND_SWITCH_UP: "switch", KIND_SWITCH_DOWN: "switch port",
              KIND_OTHER_BRIDGE: "bridge", KIND_GPU: "GPU", KIND_ACCELERATOR: "accelerator", KIND_NIC: "NIC",
              KIND_RDMA: "RDMA NIC", KIND_NVME: "NVMe", KIND_OTHER: "device"}
STATE_WORDS = {"below": "below its maximum", "narrower": "narrower than a device below it",
               "capped": "at what its slot allows, below the card's best",
               "idle": "idle at a lower generation", "ok": "healthy", "unknown": "not judged"}
LEGEND = ("below", "narrower", "capped", "idle", "ok")
CSS = """
svg.topology{font:11px system-ui,sans-serif;background:#fff}
svg.topology rect{fill:#f7f7f7;stroke:#888}svg.topology g.kind-gpu rect,svg.topology g.kind-accelerator rect{fill:#e8f1e0}
svg.topology g.kind-nic rect,svg.topology g.kind-rdma rect{fill:#e3ecf8}svg.topology g.numa rect{fill:#efe7f5}
svg.topology g.has-fail rect{stroke:#b00020;stroke-width:2}svg.topology g.has-warn rect{stroke:#a05a00;stroke-width:2}
svg.topology path.link{fill:none;stroke-width:3}svg.topology .state-ok{stroke:#3a8a3a}
svg.topology .state-below{stroke:#b00020}svg.topology .state-narrower{stroke:#d07000}
svg.topology .state-capped{stroke:#a08000}
svg.topology .state-idle{stroke:#8aa0b8;stroke-dasharray:4 3}svg.topology .state-unknown{stroke:#bbb;stroke-width:1.5}
svg.topology path.nccl{fill:none;stroke:#2456c8;stroke-width:1.5;stroke-dasharray:5 3}
svg.topology text.finding{fill:#b00020;font-weight:bold}svg.topology text.finding.warn{fill:#a05a00}
svg.topology text.finding.info{fill:#205080}
"""


def _shown(text, most=26):
    text = str(text)
    return text if len(text) <= most else text[:most - 1] + u"\u2026"


def _link_words(link):
    if not link:
        return "no link figures"
    parts = []
    for side in ("current", "max"):
        part = link.get(side) or {}
        if part:
            parts.append("%s Gen%s x%s %s GB/s" % (
                "now" if side == "current" else "best", part.get("generation", "?"), part.get("width", "?"),
                part.get("gbytes_per_s", "?")))
    return ", ".join(parts)


def _layout(tree):
    """(nodes, edges): nodes {id: {column, row, ...}} for NUMA nodes, host bridges and devices; rows given to the
    leaves in order, a parent in the middle of its children."""
    nodes, children = {}, {}
    numa_ids = list(tree["numa"]) + ([None] if any(b["numa"] is None for b in tree["bridges"]) else [])
    for numa in numa_ids:
        key = "numa:%s" % ("?" if numa is None else numa)
        nodes[key] = {"kind": "numa", "label": "NUMA node %s" % ("?" if numa is None else numa), "column": 0}
        children[key] = []
    for bridge in tree["bridges"]:
        key = "bridge:" + bridge["id"]
        nodes[key] = {"kind": "host_bridge", "label": "host bridge %s" % bridge["id"], "column": 1}
        children["numa:%s" % ("?" if bridge["numa"] is None else bridge["numa"])].append(key)
        children[key] = []
    by_address = dict((d["address"], d) for d in tree["devices"])
    for device in tree["devices"]:
        children.setdefault(device["address"], [])
    for device in tree["devices"]:
        parent = device["parent"] if device["parent"] in by_address else "bridge:" + (device["host_bridge"] or "?")
        children.setdefault(parent, []).append(device["address"])
        nodes[device["address"]] = {"kind": device["kind"], "device": device}
    row = [0]

    def place(key, column):
        nodes[key]["column"] = column
        kids = children.get(key, [])
        if not kids:
            nodes[key]["row"] = row[0]
            row[0] += 1
            return
        for kid in kids:
            place(kid, column + 1)
        nodes[key]["row"] = (nodes[kids[0]]["row"] + nodes[kids[-1]]["row"]) / 2.0

    for numa in numa_ids:
        place("numa:%s" % ("?" if numa is None else numa), 0)
    edges = [(parent, kid) for parent in children for kid in children[parent] if parent in nodes and kid in nodes]
    return nodes, edges, row[0]


def topology_svg(host, tree):
    """The SVG of one host's tree (an svg element with class topology, data-host, one g.device per device with its
    data-address, data-kind and data-state)."""
    nodes, edges, rows = _layout(tree)
    columns = max(n["column"] for n in nodes.values()) + 1
    right = 10 + columns * COLUMN
    width, height = right + 140, 40 + max(rows, 1) * ROW + 30

    def xy(key):
        node = nodes[key]
        return 10 + node["column"] * COLUMN, 34 + node["row"] * ROW

    esc = escape
    out = ['<svg class="topology" width="%d" height="%d" role="img" '
           'data-host="%s" aria-label="PCIe and NUMA tree of %s">' % (width, height, esc(host), esc(host))]
    x = 10
    for state in LEGEND:
        out.append('<path class="link state-%s" d="M%d 12 h22"/><text x="%d" y="16">%s</text>' % (
            state, x, x + 26, esc(STATE_WORDS[state])))
        x += 40 + 6 * len(STATE_WORDS[state])
    out.append('<path class="nccl" d="M%d 12 h22"/><text x="%d" y="16">GPU-NIC pair NCCL would use</text>' % (
        x, x + 26))
    for parent, kid in edges:
        (x1, y1), (x2, y2) = xy(parent), xy(kid)
        device = nodes[kid].get("device")
        state = device["state"] if device else "unknown"
        words = "%s: %s (%s)" % (device["address"], STATE_WORDS[state], _link_words(device["link"])) if device else ""
        out.append('<path class="link state-%s" data-state="%s" d="M%d %d C%d %d %d %d %d %d"><title>%s</title></path>'
                   % (state, state, x1 + BOX_W, y1 + BOX_H // 2, x1 + BOX_W + 10, y1 + BOX_H // 2, x2 - 10,
                      y2 + BOX_H // 2, x2, y2 + BOX_H // 2, esc(words)))
    for pair in tree["pairs"]:
        if pair["gpu"] not in nodes or pair["nic"] not in nodes:
            continue
        (x1, y1), (x2, y2) = xy(pair["gpu"]), xy(pair["nic"])
        bend = right + 20 + min(100, abs(y2 - y1) / 4.0)
        out.append('<path class="nccl" data-gpu="%s" data-nic="%s" d="M%d %d C%d %d %d %d %d %d"><title>%s</title>'
                   '</path>' % (esc(pair["gpu"]), esc(pair["nic"]), x1 + BOX_W, y1 + 7, bend, y1 + 7, bend, y2 + 15,
                                x2 + BOX_W, y2 + 15, esc("%s - %s: %s" % (pair["gpu"], pair["nic"], pair["type"] or "?"))))
    for key in sorted(nodes, key=lambda k: (nodes[k]["column"], nodes[k]["row"])):
        node = nodes[key]
        x, y = xy(key)
        device = node.get("device")
        if not device:
            out.append('<g class="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="4"/><text x="%d" y="%d">%s</text>'
                       "</g>" % ("numa" if node["kind"] == "numa" else "bridge", x, y, BOX_W, BOX_H, x + 6, y + 15,
                                 esc(_shown(node["label"]))))
            continue
        severities = set(f["severity"] for f in device["findings"])
        worst = "fail" if "fail" in severities else "warn" if "warn" in severities else ""
        name = (device["label"] or KIND_WORDS.get(device["kind"], device["kind"])).split(",")[0]
        label = "%s %s" % (_shown(name, 10 if device["findings"] else 20), device["address"][5:])
        title = "%s %s%s\n%s\nlink: %s (%s)%s" % (
            KIND_WORDS.get(device["kind"], device["kind"]), device["address"],
            " (%s)" % device["label"] if device["label"] else "", device["name"] or "",
            STATE_WORDS[device["state"]], _link_words(device["link"]),
            "\nfindings: " + ", ".join(f["id"] for f in device["findings"]) if device["findings"] else "")
        out.append('<g class="device kind-%s%s" data-address="%s" data-kind="%s" data-state="%s" data-findings="%s">'
                   '<rect x="%d" y="%d" width="%d" height="%d" rx="4"/><text x="%d" y="%d">%s</text><title>%s</title>'
                   % (esc(device["kind"]), " has-" + worst if worst else "", esc(device["address"]),
                      esc(device["kind"]), device["state"], esc(" ".join(f["id"] for f in device["findings"])),
                      x, y, BOX_W, BOX_H, x + 6, y + 15, esc(label), esc(title)))
        if device["findings"]:  # inside the box, at its right end: the first id, then how many more
            first = device["findings"][0]
            more = " +%d" % (len(device["findings"]) - 1) if len(device["findings"]) > 1 else ""
            out.append('<text class="finding %s" x="%d" y="%d" text-anchor="end">%s%s</text>' % (
                esc(first["severity"] or ""), x + BOX_W - 5, y + 15, esc(first["id"]), more))
        out.append("</g>")
    if tree.get("cut"):
        out.append('<text x="10" y="%d">%d more bridges and devices not drawn</text>' % (height - 8, tree["cut"]))
    out.append("</svg>")
    return xml_safe("".join(out))
