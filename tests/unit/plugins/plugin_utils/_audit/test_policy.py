"""Expectations and waivers: validation names the key and value; waivers hide, expired ones stop hiding."""

import datetime

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit, validate_inputs
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import (
    apply_waivers, validate_expectations, validate_waivers,
)

GOOD_WAIVER = {"rule": "PCIE-001", "hosts": "l4-*", "reason": "x8 by design", "expires": "2027-06-30"}


@pytest.mark.parametrize("value,message", [
    ("yes", "fabric_expectations: expected a mapping, got 'yes'"),
    ({"gpus": {}}, "fabric_expectations.gpus: unknown key"),
    ({"gpu": {"width": 12.5}}, "fabric_expectations.gpu.width: 12.5 is not a PCIe width"),
    ({"gpu": {"width": 3}}, "fabric_expectations.gpu.width: 3 is not a PCIe width"),
    ({"gpu": {"generation": 9}}, "fabric_expectations.gpu.generation: 9 is not a PCIe generation"),
    ({"gpu": {"speed": 5}}, "fabric_expectations.gpu.speed: unknown key"),
    ({"nics": {"name": "eth0"}}, "fabric_expectations.nics: expected a list"),
    ({"nics": [{"speed_mbps": 1000}]}, "fabric_expectations.nics[0].name: None must be an interface name"),
    ({"nics": [{"name": "e*", "speed_mbps": -1}]}, "fabric_expectations.nics[0].speed_mbps: -1 is not a positive"),
    ({"nics": [{"name": "e*", "mtu": 9600}]}, "fabric_expectations.nics[0].mtu: 9600 is outside 68..9216"),
    ({"nics": [{"name": "e*", "mtu": "9000"}]}, "fabric_expectations.nics[0].mtu: '9000' is outside"),
    ({"nics": [{"name": "e*", "speeed": 1}]}, "fabric_expectations.nics[0].speeed: unknown key"),
    ({"rdma": "yes"}, "fabric_expectations.rdma: 'yes' must be true or false"),
])
def test_bad_expectations(value, message):
    _result, errors = validate_expectations(value)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize("change,message", [
    ({"rule": "PCIE-999"}, "fabric_waivers[0].rule: 'PCIE-999' is not a rule id"),
    ({"rule": None}, "fabric_waivers[0].rule: None is not a rule id"),
    ({"hosts": ""}, "fabric_waivers[0].hosts: '' must be a host name or pattern"),
    ({"reason": " "}, "fabric_waivers[0].reason: ' ' must say why"),
    ({"reason": None}, "fabric_waivers[0].reason: None must say why"),
    ({"expires": "2027-13-01"}, "fabric_waivers[0].expires: '2027-13-01' is not a date"),
    ({"expires": "soon"}, "fabric_waivers[0].expires: 'soon' is not a date"),
    ({"expires": None}, "fabric_waivers[0].expires: None is not a date"),
    ({"until": "2027-01-01"}, "fabric_waivers[0].until: unknown key"),
    ({"subject": 7}, "fabric_waivers[0].subject: 7 must be a subject"),
])
def test_bad_waivers(change, message):
    waiver = dict(GOOD_WAIVER, **change)
    _result, errors = validate_waivers([waiver])
    assert any(message in e for e in errors), errors


def test_waiver_not_a_list():
    assert validate_waivers({"rule": "PCIE-001"})[1] == ["fabric_waivers: expected a list, got {'rule': 'PCIE-001'}"]


def test_yaml_dates_are_accepted():
    waivers, errors = validate_waivers([dict(GOOD_WAIVER, expires=datetime.date(2027, 6, 30))])
    assert errors == [] and waivers[0]["expires"] == "2027-06-30" and waivers[0]["subject"] == "*"


def finding(host="l4-01", rule="PCIE-001", subject="0000:19:00.0"):
    return {"id": rule, "host": host, "subject": subject, "message": "narrow", "severity": "fail"}


def test_waiver_hides_matching_finding_until_it_expires():
    waivers, errors = validate_waivers([GOOD_WAIVER])
    assert not errors
    today = datetime.date(2027, 6, 30)
    hidden, other_host, other_rule = finding(), finding(host="h100-01"), finding(rule="PCIE-003")
    apply_waivers([hidden, other_host, other_rule], {"l4-01": waivers, "h100-01": waivers}, today)
    assert hidden["waived"] is True and hidden["waiver"]["reason"] == "x8 by design"
    assert other_host["waived"] is False and other_rule["waived"] is False
    expired = finding()
    apply_waivers([expired], {"l4-01": waivers}, datetime.date(2027, 7, 1))
    assert expired["waived"] is False
    assert expired["waiver_expired"]["expires"] == "2027-06-30" and "waiver expired 2027-06-30" in expired["message"]


def test_subject_pattern():
    waivers, errors = validate_waivers([dict(GOOD_WAIVER, subject="0000:1*")])
    assert not errors
    match, miss = finding(subject="0000:19:00.0"), finding(subject="0000:35:00.0")
    apply_waivers([match, miss], {"l4-01": waivers}, datetime.date(2027, 1, 1))
    assert match["waived"] and not miss["waived"]


def test_errors_shared_by_a_group_are_listed_once():
    inputs = dict(("node%02d" % i, {"waivers": [dict(GOOD_WAIVER, rule="NOPE")]}) for i in range(5))
    _normalized, errors = validate_inputs(inputs)
    assert len(errors) == 1 and "node00, node01, node02 and 2 more" in errors[0]


def test_run_audit_refuses_bad_policy_before_evaluating():
    report, errors = run_audit({"n1": {"facts": None, "expectations": {"gpu": {"width": 7}}}},
                               datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert report is None and "fabric_expectations.gpu.width: 7" in errors[0]


# ---- gaps: odd types give an error naming the key and value, never a crash ------------------------------------------
@pytest.mark.parametrize("value,message", [
    ({"gpu": 0}, "fabric_expectations.gpu: expected a mapping, got 0"),
    ({"gpu": ""}, "fabric_expectations.gpu: expected a mapping, got ''"),
    ({"nics": ""}, "fabric_expectations.nics: expected a list, got ''"),
    ({1: "x", "gpu": {}, "zzz": 1}, "fabric_expectations.1: unknown key"),
    ({"gpu": {None: 1, "width": 16}}, "fabric_expectations.gpu.None: unknown key"),
    ({"nics": [{"name": "e*", 7: 1, "mtu": 9000}]}, "fabric_expectations.nics[0].7: unknown key"),
    ({"nics": [{"name": "e*", "speed_mbps": True}]}, "fabric_expectations.nics[0].speed_mbps: True is not a positive"),
    ({"gpu": {"generation": "5"}}, "fabric_expectations.gpu.generation: '5' is not a PCIe generation"),
])
def test_odd_expectations_are_errors(value, message):
    _result, errors = validate_expectations(value)
    assert any(message in e for e in errors), errors


def test_null_rdma_means_false():
    result, errors = validate_expectations({"rdma": None})
    assert errors == [] and result["rdma"] is False


@pytest.mark.parametrize("change,message", [
    ({"rule": ["PCIE-001"]}, "fabric_waivers[0].rule: ['PCIE-001'] is not a rule id"),
    ({"rule": {"id": "PCIE-001"}}, "fabric_waivers[0].rule: {'id': 'PCIE-001'} is not a rule id"),
    ({"hosts": ["l4-*"]}, "fabric_waivers[0].hosts: ['l4-*'] must be a host name or pattern"),
    ({"expires": 20270630}, "fabric_waivers[0].expires: 20270630 is not a date"),
    ({"expires": True}, "fabric_waivers[0].expires: True is not a date"),
    ({3: "x"}, "fabric_waivers[0].3: unknown key"),
])
def test_odd_waivers_are_errors(change, message):
    waiver = dict(GOOD_WAIVER)
    waiver.update(change)
    _result, errors = validate_waivers([waiver])
    assert any(message in e for e in errors), errors


def test_missing_expiry_says_it_is_required():
    waiver = dict(GOOD_WAIVER)
    del waiver["expires"]
    _result, errors = validate_waivers([waiver])
    assert errors == ["fabric_waivers[0].expires: None is not a date (YYYY-MM-DD); every waiver needs one"]


# ---- warnings: valid waivers that do nothing, or last too long ------------------------------------------------------
TODAY = datetime.date(2027, 1, 1)


def _by_host(hosts, waivers):
    normalized, errors = validate_waivers(waivers)
    assert errors == []
    return dict((h, normalized) for h in hosts)


def test_waiver_matching_none_of_its_hosts_warns_once_naming_it():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import waiver_warnings
    hosts = ["h100-%02d" % i for i in range(5)]
    warnings = waiver_warnings(_by_host(hosts, [dict(GOOD_WAIVER, expires="2027-06-30")]), TODAY)
    assert warnings == ["fabric_waivers[0] (rule PCIE-001, hosts 'l4-*'): the host pattern 'l4-*' matches none of the "
                        "hosts that carry this waiver (h100-00, h100-01, h100-02 and 2 more), so it waives nothing"]
    assert waiver_warnings(_by_host(["l4-01", "h100-01"], [GOOD_WAIVER]), TODAY) == []  # matches one: fine


def test_waiver_beyond_the_horizon_warns():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import waiver_warnings
    far = dict(GOOD_WAIVER, expires="2030-01-01")
    (warning,) = waiver_warnings(_by_host(["l4-01"], [far]), TODAY)
    assert warning.startswith("fabric_waivers[0] (rule PCIE-001, hosts 'l4-*'): expires 2030-01-01, 1096 days from "
                              "2027-01-01, beyond the 365-day horizon (fabric_audit_waiver_horizon_days)")
    assert waiver_warnings(_by_host(["l4-01"], [far]), TODAY, horizon_days=2000) == []
    assert waiver_warnings(_by_host(["l4-01"], [dict(GOOD_WAIVER, expires="2028-01-01")]), TODAY) == []  # 365 days
    per_host = waiver_warnings(_by_host(["l4-01", "l4-02"], [far]), TODAY, horizon_days={"l4-01": 2000})
    assert len(per_host) == 1 and "(host l4-02)" in per_host[0]


@pytest.mark.parametrize("value,days,error", [
    (None, 365, None), (90, 90, None), ("30", 30, None),
    (0, 365, "fabric_audit_waiver_horizon_days: 0 is not a positive number of days"),
    ("a year", 365, "fabric_audit_waiver_horizon_days: 'a year' is not a positive number of days"),
    (True, 365, "fabric_audit_waiver_horizon_days: True is not a positive number of days"),
])
def test_waiver_horizon_variable(value, days, error):
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import validate_waiver_horizon
    got, errors = validate_waiver_horizon(value)
    assert got == days and errors == ([error] if error else [])


def test_internal_error_findings_are_never_waived():
    waivers, _errors = validate_waivers([dict(GOOD_WAIVER, hosts="*", subject="*")])
    crashed = dict(finding(subject="internal error"), internal_error=True)
    apply_waivers([crashed], {"l4-01": waivers}, TODAY)
    assert crashed["waived"] is False


def test_run_audit_carries_the_waiver_warnings():
    """A waiver whose pattern matches no host that carries it, and one beyond the horizon, reach the report."""
    import datetime
    waivers = [{"rule": "PCIE-001", "hosts": "l4-*", "reason": "inference cards", "expires": "2027-02-01"},
               {"rule": "PCIE-003", "hosts": "n*", "reason": "slot swap booked", "expires": "2029-01-01"}]
    report, errors = run_audit({"n1": {"facts": None, "waivers": waivers, "status": "unreachable", "reason": "x",
                                       "waiver_horizon_days": 400}},
                               datetime.date(2027, 1, 1), "now")
    assert errors == []
    text = "\n".join(report["policy_warnings"])
    assert "fabric_waivers[0] (rule PCIE-001, hosts 'l4-*'): the host pattern 'l4-*' matches none" in text
    assert "fabric_waivers[1] (rule PCIE-003, hosts 'n*'): expires 2029-01-01" in text and "400-day horizon" in text
    _report, errors = run_audit({"n1": {"facts": None, "waiver_horizon_days": "soon"}}, datetime.date(2027, 1, 1),
                                "now")
    assert any("fabric_audit_waiver_horizon_days: 'soon' is not a positive number of days" in e for e in errors)


def test_no_network_intent_needs_no_netaddr(monkeypatch):
    """A host without fabric_networks (a captured server model, a GPU node checked by scripts/gpu_check.py where
    netaddr is not installed) is audited without netaddr; with networks, its absence is named."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import read_networks
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent import validation
    monkeypatch.setattr(validation, "netaddr", None)
    assert read_networks(None) == ({}, [])
    networks, errors = read_networks({"training": {"role": "training", "subnet": "198.18.0.0/24"}})
    assert networks == {} and "needs the netaddr Python library" in errors[0]
