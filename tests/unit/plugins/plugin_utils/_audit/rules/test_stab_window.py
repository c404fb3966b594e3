"""fabric_audit_window (the counters read twice in one run) and STAB-007 (the host's TCP retransmits between two
readings). The readings are the hand-written nodes' facts (tests/fixtures/handwritten/README.md), copied and edited
as each test says; the audit is run_audit with the inputs the validate action builds from hostvars."""

import copy
import datetime
import json

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import host_input
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

TODAY = datetime.date(2027, 1, 1)


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


def as_text(facts):
    """The facts as topology_facts returns them with as_json, as audit.yml gathers."""
    return json.dumps(facts, sort_keys=True, separators=(",", ":"))


def windowed(first, second, window=60, **more):
    """The audit input of a host read twice: what host_input builds from the hostvars audit.yml leaves (both
    readings registered as JSON texts)."""
    hostvars = dict({"fabric_audit_window": window,
                     "fabric_audit_gather": {"changed": False, "reused": False, "facts_json": as_text(first)},
                     "fabric_audit_window_gather": {"changed": False, "reused": False,
                                                    "facts_json": as_text(second)}}, **more)
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
        "fabric_audit_window: 1 host(s) were not read twice: n1 (the second reading failed: sysfs unreadable); they "
        "are judged without a baseline"]
    # a host that left the play before the second gather (failed in the probes): never registered
    entry = host_input({"fabric_audit_window": 60, "fabric_audit_gather": {"facts_json": as_text(healthy)}})
    report = audit({"n1": entry})
    assert report["policy_warnings"] == [
        "fabric_audit_window: 1 host(s) were not read twice: n1 (not read a second time (the host left the play "
        "before the window's second reading)); they are judged without a baseline"]
    assert report["outcomes"]["n1"]["STAB-001"]["status"] == "not_applicable"


def test_one_window_for_the_whole_play(healthy):
    report, errors = run_audit({"n1": windowed(healthy, healthy, window=60),
                                "n2": windowed(healthy, healthy, window="120"),
                                "n3": host_input({"ansible_facts": {"gpuops_fabric": healthy}})}, TODAY, "now")
    assert report is None
    assert errors == ["fabric_audit_window: 120 seconds on some hosts, unset or 60 on others: the playbook waits "
                      "once for all of them; set one value for the whole play (-e fabric_audit_window=N) (host n1, "
                      "n3)"]


@pytest.mark.parametrize("value, message", [
    (-5, "fabric_audit_window: -5 is not a number of seconds from 1 to 86400 (0: no second reading)"),
    ("1m", "fabric_audit_window: '1m' is not a number of seconds from 1 to 86400 (0: no second reading)"),
    (True, "fabric_audit_window: True is not a number of seconds"),
    (86401, "fabric_audit_window: 86401 is not a number"),
    (2.5, "fabric_audit_window: 2.5 is not a number"),
    ("\u00b2", "fabric_audit_window: '\u00b2' is not a number"),  # isdigit() says yes, int() says no
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
    # n2: the same window, but this run read it once (the drift playbook): its totals since boot
    report, errors = run_audit({"n1": windowed(healthy, second),
                                "n2": host_input({"ansible_facts": {"gpuops_fabric": healthy},
                                                  "fabric_audit_window": 60})}, TODAY, "now")
    assert errors == [] and "n2 (the first gather read no counters, or this playbook reads them once" in \
        report["policy_warnings"][0]
    rows = dict((r["host"], r) for r in report["stability"])
    assert rows["n1"]["basis"] == "fabric_audit_window" and rows["n1"]["window_s"] == 1800.0
    assert rows["n1"]["counts"] == {"link_flaps": 3, "interface_errors": 15, "interface_drops": 0,
                                    "nic_discards": None, "nic_errors": None, "pause_frames": None,
                                    "pcie_correctable": 7, "pcie_uncorrectable": 0, "rdma_errors": None,
                                    "tcp_retrans_segs": 400}
    assert rows["n1"]["per_hour"]["link_flaps"] == 6.0 and rows["n1"]["tcp_retransmit_percent"] == 0.1
    assert rows["n2"]["basis"] == "since boot" and rows["n2"]["window_s"] == 86400.0  # no baseline: totals
    # flaps and corrected PCIe errors since boot are what a boot does by itself: not shown
    assert rows["n2"]["counts"]["link_flaps"] is None and rows["n2"]["counts"]["pcie_correctable"] is None
    rendered = dict((name, render(report)) for name, render in REPORT_RENDERERS.items())
    line = ("| n1 | 30 min (fabric_audit_window) | 3 (6/h) | 15 (30/h) | 0 | - | - | - | 7 (14/h) | 0 | - | "
            "0.1% of 400000 segments |")
    assert line in rendered["md"]
    assert "<td>n1</td><td>30 min (fabric_audit_window)</td><td>3 (6/h)</td>" in rendered["html"]
    assert "Stability over 30 min (fabric_audit_window):\n  link flaps: 3 (6/h)\n" in rendered["junit"]
    assert "  TCP sent again: 0.1% of 400000 segments" in rendered["junit"]
    import json
    assert json.loads(rendered["json"])["stability"] == json.loads(json.dumps(report["stability"]))
    assert '"tcp_retransmit_percent":0.1' in rendered["json"]


def test_a_capture_without_counters_has_no_stability_row(healthy):
    bare = copy.deepcopy(healthy)
    bare["counters"] = {"boot_time": None, "uptime_s": None, "interfaces": {}, "aer": {}, "rdma": {}, "tcp": None}
    report = audit({"n1": host_input({"ansible_facts": {"gpuops_fabric": bare}})})
    assert report["stability"] == []


@pytest.mark.parametrize("value", [0, "0", "00", " 0 ", "", None])
def test_a_window_of_zero_is_off(healthy, value):
    report = audit({"n1": windowed(healthy, healthy, window=value)})
    assert "fabric_audit_baseline" in report["outcomes"]["n1"]["STAB-001"]["reason"]  # no window: no baseline


def test_uncorrectable_pcie_errors_before_the_window_still_fail(roots):
    """A window in this run starts minutes ago: a non-fatal error counted since boot was never reported by an
    earlier audit, so it fails as without a baseline. Correctable ones are judged on their growth."""
    broken = gather(root=roots["dgx8-broken"])
    report = audit({"n1": windowed(broken, later(broken, 60))})
    [finding] = found(report, "STAB-003")
    assert finding["severity"] == "fail" and "1 non-fatal PCIe error(s) since boot" in finding["message"]


@pytest.mark.parametrize("edit", [
    lambda c: c.update(uptime_s=10 ** 400),
    lambda c: c.update(uptime_s=-1000000.0),
    lambda c: c.update(boot_time=10 ** 400),
    lambda c: c["tcp"].update(out_segs=10 ** 400),
    lambda c: c["interfaces"]["ens3np0"].update(carrier_down_count=10 ** 30),
    lambda c: c.update(nic_stats={"ens3np0": {"rx_discards_phy": "many"}, "x": None}),
])
def test_a_corrupt_first_reading_never_crashes_the_audit(healthy, edit):
    first = copy.deepcopy(healthy)
    edit(first["counters"])
    report = audit({"n1": windowed(first, later(healthy, 60, tcp=(10 ** 6, 10 ** 5)))})
    assert not [f for f in report["findings"] if f["id"].startswith("STAB") and "crashed" in f["message"]]
    assert [r["host"] for r in report["stability"]] == ["n1"]
    if first["counters"]["uptime_s"] in (10 ** 400, -1000000.0):
        assert report["outcomes"]["n1"]["STAB-001"]["status"] == "not_applicable"
        assert "cannot be used" in report["outcomes"]["n1"]["STAB-001"]["reason"]


def test_tcp_out_segs_reset_alone_resets_both(healthy):
    second = copy.deepcopy(healthy)
    second["counters"]["uptime_s"] += 60
    second["counters"]["tcp"].update(out_segs=150000, retrans_segs=101200)  # out_segs wrapped, retrans_segs did not
    report = audit({"n1": windowed(healthy, second)})
    # counted again from zero, both: 101200 of 150000 is a share no kernel counts (more than the window sent)
    [finding] = found(report, "STAB-007")
    assert finding["evidence"]["out_segs"] == 150000 and finding["evidence"]["retrans_segs"] == 101200
    second["counters"]["tcp"].update(retrans_segs=200000)  # more sent again than sent: no reading
    assert audit({"n1": windowed(healthy, second)})["outcomes"]["n1"]["STAB-007"]["status"] == "not_applicable"


def test_junit_says_since_boot_plainly(healthy):
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.junit_report import render_junit
    report = audit({"n1": host_input({"ansible_facts": {"gpuops_fabric": healthy}})})
    assert "Stability (24.0 h, since boot):\n  link flaps: -\n" in render_junit(report)


def test_the_nic_s_own_counters_growing(healthy):
    """STAB-002 with the NIC's counters (ethtool -S on a live node): errors any, discards from one a minute."""
    first = copy.deepcopy(healthy)
    first["counters"]["nic_stats"] = {"ens3np0": {"rx_discards_phy": 10, "rx_crc_errors_phy": 0,
                                                  "rx_pause_ctrl_phy": 5, "rx*_wqe_err": 0},
                                      "ens2np0": {"rx_out_of_buffer": 0}}
    second = later(first, 600)
    second["counters"]["nic_stats"]["ens3np0"].update(rx_discards_phy=5010, rx_crc_errors_phy=2, rx_pause_ctrl_phy=900)
    second["counters"]["nic_stats"]["ens2np0"].update(rx_out_of_buffer=9)  # 54 an hour: below one a minute
    report = audit({"n1": windowed(first, second)})
    [finding] = found(report, "STAB-002")
    assert finding["subject"] == "ens3np0"
    assert finding["message"] == ("ens3np0: the NIC's own (ethtool -S) rx_crc_errors_phy +2, rx_discards_phy +5000 in "
                                  "the 10 min since the first reading")
    assert finding["evidence"]["nic_stats"] == {"rx_crc_errors_phy": 2, "rx_discards_phy": 5000}
    [row] = report["stability"]
    # per port the counter that grew most (a driver counts one loss in several), summed over the ports
    assert (row["counts"]["nic_discards"], row["counts"]["nic_errors"], row["counts"]["pause_frames"]) == (5009, 2, 895)
