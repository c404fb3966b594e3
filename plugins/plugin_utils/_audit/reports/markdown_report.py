# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""report.md."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import (
    ALLOWED_COLUMNS, NCCL_COLUMNS, RDMA_COLUMNS, STABILITY_COLUMNS, THROUGHPUT_COLUMNS, allowed_cells, allowed_rows,
    cabling_cells, group_findings, hosts_by_failures, nccl_cells, rdma_cells, stability_cells, throughput_cells,
    xml_safe,
)


def _table(lines, title, columns, rows, cells):
    """A section of one table, its rows' cells by ``cells(row, "-")``; nothing where there are no rows."""
    if rows:
        lines += ["", "## %s" % title, "", "| %s |" % " | ".join(columns), "|%s" % ("---|" * len(columns))]
        lines.extend("| %s |" % " | ".join(_md(cell) for cell in cells(row, "-")) for row in rows)


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report):
    s = report["summary"]
    lines = [
        "# gpuops.fabric audit",
        "",
        "Generated %s. %d host(s): %d audited, %d unreachable, %d failed. Findings: %d fail, %d warn, %d info; "
        "%d waived." % (report["generated_at"], s["hosts"], s["audited"], s["unreachable"], s["failed"],
                        s["findings"]["fail"], s["findings"]["warn"], s["findings"]["info"], s["waived"]),
        "",
        "| host | status | fail | warn | info | waived |",
        "|---|---|---|---|---|---|",
    ]
    for host in hosts_by_failures(report):
        lines.append("| %s | %s | %d | %d | %d | %d |" % (
            _md(host["name"]), host["status"] + (" (%s)" % _md(host["reason"]) if host["reason"] else ""),
            host["counts"]["fail"], host["counts"]["warn"], host["counts"]["info"], host["waived"]))
    lines += ["", "## Findings", ""]
    active = [f for f in report["findings"] if not f.get("waived")]
    if not active:
        lines.append("No findings.")
    else:
        lines += ["| severity | host | rule | subject | message | remediation |", "|---|---|---|---|---|---|"]
        for group in group_findings(active):
            # findings of one rule on one host that say the same thing share a row, their subjects listed
            rows = []
            for f in group["findings"]:
                if rows and rows[-1][0]["message"] == f["message"] and rows[-1][0]["remediation"] == f["remediation"]:
                    rows[-1].append(f)
                else:
                    rows.append([f])
            for same in rows:
                f = same[0]
                lines.append("| %s | %s | %s %s | %s | %s | %s |" % (
                    f["severity"], _md(f["host"] or "inventory"), f["id"], _md(f["title"]),
                    ", ".join(_md(x["subject"]) for x in same), _md(f["message"]), _md(f["remediation"])))
    waived = [f for f in report["findings"] if f.get("waived")]
    if waived:
        lines += ["", "## Waived", "", "| host | rule | subject | reason | expires |", "|---|---|---|---|---|"]
        for f in waived:
            cells = (_md(f["host"] or "inventory"), f["id"], _md(f["subject"]), _md(f["waiver"]["reason"]), f["waiver"]["expires"])
            lines.append("| %s | %s | %s | %s | %s |" % cells)
    _table(lines, "Stability: counters grown, per hour", STABILITY_COLUMNS, report.get("stability") or [],
           stability_cells)
    measured = report.get("measurements") or []
    _table(lines, "Measured throughput and latency under load", THROUGHPUT_COLUMNS,
           [m for m in measured if m["kind"] == "throughput"], throughput_cells)
    _table(lines, "Measured RDMA writes (perftest)", RDMA_COLUMNS, [m for m in measured if m["kind"] == "perftest"],
           rdma_cells)
    _table(lines, "What the hardware allows NCCL's all_reduce (bus bandwidth, large messages)", ALLOWED_COLUMNS,
           allowed_rows(report), allowed_cells)
    if report.get("nccl"):
        lines += ["", "## NCCL: what it chose beside what the hardware offers", "",
                  "| %s |" % " | ".join(NCCL_COLUMNS), "|%s" % ("---|" * len(NCCL_COLUMNS))]
        for row in report["nccl"]:
            for cells in nccl_cells(row, "-"):
                lines.append("| %s |" % " | ".join(_md(cell) for cell in cells))
    if report.get("cabling"):
        lines += ["", "## Cabling (LLDP)", "", "| host | port | switch | switch port | VLANs | aggregation | max frame |",
                  "|---|---|---|---|---|---|---|"]
        for c in report["cabling"]:
            lines.append("| %s |" % " | ".join(_md(cell) for cell in cabling_cells(c, "-")))
    lines += ["", "## Rules", ""]
    for rule in report["rules"]:
        lines += ["### %s %s (%s)" % (rule["id"], rule["title"], rule["severity"]), "", rule["description"], "",
                  "Fix: " + rule["remediation"], ""]
    # control characters (a host name's ESC or BEL from a dynamic inventory) written as visible escapes, as in the
    # JUnit and HTML reports: a terminal or viewer showing report.md is not driven by them
    return xml_safe("\n".join(lines) + "\n")
