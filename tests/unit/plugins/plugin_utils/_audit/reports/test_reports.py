"""Reports from one audit of real captures and the hand-written nodes, read back by parsers."""

import datetime
import json
import re
from xml.etree import ElementTree

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import exceeds_policy, run_audit
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.json_report import render_json
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.junit_report import render_junit
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import REPORT_SCHEMA_VERSION
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import CATALOG

EXPECT = {"gpu": {"width": 16}, "nics": [{"name": "ens*np0", "speed_mbps": 400000, "mtu": 9000}], "rdma": True}


@pytest.fixture(scope="module")
def report(healthy, broken, realdata):
    inputs = {
        "healthy": {"facts": healthy, "expectations": EXPECT},
        "broken": {"facts": broken, "expectations": EXPECT,
                   "waivers": [{"rule": "BOND-002", "hosts": "broken", "reason": "switch LAG pending",
                                "expires": "2027-01-31"}]},
        "sl390": {"facts": gather(source="hwloc_xml",
                                  path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))},
        "gone": {"facts": None, "status": "unreachable", "reason": "ssh: connect to host 127.0.0.1 port 1"},
    }
    result, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00", "0.1.0")
    assert errors == []
    return result


def test_summary_and_statuses(report):
    s = report["summary"]
    assert (s["hosts"], s["audited"], s["unreachable"]) == (4, 3, 1)
    assert s["waived"] == 2  # both BOND-002 members
    assert {h["name"]: h["status"] for h in report["hosts"]} == {
        "broken": "audited", "gone": "unreachable", "healthy": "audited", "sl390": "audited"}
    assert [h for h in report["hosts"] if h["name"] == "healthy"][0]["counts"] == {"fail": 0, "warn": 0, "info": 0}


def test_json_round_trip(report):
    data = json.loads(render_json(report))
    assert data["schema_version"] == REPORT_SCHEMA_VERSION
    assert data["generated_at"] == "2027-01-01T00:00:00+00:00"
    first = data["findings"][0]
    assert first["severity"] == "fail"
    assert set(first) >= {"id", "severity", "host", "subject", "message", "evidence", "remediation", "waived"}
    assert {r["id"] for r in data["rules"]} == set(CATALOG)


def test_junit_one_case_per_host_and_rule(report):
    root = ElementTree.fromstring(render_junit(report))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"broken", "gone", "healthy", "sl390", "inventory"}
    host_rules = [r for r in CATALOG.values() if r.scope == "host"]
    assert len(suites["healthy"].findall("testcase")) == len(host_rules)
    assert suites["healthy"].get("failures") == "0"
    failed = sorted(c.get("name").split()[0] for c in suites["broken"].findall("testcase") if c.find("failure") is not None)
    # BOND-002 waived, NUMA-002 warn; the 100GbE card in its Gen3 x8 slot is both PCIE-003 (slot too narrow for its
    # ports) and PCIE-005 (below the card's own Gen4 x16)
    assert failed == ["BOND-003", "GDR-001", "GDR-002", "PCIE-001", "PCIE-003", "PCIE-005", "STAB-003"]
    gone = suites["gone"].findall("testcase")
    assert len(gone) == 1 and gone[0].find("error").get("type") == "unreachable"
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites.values())
    skipped = [c for c in suites["sl390"].findall("testcase") if c.find("skipped") is not None]
    assert any(c.get("name").startswith("BOND-001") for c in skipped)


def test_markdown(report):
    text = render_markdown(report)
    assert "| broken | audited | 14 |" in text
    assert "| gone | unreachable (ssh: connect to host 127.0.0.1 port 1) |" in text
    assert "## Waived" in text and "switch LAG pending" in text
    assert "NUMA-001 GPU's nearest NIC is on another NUMA node" in text


def test_html_is_self_contained(report):
    page = render_html(report)
    assert "http://" not in page and "https://" not in page and "<link" not in page and "src=" not in page
    # one row per host and rule (its subjects grouped), each row saying how many findings it holds
    assert sum(int(n) for n in re.findall(r'data-severity="fail"[^>]*data-count="(\d+)"', page)) == \
        report["summary"]["findings"]["fail"]
    assert "GPU 0000:19:00.0 runs at x8, expected x16" in page


def test_html_escapes_content(report):
    hostile = dict(report, findings=[dict(report["findings"][0], message="<script>alert(1)</script>")])
    assert "<script>alert(1)</script>" not in render_html(hostile)


def test_policy(report):
    assert exceeds_policy(report, "fail") and exceeds_policy(report, "warn") and not exceeds_policy(report, "never")
