"""Expectations and waivers: validation names the key and value; waivers hide, expired ones stop hiding."""

import datetime

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._audit import run_audit, validate_inputs
from ansible_collections.gpuops.fabric.plugins.module_utils._policy import (
    apply_waivers,
    validate_expectations,
    validate_waivers,
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
