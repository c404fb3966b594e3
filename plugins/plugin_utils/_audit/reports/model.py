# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The report: its structure (report.json's schema), findings grouped, and the one line a finding prints as."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import CATALOG
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import SEVERITY_RANK
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import duration
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.stability import STABILITY_COUNTS


def nccl_lines(row):
    """An NCCL row of the report as text lines: what NCCL chose beside what the hardware offers."""
    if row.get("problem"):
        return ["%s: %s" % (row["log"], row["problem"])]
    head = "%s: NCCL %s, network %s (%s), transports %s, GPUDirect RDMA %s" % (
        row["log"], row["version"] or "?", row["network"] or "?", ", ".join(row["net_devices"]) or "no device listed",
        ", ".join(row["transports"]) or "none logged", row["gdr"] or "not logged")
    lines = [head]
    for gpu in row["gpus"]:
        chosen = ", ".join("%s (%s, %s)" % (n["nic"], n["path"] or "?", n["transport"]) for n in gpu["nccl_nics"])
        lines.append("GPU %s -> %s; nearest NIC %s (%s)" % (
            gpu["gpu"], chosen or "no network connection logged", gpu["nearest"] or "none", gpu["nearest_path"] or "-"))
    return lines


NCCL_COLUMNS = ("host", "log", "NCCL", "network", "transports", "GPUDirect RDMA", "GPU", "NCCL's NIC (path, transport)",
                "nearest NIC (path)")


def nccl_cells(row, missing):
    """The table rows (lists of cells, NCCL_COLUMNS) of one NCCL row of the report: one per GPU of the facts."""
    if row.get("problem"):
        return [[row["host"], row["log"], row["problem"]] + [missing] * (len(NCCL_COLUMNS) - 3)]
    common = [row["host"], row["log"], row["version"] or missing,
              "%s (%s)" % (row["network"] or missing, ", ".join(row["net_devices"]) or missing),
              ", ".join(row["transports"]) or missing, row["gdr"] or missing]
    cells = []
    for gpu in row["gpus"] or [None]:
        if gpu is None:
            cells.append(common + [missing] * 3)
            continue
        chosen = ", ".join("%s (%s, %s)" % (n["nic"], n["path"] or missing, n["transport"]) for n in gpu["nccl_nics"])
        cells.append(common + [gpu["gpu"], chosen or missing,
                               "%s (%s)" % (gpu["nearest"], gpu["nearest_path"]) if gpu["nearest"] else missing])
    return [[str(c) for c in cell] for cell in cells]


def cabling_cells(row, missing):
    """A cabling row's table cells as text, ``missing`` where the neighbour said nothing."""
    aggregation = row["aggregation"] if row["aggregation"] is not None else missing
    return [str(cell) for cell in (row["host"], row["port"], row["switch"], row["switch_port"],
                                   ", ".join(str(v) for v in row["vlans"]) or missing, aggregation,
                                   row["mfs"] or missing)]


ALLOWED_COLUMNS = ("host", "GPUs", "rails", "one node GB/s", "one node limited by", "nodes", "across nodes GB/s",
                   "across nodes limited by")


def allowed_cells(row, missing):
    """A row of the report's allowed section (what the hardware allows NCCL's all_reduce) as table cells; the
    cluster's row has the host "all audited hosts"."""
    def figure(part):
        value = _figure((part or {}).get("busbw_gbytes_per_s"), "%.4g")
        return value if value is not None else missing
    if row.get("problem") and not row.get("node"):
        return [str(row["host"]), missing, missing, missing, str(row["problem"]), missing, missing, missing]
    across = row.get("across") or {}
    return [str(c) for c in (
        row["host"], row.get("gpus") if row.get("gpus") is not None else missing, ", ".join(row.get("rails") or [])
        or missing, figure(row.get("node")), (row.get("node") or {}).get("limited_by") or missing,
        row.get("nodes") or missing, figure(across) if across else missing,
        across.get("limited_by") or row.get("problem") or missing)]


def allowed_rows(report):
    """The allowed section's rows, the cluster's last (as a row of its own)."""
    section = report.get("allowed") if isinstance(report.get("allowed"), dict) else {}
    rows = [r for r in section.get("hosts") or [] if isinstance(r, dict)]
    cluster = section.get("cluster")
    if isinstance(cluster, dict) and rows:
        rows.append({"host": "all audited hosts (slowest: %s)" % (cluster.get("slowest_host") or "-"),
                     "gpus": None, "rails": [], "node": None, "nodes": cluster.get("nodes"),
                     "across": {"busbw_gbytes_per_s": cluster.get("busbw_gbytes_per_s"),
                                "limited_by": cluster.get("limited_by")}, "problem": None})
    return rows


THROUGHPUT_COLUMNS = ("host", "peer", "network", "Gbit/s", "expected", "retransmitted", "ping idle p50 ms",
                      "ping under load p50 / p99 / max ms", "loss under load", "basis")


def _figure(value, fmt="%.3g"):
    value = finite(value)
    return None if value is None else fmt % value


def peer_label(row):
    """The peer of a throughput row, with its run where each pair was measured more than once (fabric_probe_repeat)."""
    run, runs = row.get("run"), row.get("runs")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (run, runs)) and 1 <= run <= runs and runs > 1:
        return "%s (run %d of %d)" % (row["peer"], run, runs)
    return str(row["peer"])


def throughput_cells(row, missing):
    """A throughput measurement's table cells as text (goodput, retransmits, latency idle and under load)."""
    gbps = _figure(row.get("gbps"))
    loaded = [_figure(row.get(k)) for k in ("loaded_p50_ms", "loaded_p99_ms", "loaded_max_ms")]
    loss = _figure(row.get("loaded_loss_percent"), "%.3g%%")
    return [str(cell) for cell in (
        row["host"], peer_label(row), row["network"],
        gbps if gbps is not None else ("failed: %s" % row.get("error") if row.get("gbps") is None else "?"),
        _figure(row.get("expected_gbps")) or missing,
        _figure(row.get("retransmit_percent"), "%.3g%%") or missing, _figure(row.get("idle_p50_ms")) or missing,
        " / ".join(v or missing for v in loaded) if any(loaded) else missing, loss or missing,
        row.get("basis") or missing)]


RDMA_COLUMNS = ("host", "peer", "network", "port (GID index)", "write Gbit/s", "expected", "latency typical / p99 / "
                "p99.9 us", "basis")


def rdma_cells(row, missing):
    """An rdma probe measurement's table cells as text (write bandwidth, latency percentiles), or why there is none."""
    gbps = _figure(row.get("gbps"))
    latency = [_figure(row.get(k)) for k in ("typical_us", "p99_us", "p999_us")]
    port = "%s:%s" % (row.get("device"), row.get("port")) if row.get("device") else missing
    if row.get("device") and row.get("gid_index") is not None:
        port += " (%s)" % row["gid_index"]
    said = gbps if gbps is not None else ("not paired: %s" % row["skip"] if row.get("skip") else
                                          "failed: %s" % row.get("error"))
    return [str(cell) for cell in (
        row["host"], peer_label(row), row["network"], port, said, _figure(row.get("expected_gbps")) or missing,
        " / ".join(v or missing for v in latency) if any(latency) else missing, row.get("basis") or missing)]


STABILITY_COLUMNS = ("host", "over", "link flaps", "interface errors", "drops", "NIC discards", "NIC errors",
                     "pause frames", "PCIe corrected", "PCIe uncorrected", "RDMA errors", "TCP sent again")
_STABILITY_COUNTS = tuple(c for c in STABILITY_COUNTS if c != "tcp_retrans_segs")  # TCP: a share, its own cell


def stability_cells(row, missing):
    """A host's stability row as text: the window, then each count with its rate per hour where it grew."""
    basis = row.get("basis") or missing
    span = duration(row.get("window_s"))
    over = ("%s, %s" % (span, basis) if basis.startswith("since boot") else "%s (%s)" % (span, basis)) if span \
        else basis
    cells = [row["host"], over]
    for key in _STABILITY_COUNTS:
        count, rate = (row.get("counts") or {}).get(key), (row.get("per_hour") or {}).get(key)
        if count is None:
            cells.append(missing)
        elif count and _figure(rate) is not None:
            cells.append("%d (%s/h)" % (count, _figure(rate)))
        else:
            cells.append(str(count))
    share, sent = _figure(row.get("tcp_retransmit_percent"), "%.3g%%"), row.get("tcp_out_segs")
    cells.append("%s of %d segments" % (share, sent) if share is not None and isinstance(sent, int) else missing)
    return [str(cell) for cell in cells]


def stability_lines(row):
    """The stability row as lines of text (junit's system-out)."""
    cells = stability_cells(row, "-")
    head = "Stability (%s):" if str(row.get("basis")).startswith("since boot") else "Stability over %s:"
    return [head % cells[1]] + ["  %s: %s" % (name, cell) for name, cell in zip(STABILITY_COLUMNS[2:], cells[2:])]


REPORT_SCHEMA_VERSION = 1
LINE_WIDTH = 280  # the longest console line of a finding (printed, with its indent, under 300); reports: full text
ELLIPSIS = "\u2026"


# What XML 1.0 cannot carry (its Char production): the control characters but tab, newline and carriage return, lone
# surrogates (bytes read with surrogateescape), U+FFFE and U+FFFF; with them DEL and the C1 controls, which HTML counts
# as parse errors. A host name from a dynamic inventory can hold any of them.
_NOT_XML = re.compile(u"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _visible(match):
    code = ord(match.group())
    return u"\\x%02x" % code if code < 0x100 else u"\\u%04x" % code


def xml_safe(text):
    """``text`` (a whole JUnit or HTML document, or a piece of one) with each character XML 1.0 forbids written as a
    visible escape: U+0001 as the four characters \\x01, U+FFFE as \\ufffe. Run over a rendered document it reaches
    every attribute value and text node, so the file is well-formed whatever a host name, subject, message or
    evidence holds."""
    return _NOT_XML.sub(_visible, text)


def clip(text, width=LINE_WIDTH):
    """``text`` on one line (runs of whitespace, newlines included, become one space), cut to ``width`` characters
    with an ellipsis when longer."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:max(width - 1, 0)].rstrip() + ELLIPSIS


def finding_line(finding, width=LINE_WIDTH):
    """One console line for a finding: ``[severity] host RULE subject: message``, at most ``width`` characters."""
    return clip("[%s] %s %s %s: %s" % (finding["severity"], finding["host"] or "inventory", finding["id"],
                                       finding["subject"], finding["message"]), width)


def finding_lines(report, width=LINE_WIDTH):
    """One line per finding not waived, in the report's order (most severe first, then host, rule, subject)."""
    return [finding_line(f, width) for f in report["findings"] if not f.get("waived")]


def group_findings(findings):
    """Findings not waived, grouped by (severity, host, rule) in the report's order: [{"severity", "host", "id",
    "title", "remediation", "findings": [...]}]; a rule that fires on many subjects of one host is one group."""
    groups, index = [], {}
    for f in findings:
        if f.get("waived"):
            continue
        key = (f["severity"], f["host"], f["id"])
        if key not in index:
            index[key] = dict(severity=f["severity"], host=f["host"], id=f["id"], title=f.get("title"),
                              remediation=f.get("remediation"), findings=[])
            groups.append(index[key])
        index[key]["findings"].append(f)
    return groups


def worst_severity(host):
    """A host row's worst active severity: fail, warn, info, ``ok`` (audited, nothing found) or ``unknown``
    (unreachable or failed: not audited)."""
    if host["status"] != "audited":
        return "unknown"
    return next((sev for sev in ("fail", "warn", "info") if host["counts"][sev]), "ok")


def hosts_by_failures(report):
    """The report's host rows, most fail findings first, then by name."""
    return sorted(report["hosts"], key=lambda h: (-h["counts"]["fail"], h["name"]))


def build_report(hosts, findings, outcomes, generated_at, collection_version=None, measurements=None, cabling=None,
                 nccl=None, stability=None):
    """``hosts``: {name: {"status": audited|unreachable|failed, "reason": str|None}};
    ``outcomes``: {host: {rule id: (status, reason)}} for audited hosts, inventory rules under "inventory";
    ``measurements``: what the probes measured (see _audit.measurements), listed whether or not they are findings;
    ``nccl``: per host and NCCL log, what NCCL chose beside what the hardware offers (nccl_views.nccl_choices);
    ``stability``: per host, the counters' growth and rates (reports/stability.stability_row)."""
    findings = sorted(findings, key=lambda f: (SEVERITY_RANK[f["severity"]], f["host"] or "", f["id"],
                                               str(f["subject"])))
    active = [f for f in findings if not f.get("waived")]
    counts = dict((name, {"fail": 0, "warn": 0, "info": 0, "waived": 0}) for name in hosts)
    for f in findings:
        if f["host"] in counts:
            counts[f["host"]]["waived" if f.get("waived") else f["severity"]] += 1
    host_rows = []
    for name in sorted(hosts):
        mine = counts[name]
        host_rows.append({
            "name": name,
            "status": hosts[name]["status"],
            "reason": hosts[name].get("reason"),
            # what the readers could not read or did not believe (a FIFO, an absurd number): bounded by the readers
            "facts_warnings": list(hosts[name].get("facts_warnings") or []),
            "counts": {"fail": mine["fail"], "warn": mine["warn"], "info": mine["info"]},
            "waived": mine["waived"],
        })
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": generated_at,
        "tool": {"name": "gpuops.fabric", "version": collection_version},
        "summary": {
            "hosts": len(hosts),
            "audited": sum(1 for h in hosts.values() if h["status"] == "audited"),
            "unreachable": sum(1 for h in hosts.values() if h["status"] == "unreachable"),
            "failed": sum(1 for h in hosts.values() if h["status"] == "failed"),
            "findings": dict((sev, sum(1 for f in active if f["severity"] == sev)) for sev in ("fail", "warn", "info")),
            "waived": len(findings) - len(active),
        },
        "hosts": host_rows,
        "rules": [dict((k, getattr(r, k)) for k in ("id", "title", "severity", "description", "remediation", "scope"))
                  for r in sorted(CATALOG.values(), key=lambda r: r.id)],
        "findings": findings,
        "outcomes": dict((host, dict((rid, {"status": st, "reason": why}) for rid, (st, why) in sorted(out.items())))
                         for host, out in sorted(outcomes.items())),
        "measurements": measurements or [],
        "cabling": cabling or [],
        "nccl": nccl or [],
        "stability": stability or [],
    }
