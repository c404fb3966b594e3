"""Rule family STAB and its baseline: growth between an earlier audit's report.json and now.

The readings are the hand-written nodes' facts (tests/fixtures/handwritten/README.md) and copies of them edited as
each test says (an hour later, counters grown, a reboot); the baseline goes through run_audit and a real
report.json on disk, as a second audit reads it."""

import copy
import datetime
import json
import os
import tempfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import (
    BOOT_TIME_SLACK_S, baseline_path, check_counters, read_baseline,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.json_report import render_json
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

TODAY = datetime.date(2027, 1, 1)


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
    rebooted = copy.deepcopy(healthy)  # now: uptime 24 h on a boot 3 h after the first one (read 1 h after it)
    rebooted["counters"]["boot_time"] += 3 * 3600  # the same boot time would be a baseline from the future
    rebooted["counters"]["boot_id"] = "7b3e9c1d-2a4f-4e8b-9c6d-0e1f2a3b4c5d"  # a new boot, a new id
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


# ---- a damaged baseline: checked field by field, named once, never more lenient than no baseline ------------------
NONFATAL = "0000:19:00.0"  # the broken node's GPU with one non-fatal AER error (CmpltTO)


def earlier(healthy, broken):
    """report.json (as read back) of an audit an hour before ``later(healthy)`` and ``later(broken)``, in which the
    broken node's non-fatal error had not happened yet: intact, it judges n2's error as growth (a fail), as no
    baseline judges it since boot."""
    clean = copy.deepcopy(broken)
    clean["counters"]["aer"][NONFATAL]["nonfatal"] = {"total": 0, "by_type": {}}
    return json.loads(render_json(audit({"n1": healthy, "n2": clean})))


def with_baseline(healthy, broken, report, tmp_path, name="damaged.json"):
    path = tmp_path / name
    path.write_text(json.dumps(report))  # NaN, Infinity and 10**400 written as Python's json writes and reads them
    return str(path), audit({"n1": later(healthy), "n2": later(broken)}, baseline=str(path))


def stab(report):
    return sorted((f for f in report["findings"] if f["id"].startswith("STAB-")), key=lambda f: (f["id"], f["host"],
                                                                                                 f["subject"]))


def verdict(report):
    """The fail and warn findings as (rule, host, subject, severity): what the CI gate and the Slurm drain act on."""
    return set((f["id"], f["host"], f["subject"], f["severity"]) for f in report["findings"]
               if f["severity"] in ("fail", "warn"))


def statuses(report, host):
    return dict((r, o["status"]) for r, o in report["outcomes"][host].items() if r.startswith("STAB-"))


@pytest.fixture(scope="module")
def no_baseline(healthy, broken):
    return audit({"n1": later(healthy), "n2": later(broken)})


def test_an_intact_earlier_report_judges_the_error_as_growth(healthy, broken, tmp_path, no_baseline):
    _path, report = with_baseline(healthy, broken, earlier(healthy, broken), tmp_path)
    assert report["policy_warnings"] == []
    [finding] = findings(report, "STAB-003", "n2")
    assert finding["severity"] == "fail" and "in the 1.0 h since the baseline" in finding["message"]
    assert verdict(report) >= verdict(no_baseline)


@pytest.mark.parametrize("field, value, said", [
    ("uptime_s", "abc", 'uptime_s "abc" is not a number of seconds'),
    ("uptime_s", -5, "uptime_s -5 is not a number of seconds"),
    ("uptime_s", float("nan"), "uptime_s NaN is not a number of seconds"),
    ("uptime_s", float("inf"), "uptime_s Infinity is not a number of seconds"),
    ("uptime_s", 10 ** 400, "uptime_s <401-digit integer> is not a number of seconds"),
    ("uptime_s", None, "uptime_s null is not a number of seconds"),
    ("uptime_s", [86400], "uptime_s <list of 1 item> is not a number of seconds"),
    ("boot_time", "yesterday", 'boot_time "yesterday" is not a time in seconds since 1970'),
    ("boot_time", -1, "boot_time -1 is not a time in seconds since 1970"),
    ("boot_time", 1e300, "boot_time 1e+300 is not a time in seconds since 1970"),
    (None, [1, 2], "the host's entry <list of 2 items> is not an object of counters"),
    (None, "x" * 100, 'the host\'s entry "%s"... (100 characters) is not an object of counters' % ("x" * 40)),
])
def test_an_unusable_host_entry_is_judged_as_without_a_baseline(healthy, broken, tmp_path, no_baseline, field, value,
                                                                said):
    """The tester's case: a damaged uptime once made every STAB rule not applicable, and took n2's STAB-003 fail
    away without a word. Now: one warning per host naming the field and its value, and exactly the findings and
    outcomes of no baseline (STAB-003 since boot)."""
    report = earlier(healthy, broken)
    for host in ("n1", "n2"):
        if field is None:
            report["counters"][host] = value
        else:
            report["counters"][host][field] = value
    path, report = with_baseline(healthy, broken, report, tmp_path)
    for host in ("n1", "n2"):
        [warning] = [w for w in report["policy_warnings"] if ", host %s:" % host in w]
        assert warning.startswith("fabric_audit_baseline: %s, host %s: %s" % (path, host, said)), warning
        assert warning.endswith("; %s is judged as without a baseline (uncorrectable PCIe errors since boot, growth "
                                "not judged)" % host), warning
        assert statuses(report, host) == statuses(no_baseline, host)
        assert said in outcome(report, host, "STAB-001")["reason"]  # the reason says why, too
    assert len(report["policy_warnings"]) == 2
    assert stab(report) == stab(no_baseline)  # the same findings, word for word: STAB-003's fail since boot
    [finding] = findings(report, "STAB-003", "n2")
    assert finding["severity"] == "fail" and "1 non-fatal PCIe error(s) since boot (CmpltTO 1)" in finding["message"]
    assert verdict(report) == verdict(no_baseline)
    assert [r["basis"] for r in report["stability"]] == ["since boot (the baseline cannot be used)"] * 2


def _deep(depth):
    value = 0
    for _level in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("edit, said", [
    (lambda i: i.update((n, dict({c: -4 for c in e if c != "kind"}, kind=e["kind"])) for n, e in list(i.items())),
     "interfaces.bond0.carrier_changes -4 is not a counter (an integer from 0 to 2**64-1)"),
    (lambda i: i.update((n, ["rx_crc_errors", 0]) for n in list(i)),
     "interfaces.bond0 <list of 2 items> is not an object of counters"),
    (lambda i: i.update((n, {c: _deep(300) for c in e}) for n, e in list(i.items())),
     "interfaces.bond0.carrier_changes <object of 1 key> is not a counter"),
    (lambda i: i.update((n, {c: [0] * 2000 for c in e}) for n, e in list(i.items())),
     "interfaces.bond0.carrier_changes <list of 2000 items> is not a counter"),
    (lambda i: i.update((n, {c: 10 ** 30 for c in e}) for n, e in list(i.items())),
     "interfaces.bond0.carrier_changes <31-digit integer> is not a counter"),
])
def test_interface_counters_that_cannot_be_used_are_not_compared(healthy, broken, tmp_path, no_baseline, edit, said):
    """Negative, a list, a deep or huge object, past 64 bits: the tester saw STAB-001/002 pass having compared
    nothing. Now those counters are left out, named in one warning per host, and a rule that compared nothing is
    not applicable (as without a baseline), never a pass."""
    report = earlier(healthy, broken)
    for host in ("n1", "n2"):
        edit(report["counters"][host]["interfaces"])
    path, report = with_baseline(healthy, broken, report, tmp_path)
    for host in ("n1", "n2"):
        [warning] = [w for w in report["policy_warnings"] if ", host %s:" % host in w]
        assert warning.startswith("fabric_audit_baseline: %s, host %s: %s" % (path, host, said)), warning
        # the first three named, then how many more
        assert warning.endswith(" more); these are judged as without a baseline (not compared; uncorrectable PCIe "
                                "errors since boot)"), warning
        for rule in ("STAB-001", "STAB-002"):
            assert outcome(report, host, rule)["status"] == "not_applicable", outcome(report, host, rule)
            assert "no counter could be compared" in outcome(report, host, rule)["reason"]
            assert findings(report, rule, host) == findings(no_baseline, rule, host) == []
    assert len(report["policy_warnings"]) == 2
    assert verdict(report) >= verdict(no_baseline)
    # n2's AER counters were intact: its non-fatal error is judged as growth, still a fail
    assert findings(report, "STAB-003", "n2")[0]["severity"] == "fail"


def test_one_damaged_counter_is_left_out_the_others_compared(healthy, broken, tmp_path):
    report = earlier(healthy, broken)
    report["counters"]["n1"]["interfaces"]["ens3np0"]["rx_crc_errors"] = -4
    report["counters"]["n2"]["aer"][NONFATAL]["nonfatal"]["total"] = "one"
    path = tmp_path / "one.json"
    path.write_text(json.dumps(report))
    now = later(healthy, interfaces=[("ens3np0", "rx_crc_errors", 12), ("ens2np0", "rx_crc_errors", 5)])
    report = audit({"n1": now, "n2": later(broken)}, baseline=str(path))
    assert report["policy_warnings"] == [
        "fabric_audit_baseline: %s, host n1: interfaces.ens3np0.rx_crc_errors -4 is not a counter (an integer from 0 "
        "to 2**64-1); these are judged as without a baseline (not compared; uncorrectable PCIe errors since boot)"
        % path,
        "fabric_audit_baseline: %s, host n2: aer.%s.nonfatal.total \"one\" is not a counter (an integer from 0 to "
        "2**64-1); these are judged as without a baseline (not compared; uncorrectable PCIe errors since boot)"
        % (path, NONFATAL)]
    # ens2np0's errors are growth since the baseline; ens3np0's one counter is not compared (no baseline for it)
    [errors] = findings(report, "STAB-002")
    assert errors["subject"] == "ens2np0" and errors["evidence"]["errors"] == {"rx_crc_errors": 5}
    # an uncorrectable count the baseline cannot give: since boot, as without a baseline
    [aer] = findings(report, "STAB-003", "n2")
    assert aer["severity"] == "fail" and "since boot (not in the baseline)" in aer["message"]


OTHER_BOOT = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"


@pytest.mark.parametrize("edit, said", [
    (lambda c: c.update(uptime_s=c["uptime_s"] + 7200),
     "uptime_s 93600.0 is larger than now (90000.0) on the same boot (boot_id %s): the baseline comes from the future"),
    # a report written before the facts had boot ids: the same boot is told by the boot time
    (lambda c: c.update(uptime_s=c["uptime_s"] + 7200, boot_id=None),
     "uptime_s 93600.0 is larger than now (90000.0) on the same boot (boot_time 1764547200): the baseline comes from "
     "the future"),
    (lambda c: c.update(boot_time=c["boot_time"] + 86400, boot_id=OTHER_BOOT),
     "boot_time 1764633600 is after this boot's (1764547200): the baseline comes from the future (a boot that had "
     "not happened yet)"),
    (lambda c: c.update(boot_time=c["boot_time"] - 7200, uptime_s=c["uptime_s"] + 86400, boot_id=OTHER_BOOT),
     "its reading (boot_time 1764540000 + uptime_s 172800.0) is after this audit's (1764547200 + 90000.0): the "
     "baseline comes from the future"),
])
def test_a_host_entry_from_the_future_is_not_used(healthy, broken, tmp_path, no_baseline, edit, said):
    """A larger uptime on the same boot was read as a reboot (counters judged since boot, flaps not at all); a boot
    time ahead was taken as is. Both come from another clock or a hand edit: named, and not used for that host."""
    report = earlier(healthy, broken)
    for host in ("n1", "n2"):
        edit(report["counters"][host])
    path, report = with_baseline(healthy, broken, report, tmp_path)
    ids = {"n1": healthy["counters"]["boot_id"], "n2": broken["counters"]["boot_id"]}
    assert report["policy_warnings"] == [
        "fabric_audit_baseline: %s, host %s: %s; %s is judged as without a baseline (uncorrectable PCIe errors since "
        "boot, growth not judged)" % (path, host, said.replace("%s", ids[host]), host) for host in ("n1", "n2")]
    assert stab(report) == stab(no_baseline) and verdict(report) == verdict(no_baseline)
    assert "since boot (rebooted)" not in str(report["stability"])


@pytest.mark.parametrize("generated_at, problem", [
    ("2099-01-01T00:00:00+00:00", "from the future: generated_at 2099-01-01T00:00:00+00:00 is after this audit's time "
                                  "(2027-01-01T01:00:00+00:00)"),
    ("2027-01-01T02:00:00Z", "from the future: generated_at 2027-01-01T02:00:00Z is after this audit's time "
                             "(2027-01-01T01:00:00+00:00)"),
    (12, "a report whose generated_at 12 is not a time (ISO 8601): when it was taken is unknown"),
    ("last tuesday", 'a report whose generated_at "last tuesday" is not a time (ISO 8601): when it was taken is '
                     'unknown'),
])
def test_a_report_from_the_future_is_not_used(healthy, broken, tmp_path, generated_at, problem):
    report = earlier(healthy, broken)
    report["generated_at"] = generated_at
    path = tmp_path / "future.json"
    path.write_text(json.dumps(report))
    assert read_baseline(str(path), "2027-01-01T01:00:00+00:00")["problem"] == problem
    # this audit's time is 2027-01-01T01:00:00+00:00; the hosts read as they were
    now = audit({"n1": healthy, "n2": broken}, baseline=str(path))
    assert now["policy_warnings"] == ["fabric_audit_baseline: %s is %s; the stability rules judge without a baseline"
                                      % (path, problem)]
    assert now["baseline"][0]["usable"] is False and now["baseline"][0]["generated_at"] is None
    assert stab(now) == stab(audit({"n1": healthy, "n2": broken}))


def test_a_report_a_few_minutes_ahead_is_a_clock_step_not_the_future(healthy, broken, tmp_path):
    report = earlier(healthy, broken)
    report["generated_at"] = "2027-01-01T01:05:00+00:00"
    path = tmp_path / "skew.json"
    path.write_text(json.dumps(report))
    assert read_baseline(str(path), "2027-01-01T01:00:00+00:00")["problem"] is None


def test_many_damaged_hosts_are_bounded_warnings(healthy, tmp_path):
    """A thousand damaged host entries: twenty named lines and one line for the rest, quickly."""
    import time
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import (
        baseline_warnings, check_counters,
    )
    entry = {"uptime_s": "x"}
    checks = dict(("h%04d" % i, check_counters(entry, healthy["counters"])) for i in range(1000))
    started = time.time()
    warnings = baseline_warnings({"b.json": {"problem": None, "counters": dict((h, entry) for h in checks)}},
                                 {"b.json": sorted(checks)}, {"b.json": checks})
    assert time.time() - started < 1 and len(warnings) == 21
    assert warnings[-1] == ("fabric_audit_baseline: b.json holds fields that cannot be used for 980 more host(s) "
                            "(h0020, h0021, h0022 and 977 more); each is judged as without a baseline where its "
                            "fields cannot be used")


# any value a counter, an uptime or a boot time cannot be (None aside: a counter the kernel did not expose)
_NOT_A_COUNTER = st.one_of(
    st.text(max_size=12), st.integers(max_value=-1), st.integers(min_value=2 ** 64, max_value=10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.lists(st.integers(min_value=0, max_value=9), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(min_value=0, max_value=9), max_size=3),
    st.integers(min_value=1, max_value=400).map(_deep))
_NOT_SECONDS = st.one_of(_NOT_A_COUNTER.filter(lambda v: not (isinstance(v, int) and not isinstance(v, bool)
                                                              and 0 <= v <= 3 * 10 ** 9)),
                         st.floats(min_value=-1e12, max_value=-1e-3))
_NOT_AN_OBJECT = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=True), st.booleans(),
                           st.lists(st.integers(), max_size=3))


@st.composite
def damages(draw):
    """1 to 4 (host, path, value): a field of the baseline report made unusable."""
    found = []
    for _damage in range(draw(st.integers(min_value=1, max_value=4))):
        host = draw(st.sampled_from(["n1", "n2"]))
        kind = draw(st.sampled_from(["entry", "uptime_s", "boot_time", "interfaces", "interface", "counter", "aer",
                                     "aer_total", "tcp", "tcp_counter"]))
        name = draw(st.sampled_from(["ens3np0", "bond0", "eno1", "enp193s0f0np0"]))
        counter = draw(st.sampled_from(["carrier_down_count", "carrier_changes", "rx_crc_errors", "rx_dropped",
                                        "rx_packets", "tx_errors"]))
        address = draw(st.sampled_from([NONFATAL, "0000:10:01.0", "0000:00:1c.0"]))
        aer_kind = draw(st.sampled_from(["nonfatal", "fatal", "correctable"]))
        path, strategy = {
            "entry": ((), _NOT_AN_OBJECT), "uptime_s": (("uptime_s",), _NOT_SECONDS),
            "boot_time": (("boot_time",), _NOT_SECONDS), "interfaces": (("interfaces",), _NOT_AN_OBJECT),
            "interface": (("interfaces", name), _NOT_AN_OBJECT),
            "counter": (("interfaces", name, counter), _NOT_A_COUNTER),
            "aer": (("aer", address), _NOT_AN_OBJECT),
            "aer_total": (("aer", address, aer_kind, "total"), _NOT_A_COUNTER),
            "tcp": (("tcp",), _NOT_AN_OBJECT), "tcp_counter": (("tcp", "out_segs"), _NOT_A_COUNTER)}[kind]
        found.append((host, path, draw(strategy)))
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=damages())
@example(damage=[("n1", ("interfaces",), ""), ("n1", ("uptime_s",), 0.0), ("n1", ("boot_time",), 0.0)])  # a reboot
def test_no_damage_judges_more_leniently_than_no_baseline(healthy, broken, no_baseline, damage):
    """The property: whatever is damaged in an earlier report (here one that, intact, judges n2's non-fatal error as
    growth), the fail and warn findings are at least those of no baseline; every damaged host is named in a warning;
    nothing crashes; a rule that compared nothing does not pass."""
    report = _earlier_cache(healthy, broken)
    for host, path, value in damage:
        entry = report["counters"]
        key = host
        for part in path:
            if not isinstance(entry.get(key), dict):
                break
            entry, key = entry[key], part
        else:
            entry[key] = value
    with tempfile.TemporaryDirectory() as directory:
        file_path = os.path.join(directory, "damaged.json")
        with open(file_path, "w") as handle:
            handle.write(json.dumps(report))
        result = audit({"n1": later(healthy), "n2": later(broken)}, baseline=file_path)
    assert not [f for f in result["findings"] if f.get("internal_error")]
    assert verdict(result) >= verdict(no_baseline)
    for host in set(h for h, _p, _v in damage):
        check = check_counters(report["counters"][host], later(healthy)["counters"])
        if check["host"] or check["fields"]:
            assert [w for w in result["policy_warnings"] if ", host %s: " % host in w], result["policy_warnings"]
        if check["counters"] is None:  # the entry cannot be used: exactly as without a baseline
            assert statuses(result, host) == statuses(no_baseline, host)
            assert [f for f in stab(result) if f["host"] == host] == [f for f in stab(no_baseline) if f["host"] == host]
        elif not any(check["counters"]["interfaces"].values()) and not _rebooted(check["counters"], later(healthy)):
            # no interface counter left to compare (after a reboot, the counters since boot are judged instead)
            for rule in ("STAB-001", "STAB-002"):
                assert result["outcomes"][host][rule]["status"] == "not_applicable", result["outcomes"][host][rule]


def _rebooted(before, now):
    """Whether the baseline reading ``before`` is of an earlier boot than ``now`` (stab.py's test, restated from its
    documented meaning: a lower uptime, or boot times further apart than the slack)."""
    now = now["counters"]
    if now["uptime_s"] < before["uptime_s"]:
        return True
    return (now.get("boot_time") is not None and before.get("boot_time") is not None
            and abs(now["boot_time"] - before["boot_time"]) > BOOT_TIME_SLACK_S)


_EARLIER = {}


def _earlier_cache(healthy, broken):
    if "report" not in _EARLIER:
        _EARLIER["report"] = render_json(earlier(healthy, broken))
    return json.loads(_EARLIER["report"])


# ---- issue 32: RDMA counter thresholds and the boot id --------------------------------------------------------

def rdma_node(healthy, **counters):
    base = copy.deepcopy(healthy)
    base["counters"]["rdma"] = {"mlx5_0/1": dict(dict(link_downed=0, symbol_error=10, link_error_recovery=0,
                                                      excessive_buffer_overrun_errors=0,
                                                      local_link_integrity_errors=0, port_rcv_errors=0), **counters)}
    return base


def audit_with(facts, baseline, expectations=None):
    report, errors = run_audit({"n1": {"facts": facts, "baseline": baseline, "expectations": expectations}}, TODAY,
                               "2027-01-01T01:00:00+00:00")
    assert errors == []
    return report


@pytest.mark.parametrize("grown, seconds, found", [
    ({"symbol_error": 100}, 3600, {}),  # 100 an hour: a healthy link's bit errors
    ({"symbol_error": 120}, 3600, {}),  # at the threshold
    ({"symbol_error": 121}, 3600, {"symbol_error": 121}),
    ({"symbol_error": 100}, 1800, {"symbol_error": 100}),  # 200 an hour
    ({"link_downed": 1}, 3600, {"link_downed": 1}),  # any increase
    ({"link_error_recovery": 1, "symbol_error": 50}, 3600, {"link_error_recovery": 1}),
    ({"excessive_buffer_overrun_errors": 2}, 3600, {"excessive_buffer_overrun_errors": 2}),
    ({"local_link_integrity_errors": 1}, 3600, {"local_link_integrity_errors": 1}),
])
def test_rdma_counters_are_judged_against_the_thresholds_per_hour(healthy, tmp_path, grown, seconds, found):
    base = rdma_node(healthy)
    first = write(tmp_path, audit({"n1": base}))
    now = later(base, seconds=seconds, rdma=[("mlx5_0/1", c, g) for c, g in grown.items()])
    report = audit({"n1": now}, baseline=first)
    got = findings(report, "STAB-004")
    if not found:
        assert got == [] and outcome(report, "n1", "STAB-004")["status"] == "pass"
        return
    [finding] = got
    assert finding["evidence"]["counters"] == found
    if "symbol_error" in found:
        assert finding["evidence"]["allowed_per_hour"] == {"symbol_error": 120}
        assert "(%s per hour, allowed 120)" % (found["symbol_error"] * 3600.0 / seconds) in finding["message"]


def test_rdma_thresholds_are_overridable_in_the_expectations(healthy, tmp_path):
    base = rdma_node(healthy)
    first = write(tmp_path, audit({"n1": base}))
    now = later(base, rdma=[("mlx5_0/1", "symbol_error", 200), ("mlx5_0/1", "port_rcv_errors", 3)])
    [default_] = findings(audit_with(now, first), "STAB-004")
    assert default_["evidence"]["counters"] == {"symbol_error": 200, "port_rcv_errors": 3}
    strict = audit_with(now, first, {"rdma_counters": {"symbol_error": 0}})
    assert findings(strict, "STAB-004")[0]["evidence"]["counters"] == {"symbol_error": 200, "port_rcv_errors": 3}
    lenient = audit_with(now, first, {"rdma_counters": {"symbol_error": 1000, "port_rcv_errors": 10}})
    assert findings(lenient, "STAB-004") == []
    assert outcome(lenient, "n1", "STAB-004")["status"] == "pass"


@pytest.mark.parametrize("value, said", [
    ({"link_downed": 5}, "fabric_expectations.rdma_counters.link_downed: any increase is a finding"),
    ({"symbol_errors": 5}, "fabric_expectations.rdma_counters.symbol_errors: unknown key (known: "),
    ({"symbol_error": -1}, "fabric_expectations.rdma_counters.symbol_error: -1 is not a growth per hour"),
    ({"symbol_error": "lots"}, "fabric_expectations.rdma_counters.symbol_error: 'lots' is not a growth per hour"),
    ({"symbol_error": True}, "fabric_expectations.rdma_counters.symbol_error: True is not a growth per hour"),
    ({"symbol_error": float("nan")}, "fabric_expectations.rdma_counters.symbol_error: nan is not a growth per hour"),
    ([120], "fabric_expectations.rdma_counters: expected a mapping of RDMA counter to growth per hour, got [120]"),
])
def test_bad_rdma_thresholds_stop_the_audit_naming_key_host_and_value(healthy, value, said):
    _report, errors = run_audit({"n7": {"facts": healthy, "expectations": {"rdma_counters": value}}}, TODAY,
                                "2027-01-01T01:00:00+00:00")
    assert any(said in e and "n7" in e for e in errors), errors


def test_a_reboot_is_told_by_the_boot_id(healthy, tmp_path):
    """A reboot soon after the baseline: the boot time moved less than the 10 minutes that tell a reboot by time, and
    the uptime is lower. By time alone that reads as a baseline from the future (a reading on the same boot with a
    larger uptime); the new boot id says it is another boot: counters lower than before count since boot, never
    negatively, and flaps are not judged."""
    base = rdma_node(healthy, symbol_error=5000, link_downed=3)
    base["counters"]["uptime_s"] = 300.0  # the baseline: five minutes after a boot
    first = write(tmp_path, audit({"n1": base}))
    now = copy.deepcopy(base)
    now["counters"]["uptime_s"] = 200.0  # rebooted 100 s after the baseline was read, read 200 s into the new boot
    now["counters"]["boot_time"] += 400
    now["counters"]["boot_id"] = "a8c51e2f-0b3d-4e6a-8f7c-9d1e2b3c4a5f"
    now["counters"]["rdma"]["mlx5_0/1"].update(symbol_error=4, link_downed=1)
    report = audit({"n1": now}, baseline=first)
    assert report["policy_warnings"] == []
    assert "rebooted after the baseline" in outcome(report, "n1", "STAB-001")["reason"]
    [finding] = findings(report, "STAB-004")  # since boot: link_downed 1 (any), symbol_error 4 in 200 s (72/h)
    assert finding["evidence"]["counters"] == {"link_downed": 1} and finding["evidence"]["since_boot"] is True
    assert all(v >= 0 for r in report["stability"] for v in r["counts"].values() if v is not None)
    # without boot ids the same readings are a baseline from the future, judged as without one
    for reading in (base, now):
        reading["counters"]["boot_id"] = None
    first = write(tmp_path, audit({"n1": base}), "report-no-id.json")
    report = audit({"n1": now}, baseline=first)
    assert "comes from the future" in " ".join(report["policy_warnings"])


def test_the_same_boot_id_is_the_same_boot_whatever_the_clock_did(healthy, tmp_path):
    """NTP stepped the clock by an hour between the readings: /proc/stat's btime (boot time by the wall clock) moved,
    the boot id did not. The window is the uptime's difference, not a reboot."""
    base = rdma_node(healthy)
    first = write(tmp_path, audit({"n1": base}))
    now = later(base, rdma=[("mlx5_0/1", "link_downed", 1)])
    now["counters"]["boot_time"] += 3600
    report = audit({"n1": now}, baseline=first)
    [finding] = findings(report, "STAB-004")
    assert finding["evidence"]["since_boot"] is False and finding["evidence"]["window_s"] == 3600.0
    assert outcome(report, "n1", "STAB-001")["status"] == "pass"


@pytest.mark.parametrize("value", ["not-a-uuid", 12345, ["x"], "0F6C2A9E-3B1D-4C55-9A51-2D0E8F7B6C41\n"])
def test_a_damaged_boot_id_in_the_baseline_falls_back_to_the_times(healthy, tmp_path, value):
    base = rdma_node(healthy)
    report = audit({"n1": base})
    report["counters"]["n1"]["boot_id"] = value
    first = write(tmp_path, report)
    now = later(base, rdma=[("mlx5_0/1", "link_downed", 1)])
    report = audit({"n1": now}, baseline=first)
    [warning] = report["policy_warnings"]
    assert "boot_id" in warning and "is not a boot id" in warning
    [finding] = findings(report, "STAB-004")  # judged over the window all the same, told by boot time and uptime
    assert finding["evidence"]["since_boot"] is False and finding["evidence"]["window_s"] == 3600.0


def test_the_live_boot_id_is_read(roots):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
    facts = gather(root="/", gather_subset=["counters"])
    with open("/proc/sys/kernel/random/boot_id") as handle:
        assert facts["counters"]["boot_id"] == handle.read().strip()


def test_thresholds_on_a_real_capture_of_infiniband_counters(healthy, tmp_path):
    """The counters of a real ConnectX-3 FDR port (tests/fixtures/realdata/sysfs-infiniband-counters: mlx4_0 port 1,
    as read by the sysfs reader) are the baseline; the next reading is that capture with counters raised BY HAND."""
    import os
    from conftest import REALDATA
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.counters import RDMA_COUNTERS
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader
    folder = os.path.join(REALDATA, "sysfs-infiniband-counters", "hwloc-32em64t-dell-igb-mlx4", "sys", "class",
                          "infiniband", "mlx4_0", "ports", "1", "counters")
    real = dict((k, v) for k, v in SysfsReader(REALDATA)._counter_files(folder, RDMA_COUNTERS).items()  # noqa
                if v is not None)
    assert real["port_xmit_wait"] == 21833 and real["symbol_error"] == 0
    base = copy.deepcopy(healthy)
    base["counters"]["rdma"] = {"mlx4_0/1": real}
    first = write(tmp_path, audit({"n1": base}))
    quiet = later(base, rdma=[("mlx4_0/1", "symbol_error", 90), ("mlx4_0/1", "port_xmit_wait", 500000)])
    assert findings(audit({"n1": quiet}, baseline=first), "STAB-004") == []  # 90 an hour; congestion is no error
    loud = later(base, rdma=[("mlx4_0/1", "symbol_error", 300), ("mlx4_0/1", "link_downed", 1)])
    [finding] = findings(audit({"n1": loud}, baseline=first), "STAB-004")
    assert finding["evidence"]["counters"] == {"symbol_error": 300, "link_downed": 1}
    # rebooted: a new boot id, the counters back near zero; nothing negative, the since-boot link_downed named
    rebooted = copy.deepcopy(base)
    rebooted["counters"]["boot_id"] = "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a"
    rebooted["counters"]["uptime_s"] = 600.0
    rebooted["counters"]["boot_time"] += 90000
    rebooted["counters"]["rdma"]["mlx4_0/1"] = dict(dict.fromkeys(real, 0), link_downed=1)
    report = audit({"n1": rebooted}, baseline=first)
    [finding] = findings(report, "STAB-004")
    assert finding["evidence"]["since_boot"] is True and finding["evidence"]["counters"] == {"link_downed": 1}
    assert all(v is None or v >= 0 for r in report["stability"] for v in r["counts"].values())
