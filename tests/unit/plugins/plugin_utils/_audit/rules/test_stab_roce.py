"""STAB-009, RoCE congestion notifications not acted on. The counts are real mlx5 hw_counters (two captures with
PROVENANCE: tests/fixtures/realdata/sysfs-infiniband-counters/cn-notes-cx4lx-mlx5-hw-counters, a congested RoCE
bond's NIC that marks and answers, and tests/fixtures/realdata/sonic-issue21891-rdma-statistic-sender-slow-restart-cnps,
a sender whose only CNPs are slow-restart ones), read an hour after a baseline in which they were zero (hand-set:
the baseline side), on the hand-written healthy node's facts; then edited as each case says."""

import copy
import os
import re


from conftest import REPO
from test_stab import audit, findings, outcome, write

REAL = os.path.join(REPO, "tests", "fixtures", "realdata")
WATCHED = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored", "roce_slow_restart_cnps")


def real_counters(name):
    """The watched counters of a capture: show_counters' 'name: value' lines or rdma statistic's 'name value' pairs."""
    if name == "bond":
        path = os.path.join(REAL, "sysfs-infiniband-counters", "cn-notes-cx4lx-mlx5-hw-counters",
                            "show_counters-mlx5_bond_0.txt")
    else:
        path = os.path.join(REAL, "sonic-issue21891-rdma-statistic-sender-slow-restart-cnps",
                            "rdma-statistic-sender-mlx5_1.txt")
    text = open(path).read()
    return dict((c, int(re.search(r"\b%s:? (\d+)" % c, text).group(1))) for c in WATCHED)


def readings(healthy, now_counts, expect=None):
    base = copy.deepcopy(healthy)
    base["counters"]["rdma"] = {"mlx5_0/1": dict((c, 0) for c in WATCHED)}
    now = copy.deepcopy(base)
    now["counters"]["uptime_s"] += 3600
    now["counters"]["rdma"]["mlx5_0/1"] = dict(now_counts)
    return base, now


def judge(healthy, tmp_path, counts, roce=None):
    base, now = readings(healthy, counts)
    first = write(tmp_path, audit({"n1": base}))
    report = audit({"n1": now}, baseline=first) if roce is None else audit_with(now, first, roce)
    return findings(report, "STAB-009"), outcome(report, "n1", "STAB-009")


def audit_with(now, baseline, roce):
    import datetime
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
    report, errors = run_audit({"n1": {"facts": now, "baseline": baseline, "expectations": {"roce": roce}}},
                               datetime.date(2027, 1, 1), "2027-01-01T01:00:00+00:00")
    assert errors == []
    return report


def test_a_congested_fabric_whose_nics_answer_passes(healthy, tmp_path):
    """21278189006 marked packets, 1052612505 CNPs sent (one CNP per flow per interval, not per packet)."""
    found, result = judge(healthy, tmp_path, real_counters("bond"))
    assert found == [] and result["status"] == "pass"


def test_slow_restart_cnps_are_not_congestion(healthy, tmp_path):
    """The sender's 144 CNPs handled are all slow-restart ones: no marking, nothing on a PFC-only fabric either."""
    counts = real_counters("sender")
    assert counts["rp_cnp_handled"] == counts["roce_slow_restart_cnps"] == 144
    found, result = judge(healthy, tmp_path, counts, roce={"ecn": False})
    assert found == [] and result["status"] == "pass"


def test_marked_packets_without_cnps_and_ignored_cnps(healthy, tmp_path):
    counts = dict(real_counters("bond"), np_cnp_sent=0)  # the notification point turned off
    [found], _result = judge(healthy, tmp_path, counts)
    assert found["severity"] == "warn" and found["subject"] == "mlx5_0/1"
    assert found["message"].startswith("mlx5_0/1: 21278189006 ECN-marked RoCE packets arrived and no CNP was sent in "
                                       "the 1.0 h since the baseline")
    assert found["evidence"]["per_hour"] == 21278189006
    counts = dict(real_counters("sender"), rp_cnp_ignored=37)
    [found], _result = judge(healthy, tmp_path, counts)
    assert "37 congestion notifications ignored" in found["message"]


def test_cnps_on_a_fabric_meant_to_run_without_ecn(healthy, tmp_path):
    [found], result = judge(healthy, tmp_path, real_counters("bond"), roce={"ecn": False})
    assert found["severity"] == "info" and "np_cnp_sent +1052612505" in found["message"]
    assert result["status"] == "findings"


def test_not_judged_without_the_counters_or_a_baseline(healthy, tmp_path):
    report = audit({"n1": healthy})
    assert outcome(report, "n1", "STAB-009")["reason"].startswith("no RoCE congestion counters")
    base, _now = readings(healthy, real_counters("bond"))
    assert "fabric_audit_baseline" in outcome(audit({"n1": base}), "n1", "STAB-009")["reason"]


def test_the_roce_expectation_is_checked():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import validate_expectations
    assert validate_expectations({"roce": {"ecn": False}})[0]["roce"] == {"ecn": False, "pfc": None, "priority": None}
    assert validate_expectations(None)[0]["roce"] == {"ecn": None, "pfc": None, "priority": None}
    assert validate_expectations({"roce": {"priority": 0, "pfc": False}})[0]["roce"] == {
        "ecn": None, "pfc": False, "priority": 0}
    for bad, said in (({"roce": "on"}, "fabric_expectations.roce: expected a mapping, got 'on'"),
                      ({"roce": {"ecn": "yes"}}, "fabric_expectations.roce.ecn: 'yes' must be true or false"),
                      ({"roce": {"pfc": 3}}, "fabric_expectations.roce.pfc: 3 must be true or false"),
                      ({"roce": {"priority": 8}}, "fabric_expectations.roce.priority: 8 is not an 802.1p priority "
                                                  "(0..7)"),
                      ({"roce": {"priority": True}}, "fabric_expectations.roce.priority: True is not an 802.1p "
                                                     "priority (0..7)"),
                      ({"roce": {"priority": "3"}}, "fabric_expectations.roce.priority: '3' is not an 802.1p priority "
                                                    "(0..7)"),
                      ({"roce": {"prio": 3}}, "fabric_expectations.roce.prio: unknown key (known: ecn, pfc, "
                                              "priority)")):
        assert validate_expectations(bad)[1] == [said]


def test_the_port_s_ecn_configuration_names_the_priorities_turned_off(healthy, tmp_path):
    """The ecn/ folder of a real mlx5 port (tests/fixtures/realdata/sysfs-net-counters/procfs-class-ttar-eth0: the
    notification point off for priorities 2 and 5, the reaction point for 2, 5 and 7), read by topology_facts, as
    the configuration of the netdev behind mlx5_0/1: the finding says which priorities are off where."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader
    ttar = os.path.join(REAL, "sysfs-net-counters", "procfs-class-ttar-eth0")
    config = SysfsReader(ttar)._roce_ecn(os.path.join(ttar, "sys", "class", "net", "eth0", "ecn"))
    assert config["notification_point"] == {"enabled": [0, 1, 3, 4, 6, 7], "read": list(range(8)), "cnp_dscp": 48,
                                            "cnp_802p_prio": 6}
    assert config["reaction_point"] == {"enabled": [0, 1, 3, 4, 6], "read": list(range(8))}
    [netdev] = [p["netdev"] for d in healthy["rdma"] if d["name"] == "mlx5_0" for p in d["ports"] if p["port"] == 1]
    base, now = readings(healthy, dict(real_counters("bond"), np_cnp_sent=0, rp_cnp_ignored=5))
    now["counters"]["roce_ecn"] = {netdev: config}
    first = write(tmp_path, audit({"n1": base}))
    found = findings(audit({"n1": now}, baseline=first), "STAB-009")
    messages = sorted(f["message"] for f in found)
    assert len(found) == 2
    assert "the reaction point is off for the traffic's priority (ecn/roce_rp/enable is 0 for priorities 2, 5, 7 " \
           "on %s)" % netdev in messages[1]
    assert "notification point is off (ecn/roce_np/enable is 0 for priorities 2, 5 on %s)" % netdev in messages[0]
    assert all(f["evidence"]["roce_ecn"] == config and f["evidence"]["netdev"] == netdev for f in found)


def _pfc_and_ecn(healthy):
    """The healthy node, its ens1np0 (mlx5_0/1) with the PFC of a real mlnx_qos capture (on for priority 5 only:
    tests/fixtures/realdata/cn-3fs-notes-cx7-mlnx_qos-pfc5-custom-dscp) and the ecn/ folder of a real mlx5 port
    (procfs-class-ttar-eth0: np off for 2 and 5, rp off for 2, 5 and 7); ens2np0 with the PFC of the dcb patch
    capture (on for 1 and 7); the other RoCE ports read nothing (as a node without dcb or mlnx_qos)."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.dcb import (
        parse_dcb_pfc, parse_mlnx_qos,
    )
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader
    facts = copy.deepcopy(healthy)
    qos = parse_mlnx_qos(open(os.path.join(REAL, "cn-3fs-notes-cx7-mlnx_qos-pfc5-custom-dscp",
                                           "mlnx_qos-ens4np0.txt")).read())
    dcb = parse_dcb_pfc(open(os.path.join(REAL, "iproute2-dcb-pfc-show-stats-mlxsw-patch",
                                          "dcb-pfc-show-eni1np1.txt")).read())
    facts["counters"]["roce_pfc"] = {"ens1np0": dict(qos, source="mlnx_qos"), "ens2np0": dict(dcb, source="dcb")}
    ttar = os.path.join(REAL, "sysfs-net-counters", "procfs-class-ttar-eth0")
    ecn = SysfsReader(ttar)._roce_ecn(os.path.join(ttar, "sys", "class", "net", "eth0", "ecn"))
    facts["counters"]["roce_ecn"] = {"ens1np0": ecn}
    return facts


def roce_audit(facts, roce):
    import datetime
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
    report, errors = run_audit({"n1": {"facts": facts, "expectations": {"roce": roce}}}, datetime.date(2027, 1, 1),
                               "2027-01-01T01:00:00+00:00")
    assert errors == []
    return findings(report, "STAB-010"), outcome(report, "n1", "STAB-010")


def test_pfc_and_ecn_on_the_roce_priority(healthy):
    facts = _pfc_and_ecn(healthy)
    found, result = roce_audit(facts, {"priority": 5})
    said = sorted((f["subject"], f["message"]) for f in found)
    assert result["status"] == "findings" and all(f["severity"] == "fail" for f in found)
    assert said == [
        ("ens1np0", "ens1np0 (mlx5_0/1): ECN congestion control is off for the RoCE priority 5 at the notification "
                    "point (ecn/roce_np/enable/5 is 0): marked packets get no CNP, so the senders never slow down"),
        ("ens1np0", "ens1np0 (mlx5_0/1): ECN congestion control is off for the RoCE priority 5 at the reaction point "
                    "(ecn/roce_rp/enable/5 is 0): this sender ignores the CNPs that ask it to slow down"),
        ("ens2np0", "ens2np0 (mlx5_1/1): PFC is off for the RoCE priority 5 (on for 1, 7, dcb): a full switch queue "
                    "drops its frames instead of pausing the sender, and RoCE retransmits from the lost one on"),
    ]
    pfc = [f for f in found if f["subject"] == "ens2np0"][0]
    assert pfc["evidence"]["pfc"]["requests"]["7"] == 28 and pfc["evidence"]["priority"] == 5
    # priority 3: PFC off on both; ECN on at both points of ens1np0
    found, _result = roce_audit(facts, {"priority": 3})
    assert sorted(f["subject"] for f in found) == ["ens1np0", "ens2np0"]
    assert all("PFC is off for the RoCE priority 3" in f["message"] for f in found)
    assert "(on for 5, mlnx_qos)" in sorted(f["message"] for f in found)[0]
    # a fabric meant to run without PFC, or without ECN: that part is not asked
    found, _result = roce_audit(facts, {"priority": 5, "pfc": False})
    assert sorted(f["message"].split(": ")[1][:20] for f in found) == ["ECN congestion contr"] * 2
    found, result = roce_audit(facts, {"priority": 7, "ecn": False})
    assert [f["subject"] for f in found] == ["ens1np0"] and result["status"] == "findings"  # ens2np0 has 7 on
    found, result = roce_audit(facts, {"priority": 1, "ecn": False, "pfc": True})
    assert [f["subject"] for f in found] == ["ens1np0"]


def test_pfc_and_ecn_as_intended_pass_and_what_is_unknown_is_not_judged(healthy):
    facts = _pfc_and_ecn(healthy)
    facts["counters"]["roce_pfc"]["ens1np0"]["enabled"] = [3]
    found, result = roce_audit(facts, {"priority": 3, "ecn": False})
    assert [f["subject"] for f in found] == ["ens2np0"]
    del facts["counters"]["roce_pfc"]["ens2np0"]
    found, result = roce_audit(facts, {"priority": 3, "ecn": False})
    assert found == [] and result["status"] == "pass"
    found, result = roce_audit(healthy, {"priority": 3})  # a capture: no PFC read, no ecn folder
    assert result["status"] == "not_applicable" and "configuration is not known" in result["reason"]
    assert "ens1np0: PFC" in result["reason"] and "ens1np0: ECN roce_np" in result["reason"]
    found, result = roce_audit(healthy, {"ecn": True})
    assert result["status"] == "not_applicable" and "fabric_expectations.roce.priority" in result["reason"]
    no_roce = copy.deepcopy(healthy)
    no_roce["counters"]["roce_ports"] = {}
    found, result = roce_audit(no_roce, {"priority": 3})
    assert result["status"] == "not_applicable" and result["reason"].startswith("no RoCE port")
    odd = _pfc_and_ecn(healthy)
    odd["counters"]["roce_pfc"] = {"ens1np0": {"enabled": ["5", 9]}, "ens2np0": "on"}
    odd["counters"]["roce_ports"] = {"mlx5_0/1": "ens1np0", "mlx5_1/1": 7, 3: "ens2np0"}
    found, result = roce_audit(odd, {"priority": 5, "ecn": False})  # a corrupt baseline-like reading: not judged
    assert found == [] and result["status"] == "not_applicable", [f["message"] for f in found]


def test_a_roce_lag_is_judged_by_its_legs(healthy):
    """A RoCE LAG (mlx5_bond_0 on bond0): PFC is set per physical port, so each leg is judged; one leg off."""
    facts = _pfc_and_ecn(healthy)
    facts["counters"]["roce_ports"] = {"mlx5_bond_0/1": "bond0"}
    facts["counters"]["roce_lag"] = {"bond0": ["ens2np0", "ens1np0"]}
    found, result = roce_audit(facts, {"priority": 5, "ecn": False})
    assert [(f["subject"], f["message"].split(":")[0]) for f in found] == [
        ("ens2np0", "ens2np0 (a leg of bond0")]
    assert "ens2np0 (a leg of bond0: mlx5_bond_0/1): PFC is off for the RoCE priority 5" in found[0]["message"]
    facts["counters"]["roce_lag"] = {"bond0": "ens1np0"}  # not a list (a corrupt reading): the bond itself, unread
    found, result = roce_audit(facts, {"priority": 5, "ecn": False})
    assert found == [] and result["status"] == "not_applicable" and "bond0: PFC" in result["reason"]
