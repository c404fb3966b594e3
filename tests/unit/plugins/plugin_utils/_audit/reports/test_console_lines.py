"""What a failing audit prints (one short line per finding, then one line saying where the reports are) and how the
reports group repeated findings: hand-made findings, so the expectations do not move with the rule catalog."""

import re

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import exceeds_policy, failure_message
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import (
    LINE_WIDTH, build_report, clip, finding_lines, group_findings, hosts_by_failures, worst_severity,
)


def finding(host, rule, subject, message, severity="fail", waived=False):
    return {"id": rule, "title": "title of %s" % rule, "severity": severity, "host": host, "subject": subject,
            "message": message, "evidence": {"long": "x" * 5000}, "remediation": "fix %s" % rule, "waived": waived}


def report():
    hosts = dict((name, {"status": "audited", "reason": None}) for name in ("alpha", "beta", "gamma", "zeta"))
    hosts["down"] = {"status": "unreachable", "reason": "ssh: connection refused"}
    findings = [
        finding("beta", "GDR-002", "0000:19:00.0->0000:1a:00.0", "ACS redirect between GPU 0000:19:00.0 and NIC b"),
        finding("beta", "GDR-002", "0000:15:00.0->0000:1a:00.0", "ACS redirect between GPU 0000:15:00.0 and NIC a"),
        finding("beta", "GDR-002", "0000:35:00.0->0000:36:00.0", "ACS redirect between GPU 0000:35:00.0 and NIC c"),
        finding("beta", "NUMA-003", "0000:02:00.0", "no NUMA node", severity="warn"),
        finding("beta", "NUMA-003", "0000:02:00.1", "no NUMA node", severity="warn"),
        finding("zeta", "PCIE-001", "0000:19:00.0", "GPU 0000:19:00.0 runs at x8, expected x16\nsecond line"),
        finding("zeta", "PCIE-005", "0000:c1:00.0", "HCA below its maximum; " + "very long explanation " * 40),
        finding("alpha", "NET-003", "eth1", "eth1 is down", severity="info"),
        finding("gamma", "NET-004", "bond0", "bond0 has MTU 1500, expected 9000", waived=True),
    ]
    for f in findings:
        if f["waived"]:
            f["waiver"] = {"reason": "accepted", "expires": "2099-12-31"}
    return build_report(hosts, findings, {}, "2027-01-01T00:00:00+00:00")


def test_clip_keeps_one_line_and_ends_in_an_ellipsis():
    assert clip("a\n  b\tc") == "a b c"
    cut = clip("word " * 100, 40)
    assert len(cut) <= 40 and cut.endswith("\u2026") and "\n" not in cut
    assert clip("x" * LINE_WIDTH) == "x" * LINE_WIDTH


def test_one_line_per_active_finding_most_severe_first():
    rep = report()
    lines = finding_lines(rep)
    active = [f for f in rep["findings"] if not f["waived"]]
    assert len(lines) == len(active) == 8
    assert all(len(line) <= LINE_WIDTH and "\n" not in line for line in lines)
    assert lines[0] == "[fail] beta GDR-002 0000:15:00.0->0000:1a:00.0: ACS redirect between GPU 0000:15:00.0 and NIC a"
    assert "[fail] zeta PCIE-001 0000:19:00.0: GPU 0000:19:00.0 runs at x8, expected x16 second line" in lines
    long = [line for line in lines if "PCIE-005" in line][0]
    assert len(long) == LINE_WIDTH and long.endswith("\u2026")
    assert [line.split("]")[0] for line in lines] == ["[fail"] * 5 + ["[warn"] * 2 + ["[info"]
    assert not [line for line in lines if "gamma" in line]  # waived
    assert "x" * 50 not in " ".join(lines)  # evidence stays in the reports


def test_failure_message_is_one_line_naming_the_reports():
    rep = report()
    assert exceeds_policy(rep, "fail")
    msg = failure_message(rep, "fail", "/srv/audit", ["/srv/audit/report.json", "/srv/audit/report.md",
                                                      "/srv/audit/junit.xml", "/srv/audit/report.html"])
    assert msg == ("audit failed (fail_on=fail): 5 fail, 2 warn finding(s) on 2 host(s) (GDR-002, PCIE-001, "
                   "PCIE-005); reports: /srv/audit/report.html, report.md, report.json, junit.xml")
    warn_only = build_report({"a": {"status": "audited", "reason": None}},
                             [finding("a", "NUMA-003", "x", "no NUMA node", severity="warn")], {}, "now")
    assert failure_message(warn_only, "warn", "/r").startswith(
        "audit failed (fail_on=warn): 0 fail, 1 warn finding(s) on 1 host(s) (NUMA-003); reports: /r/report.html, ")


def test_an_audit_that_reached_no_host_fails_unless_never():
    gone = build_report({"a": {"status": "unreachable", "reason": "ssh"}, "b": {"status": "failed", "reason": "x"}},
                        [], {}, "now")
    assert exceeds_policy(gone, "fail") and exceeds_policy(gone, "warn") and not exceeds_policy(gone, "never")
    assert failure_message(gone, "fail", "/r") == (
        "audit failed (fail_on=fail): no host could be audited (1 unreachable, 1 failed); reports: /r")
    empty = build_report({}, [], {}, "now")  # no hosts at all (an empty pattern): nothing to fail on
    assert not exceeds_policy(empty, "fail")
    one = build_report({"a": {"status": "unreachable", "reason": "ssh"}, "b": {"status": "audited", "reason": None}},
                       [], {}, "now")
    assert not exceeds_policy(one, "fail")  # the rest is audited: the unreachable host is in the report


def test_groups_are_per_severity_host_and_rule():
    groups = group_findings(report()["findings"])
    assert [(g["severity"], g["host"], g["id"], len(g["findings"])) for g in groups] == [
        ("fail", "beta", "GDR-002", 3), ("fail", "zeta", "PCIE-001", 1), ("fail", "zeta", "PCIE-005", 1),
        ("warn", "beta", "NUMA-003", 2), ("info", "alpha", "NET-003", 1)]
    assert [f["subject"] for f in groups[0]["findings"]] == sorted(f["subject"] for f in groups[0]["findings"])


def test_hosts_sorted_by_failures_and_coloured_by_worst_severity():
    rep = report()
    ordered = hosts_by_failures(rep)
    assert [h["name"] for h in ordered] == ["beta", "zeta", "alpha", "down", "gamma"]
    assert dict((h["name"], worst_severity(h)) for h in ordered) == {
        "beta": "fail", "zeta": "fail", "alpha": "info", "down": "unknown", "gamma": "ok"}
    assert [h["name"] for h in rep["hosts"]] == sorted(h["name"] for h in rep["hosts"])  # report.json keeps names


def test_html_one_row_per_rule_and_host_with_subjects_in_details():
    rep = report()
    page = render_html(rep)
    rows = re.findall(r'<tr data-severity="(\w+)" data-host="(\w+)" data-rule="([\w-]+)" data-count="(\d+)">', page)
    assert rows == [("fail", "beta", "GDR-002", "3"), ("fail", "zeta", "PCIE-001", "1"),
                    ("fail", "zeta", "PCIE-005", "1"), ("warn", "beta", "NUMA-003", "2"),
                    ("info", "alpha", "NET-003", "1")]
    assert sum(int(r[3]) for r in rows if r[0] == "fail") == rep["summary"]["findings"]["fail"]
    assert '<details class="subjects"><summary>3 subjects</summary>' in page
    assert "<li>0000:35:00.0-&gt;0000:36:00.0</li>" in page
    # different messages: the first in the summary, the others listed; the same message is shown once
    assert "ACS redirect between GPU 0000:15:00.0 and NIC a <span class=\"more\">(+2 more)</span>" in page
    assert "<li>0000:35:00.0-&gt;0000:36:00.0: ACS redirect between GPU 0000:35:00.0 and NIC c</li>" in page
    assert page.count("no NUMA node") == 1
    hosts = re.findall(r'<tr class="worst-(\w+)" data-host="(\w+)"', page)
    assert hosts == [("fail", "beta"), ("fail", "zeta"), ("info", "alpha"), ("unknown", "down"), ("ok", "gamma")]
    assert render_html(rep) == page  # deterministic


def test_markdown_merges_only_findings_that_say_the_same():
    text = render_markdown(report())
    assert "| warn | beta | NUMA-003 title of NUMA-003 | 0000:02:00.0, 0000:02:00.1 | no NUMA node | fix NUMA-003 |" in text
    assert text.count("| fail | beta | GDR-002") == 3  # three different messages: three rows
    table = text.split("| host | status |", 1)[1].split("## Findings", 1)[0]
    hosts = [line.split("|")[1].strip() for line in table.splitlines()[2:] if line.startswith("| ")]
    assert hosts == ["beta", "zeta", "alpha", "down", "gamma"]
