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
    if report.get("stability"):
        lines += ["", "## Stability: counters grown, per hour", "",
                  "| %s |" % " | ".join(STABILITY_COLUMNS), "|%s" % ("---|" * len(STABILITY_COLUMNS))]
        for row in report["stability"]:
            lines.append("| %s |" % " | ".join(_md(cell) for cell in stability_cells(row, "-")))
    throughput = [m for m in report.get("measurements") or [] if m["kind"] == "throughput"]
    if throughput:
        lines += ["", "## Measured throughput and latency under load", "",
                  "| %s |" % " | ".join(THROUGHPUT_COLUMNS), "|%s" % ("---|" * len(THROUGHPUT_COLUMNS))]
        for m in throughput:
            lines.append("| %s |" % " | ".join(_md(cell) for cell in throughput_cells(m, "-")))
    rdma = [m for m in report.get("measurements") or [] if m["kind"] == "perftest"]
    if rdma:
        lines += ["", "## Measured RDMA writes (perftest)", "",
                  "| %s |" % " | ".join(RDMA_COLUMNS), "|%s" % ("---|" * len(RDMA_COLUMNS))]
        for m in rdma:
            lines.append("| %s |" % " | ".join(_md(cell) for cell in rdma_cells(m, "-")))
    if allowed_rows(report):
        lines += ["", "## What the hardware allows NCCL's all_reduce (bus bandwidth, large messages)", "",
                  "| %s |" % " | ".join(ALLOWED_COLUMNS), "|%s" % ("---|" * len(ALLOWED_COLUMNS))]
        for row in allowed_rows(report):
            lines.append("| %s |" % " | ".join(_md(cell) for cell in allowed_cells(row, "-")))
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
