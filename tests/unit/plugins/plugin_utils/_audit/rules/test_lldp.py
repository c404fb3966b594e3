"""The switch side seen from the host: lldpctl's JSON (captured from lldpd, tests/fixtures/lldp) and ethtool's link
modes (real NICs' output, tests/fixtures/ethtool), and the LLDP-/LINK- rules on them."""

import copy
import os
import shutil

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import ethtool as _ethtool
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import lldp as _lldp
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import CATALOG
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import HostContext, NotApplicable

from conftest import REPO

FIXTURES = os.path.join(REPO, "tests", "fixtures")


def read(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


# ---- lldpctl ------------------------------------------------------------------------------------------------
def test_lldp_json0_and_json_read_the_same():
    json0 = _lldp.parse(read("lldp", "ns-veth.json0"))
    plain = _lldp.parse(read("lldp", "ns-veth.json"))
    assert json0 == plain
    [neighbour] = json0["q0"]
    assert neighbour["chassis_name"] == "node-b" and neighbour["port_descr"] == "q1"
    assert neighbour["port_id_type"] == "mac" and neighbour["port_id"] == neighbour["chassis_id"]
    assert neighbour["ttl"] == 4 and neighbour["vlans"] == [] and neighbour["aggregation"] is None
    assert neighbour["mfs"] is None and neighbour["autoneg"]["mau"].startswith("10GbaseT")


def test_lldp_no_neighbour_and_no_agent():
    assert _lldp.parse(read("lldp", "ns-veth-after-peer-stopped.json0")) == {}
    with pytest.raises(_lldp.LldpError):
        _lldp.parse(read("lldp", "no-agent.txt"))
    assert _lldp.gather(None, None)["reason"].startswith("no LLDP agent: lldpctl")


@pytest.mark.skipif(not shutil.which("lldpctl"), reason="lldpd is installed by scripts/setup.sh")
def test_lldp_gather_without_a_running_daemon():
    import subprocess

    def run(argv):
        done = subprocess.run(argv + ["-u", "/nonexistent/lldpd.socket"], capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr

    found = _lldp.gather(run, shutil.which("lldpctl"))
    assert found["agent"] is False and "not running" in found["reason"] and found["ports"] == {}


@pytest.mark.parametrize("capture", ["ns-veth", "ns-switch-port", "vm-netplan-bond-legs",
                                     "vm-networkmanager-bond-legs"])
def test_lldp_keyvalue_reads_as_json0(capture):
    """lldpctl built without JSON output prints keyvalue; read from the same daemon at the same moment, it must give
    the same neighbours (VLAN list, aggregation, two management addresses) as json0."""
    assert _lldp.parse_keyvalue(read("lldp", capture + ".keyvalue")) == _lldp.parse(read("lldp", capture + ".json0"))


def test_lldp_keyvalue_edges():
    text = read("lldp", "ns-veth.keyvalue")
    dotted = text.replace("lldp.q0.", "lldp.bond0.100.")  # a port name with dots ends before the first known key
    assert list(_lldp.parse_keyvalue(dotted)) == ["bond0.100"]
    two = text + text.replace("node-b", "node-c")  # two neighbours on one port (a hub, or a bridge in a test bed)
    assert [n["chassis_name"] for n in _lldp.parse_keyvalue(two)["q0"]] == ["node-b", "node-c"]
    assert _lldp.parse_keyvalue("") == {}
    with pytest.raises(_lldp.LldpError, match="not lldpctl keyvalue output"):
        _lldp.parse_keyvalue(read("lldp", "no-agent.txt"))
    with pytest.raises(_lldp.LldpError, match="start a neighbour"):
        _lldp.parse_keyvalue(text.split("\n", 1)[1])


def test_lldp_gather_falls_back_to_keyvalue():
    """An lldpctl without JSON support (hand-written refusal; the keyvalue answer is the real capture): the facts
    come from keyvalue and say so; with neither answering, the node has no agent."""
    said = []

    def run(argv):
        said.append(argv[-1])
        if argv[-1] == "json0":
            return 1, "", "lldpctl: unknown output format json0\n"  # hand-written: what a build without JSON says
        return 0, read("lldp", "vm-netplan-bond-legs.keyvalue"), ""

    found = _lldp.gather(run, "/usr/sbin/lldpctl", socket="/run/x.sock")
    assert said == ["json0", "keyvalue"] and found["agent"] is True and found["format"] == "keyvalue"
    assert found["ports"] == _lldp.parse(read("lldp", "vm-netplan-bond-legs.json0"))
    down = _lldp.gather(lambda argv: (1, "", "cannot connect to lldpd socket\n"), "/usr/sbin/lldpctl")
    assert down["agent"] is False and down["reason"].endswith("(cannot connect to lldpd socket)")


# ---- ethtool ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, speeds, advertised, speed, port, media", [
    ("aquantia-10gbaset.txt", [10, 100, 1000, 2500, 5000, 10000], 10000, None, None, ["base-t"]),
    ("intel-x553-sfp.txt", [10000], 10000, None, "other", ["base-t"]),
    ("realtek-r8152-2g5.txt", [10, 100, 1000, 2500], 1000, 1000, "mii", ["other"]),
    ("aquantia-aqc111-usb.txt", [100, 1000], 1000, 1000, "mii", ["base-t"]),
    ("mellanox-connectx5-ex.txt", [1000, 10000, 40000], None, None, None, ["backplane", "dac"]),
    ("veth.txt", [], None, 10000, "twisted_pair", []),
    ("virtio-net-100g.txt", [], None, 100000, "other", []),
])
def test_ethtool_link_modes(name, speeds, advertised, speed, port, media):
    parsed = _ethtool.parse(read("ethtool", name))
    assert parsed["supported_speeds_mbps"] == speeds
    assert parsed["max_advertised_mbps"] == advertised and parsed["speed_mbps"] == speed
    assert parsed["port"] == port and parsed["media"] == media


def test_ethtool_lists_and_flags():
    aq = _ethtool.parse(read("ethtool", "aquantia-10gbaset.txt"))
    assert aq["name"] == "eth1" and aq["supported_ports"] == ["TP"] and len(aq["advertised_modes"]) == 6
    assert aq["partner_modes"][:2] == ["10baseT/Half", "10baseT/Full"] and len(aq["partner_modes"]) == 8
    usb = _ethtool.parse(read("ethtool", "aquantia-aqc111-usb.txt"))
    assert usb["autoneg"] is True and usb["link"] is True and usb["duplex"] == "full"
    x553 = _ethtool.parse(read("ethtool", "intel-x553-sfp.txt"))
    assert x553["autoneg"] is False and x553["duplex"] is None and x553["supported_ports"] == ["FIBRE"]


# ---- rules ------------------------------------------------------------------------------------------------
NET = {"training": {"role": "training", "subnets": [], "allow_on_management": False, "vlan": 100, "mtu": 9000,
                    "speed_mbps": 25000},
       "storage": {"role": "storage", "subnets": [], "allow_on_management": False, "vlan": 200, "mtu": 9000,
                   "speed_mbps": None}}
EXPECT = {"gpu": {"width": None, "generation": None}, "nics": [], "rdma": False, "networks": NET,
          "attachments": {"training": "bond0", "storage": "bond0"}}


def neighbour(port, vlans=(100, 200), aggregation=7, mfs=None, chassis="leaf01"):
    return {"via": "LLDP", "chassis_name": chassis, "chassis_id": "aa:bb:cc:00:00:0%d" % (1 if chassis == "leaf01" else 2),
            "mgmt_ip": [], "port_id": port, "port_id_type": "ifname", "port_descr": port, "ttl": 120, "pvid": None,
            "vlans": [{"id": v, "name": "vlan%d" % v, "pvid": False} for v in vlans],
            "aggregation": {"enabled": True, "port_id": aggregation} if aggregation else None, "mfs": mfs,
            "autoneg": None}


def facts(lldp_ports, modes=None, speed=25000):
    """A bonded node (hand-written facts: two ports in bond0 802.3ad, VLANs 100 and 200 on the bond)."""
    nics = [{"name": "ens1f0", "kind": "physical", "bond_master": "bond0", "speed_mbps": speed, "card": "0000:3b:00",
             "ports_on_card": 2},
            {"name": "ens1f1", "kind": "physical", "bond_master": "bond0", "speed_mbps": speed, "card": "0000:3b:00",
             "ports_on_card": 2},
            {"name": "bond0", "kind": "bond"}, {"name": "bond0.100", "kind": "vlan"}, {"name": "bond0.200", "kind": "vlan"}]
    for nic in nics[:2]:
        if modes:
            nic["link_modes"] = modes
    return {"nics": nics, "vlans": [{"name": "bond0.100", "parent": "bond0"}, {"name": "bond0.200", "parent": "bond0"}],
            "bonds": [{"name": "bond0", "mode": "802.3ad", "members": [{"name": "ens1f0"}, {"name": "ens1f1"}]}],
            "lldp": {"agent": True, "reason": None, "ports": lldp_ports}}


def found(facts_, rule, expect=None):
    """This one rule's findings and outcome (the hand-written facts carry only what these rules read)."""
    ctx = HostContext("node", facts_, expect or EXPECT)
    ctx.rule = CATALOG[rule]
    try:
        CATALOG[rule].check(ctx)
    except NotApplicable as exc:
        return ctx.findings, ("not_applicable", str(exc))
    return ctx.findings, ("findings" if ctx.findings else "pass", None)


def test_lldp_rules_pass_on_a_well_cabled_bond():
    good = facts({"ens1f0": [neighbour("swp1", mfs=9216)], "ens1f1": [neighbour("swp2", mfs=9216)]})
    for rule in ("LLDP-001", "LLDP-002", "LLDP-003"):
        assert found(good, rule) == ([], ("pass", None)), rule


def test_lldp_vlan_missing_on_one_switch_port():
    bad = facts({"ens1f0": [neighbour("swp1")], "ens1f1": [neighbour("swp2", vlans=(100,))]})
    findings = found(bad, "LLDP-001")[0]
    assert [(f["subject"], f["evidence"]["vlan"]) for f in findings] == [("ens1f1", 200)]
    assert "leaf01 swp2 does not carry VLAN 200 (it advertises 100)" in findings[0]["message"]


def test_lldp_aggregation():
    unaggregated = facts({"ens1f0": [neighbour("swp1")], "ens1f1": [neighbour("swp2", aggregation=None)]})
    findings = found(unaggregated, "LLDP-002")[0]
    assert [f["subject"] for f in findings] == ["ens1f1"] and "does not say it is aggregated" in findings[0]["message"]
    split = facts({"ens1f0": [neighbour("swp1", aggregation=7)], "ens1f1": [neighbour("swp2", aggregation=8)]})
    findings = found(split, "LLDP-002")[0]
    assert sorted(f["subject"] for f in findings) == ["ens1f0", "ens1f1"]
    assert "different aggregations (7, 8)" in findings[0]["message"]
    mlag = facts({"ens1f0": [neighbour("swp1", aggregation=7)],
                  "ens1f1": [neighbour("swp1", aggregation=9, chassis="leaf02")]})
    assert found(mlag, "LLDP-002")[0] == []  # two switches (MLAG pair): their ids need not agree


def test_lldp_frame_size():
    small = facts({"ens1f0": [neighbour("swp1", mfs=1522)], "ens1f1": [neighbour("swp2", mfs=9216)]})
    findings = found(small, "LLDP-003")[0]
    assert {f["subject"] for f in findings} == {"ens1f0"}
    assert "takes frames up to 1522 bytes; network storage (MTU 9000, VLAN 200) needs 9022" in " ".join(
        f["message"] for f in findings)


@pytest.mark.parametrize("kind", ["netplan", "networkmanager"])
def test_lldp_leg_not_aggregated_on_the_vms_capture(kind):
    """Real TLVs of the fault (vm2's enp0s5 taken out of its bond, tests/vm): one leg's neighbour aggregated in 5 with
    the VLANs, the other not aggregated and carrying none. LLDP-002 names that leg only; LLDP-001 judges the leg that
    says which VLANs it carries (and it carries them)."""
    ports = _lldp.parse(read("lldp", "vm-%s-leg-not-aggregated.json0" % kind))
    assert ports["enp0s4"][0]["aggregation"] == {"enabled": True, "port_id": 5}
    assert ports["enp0s5"][0]["aggregation"] is None and ports["enp0s5"][0]["vlans"] == []
    vm1 = facts({"ens1f0": ports["enp0s4"], "ens1f1": ports["enp0s5"]})
    findings = found(vm1, "LLDP-002")[0]
    assert [f["subject"] for f in findings] == ["ens1f1"]
    peer = ports["enp0s5"][0]["chassis_name"]  # vm2 as booted, or "vm" as NetworkManager's DHCP named it
    assert "ens1f1 is a member of bond0 (802.3ad) but its switch port %s enp0s5 does not say it is aggregated" % peer \
        in findings[0]["message"]
    assert found(vm1, "LLDP-001")[1] == ("pass", None)


def test_lldp_rules_on_a_captured_switch_port():
    """Real decoded TLVs (tests/fixtures/lldp/ns-switch-port.json0): leaf01 swp1, PVID 1, VLANs 100 and 300, frames
    up to 1518 bytes, put under both legs of the hand-written bonded node."""
    [port] = _lldp.parse(read("lldp", "ns-switch-port.json0"))["eth1"]
    assert (port["chassis_name"], port["port_id"], port["port_id_type"], port["mfs"], port["pvid"]) == (
        "leaf01", "swp1", "local", 1518, 1)
    # sorted by id, whatever order the frame carried them in (1 came last here)
    assert port["vlans"] == [{"id": 1, "name": None, "pvid": True}, {"id": 100, "name": "vlan100", "pvid": False},
                             {"id": 300, "name": "vlan300", "pvid": False}]
    node = facts({"ens1f0": [port], "ens1f1": [dict(port, port_id="swp2", port_descr="swp2")]})
    small = found(node, "LLDP-003")[0]
    assert len(small) == 4  # both legs, both networks (training VLAN 100, storage VLAN 200)
    assert "leaf01 swp1 takes frames up to 1518 bytes; network storage (MTU 9000, VLAN 200) needs 9022" in \
        " ".join(f["message"] for f in small)
    vlans = found(node, "LLDP-001")[0]
    assert [(f["subject"], f["evidence"]["vlan"]) for f in vlans] == [("ens1f0", 200), ("ens1f1", 200)]
    assert "(it advertises 1, 100, 300)" in vlans[0]["message"]
    untagged = dict(EXPECT, networks={"training": dict(NET["training"], mtu=1500, vlan=None)},
                    attachments={"training": "bond0"})
    assert found(node, "LLDP-003", untagged)[1] == ("pass", None)  # 1500 + 18 fits exactly
    tagged = dict(untagged, networks={"training": dict(NET["training"], mtu=1500)})
    assert "needs 1522" in found(node, "LLDP-003", tagged)[0][0]["message"]  # the tag's 4 bytes do not


def test_lldp_cabling_plan():
    wired = facts({"ens1f0": [neighbour("swp1")], "ens1f1": [neighbour("swp1", chassis="leaf02")]})
    plan = dict(EXPECT, cabling={"ens1f0": {"switch": "leaf01", "port": "swp1"},
                                 "ens1f1": {"switch": "leaf01", "port": "swp2"}})
    findings = found(wired, "LLDP-004", plan)[0]
    assert [f["subject"] for f in findings] == ["ens1f1"]
    assert "should go to leaf01 swp2 but is cabled to leaf02 swp1" in findings[0]["message"]


def test_lldp_rules_not_applicable_without_an_agent():
    absent = facts({})
    absent["lldp"] = _lldp.gather(None, None)
    for rule in ("LLDP-001", "LLDP-002", "LLDP-003"):
        status, reason = found(absent, rule)[1]
        assert status == "not_applicable" and reason.startswith("no LLDP agent")


def test_link_rules_on_real_link_modes():
    aq = _ethtool.parse(read("ethtool", "aquantia-10gbaset.txt"))       # up to 10G, BASE-T
    slow = facts({}, modes=aq, speed=10000)
    findings = found(slow, "LINK-001")[0]   # training is built for 25G
    assert {f["subject"] for f in findings} == {"ens1f0", "ens1f1"} and "supports up to 10000 Mb/s" in findings[0]["message"]
    headroom = found(slow, "LINK-002")[0]
    assert headroom and all(f["severity"] == "info" for f in headroom) and "2-port card 0000:3b:00" in headroom[0]["message"]
    base_t = found(slow, "LINK-003")[0]
    assert {f["subject"] for f in base_t} == {"ens1f0", "ens1f1"}
    cx5 = _ethtool.parse(read("ethtool", "mellanox-connectx5-ex.txt"))   # up to 40G (as far as the post shows)
    fast = facts({}, modes=cx5, speed=25000)
    assert found(fast, "LINK-001")[0] == [] and found(fast, "LINK-002")[0] == [] and found(fast, "LINK-003")[0] == []
    veth = _ethtool.parse(read("ethtool", "veth.txt"))                   # no modes: nothing to judge
    assert found(facts({}, modes=veth), "LINK-001")[1][0] == "not_applicable"


def test_cabling_section_of_the_reports(healthy):
    """The audit's reports list node port -> switch port from the LLDP facts (a real capture on a real node's facts)."""
    import datetime
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import (
        REPORT_RENDERERS as RENDERERS,
    )
    node = copy.deepcopy(healthy)
    node["lldp"] = {"agent": True, "reason": None, "ports": _lldp.parse(read("lldp", "ns-veth.json0"))}
    report, errors = run_audit({"node-a": {"facts": node}}, datetime.date(2026, 11, 30), "now")
    assert not errors
    assert report["cabling"] == [{"host": "node-a", "port": "q0", "switch": "node-b", "switch_port": "q1", "vlans": [],
                                  "aggregation": None, "mfs": None}]
    assert "| node-a | q0 | node-b | q1 | - | - | - |" in RENDERERS["md"](report)
    html = RENDERERS["html"](report)
    assert '<svg class="cabling"' in html and "<title>node-a q0 - node-b q1</title>" in html


def test_lldp_from_the_vms_bond_legs():
    """Real VLAN and aggregation TLVs: vm1's view of vm2, whose bond0 (ifindex 5) carries VLANs 100 and 200."""
    json0 = _lldp.parse(read("lldp", "vm-netplan-bond-legs.json0"))
    assert json0 == _lldp.parse(read("lldp", "vm-netplan-bond-legs.json"))
    for leg in ("enp0s4", "enp0s5"):
        [n] = json0[leg]
        assert n["chassis_name"] == "vm2" and n["port_descr"] == leg
        assert n["aggregation"] == {"enabled": True, "port_id": 5}
        assert n["vlans"] == [{"id": 100, "name": "vlan100", "pvid": False}, {"id": 200, "name": "vlan200", "pvid": False}]
        assert n["mfs"] is None and "198.18.4.2" in n["mgmt_ip"] and n["autoneg"]["mau"].startswith("100GbaseCR4")


def test_lldp_rules_on_the_vms_capture():
    ports = _lldp.parse(read("lldp", "vm-netplan-bond-legs.json0"))
    vm1 = facts({"enp0s4": ports["enp0s4"], "enp0s5": ports["enp0s5"]})
    for nic, leg in zip(vm1["nics"][:2], ("enp0s4", "enp0s5")):
        nic["name"] = leg
    vm1["bonds"][0]["members"] = [{"name": "enp0s4"}, {"name": "enp0s5"}]
    assert found(vm1, "LLDP-001")[1] == ("pass", None) and found(vm1, "LLDP-002")[1] == ("pass", None)
    assert found(vm1, "LLDP-003")[1][0] == "not_applicable"  # lldpd on Linux sends no frame size
    moved = dict(EXPECT, networks=dict(NET, storage=dict(NET["storage"], vlan=300)))  # the intent says 300
    findings = found(vm1, "LLDP-001", moved)[0]
    assert sorted(f["subject"] for f in findings) == ["enp0s4", "enp0s5"]
    assert "vm2 enp0s4 does not carry VLAN 300 (it advertises 100, 200)" in findings[0]["message"]


def test_lldp_facts_do_not_depend_on_the_order_lldpd_prints():
    """lldpd once listed a port's VLANs as 200, 100 in a clean-clone CI run: the same neighbour with its VLANs,
    management addresses and neighbours in the other order gives the same facts. Built from the real VM capture."""
    import copy
    import json
    import os
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.lldp import parse
    folder = os.path.join(REPO, "tests", "fixtures", "lldp")
    name = sorted(f for f in os.listdir(folder) if f.startswith("vm-") and f.endswith(".json0"))[0]
    with open(os.path.join(folder, name)) as handle:
        data = json.load(handle)
    turned = copy.deepcopy(data)

    def reverse(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, list) and key in ("vlan", "mgmt-ip", "interface"):
                    value.reverse()
                reverse(value)
        elif isinstance(node, list):
            for item in node:
                reverse(item)
    reverse(turned)
    assert parse(json.dumps(turned)) == parse(json.dumps(data))
    vlans = [v["id"] for port in parse(json.dumps(data)).values() for n in port for v in n["vlans"]]
    assert vlans, name
