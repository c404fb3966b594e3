# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The audit in Prometheus' text exposition format (version 0.0.4), as node_exporter's textfile collector reads it:
every family a gauge with its HELP and TYPE, no timestamps (the collector refuses them; it exports the file's mtime
as node_textfile_mtime_seconds, which says how old the audit is), every label value escaped, families in a fixed
order and samples sorted, so one audit gives one file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import os

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import SEVERITIES
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.links import utf8
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.stability import STABILITY_COUNTS
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import HOST_STATES

COUNT_MAX = 1 << 64
# the kernel's operstates (Documentation/networking/operstates.rst): up is 1, the others 0, anything else unknown
OPERSTATES = ("up", "down", "dormant", "lowerlayerdown", "notpresent", "testing")
# the stability section's basis, as the label value: growth over the audit's window, since the baseline report, or
# since boot (lifetime totals: a boot's own link bounces and training are in them)
BASES = (("fabric_audit_window", "window"), ("fabric_audit_baseline", "baseline"), ("since boot", "boot"))
# (metric name, HELP text), in the file's order
FAMILIES = (
    ("gpuops_fabric_hosts", "Hosts of the audit by status (audited, unreachable, failed)."),
    ("gpuops_fabric_host_status", "1 for each host, labelled with its status in the audit."),
    ("gpuops_fabric_host_findings", "Findings not waived on a host, by severity (0 included)."),
    ("gpuops_fabric_host_findings_waived", "Findings waived on a host."),
    ("gpuops_fabric_rule_findings", "Findings not waived, by host, rule and severity (host empty for the "
                                    "inventory's own)."),
    ("gpuops_fabric_pcie_link_generation", "PCIe generation a GPU's or NIC's link runs at now."),
    ("gpuops_fabric_pcie_link_max_generation", "Highest PCIe generation the link supports."),
    ("gpuops_fabric_pcie_link_width", "PCIe lanes the link runs with now."),
    ("gpuops_fabric_pcie_link_max_width", "Most PCIe lanes the link supports."),
    ("gpuops_fabric_pcie_link_bytes_per_second", "Usable one-direction bandwidth of the link now (bytes/s)."),
    ("gpuops_fabric_pcie_link_max_bytes_per_second", "Usable one-direction bandwidth of the link at its best "
                                                     "(bytes/s)."),
    ("gpuops_fabric_pcie_path_bytes_per_second", "Usable one-direction bandwidth of the narrowest link on a GPU's "
                                                 "or NIC's way to the CPU now (bytes/s); hop: that link's device."),
    ("gpuops_fabric_pcie_path_links_below", "Links on a GPU's or NIC's way to the CPU (its own included) running "
                                            "below what both their ends allow."),
    ("gpuops_fabric_nic_speed_bytes_per_second", "Link speed of an interface as the kernel reports it (bytes/s)."),
    ("gpuops_fabric_nic_mtu_bytes", "MTU of an interface."),
    ("gpuops_fabric_nic_up", "1 when the interface's operstate is up, 0 when it is another known state."),
    ("gpuops_fabric_stability_window_seconds", "Seconds the stability counts cover; basis: window (the audit's "
                                               "fabric_audit_window), baseline (since fabric_audit_baseline) or "
                                               "boot (since boot: lifetime totals)."),
    ("gpuops_fabric_stability_growth", "Growth of a stability counter over the window (the stability section); "
                                       "basis boot: the total since boot."),
    ("gpuops_fabric_stability_rate_per_second", "Growth of a stability counter per second of the window."),
    ("gpuops_fabric_tcp_retransmit_ratio", "Share of the host's TCP segments sent again over the window."),
    ("gpuops_fabric_nccl_allreduce_allowed_bytes_per_second", "Bus bandwidth the hardware allows NCCL's all_reduce "
                                                              "of large messages (bytes/s); scope: node (the host "
                                                              "alone), nodes (all audited hosts like it) or cluster "
                                                              "(host empty: the slowest host's)."),
)


def escape_label(value):
    return utf8(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def escape_help(text):
    return utf8(text).replace("\\", "\\\\").replace("\n", "\\n")


def _value(value):
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def _sample(name, labels, value):
    if not labels:
        return "%s %s" % (name, _value(value))
    return "%s{%s} %s" % (name, ",".join('%s="%s"' % (k, escape_label(v)) for k, v in labels), _value(value))


def _samples(report):
    found = dict((name, {}) for name, _help in FAMILIES)

    def put(name, labels, value):
        if value is None:
            return
        # one sample per label set: the first stands (the rows are sorted, so which one is fixed)
        found[name].setdefault(tuple((k, "" if v is None else str(v)) for k, v in labels), value)

    summary = report.get("summary") or {}
    for state in HOST_STATES:
        put("gpuops_fabric_hosts", [("status", state)], finite(summary.get(state), 0, COUNT_MAX) or 0)
    for host in report.get("hosts") or []:
        name = host.get("name")
        put("gpuops_fabric_host_status", [("host", name), ("status", host.get("status"))], 1)
        if host.get("status") == "audited":
            for severity in SEVERITIES:
                put("gpuops_fabric_host_findings", [("host", name), ("severity", severity)],
                    finite((host.get("counts") or {}).get(severity), 0, COUNT_MAX) or 0)
            put("gpuops_fabric_host_findings_waived", [("host", name)], finite(host.get("waived"), 0, COUNT_MAX) or 0)
    per_rule = {}
    for finding in report.get("findings") or []:
        if finding.get("waived"):
            continue
        key = (finding.get("host") or "", finding.get("id"), finding.get("severity"))
        per_rule[key] = per_rule.get(key, 0) + 1
    for (host, rule, severity), count in per_rule.items():
        put("gpuops_fabric_rule_findings", [("host", host), ("rule", rule), ("severity", severity)], count)
    for row in report.get("links") or []:
        labels = [("host", row["host"]), ("device", row["device"]), ("kind", row["kind"]),
                  ("address", row.get("address") or "")]
        pcie = row.get("pcie") or {}
        for side, infix in (("current", ""), ("max", "max_")):
            link = pcie.get(side) or {}
            put("gpuops_fabric_pcie_link_%sgeneration" % infix, labels, link.get("generation"))
            put("gpuops_fabric_pcie_link_%swidth" % infix, labels, link.get("width"))
            rate = link.get("gbytes_per_s")
            put("gpuops_fabric_pcie_link_%sbytes_per_second" % infix, labels,
                None if rate is None else int(round(rate * 1e9)))
        path = row.get("path") if isinstance(row.get("path"), dict) else None
        if path:
            rate = finite(path.get("gbytes_per_s"), 0, COUNT_MAX)
            put("gpuops_fabric_pcie_path_bytes_per_second", labels + [("hop", path.get("bottleneck") or "")],
                None if rate is None else int(round(rate * 1e9)))
            below = path.get("below")
            put("gpuops_fabric_pcie_path_links_below", labels, len(below) if isinstance(below, list) else None)
        if row.get("class") == "nic":
            # device: the interface, as node_exporter's node_network_* metrics name it
            nic = [("host", row["host"]), ("device", row["device"]), ("kind", row.get("interface_kind") or "")]
            speed = row.get("speed_mbps")
            put("gpuops_fabric_nic_speed_bytes_per_second", nic, None if speed is None else int(round(speed * 125000)))
            put("gpuops_fabric_nic_mtu_bytes", nic, row.get("mtu"))
            state = row.get("operstate")
            put("gpuops_fabric_nic_up", nic, int(state == "up") if state in OPERSTATES else None)
    for row in report.get("stability") or []:
        host = row.get("host")
        basis = [label for prefix, label in BASES if str(row.get("basis") or "").startswith(prefix)]
        if not basis:
            continue
        labels = [("host", host), ("basis", basis[0])]
        window = finite(row.get("window_s"), 0, COUNT_MAX)
        put("gpuops_fabric_stability_window_seconds", labels, window)
        counts = row.get("counts") or {}
        for counter in STABILITY_COUNTS:
            count = finite(counts.get(counter), 0, COUNT_MAX)
            put("gpuops_fabric_stability_growth", labels + [("counter", counter)], count)
            # from the count and the window (the section's per-hour figures are rounded for people)
            put("gpuops_fabric_stability_rate_per_second", labels + [("counter", counter)],
                count / float(window) if count is not None and window else None)
        percent = finite(row.get("tcp_retransmit_percent"), 0, 100)
        put("gpuops_fabric_tcp_retransmit_ratio", labels, None if percent is None else percent / 100.0)
    section = report.get("allowed") if isinstance(report.get("allowed"), dict) else {}
    for row in section.get("hosts") or []:
        if not isinstance(row, dict):
            continue
        for scope, key in (("node", "node"), ("nodes", "across")):
            rate = finite((row.get(key) or {}).get("busbw_gbytes_per_s"), 0, COUNT_MAX)
            put("gpuops_fabric_nccl_allreduce_allowed_bytes_per_second", [("host", row.get("host")),
                                                                          ("scope", scope)],
                None if rate is None else int(round(rate * 1e9)))
    cluster = section.get("cluster") if isinstance(section.get("cluster"), dict) else {}
    rate = finite(cluster.get("busbw_gbytes_per_s"), 0, COUNT_MAX)
    put("gpuops_fabric_nccl_allreduce_allowed_bytes_per_second", [("host", ""), ("scope", "cluster")],
        None if rate is None else int(round(rate * 1e9)))
    return found


def render_prometheus(report):
    """The text of a node_exporter textfile (a ``.prom`` file) for ``report``."""
    found = _samples(report)
    lines = []
    for name, text in FAMILIES:
        if not found[name]:
            continue
        lines.append("# HELP %s %s" % (name, escape_help(text)))
        lines.append("# TYPE %s gauge" % name)
        for labels in sorted(found[name]):
            lines.append(_sample(name, labels, found[name][labels]))
    return "\n".join(lines) + "\n"


def textfile_dir_problem(path):
    """None, or why the folder ``path`` (fabric_prometheus_textfile_dir) must not be written to: it is a symbolic
    link, or a link on its way makes it resolve somewhere other than its own path (a textfile folder pointed at
    /etc would have the audit replace a file there). The message names the path and where it leads. A symbolic link
    named gpuops_fabric.prom inside the folder is no problem: write_atomic replaces the link, never writes through
    it."""
    if not isinstance(path, str) or not path or "\0" in path:
        return "%r is not a path" % (path,)
    absolute = os.path.normpath(os.path.abspath(path))
    if os.path.islink(absolute):
        return "%r is a symbolic link (to %r): name the folder itself, not a link to it" % (
            path, os.readlink(absolute))
    real = os.path.realpath(absolute)
    if real != absolute:
        return "%r resolves to %r through a symbolic link on its way: name the folder by its own path" % (path, real)
    return None
