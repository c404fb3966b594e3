"""Rule family STAB and its baseline: growth between an earlier audit's report.json and now.

The readings are the hand-written nodes' facts (tests/fixtures/handwritten/README.md) and copies of them edited as
each test says (an hour later, counters grown, a reboot); the baseline goes through run_audit and a real
report.json on disk, as a second audit reads it."""

import copy
import datetime
import json

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import baseline_path, read_baseline
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.json_report import render_json
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

TODAY = datetime.date(2027, 1, 1)


@pytest.fixture(scope="module")
def healthy(roots):
    return gather(root=roots["dgx8"])


@pytest.fixture(scope="module")
def broken(roots):
    return gather(root=roots["dgx8-broken"])


def later(facts, seconds=3600, **edits):
    """A copy of ``facts`` read ``seconds`` later on the same boot, with counters grown: edits are
    section=[(key, counter, added)]."""
    facts = copy.deepcopy(facts)
    counters = facts["counters"]
    counters["uptime_s"] += seconds
    for section, changes in edits.items():
        for key, counter, added in changes:
            counters[section][key][counter] += added
    return facts


def audit(facts_by_host, baseline=None, tmp_path=None):
    inputs = dict((h, {"facts": f, "baseline": baseline}) for h, f in facts_by_host.items())
    report, errors = run_audit(inputs, TODAY, "2027-01-01T01:00:00+00:00")
    assert errors == []
    return report


def outcome(report, host, rule):
    return report["outcomes"][host][rule]


def findings(report, rule, host="n1"):
    return [f for f in report["findings"] if f["id"] == rule and f["host"] == host]


def write(tmp_path, report, name="report.json"):
    path = tmp_path / name
    path.write_text(render_json(report))
    return str(path)


def test_without_a_baseline_only_uncorrectable_aer_errors_are_judged(healthy, broken):
    report = audit({"n1": healthy, "n2": broken})
    for rule in ("STAB-001", "STAB-002"):
        assert outcome(report, "n1", rule)["status"] == "not_applicable"
        assert "fabric_audit_baseline" in outcome(report, "n1", rule)["reason"]
    assert outcome(report, "n1", "STAB-004")["status"] == "not_applicable"
    assert outcome(report, "n1", "STAB-003")["status"] == "pass"
    [finding] = findings(report, "STAB-003", "n2")
    assert finding["severity"] == "fail" and finding["subject"] == "0000:19:00.0"
    assert "1 non-fatal PCIe error(s) since boot (CmpltTO 1)" in finding["message"]
    # the report keeps each host's counters: it can be the next audit's baseline
    assert report["counters"]["n1"] == healthy["counters"] and report["baseline"] == []


def test_an_hour_later_against_the_first_report(healthy, broken, tmp_path):
    first = write(tmp_path, audit({"n1": healthy, "n2": broken}))
    grown = later(healthy, interfaces=[("ens3np0", "carrier_changes", 4), ("ens3np0", "carrier_up_count", 2),
                                       ("ens3np0", "carrier_down_count", 2),
                                       ("ens3np0", "rx_crc_errors", 12), ("ens3np0", "rx_dropped", 5),
                                       ("ens3np0", "rx_packets", 1000000)],
                  aer=[])
    grown["counters"]["aer"]["0000:19:00.0"]["correctable"]["total"] += 30
    grown["counters"]["aer"]["0000:19:00.0"]["correctable"]["by_type"] = {"BadTLP": 30}
    still_broken = later(broken)  # its one non-fatal error happened before the baseline: not again
    report = audit({"n1": grown, "n2": still_broken}, baseline=first)
    assert report["baseline"] == [{"path": first, "generated_at": "2027-01-01T01:00:00+00:00", "hosts": 2,
                                   "usable": True}]
    assert report["policy_warnings"] == []
    [flap] = findings(report, "STAB-001")
    assert flap["subject"] == "ens3np0" and flap["severity"] == "warn"
    assert flap["evidence"]["flaps"] == 2 and flap["evidence"]["per_hour"] == 2.0  # two downs, four changes
    assert flap["evidence"]["window_s"] == 3600.0 and flap["evidence"]["since_boot"] is False
    assert "the link went down 2 time(s) in the 1.0 h since the baseline (2.0 per hour)" in flap["message"]
    [errors] = findings(report, "STAB-002")
    # 5 drops in a million packets are noise; 12 CRC errors are not
    assert errors["evidence"]["errors"] == {"rx_crc_errors": 12} and errors["evidence"]["drops"] == {}
    [aer] = findings(report, "STAB-003")
    assert aer["severity"] == "warn" and aer["evidence"]["count"] == 30 and aer["evidence"]["per_hour"] == 30.0
    assert outcome(report, "n2", "STAB-003")["status"] == "pass"
    assert outcome(report, "n2", "STAB-001")["status"] == "pass"


def test_drops_above_a_tenth_of_a_percent_and_one_a_minute(healthy, tmp_path):
    first = write(tmp_path, audit({"n1": healthy}))
    grown = later(healthy, interfaces=[("enp193s0f0np0", "rx_dropped", 500), ("enp193s0f0np0", "rx_packets", 100000),
                                       ("enp193s0f1np1", "rx_dropped", 50), ("enp193s0f1np1", "rx_packets", 1000),
                                       # a bond port drops by design (an active-backup bond's idle port)
                                       ("eno1", "rx_dropped", 90000), ("eno1", "rx_packets", 100000)])
    [finding] = findings(audit({"n1": grown}, baseline=first), "STAB-002")
    assert finding["subject"] == "enp193s0f0np0" and finding["evidence"]["drops"] == {"rx_dropped": 500}


def test_a_bond_s_errors_are_its_ports(healthy, tmp_path):
    """The kernel sums a bond's statistics from its ports: the port that counted them is named, not the bond too;
    a total no kind explains is named as such."""
    first = write(tmp_path, audit({"n1": healthy}))
    grown = later(healthy, interfaces=[("eno2", "rx_crc_errors", 7), ("eno2", "rx_errors", 7),
                                       ("bond0", "rx_crc_errors", 7), ("bond0", "rx_errors", 7),
                                       ("ens4np0", "tx_errors", 3)])
    report = audit({"n1": grown}, baseline=first)
    found = dict((f["subject"], f["evidence"]["errors"]) for f in findings(report, "STAB-002"))
    assert found == {"eno2": {"rx_crc_errors": 7}, "ens4np0": {"tx_errors": 3}}


def test_a_reboot_between_the_readings_counts_since_boot(healthy, tmp_path):
    first = write(tmp_path, audit({"n1": later(healthy, seconds=7200)}))  # the baseline: uptime 26 h
    rebooted = copy.deepcopy(healthy)  # now: uptime 24 h, so another boot
    rebooted["counters"]["interfaces"]["ens5np0"].update(carrier_up_count=3, carrier_changes=6)
    rebooted["counters"]["aer"]["0000:19:00.0"]["correctable"]["total"] = 8  # link training at boot: not judged
    rebooted["counters"]["interfaces"]["ens5np0"]["rx_crc_errors"] = 9
    report = audit({"n1": rebooted}, baseline=first)
    # a boot bounces links by itself: flaps are judged again from the next audit on
    assert outcome(report, "n1", "STAB-001")["status"] == "not_applicable"
    assert "rebooted after the baseline" in outcome(report, "n1", "STAB-001")["reason"]
    [errors] = findings(report, "STAB-002")  # errors since boot are errors all the same
    assert errors["evidence"]["errors"] == {"rx_crc_errors": 9} and errors["evidence"]["since_boot"] is True
    assert "since boot (24.0 h; the host rebooted after the baseline)" in errors["message"]
    assert findings(report, "STAB-003") == []


def test_a_counter_below_its_baseline_counts_again_from_zero(healthy, tmp_path):
    before = later(healthy, interfaces=[("ens2np0", "rx_crc_errors", 1000)])
    first = write(tmp_path, audit({"n1": before}))
    after = later(before, seconds=1800)
    after["counters"]["interfaces"]["ens2np0"]["rx_crc_errors"] = 3  # the driver was reloaded
    [finding] = findings(audit({"n1": after}, baseline=first), "STAB-002")
    assert finding["evidence"]["errors"] == {"rx_crc_errors": 3} and finding["evidence"]["per_hour"] == {
        "rx_crc_errors": 6.0}


def test_rdma_port_errors(healthy, tmp_path):
    base = copy.deepcopy(healthy)
    base["counters"]["rdma"] = {"mlx5_0/1": {"link_downed": 1, "symbol_error": 0, "out_of_sequence": 10}}
    first = write(tmp_path, audit({"n1": base}))
    assert outcome(audit({"n1": base}), "n1", "STAB-004")["status"] == "not_applicable"
    now = later(base, rdma=[("mlx5_0/1", "link_downed", 2), ("mlx5_0/1", "out_of_sequence", 500)])
    [finding] = findings(audit({"n1": now}, baseline=first), "STAB-004")
    assert finding["subject"] == "mlx5_0/1"
    assert finding["evidence"]["counters"] == {"link_downed": 2, "out_of_sequence": 500}
    assert outcome(audit({"n1": healthy}, baseline=first), "n1", "STAB-004")["reason"].startswith("no RDMA port")


@pytest.mark.parametrize("content, problem", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not an audit report"),
    ('{"summary": {}, "outcomes": {}, "schema_version": 2, "counters": {}}', "is report schema 2, this audit reads 1"),
    ('{"summary": {}, "outcomes": {}, "schema_version": 1}', "is a report without counters"),
    ("[" * 100000 + "]" * 100000, "is not JSON"),
])
def test_a_baseline_that_cannot_serve_is_one_warning(healthy, tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    report = audit({"n1": healthy, "n2": healthy}, baseline=str(path))
    [warning] = [w for w in report["policy_warnings"] if "fabric_audit_baseline" in w]
    assert warning.startswith("fabric_audit_baseline: %s %s" % (path, problem)), warning
    assert warning.endswith("; the stability rules judge without a baseline"), warning
    assert outcome(report, "n1", "STAB-001")["status"] == "not_applicable"
    assert report["baseline"][0]["usable"] is False


def test_a_baseline_of_other_hosts(healthy, tmp_path):
    first = write(tmp_path, audit({"other": healthy}))
    report = audit({"n1": later(healthy), "n2": later(healthy)}, baseline=first)
    assert report["policy_warnings"] == [
        "fabric_audit_baseline: %s has no counters for 2 host(s) (n1, n2); they are judged without a baseline" % first]
    assert outcome(report, "n1", "STAB-001")["status"] == "not_applicable"


def test_the_baseline_path_is_checked_before_anything(tmp_path):
    assert baseline_path(None) == (None, [])
    assert baseline_path(str(tmp_path / "nope.json"))[1] == [
        "fabric_audit_baseline: %r does not exist on the controller" % str(tmp_path / "nope.json")]
    assert baseline_path(str(tmp_path))[1] == ["fabric_audit_baseline: %r is not a regular file on the controller"
                                               % str(tmp_path)]
    assert baseline_path(["a"])[1] == ["fabric_audit_baseline: ['a'] is not a path"]
    report, errors = run_audit({"n1": {"facts": None, "baseline": str(tmp_path / "nope.json")}}, TODAY, "now")
    assert report is None and "fabric_audit_baseline: %r does not exist on the controller (host n1)" % str(
        tmp_path / "nope.json") in errors


def test_a_large_baseline_is_refused_not_read(tmp_path, monkeypatch):
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import baseline
    monkeypatch.setattr(baseline, "MAX_BYTES", 1024)
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"summary": {}, "outcomes": {}, "schema_version": 1, "counters": {"x": {}},
                                "pad": "x" * 4096}))
    assert read_baseline(str(path))["problem"] == "larger than 0 MiB"


@pytest.mark.parametrize("edit", [
    lambda c: c.update(interfaces=["ens1np0"], aer="x", rdma=[1]),
    lambda c: c["aer"].update({"0000:19:00.0": "lots", "0000:10:01.0": {"nonfatal": [1], "correctable": "x"}}),
    lambda c: c["interfaces"].update(ens1np0={"carrier_down_count": "many", "rx_crc_errors": -4, "kind": "physical"}),
    lambda c: c.update(uptime_s="abc"),
    lambda c: c.update(uptime_s=float("nan")),
])
def test_a_corrupt_baseline_never_crashes_a_rule(healthy, broken, tmp_path, edit):
    """A hand-edited or corrupt report.json as baseline: the rules judge without what they cannot read, and never
    raise (a crash would be an unwaivable internal error)."""
    first = json.loads(render_json(audit({"n1": healthy, "n2": broken})))  # a copy: the facts stay as read
    for host in ("n1", "n2"):
        edit(first["counters"][host])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(first))  # NaN written as JSON's NaN, which Python's json reads back
    report = audit({"n1": later(healthy), "n2": later(broken)}, baseline=str(path))
    for host in ("n1", "n2"):
        for rule in ("STAB-001", "STAB-002", "STAB-003", "STAB-004"):
            assert outcome(report, host, rule)["status"] != "error", (rule, outcome(report, host, rule))
    assert not [f for f in report["findings"] if f.get("internal_error")]


def test_the_same_reading_twice_has_no_window(healthy, tmp_path):
    first = write(tmp_path, audit({"n1": healthy}))
    reason = outcome(audit({"n1": healthy}, baseline=first), "n1", "STAB-001")["reason"]
    assert "the same reading as now" in reason
