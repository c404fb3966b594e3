"""Issue 32's inventory rules: NET-009 (a multi-port card with fewer ports up than the same card on the other hosts)
and the management NICs and NICs on GPU-less NUMA nodes left out of the GPU-NIC rules (NUMA-001, NUMA-002). The
facts are the hand-written 8-GPU node's; each test says what it changed BY HAND."""

import copy
import datetime

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.net import card_ports
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

DUAL = "0000:c1:00"  # the hand-written node's dual-port card: enp193s0f0np0, enp193s0f1np1


def audit(facts_by_host, **more):
    report, errors = run_audit(dict((h, dict(more, facts=f)) for h, f in facts_by_host.items()),
                               datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert errors == []
    return report


def port_down(facts, name):
    facts = copy.deepcopy(facts)
    for nic in facts["nics"]:
        if nic["name"] == name:
            nic.update(carrier=False, operstate="down")
    for device in facts["rdma"]:  # and the RDMA port on it
        for port in device["ports"]:
            if port.get("netdev") == name:
                port["state"] = "DOWN"
    return facts


def test_the_dual_port_card_is_read_with_its_model(healthy):
    cards = card_ports(healthy)
    assert sorted(cards) == ["0000:01:00", DUAL]  # the single-port ConnectX-7s are not multi-port cards
    assert cards[DUAL]["ports"] == {"enp193s0f0np0": True, "enp193s0f1np1": True}
    assert cards[DUAL]["model"] == ("0x15b3", "0x101d", "0x15b3", "0x0000")  # ConnectX-6 Dx
    assert cards["0000:01:00"]["model"] == ("0x8086", "0x1572", "0x8086", "0x0000")  # X710, the onboard pair


def test_a_card_with_a_port_down_where_the_others_have_both_up(healthy):
    hosts = {"n1": healthy, "n2": healthy, "n3": port_down(healthy, "enp193s0f1np1")}
    report = audit(hosts)
    [finding] = [f for f in report["findings"] if f["id"] == "NET-009"]
    assert finding["host"] == "n3" and finding["severity"] == "warn"
    assert finding["evidence"]["down"] == ["enp193s0f1np1"] and finding["evidence"]["usual_up"] == 2
    assert "has 1 of 2 ports up (enp193s0f1np1 down); 2 of the 3 cards of this model" in finding["message"]


@pytest.mark.parametrize("downs, applicable", [
    ([None, None, None], True),  # all alike: pass
    ([None, "enp193s0f1np1", "enp193s0f1np1"], True),  # most have one port up: the design, n1 is no fault
    ([None, None], False),  # two cards say nothing of a design
])
def test_no_finding_without_a_majority_to_differ_from(healthy, downs, applicable):
    hosts = dict(("n%d" % i, port_down(healthy, d) if d else healthy) for i, d in enumerate(downs))
    report = audit(hosts)
    assert not [f for f in report["findings"] if f["id"] == "NET-009"]
    assert report["outcomes"]["inventory"]["NET-009"]["status"] == ("pass" if applicable else "not_applicable")


MANAGEMENT = {"management": {"role": "management", "subnet": "192.0.2.0/24"}}


def beside_management(healthy):
    """HAND-EDITED: GPU 0000:15:00.0 (NUMA 0) keeps no path to the NICs of its own socket but the management port
    eno1 (NODE), as if its ConnectX had been moved to the other socket; eno1 holds a management address."""
    facts = copy.deepcopy(healthy)
    gpu = "0000:15:00.0"
    numa = dict((n["address"], n["numa_node"]) for n in facts["nics"] + facts["rdma"] if n.get("address"))
    eno1 = next(n for n in facts["nics"] if n["name"] == "eno1")
    eno1["ipv4"] = ["192.0.2.11/24"]
    facts["paths"]["gpu_nic"] = [p for p in facts["paths"]["gpu_nic"] if p["gpu"] != gpu or
                                 numa.get(p["nic"]) != 0 or p["nic"] == eno1["address"]]
    for path in facts["paths"]["gpu_nic"]:
        if path["gpu"] == gpu and path["nic"] == eno1["address"]:
            path["type"] = "NODE"
    for g in facts["gpus"]:
        if g["address"] == gpu:
            g["nearest_nics"] = [{"nic": eno1["address"], "nic_names": ["eno1"], "type": "NODE"}]
    return facts


def test_a_management_nic_beside_a_gpu_is_not_its_nearest_nic(healthy):
    facts = beside_management(healthy)
    # without the intent the facts' nearest NIC (eno1, same socket) answers NUMA-001
    assert not [f for f in audit({"n1": facts})["findings"] if f["id"] == "NUMA-001"]
    report = audit({"n1": facts}, networks=MANAGEMENT)
    [finding] = [f for f in report["findings"] if f["id"] == "NUMA-001"]
    assert finding["subject"] == "0000:15:00.0" and "management NIC" in finding["message"]
    assert finding["evidence"]["management_left_out"] == [next(n["address"] for n in facts["nics"]
                                                               if n["name"] == "eno1")]


def test_nics_of_a_gpu_less_socket_are_left_out_of_the_pairing(healthy):
    """HAND-EDITED: the GPUs of socket 1 removed: its four ConnectX ports are nobody's partner, and NUMA-002 says so
    instead of pairing them across the socket link."""
    facts = copy.deepcopy(healthy)
    facts["gpus"] = [g for g in facts["gpus"] if g["numa_node"] == 0]
    outcome = audit({"n1": facts})["outcomes"]["n1"]["NUMA-002"]
    assert outcome["status"] in ("pass", "not_applicable")
    if outcome["status"] == "not_applicable":
        assert "NUMA 1 has no GPU" in outcome["reason"]
