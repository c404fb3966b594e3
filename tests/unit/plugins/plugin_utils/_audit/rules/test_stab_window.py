"""fabric_audit_window (the counters read twice in one run) and STAB-007 (the host's TCP retransmits between two
readings). The readings are the hand-written nodes' facts (tests/fixtures/handwritten/README.md), copied and edited
as each test says; the audit is run_audit with the inputs the validate action builds from hostvars."""

import copy
import datetime

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import host_input
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

TODAY = datetime.date(2027, 1, 1)


@pytest.fixture(scope="module")
def healthy(roots):
    return gather(root=roots["dgx8"])


def later(facts, seconds, tcp=(0, 0), **edits):
    """``facts`` read ``seconds`` later on the same boot: ``tcp`` = (segments sent, sent again) in between,
    edits are section=[(key, counter, added)]."""
    facts = copy.deepcopy(facts)
    counters = facts["counters"]
    counters["uptime_s"] += seconds
    counters["tcp"]["out_segs"] += tcp[0]
    counters["tcp"]["retrans_segs"] += tcp[1]
    for section, changes in edits.items():
        for key, counter, added in changes:
            counters[section][key][counter] += added
    return facts


def audit(inputs):
    report, errors = run_audit(inputs, TODAY, "2027-01-01T01:00:00+00:00")
    assert errors == []
    return report


def windowed(first, second, window=60, **more):
    """The audit input of a host read twice: what host_input builds from the hostvars audit.yml leaves."""
    hostvars = dict({"ansible_facts": {"gpuops_fabric": second}, "fabric_audit_window": window,
                     "fabric_audit_window_counters": first["counters"] if first else None}, **more)
    return host_input(hostvars)


def found(report, rule, host="n1"):
    return [f for f in report["findings"] if f["id"] == rule and f["host"] == host]


def test_a_flap_inside_the_window(healthy):
    second = later(healthy, 75, interfaces=[("ens3np0", "carrier_down_count", 1), ("ens3np0", "carrier_up_count", 1),
                                            ("ens3np0", "carrier_changes", 2)])
    report = audit({"n1": windowed(healthy, second, window="60")})  # -e gives text
    [flap] = found(report, "STAB-001")
    assert flap["subject"] == "ens3np0"
    assert "the link went down 1 time(s) in the 75 s since the first reading" in flap["message"]
    assert flap["evidence"]["baseline"] == "fabric_audit_window" and flap["evidence"]["window_s"] == 75.0
    assert report["policy_warnings"] == [] and report["baseline"] == []


def test_a_quiet_window_passes(healthy):
    report = audit({"n1": windowed(healthy, later(healthy, 300, tcp=(200000, 40)))})
    for rule in ("STAB-001", "STAB-002", "STAB-003", "STAB-007"):
        assert report["outcomes"]["n1"][rule]["status"] == "pass", (rule, report["outcomes"]["n1"][rule])


def test_the_second_reading_failed(healthy):
    entry = windowed(healthy, healthy, fabric_audit_window_gather={"failed": True, "msg": "sysfs\nunreadable"})
    report = audit({"n1": entry})
    assert report["outcomes"]["n1"]["STAB-001"]["status"] == "not_applicable"
    assert report["policy_warnings"] == [
        "fabric_audit_window: 1 host(s) have no first reading to compare with: n1 (sysfs unreadable); they are "
        "judged without a baseline"]


@pytest.mark.parametrize("value, message", [
    (-5, "fabric_audit_window: -5 is not a number of seconds from 1 to 86400 (0: no second reading)"),
    ("1m", "fabric_audit_window: '1m' is not a number of seconds from 1 to 86400 (0: no second reading)"),
    (True, "fabric_audit_window: True is not a number of seconds"),
    (86401, "fabric_audit_window: 86401 is not a number"),
    (2.5, "fabric_audit_window: 2.5 is not a number"),
])
def test_a_bad_window_is_named(healthy, value, message):
    report, errors = run_audit({"n1": windowed(healthy, healthy, window=value)}, TODAY, "now")
    assert report is None and len(errors) == 1 and errors[0].startswith(message), errors


def test_window_and_baseline_together_are_refused(healthy, tmp_path):
    path = tmp_path / "report.json"
    path.write_text("{}")
    report, errors = run_audit({"n1": windowed(healthy, healthy, fabric_audit_baseline=str(path))}, TODAY, "now")
    assert report is None
    assert errors == ["fabric_audit_window and fabric_audit_baseline are both set (60, %r): the stability rules "
                      "judge growth against one earlier reading; set one of them (host n1)" % str(path)]


@pytest.mark.parametrize("value", ["lots", -1, 101, float("nan"), [1]])
def test_a_bad_tcp_budget_is_named(healthy, value):
    entry = windowed(healthy, healthy, fabric_audit_max_tcp_retransmit_percent=value)
    report, errors = run_audit({"n1": entry}, TODAY, "now")
    assert report is None
    assert errors == ["fabric_audit_max_tcp_retransmit_percent: %r is not a percentage from 0 to 100 (host n1)"
                      % (value,)]


def test_host_tcp_retransmits_above_budget(healthy):
    report = audit({"n1": windowed(healthy, later(healthy, 600, tcp=(1000000, 8000)))})
    [finding] = found(report, "STAB-007")
    assert finding["subject"] == "tcp" and finding["severity"] == "warn"
    assert finding["message"] == ("8000 of 1000000 TCP segments sent again in the 10 min since the first reading "
                                  "(0.8%), budget 0.5% (fabric_audit_max_tcp_retransmit_percent)")
    assert finding["evidence"]["per_hour"] == 48000.0
    # a budget of 1% passes it; text from -e is a number; 0 means none allowed
    relaxed = windowed(healthy, later(healthy, 600, tcp=(1000000, 8000)),
                       fabric_audit_max_tcp_retransmit_percent="1")
    assert audit({"n1": relaxed})["outcomes"]["n1"]["STAB-007"]["status"] == "pass"
    strict = windowed(healthy, later(healthy, 600, tcp=(1000000, 1)), fabric_audit_max_tcp_retransmit_percent=0)
    assert len(found(audit({"n1": strict}), "STAB-007")) == 1


def test_too_few_segments_say_nothing(healthy):
    report = audit({"n1": windowed(healthy, later(healthy, 60, tcp=(99999, 5000)))})
    outcome = report["outcomes"]["n1"]["STAB-007"]
    assert outcome["status"] == "not_applicable"
    assert outcome["reason"] == ("99999 TCP segments sent in the 60 s since the first reading: too few to judge a "
                                 "rate (at least 100000)")


def test_tcp_counters_reset_or_missing(healthy):
    # lower than before (a wrap, a namespace's counters): counted again from zero, never negative
    reset = copy.deepcopy(healthy)
    reset["counters"]["uptime_s"] += 60
    reset["counters"]["tcp"].update(out_segs=500000, retrans_segs=10)
    report = audit({"n1": windowed(healthy, reset)})
    assert report["outcomes"]["n1"]["STAB-007"]["status"] == "pass"
    # a reading without them: not judged, never a traceback
    gone = copy.deepcopy(reset)
    gone["counters"]["tcp"] = {"out_segs": None, "retrans_segs": 3}
    assert audit({"n1": windowed(healthy, gone)})["outcomes"]["n1"]["STAB-007"]["status"] == "not_applicable"
    odd = copy.deepcopy(healthy)
    odd["counters"]["tcp"] = "garbage"
    report = audit({"n1": windowed(odd, later(healthy, 60, tcp=(10 ** 6, 10 ** 5)))})
    assert report["outcomes"]["n1"]["STAB-007"]["status"] == "not_applicable"


def test_without_a_second_reading_stab_007_says_how(healthy):
    report = audit({"n1": host_input({"ansible_facts": {"gpuops_fabric": healthy}})})
    reason = report["outcomes"]["n1"]["STAB-007"]["reason"]
    assert "fabric_audit_baseline" in reason and "fabric_audit_window" in reason


def test_the_stability_section_of_every_report(healthy):
    """report.json's stability rows, and the same figures in report.md, report.html and junit.xml."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import REPORT_RENDERERS
    second = later(healthy, 1800, tcp=(400000, 400),
                   interfaces=[("ens3np0", "carrier_down_count", 3), ("ens3np0", "rx_crc_errors", 10),
                               ("ens2np0", "rx_fifo_errors", 5)])
    second["counters"]["aer"]["0000:19:00.0"]["correctable"]["total"] += 7
    report = audit({"n1": windowed(healthy, second), "n2": host_input({"ansible_facts": {"gpuops_fabric": healthy}})})
    rows = dict((r["host"], r) for r in report["stability"])
    assert rows["n1"]["basis"] == "fabric_audit_window" and rows["n1"]["window_s"] == 1800.0
    assert rows["n1"]["counts"] == {"link_flaps": 3, "interface_errors": 15, "interface_drops": 0,
                                    "pcie_correctable": 7, "pcie_uncorrectable": 0, "rdma_errors": None,
                                    "tcp_retrans_segs": 400}
    assert rows["n1"]["per_hour"]["link_flaps"] == 6.0 and rows["n1"]["tcp_retransmit_percent"] == 0.1
    assert rows["n2"]["basis"] == "since boot" and rows["n2"]["window_s"] == 86400.0  # no baseline: totals
    rendered = dict((name, render(report)) for name, render in REPORT_RENDERERS.items())
    line = "| n1 | 30 min (fabric_audit_window) | 3 (6/h) | 15 (30/h) | 0 | 7 (14/h) | 0 | - | 0.1% of 400000 segments |"
    assert line in rendered["md"]
    assert "<td>n1</td><td>30 min (fabric_audit_window)</td><td>3 (6/h)</td>" in rendered["html"]
    assert "Stability over 30 min (fabric_audit_window):\n  link flaps: 3 (6/h)\n" in rendered["junit"]
    assert "  TCP sent again: 0.1% of 400000 segments" in rendered["junit"]
    assert '"tcp_retransmit_percent": 0.1' in rendered["json"]


def test_a_capture_without_counters_has_no_stability_row(healthy):
    bare = copy.deepcopy(healthy)
    bare["counters"] = {"boot_time": None, "uptime_s": None, "interfaces": {}, "aer": {}, "rdma": {}, "tcp": None}
    report = audit({"n1": host_input({"ansible_facts": {"gpuops_fabric": bare}})})
    assert report["stability"] == []
