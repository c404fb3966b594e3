"""Interface addresses from procfs, checked against `ip -o addr` captured at the same moment
(tests/fixtures/realdata/procfs-net-dev-vm), and the addressing rules NET-006/007/008."""

import copy

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import validate_inputs
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import read_networks
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import evaluate_host, evaluate_inventory
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import (
    parse_fib_trie_local, parse_if_inet6, parse_proc_route, route_for as _route_for,
)


def read(realdata, name):
    with open(realdata("procfs-net-dev-vm", name)) as handle:
        return handle.read()


def ip_o_addr(text):
    """{interface: ["addr/prefix"]} from `ip -o addr` output (the independent answer)."""
    result = {}
    for line in text.splitlines():
        fields = line.split()
        result.setdefault(fields[1], []).append(fields[3])
    return result


def test_ipv4_matches_ip_addr(realdata):
    expected = ip_o_addr(read(realdata, "ip-4-o-addr.txt"))
    routes = parse_proc_route(read(realdata, "route"))
    found = {}
    for address in parse_fib_trie_local(read(realdata, "fib_trie")):
        iface, prefix = _route_for(address, routes)
        if iface is None and address.startswith("127."):
            iface, prefix = "lo", 8
        found.setdefault(iface, []).append("%s/%d" % (address, prefix))
    assert found == expected


def test_ipv6_matches_ip_addr(realdata):
    expected = ip_o_addr(read(realdata, "ip-6-o-addr.txt"))
    assert dict((k, sorted(v)) for k, v in parse_if_inet6(read(realdata, "if_inet6")).items()) == \
        dict((k, sorted(v)) for k, v in expected.items())


def test_captures_have_no_addresses(roots):
    facts = gather(root=roots["dgx8"], gather_subset=["nic"])
    assert all(n["ipv4"] is None and n["ipv6"] is None for n in facts["nics"])


NETWORKS = {
    "management": {"role": "management", "subnet": "192.0.2.0/24"},
    "training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100},
    "storage": {"role": "storage", "subnet": "198.18.8.0/22"},
}


@pytest.mark.parametrize("value,message", [
    ({"training": {"role": "training", "subnet": "198.18.0.1/22"}}, "fabric_networks.training.subnet: '198.18.0.1/22' has host bits set"),
    ({"training": {"role": "compute", "subnet": "198.18.0.0/22"}}, "fabric_networks.training.role: 'compute' is not one of"),
    ({"training": "198.18.0.0/22"}, "fabric_networks.training: expected a mapping"),
    (["training"], "fabric_networks: expected a mapping of network names"),
    ({"training": {"subnet": "198.18.0.0/22", "allow_on_management": "yes"}},
     "fabric_networks.training.allow_on_management: 'yes' must be true or false"),
])
def test_bad_networks(value, message):
    _result, errors = read_networks(value)
    assert any(message in e for e in errors), errors


def test_bad_networks_stop_the_audit():
    _normalized, errors = validate_inputs({"n1": {"networks": {"training": {"subnet": "10.0.0.0/33"}}}})
    assert errors and errors[0].startswith("fabric_networks.training.subnet: '10.0.0.0/33' is not an IPv4 subnet")


def expect_with(networks, attachments=None):
    normalized, errors = validate_inputs({"h": {"networks": networks, "attachments": attachments}})
    assert not errors
    return normalized["h"][0]


def test_net_006_overlap(healthy_facts):
    overlapping = dict(NETWORKS, storage={"role": "storage", "subnet": "198.18.2.0/24"})
    findings, outcomes = evaluate_inventory({"h": (healthy_facts, expect_with(overlapping))})
    assert [f["subject"] for f in findings if f["id"] == "NET-006"] == ["storage/training"]
    findings, outcomes = evaluate_inventory({"h": (healthy_facts, expect_with(NETWORKS))})
    assert outcomes["NET-006"][0] == "pass"


@pytest.fixture(scope="module")
def healthy_facts(healthy):
    return healthy


def with_addresses(facts, **by_iface):
    facts = copy.deepcopy(facts)
    for nic in facts["nics"]:
        nic["ipv4"] = by_iface.get(nic["name"], [])
        nic["ipv6"] = []
    return facts


def test_net_007_duplicates(healthy_facts):
    a = with_addresses(healthy_facts, **{"bond0.100": ["198.18.0.17/22"]})   # planted: same training address
    b = with_addresses(healthy_facts, **{"bond0.100": ["198.18.0.17/22"]})
    c = with_addresses(healthy_facts, **{"bond0.100": ["198.18.0.18/22"]})
    findings, _outcomes = evaluate_inventory({"a": (a, {}), "b": (b, {}), "c": (c, {})})
    dup = [f for f in findings if f["id"] == "NET-007"]
    assert sorted(f["host"] for f in dup) == ["a", "b"] and dup[0]["evidence"]["address"] == "198.18.0.17"
    _findings, outcomes = evaluate_inventory({"a": (a, {}), "c": (c, {})})
    assert outcomes["NET-007"][0] == "pass"
    _findings, outcomes = evaluate_inventory({"a": (healthy_facts, {})})
    assert outcomes["NET-007"][0] == "not_applicable"


def test_net_008_from_attachments_and_from_addresses(healthy_facts):
    on_mgmt = expect_with(NETWORKS, {"management": "eno1", "training": "eno1"})
    findings = evaluate_host("h", healthy_facts, on_mgmt)[0]
    assert [f["subject"] for f in findings if f["id"] == "NET-008"] == ["eno1"]
    vlan_on_mgmt = expect_with(NETWORKS, {"management": "bond0", "training": "bond0.100"})
    assert [f["subject"] for f in evaluate_host("h", healthy_facts, vlan_on_mgmt)[0] if f["id"] == "NET-008"] == ["bond0"]
    separate = expect_with(NETWORKS, {"management": "eno1", "training": "bond0"})
    assert not [f for f in evaluate_host("h", healthy_facts, separate)[0] if f["id"] == "NET-008"]
    # No attachments: the addresses on the host tell (planted: both subnets on eno1).
    facts = with_addresses(healthy_facts, eno1=["192.0.2.10/24", "198.18.0.10/22"])
    findings = evaluate_host("h", facts, expect_with(NETWORKS))[0]
    assert [f["subject"] for f in findings if f["id"] == "NET-008"] == ["eno1"]
    allowed = dict(NETWORKS, training=dict(NETWORKS["training"], allow_on_management=True))
    assert not [f for f in evaluate_host("h", facts, expect_with(allowed))[0] if f["id"] == "NET-008"]
