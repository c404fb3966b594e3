"""The network intent: 40+ malformed intents, each error naming the key and value; addressing; the plan."""

import copy

import pytest

from conftest import REPO

from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.addresses import allocate_indices
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.plan import check_collisions, plan_host
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import validate_networks

GOOD = {
    "fabric_networks": {
        "management": {"role": "management", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1", "mtu": 1500},
        "training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100, "mtu": 9000},
        "storage": {"role": "storage", "subnet": "198.18.8.0/22", "vlan": 200, "mtu": 9000},
    },
    "fabric_bonds": {"bond1": {"members": ["ens1np0", "ens2np0"], "mode": "802.3ad", "lacp_rate": "fast",
                               "xmit_hash_policy": "layer3+4", "miimon": 100}},
    "fabric_attachments": {"management": "eno1", "training": "bond1", "storage": "bond1"},
    "fabric_host_index": 17,
}


@pytest.fixture(scope="module")
def facts(healthy):
    return healthy


def variant(path, value):
    """GOOD with one value replaced ("a.b.c" path; value DELETE removes the key)."""
    intent = copy.deepcopy(GOOD)
    keys = path.split(".")
    target = intent
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    if value is DELETE:
        target.pop(keys[-1], None)
    else:
        target[keys[-1]] = value
    return intent


DELETE = object()

BAD = [
    # networks
    ("fabric_networks", "nets", "fabric_networks: expected a mapping of network names, got 'nets'"),
    ("fabric_networks.training", "198.18.0.0/22", "fabric_networks.training: expected a mapping"),
    ("fabric_networks.training.netmask", "255.255.252.0", "fabric_networks.training.netmask: unknown key"),
    ("fabric_networks.training.role", "compute", "fabric_networks.training.role: 'compute' is not one of"),
    ("fabric_networks.training.subnet", DELETE, "fabric_networks.training: needs subnet (IPv4) or subnet6"),
    ("fabric_networks.training.subnet", "198.18.0.0/33", "fabric_networks.training.subnet: '198.18.0.0/33' is not an IPv4 subnet"),
    ("fabric_networks.training.subnet", "198.18.0.0", "fabric_networks.training.subnet: '198.18.0.0' is not an IPv4 subnet in CIDR form"),
    ("fabric_networks.training.subnet", "198.18.0.5/22", "fabric_networks.training.subnet: '198.18.0.5/22' has host bits set (did you mean 198.18.0.0/22?)"),
    ("fabric_networks.training.subnet", "fd00::/64", "fabric_networks.training.subnet: 'fd00::/64' is not an IPv4 subnet"),
    ("fabric_networks.training.subnet6", "198.18.0.0/22", "fabric_networks.training.subnet6: '198.18.0.0/22' is not an IPv6 subnet"),
    ("fabric_networks.management.gateway", "192.0.3.1", "fabric_networks.management.gateway: 192.0.3.1 is outside "
     "fabric_networks.management.subnet 192.0.2.0/24"),
    ("fabric_networks.management.gateway", "192.0.2.255", "fabric_networks.management.gateway: 192.0.2.255 is the network or broadcast address"),
    ("fabric_networks.management.gateway", "gw", "fabric_networks.management.gateway: 'gw' is not an IP address"),
    ("fabric_networks.management.gateway6", "fd00:2::1", "fabric_networks.management.gateway6: fd00:2::1 needs "
     "fabric_networks.management.subnet6, the subnet it is in"),
    ("fabric_networks.training.vlan", 4095, "fabric_networks.training.vlan: 4095 is outside 1..4094"),
    ("fabric_networks.training.vlan", 0, "fabric_networks.training.vlan: 0 is outside 1..4094"),
    ("fabric_networks.training.vlan", "100", "fabric_networks.training.vlan: '100' is outside 1..4094"),
    ("fabric_networks.training.mtu", 9217, "fabric_networks.training.mtu: 9217 is outside 68..9216"),
    ("fabric_networks.training.mtu", 67, "fabric_networks.training.mtu: 67 is outside 68..9216"),
    ("fabric_networks.training.mtu", True, "fabric_networks.training.mtu: True is outside 68..9216"),
    ("fabric_networks.storage.subnet", "198.18.2.0/24", "fabric_networks.storage.subnet: 198.18.2.0/24 overlaps fabric_networks.training.subnet 198.18.0.0/22"),
    ("fabric_networks.training.routes", {"to": "x"}, "fabric_networks.training.routes: expected a list"),
    ("fabric_networks.training.routes", False, "fabric_networks.training.routes: expected a list, got False"),
    ("fabric_networks.training.routes", "", "fabric_networks.training.routes: expected a list, got ''"),
    ("fabric_networks.training.routes", [{"via": "198.18.0.1"}], "fabric_networks.training.routes[0].to: None is not a destination subnet"),
    ("fabric_networks.training.routes", [{"to": "10.0.0.0/8"}], "fabric_networks.training.routes[0].via: a route needs a gateway"),
    ("fabric_networks.training.routes", [{"to": "10.0.0.0/8", "via": "10.0.0.1"}],
     "fabric_networks.training.routes[0].via: 10.0.0.1 is not in the network's own subnet"),
    ("fabric_networks.training.routes", [{"to": "10.0.0.0/8", "via": "198.18.0.1", "metric": -1}],
     "fabric_networks.training.routes[0].metric: -1 must be a non-negative number"),
    ("fabric_networks.training.routes", [{"to": "10.0.0.0/8", "via": "198.18.0.1", "table": 5}], "fabric_networks.training.routes[0].table: unknown key"),
    # bonds
    ("fabric_bonds", ["bond1"], "fabric_bonds: expected a mapping of bond names"),
    ("fabric_bonds.bond-training-rail0", {"members": ["ens3np0"], "mode": "active-backup"},
     "fabric_bonds.bond-training-rail0: 'bond-training-rail0' is longer than 15 characters"),
    ("fabric_bonds.bond 1", {"members": ["ens3np0"], "mode": "active-backup"}, "fabric_bonds.bond 1: 'bond 1' has characters outside the interface name rule"),
    ("fabric_bonds.bond1.mode", "lacp", "fabric_bonds.bond1.mode: 'lacp' is not one of balance-rr, active-backup"),
    ("fabric_bonds.bond1.members", DELETE, "fabric_bonds.bond1.members: None must be a non-empty list"),
    ("fabric_bonds.bond1.members", [], "fabric_bonds.bond1.members: [] must be a non-empty list"),
    ("fabric_bonds.bond1.members", ["ens1np0", "ens99np0"], "fabric_bonds.bond1.members[1]: 'ens99np0' does not exist on this host"),
    ("fabric_bonds.bond1.members", ["ens1np0", "bond0"], "fabric_bonds.bond1.members[1]: 'bond0' is a bond interface, not a physical port"),
    ("fabric_bonds.bond1.members", ["ens1np0", "eth0:1"], "fabric_bonds.bond1.members[1]: 'eth0:1' has characters outside the interface name rule"),
    ("fabric_bonds.bond2", {"members": ["ens2np0", "ens3np0"], "mode": "802.3ad"}, "fabric_bonds.bond2.members[0]: 'ens2np0' is already a member of bond1"),
    ("fabric_bonds.bond1.members", "nics[?speed_mbps >", "fabric_bonds.bond1.members: 'nics[?speed_mbps >' is not a valid JMESPath expression"),
    ("fabric_bonds.bond1.members", "numa.count", "fabric_bonds.bond1.members: 'numa.count' must select a list of interface names, got 2"),
    ("fabric_bonds.bond1.members", "nics[?speed_mbps > `1000000`].name",
     "fabric_bonds.bond1.members: selector 'nics[?speed_mbps > `1000000`].name' matched no interface"),
    ("fabric_bonds.bond1.lacp_rate", "quick", "fabric_bonds.bond1.lacp_rate: 'quick' is not one of slow, fast"),
    ("fabric_bonds.bond1.xmit_hash_policy", "layer4", "fabric_bonds.bond1.xmit_hash_policy: 'layer4' is not one of"),
    ("fabric_bonds.bond1.miimon", -5, "fabric_bonds.bond1.miimon: -5 must be a non-negative number of milliseconds"),
    ("fabric_bonds.bond1.primary", "ens1np0", "fabric_bonds.bond1.primary: only applies to active-backup"),
    ("fabric_bonds.bond1.mtu", 9000, None),  # valid: an explicit bond MTU at the VLAN's
    ("fabric_bonds.bond1.mtu", 1500, "fabric_bonds.bond1.mtu: 1500 is below the MTU 9000 of VLAN bond1.100 riding on it"),
    ("fabric_bonds.bond1.speed", 100, "fabric_bonds.bond1.speed: unknown key"),
    # attachments
    ("fabric_attachments", ["eno1"], "fabric_attachments: expected a mapping of network to device"),
    ("fabric_attachments.backup", "eno2", "fabric_attachments.backup: 'backup' is not a network in fabric_networks"),
    ("fabric_attachments.training", "bond9", "fabric_attachments.training: 'bond9' is neither a bond in fabric_bonds nor an interface"),
    ("fabric_attachments.training", "ens1np0", "fabric_attachments.training: 'ens1np0' is a member of bond bond1; attach to the bond"),
    ("fabric_attachments.training", "enp193s0f0np0xyz", "fabric_attachments.training: 'enp193s0f0np0xyz' is longer than 15"),
    ("fabric_networks.storage.vlan", 100, "fabric_attachments.training: VLAN 100 on bond1 is already used by network storage"),
    ("fabric_networks.storage.vlan", DELETE, None),  # storage untagged on bond1: valid
    # addressing
    ("fabric_host_index", 0, "fabric_host_index: 0 must be a positive number"),
    ("fabric_host_index", "17", "fabric_host_index: '17' must be a positive number"),
    ("fabric_host_index", 1, "fabric_host_index: 192.0.2.1 is the network, broadcast or gateway address of management"),
    ("fabric_host_index", 255, "fabric_host_index: 192.0.2.255 is the network, broadcast or gateway address of management"),
    ("fabric_host_index", 300, "fabric_host_index: 300 does not fit in management 192.0.2.0/24"),
    ("fabric_addresses", {"training": "198.18.4.1"}, "fabric_addresses.training: 198.18.4.1 is outside training 198.18.0.0/22"),
    ("fabric_addresses", {"training": "10.0.0.300"}, "fabric_addresses.training: '10.0.0.300' is not an IP address"),
    ("fabric_addresses", {"backup": "198.18.0.9"}, "fabric_addresses.backup: not a network in fabric_networks"),
    ("fabric_addresses", {"training": "198.18.0.0"}, "fabric_addresses.training: 198.18.0.0 is the network, broadcast or gateway address"),
    ("fabric_addresses", "198.18.0.9", "fabric_addresses: expected a mapping of network to address"),
    # backend
    ("fabric_network_backend", "ifupdown", "fabric_network_backend: 'ifupdown' is not one of auto, netplan, networkmanager, networkd"),
]


@pytest.mark.parametrize("path,value,message", BAD, ids=["%02d-%s" % (i, c[0]) for i, c in enumerate(BAD)])
def test_bad_intent(path, value, message, facts):
    _plan, errors, _warnings = plan_host("node", variant(path, value), facts)
    if message is None:
        assert errors == []
    else:
        assert any(message in error for error in errors), errors


def test_at_least_forty_bad_cases():
    assert len([case for case in BAD if case[2]]) >= 40


def test_good_intent_plan(facts):
    plan, errors, warnings = plan_host("node", GOOD, facts)
    assert errors == [] and warnings == []
    names = [(i["name"], i["kind"], i["mtu"]) for i in plan["interfaces"]]
    # Creation order: ports, bonds, VLANs; the bond and its members carry the VLANs' 9000.
    assert names == [("eno1", "ethernet", 1500), ("ens1np0", "ethernet", 9000), ("ens2np0", "ethernet", 9000),
                     ("bond1", "bond", 9000), ("bond1.100", "vlan", 9000), ("bond1.200", "vlan", 9000)]
    by_name = dict((i["name"], i) for i in plan["interfaces"])
    assert by_name["bond1.100"]["addresses"] == ["198.18.0.17/22"]
    assert by_name["eno1"]["gateways"] == ["192.0.2.1"]


@pytest.mark.parametrize("path,value,warning", [
    ("fabric_bonds.bond1.members", ["ens1np0"], "fabric_bonds.bond1: 802.3ad with one member"),
    ("fabric_attachments.training", "eno1", "fabric_attachments.training: training network on eno1, the management interface"),
])
def test_warnings(path, value, warning, facts):
    intent = variant(path, value)
    if path == "fabric_attachments.training":
        intent["fabric_attachments"]["storage"] = "eno1"
    _plan, errors, warnings = plan_host("node", intent, facts)
    assert errors == [] and any(warning in w for w in warnings), (errors, warnings)


def test_training_on_management_allowed(facts):
    intent = variant("fabric_attachments.training", "eno1")
    intent["fabric_attachments"]["storage"] = "eno1"
    intent["fabric_networks"]["training"]["allow_on_management"] = True
    _plan, errors, warnings = plan_host("node", intent, facts)
    assert errors == [] and not any("management interface" in w for w in warnings)


def test_collisions_across_hosts(facts):
    plans = dict((h, plan_host(h, variant("fabric_host_index", 17), facts)[0]) for h in ("a", "b"))
    errors = check_collisions(plans)
    assert any("192.0.2.17 is given to a (management) and b (management)" in e for e in errors)


def test_allocation_pins_indices():
    networks = validate_networks(GOOD["fabric_networks"], [])
    by_host = dict(("node%02d" % i, networks) for i in range(1, 6))
    first = allocate_indices({}, ["node03", "node01", "node02"], by_host)
    assert first == {"node03": 2, "node01": 3, "node02": 4}  # 1 is the management gateway
    # Removing node01 and adding two hosts renumbers nobody; node01's index stays reserved.
    second = allocate_indices(first, ["node03", "node02", "node05", "node04"], by_host)
    assert second == {"node03": 2, "node01": 3, "node02": 4, "node05": 5, "node04": 6}


def test_allocation_skips_reserved_addresses():
    networks = validate_networks({"small": {"role": "training", "subnet": "198.18.0.0/30", "gateway": "198.18.0.1"}}, [])
    result = allocate_indices({}, ["only"], {"only": networks})
    assert result == {"only": 2}


def test_two_untagged_networks_on_one_device(facts):
    intent = copy.deepcopy(GOOD)
    del intent["fabric_networks"]["storage"]["vlan"]
    intent["fabric_attachments"]["storage"] = "eno1"
    _plan, errors, _warnings = plan_host("node", intent, facts)
    assert any("fabric_attachments.storage: eno1 already carries network management untagged" in e for e in errors)


def test_vlan_name_too_long(facts):
    intent = copy.deepcopy(GOOD)
    intent["fabric_bonds"] = {"bond-rail00001": {"members": ["ens1np0", "ens2np0"], "mode": "802.3ad"}}
    intent["fabric_attachments"].update(training="bond-rail00001", storage="bond-rail00001")
    _plan, errors, _warnings = plan_host("node", intent, facts)
    assert any("'bond-rail00001.100' is longer than 15 characters" in e for e in errors), errors


def test_link_limits_from_real_ip_output(facts):
    """min/max MTU come from `ip -json -details link show` (captured); 0 (no limit) stays unknown."""
    import os
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import merge_link_limits
    with open(os.path.join(REPO, "tests", "fixtures", "realdata", "iproute2-link-json", "netns-veth-bridge.json")) as h:
        captured = h.read()
    made_up = {"nics": [{"name": "va"}, {"name": "br0"}, {"name": "lo"}, {"name": "ens1np0"}]}
    assert merge_link_limits(made_up, captured) == 2
    assert [(n["name"], n.get("min_mtu"), n.get("max_mtu")) for n in made_up["nics"]] == [
        ("va", 68, 65535), ("br0", 68, 65535), ("lo", None, None), ("ens1np0", None, None)]
    assert merge_link_limits(made_up, "not json") == 0


def _with_max_mtu(facts, limits):
    facts = copy.deepcopy(facts)
    for nic in facts["nics"]:
        if nic["name"] in limits:
            nic["max_mtu"] = limits[nic["name"]]
    return facts


@pytest.mark.parametrize("limits,intent_change,message", [
    # A bond member that cannot carry the VLANs' 9000: named by the network whose MTU raised it.
    ({"ens2np0": 4000}, None, "fabric_networks.storage.mtu: 9000 is above the largest MTU ens2np0 supports (4000"),
    # The untagged management port.
    ({"eno1": 1400}, None, "fabric_networks.management.mtu: 1500 is above the largest MTU eno1 supports (1400"),
    # A bond MTU declared above what its members take.
    ({"ens1np0": 9000}, ("fabric_bonds.bond1.mtu", 9216), "fabric_bonds.bond1.mtu: 9216 is above the largest MTU ens1np0 supports (9000"),
])
def test_mtu_above_what_the_nic_supports(facts, limits, intent_change, message):
    intent = variant(*intent_change) if intent_change else copy.deepcopy(GOOD)
    _plan, errors, _warnings = plan_host("node", intent, _with_max_mtu(facts, limits))
    assert any(message in error for error in errors), errors


def test_mtu_within_what_the_nic_supports(facts):
    _plan, errors, _warnings = plan_host("node", GOOD, _with_max_mtu(facts, {"ens1np0": 9000, "ens2np0": 9216,
                                                                             "eno1": 9702}))
    assert errors == []


def test_every_fabric_variable_the_collection_names_is_known():
    """The typo check must know every fabric_ variable the playbooks, roles, docs and scenarios use or register,
    or a user's correct inventory would be told it has a typo."""
    import os
    import re
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import KNOWN_VARIABLES
    repo = REPO
    used = set()
    for top in ("playbooks", "roles", "docs", "demo", "extensions", "plugins", "site.yml", "README.md"):
        path = os.path.join(repo, top)
        files = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _s, fs in os.walk(path) for f in fs]
        for name in files:
            if name.endswith((".yml", ".yaml", ".md", ".py")):
                with open(name) as handle:
                    used.update(re.findall(r"\bfabric_[a-z0-9_]*[a-z0-9]\b", handle.read()))
    documented_typos = {"fabric_attachment", "fabric_site_owner"}  # examples of a typo and of a site's own name
    assert sorted(used - KNOWN_VARIABLES - documented_typos) == []


def test_a_typo_is_an_error_an_unknown_name_a_warning():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import check_variables
    errors, warnings = [], []
    check_variables({"fabric_attachment": {}, "fabric_site_owner": "ops", "fabric_networks": {}}, errors, warnings)
    assert errors == ["fabric_attachment: not a variable gpuops.fabric reads (did you mean fabric_attachments?)"]
    assert warnings == ["fabric_site_owner: not a variable gpuops.fabric reads"]


@pytest.mark.parametrize("kind", ["virtual", "ipoib", "bridge"])
def test_networks_ride_on_veths_ipoib_and_bridges(facts, kind):
    """Only what the intent would misrender is refused (an existing bond, VLAN or loopback): a veth (the molecule
    hosts' eth1), an IPoIB ib0 or a bridge may carry a network."""
    import copy as _copy
    mine = _copy.deepcopy(facts)
    mine["nics"].append({"name": "ib0", "kind": kind})
    intent = variant("fabric_attachments.storage", "ib0")
    intent["fabric_networks"]["storage"].pop("vlan")
    _plan, errors, _warnings = plan_host("node", intent, mine)
    assert errors == []


def test_the_audit_reads_a_gateway_the_planner_refuses():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import read_networks
    value = {"storage": {"role": "storage", "subnet": "10.1.0.0/24", "gateway": "10.1.0.1"}}
    _networks, errors = read_networks(value)
    assert errors == []
    planner = []
    validate_networks(value, planner)
    assert planner and "only a management network's gateway becomes a default route" in planner[0]


def test_a_near_miss_of_another_variable_is_a_warning():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import check_variables
    errors, warnings = [], []
    check_variables({"fabric_probe_ports": 5201, "fabric_report_directory": "x"}, errors, warnings)
    assert errors == []
    assert warnings == ["fabric_probe_ports: not a variable gpuops.fabric reads (did you mean fabric_probe_port?)",
                        "fabric_report_directory: not a variable gpuops.fabric reads"]


def test_network_names_may_start_with_a_digit():
    errors = []
    assert "100g" in validate_networks({"100g": {"role": "training", "subnet": "198.18.0.0/22"}}, errors)
    assert errors == []


@pytest.mark.parametrize("path", ["/etc/netplan/60-gpuops-fabric.yaml\0", "/etc/systemd/network/60-gpuops-a\nb.network"])
def test_owned_paths_with_control_characters_are_never_written(tmp_path, path):
    from ansible_collections.gpuops.fabric.plugins.module_utils._network.apply import ApplyError, plan_changes
    backend = "netplan" if "netplan" in path else "networkd"
    with pytest.raises(ApplyError):
        plan_changes(str(tmp_path), backend, {path: {"content": "x\n", "mode": "0600"}}, replace=False)
