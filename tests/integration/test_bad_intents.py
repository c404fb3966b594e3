"""Bad network intents through the real playbooks, as a user hits them: one inventory holds one bad case per host,
so one run of gpuops.fabric.network_plan checks them all (the action reports every host's errors at once). Each
case asserts the error names the key path and the value; and the run writes nothing (no render folder, no
allocation file). A second inventory of legal-but-suspicious intents runs clean and warns about each.

Hand-written intents, over the real captured dgx8 facts (tests/fixtures/handwritten)."""

import copy
import json
import os
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GOOD = {
    "fabric_networks": {
        "management": {"role": "management", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1", "mtu": 1500},
        "training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100, "mtu": 9000},
        "storage": {"role": "storage", "subnet": "198.18.8.0/22", "vlan": 200, "mtu": 9000},
    },
    "fabric_bonds": {"bond1": {"members": ["ens1np0", "ens2np0"], "mode": "802.3ad", "lacp_rate": "fast",
                               "xmit_hash_policy": "layer3+4", "miimon": 100}},
    "fabric_attachments": {"management": "ens8np0", "training": "bond1", "storage": "bond1"},
}
DELETE = object()


def case(path, value, *more):
    """The top-level variables of GOOD with the value at each ``path`` ("a.b.c"; DELETE removes it) replaced;
    only the changed top-level variables are returned (host vars replace group vars whole). More (path, value)
    pairs may follow."""
    changed = {}
    pairs = [(path, value)] + list(zip(more[::2], more[1::2]))
    for one_path, one_value in pairs:
        keys = one_path.split(".")
        if len(keys) == 1:
            changed[keys[0]] = one_value
            continue
        top = changed.setdefault(keys[0], copy.deepcopy(GOOD.get(keys[0])))
        target = top
        for key in keys[1:-1]:
            target = target.setdefault(key, {})
        if one_value is DELETE:
            target.pop(keys[-1], None)
        else:
            target[keys[-1]] = one_value
    return changed


def net(**extra):
    base = {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100, "mtu": 9000}
    base.update(extra)
    return base


# (host vars, the error text that must appear, prefixed by the host)
BAD = [
    # names that would reach files, scripts and paths
    (case("fabric_bonds", {"b';id;'": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.b';id;': \"b';id;'\" has characters outside the interface name rule"),
    (case("fabric_bonds", {"e*": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.e*: 'e*' has characters outside the interface name rule"),
    (case("fabric_bonds", {"bond\0": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds['bond\\x00']: 'bond\\x00' has characters outside"),
    (case("fabric_bonds", {"$(reboot)": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.$(reboot): '$(reboot)' has characters outside the interface name rule"),
    (case("fabric_bonds", {"`id`": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.`id`: '`id`' has characters outside the interface name rule"),
    (case("fabric_bonds", {"-rf": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.-rf: '-rf' has characters outside the interface name rule"),
    (case("fabric_bonds", {"bond[0]": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.bond[0]: 'bond[0]' has characters outside"),
    (case("fabric_bonds", {"bond?": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.bond?: 'bond?' has characters outside"),
    (case("fabric_bonds", {"bönd": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.bönd: 'bönd' has characters outside the interface name rule"),
    (case("fabric_bonds", {"1234": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.1234: '1234' is all digits"),
    (case("fabric_bonds", {"all": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.all: 'all' is a name the kernel reserves"),
    (case("fabric_bonds", {"bonding_masters": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.bonding_masters: 'bonding_masters' is a name the kernel reserves"),
    (case("fabric_bonds", {"default": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.default: 'default' is a name the kernel reserves"),
    (case("fabric_bonds", {"a/b": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.a/b: 'a/b' has characters outside"),
    (case("fabric_bonds", {"..": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds...: '..' has characters outside"),
    (case("fabric_bonds", {"bond0:1": {"members": ["ens1np0"], "mode": "active-backup"}}),
     "fabric_bonds.bond0:1: 'bond0:1' has characters outside"),
    (case("fabric_bonds.bond1.members", ["ens1np0", "e;id"]),
     "fabric_bonds.bond1.members[1]: 'e;id' has characters outside"),
    (case("fabric_bonds.bond1.members", ["ens1np0", False]),
     "fabric_bonds.bond1.members[1]: False is not an interface name (a boolean, not a string)"),
    (case("fabric_bonds.bond1.members", ["ens1np0", ["ens2np0"]]),
     "fabric_bonds.bond1.members[1]: ['ens2np0'] is not an interface name (a list, not a string)"),
    (case("fabric_bonds.bond1.members", ["ens1np0", {"name": "ens2np0"}]),
     "fabric_bonds.bond1.members[1]: {'name': 'ens2np0'} is not an interface name"),
    (case("fabric_bonds.bond1.members", ["ens1np0", 7]),
     "fabric_bonds.bond1.members[1]: 7 is not an interface name (a number, not a string)"),
    (case("fabric_bonds.bond1.members", ["ens1np0", None]),
     "fabric_bonds.bond1.members[1]: None is not an interface name"),
    (case("fabric_bonds.bond1.members", ["ens1np0", "ens1np0"]),
     "fabric_bonds.bond1.members[1]: 'ens1np0' is already a member of bond1"),
    (case("fabric_bonds.bond1.members", "nics[].name | [0]"),
     "fabric_bonds.bond1.members: 'nics[].name | [0]' must select a list of interface names, got 'bond0'"),
    (case("fabric_bonds.bond1.members", 5),
     "fabric_bonds.bond1.members: 5 must be a non-empty list of interface names or a JMESPath selector"),
    (case("fabric_networks", {"train\ning": net()}),
     "fabric_networks: 'train\\ning' is not a network name"),
    (case("fabric_networks", {"x\n  dhcp4: true": net()}),
     "fabric_networks: 'x\\n  dhcp4: true' is not a network name"),
    (case("fabric_networks", {"tr;id": net()}), "fabric_networks: 'tr;id' is not a network name"),
    (case("fabric_networks", {"#x": net()}), "fabric_networks: '#x' is not a network name"),
    (case("fabric_networks", {"": net()}), "fabric_networks: '' is not a network name"),
    (case("fabric_networks", {"a" * 64: net()}), "fabric_networks: '%s' is not a network name" % ("a" * 64)),
    (case("fabric_networks", {100: net()}),
     "fabric_networks: 100 is a number; network names are strings"),
    (case("fabric_networks", {True: net()}), "fabric_networks: True is a boolean; network names are strings"),
    (case("fabric_attachments", {"management": "ens8np0", "training": "bond1;reboot"}),
     "fabric_attachments.training: 'bond1;reboot' has characters outside"),
    (case("fabric_attachments", {"management": "ens8np0", "training": ["bond1"]}),
     "fabric_attachments.training: ['bond1'] is not an interface name (a list, not a string)"),
    (case("fabric_attachments", {"management": "ens8np0", "training": None}),
     "fabric_attachments.training: None is not an interface name"),
    (case("fabric_attachments", {"management": "ens8np0", "training": "e*"}),
     "fabric_attachments.training: 'e*' has characters outside"),
    (case("fabric_attachments", {"management": "ens8np0", 100: "bond1"}),
     "fabric_attachments: key 100 is a number; network names are strings"),
    ({"fabric_network_lldpd_interfaces": "ens*\nconfigure system hostname x"},
     "fabric_network_lldpd_interfaces: 'ens*\\nconfigure system hostname x' is not an lldpd interface pattern list"),
    ({"fabric_network_lldpd_interfaces": "ens*;reboot"},
     "fabric_network_lldpd_interfaces: 'ens*;reboot' is not an lldpd interface pattern list"),
    ({"fabric_network_lldpd_interfaces": ["ens*"]},
     "fabric_network_lldpd_interfaces: ['ens*'] must be a string of interface patterns"),
    ({"fabric_network_lldpd_interfaces": "ens*,,eno1"},
     "fabric_network_lldpd_interfaces: 'ens*,,eno1' is not an lldpd interface pattern list"),
    # role variables, checked for every host before any is touched
    ({"fabric_network_state": "replace\n"}, "fabric_network_state: 'replace\\n' is not one of merged, replaced"),
    ({"fabric_network_state": "replace"}, "fabric_network_state: 'replace' is not one of merged, replaced"),
    ({"fabric_network_rollback_timeout": "180s"},
     "fabric_network_rollback_timeout: '180s' must be a number of seconds"),
    ({"fabric_network_rollback_timeout": -1}, "fabric_network_rollback_timeout: -1 must be a number of seconds"),
    ({"fabric_network_rollback_timeout": 30, "fabric_network_confirm_timeout": 60},
     "fabric_network_confirm_timeout: 60 is not below fabric_network_rollback_timeout 30"),
    ({"fabric_network_allow_management": "maybe"}, "fabric_network_allow_management: 'maybe' must be true or false"),
    ({"fabric_network_lldpd": "enabled"}, "fabric_network_lldpd: 'enabled' must be true or false"),
    ({"fabric_network_lldpd": 2}, "fabric_network_lldpd: 2 must be true or false"),
    ({"fabric_network_rollback_timeout": "3 min"}, "fabric_network_rollback_timeout: '3 min' must be a number"),
    ({"fabric_network_root": "relative/dir"}, "fabric_network_root: 'relative/dir' is not an absolute path"),
    ({"fabric_network_backend": "ifupdown"}, "fabric_network_backend: 'ifupdown' is not one of auto"),
    # typos of top-level variables
    ({"fabric_attachment": {"training": "bond1"}},
     "fabric_attachment: not a variable gpuops.fabric reads (did you mean fabric_attachments?)"),
    ({"fabric_network": {}}, "fabric_network: not a variable gpuops.fabric reads (did you mean fabric_networks?)"),
    ({"fabric_bond": {}}, "fabric_bond: not a variable gpuops.fabric reads (did you mean fabric_bonds?)"),
    ({"fabric_host_idx": 3}, "fabric_host_idx: not a variable gpuops.fabric reads (did you mean fabric_host_index?)"),
    ({"fabric_adresses": {}}, "fabric_adresses: not a variable gpuops.fabric reads (did you mean fabric_addresses?)"),
    ({"fabric_network_stat": "merged"},
     "fabric_network_stat: not a variable gpuops.fabric reads (did you mean fabric_network_state?)"),
    # networks
    (case("fabric_networks.training.gateway", "198.18.0.1"),
     "fabric_networks.training.gateway: only a management network's gateway becomes a default route"),
    (case("fabric_networks.storage.gateway6", "fd00::1"),
     "fabric_networks.storage.gateway6: only a management network's gateway becomes a default route"),
    (case("fabric_networks.management.gateway6", "fd00::1"),
     "fabric_networks.management.gateway6: fd00::1 needs fabric_networks.management.subnet6, the subnet it is in"),
    (case("fabric_networks.oob", {"role": "management", "subnet": "192.0.3.0/24", "gateway": "192.0.3.1"}, "fabric_attachments.oob", "ens7np0"),
     "fabric_attachments: management and oob each give a default route (fabric_networks.<name>.gateway)"),
    (case("fabric_networks.training.routes", [{"to": "10.1.0.5/16", "via": "198.18.0.1"}]),
     "fabric_networks.training.routes[0].to: '10.1.0.5/16' has host bits set (did you mean 10.1.0.0/16?)"),
    (case("fabric_networks.training.routes", [{"to": "fd00:9::/64", "via": "198.18.0.1"}]),
     "fabric_networks.training.routes[0].via: 198.18.0.1 is an IPv4 gateway for the IPv6 destination fd00:9::/64"),
    (case("fabric_networks.training.routes", [{"to": "10.0.0.0/8", "via": "198.18.0.1", "metric": "low"}]),
     "fabric_networks.training.routes[0].metric: 'low' must be a non-negative number"),
    (case("fabric_networks.training.routes", [{"to": "10.0.0.0/8", "via": "198.18.0.1", "metric": True}]),
     "fabric_networks.training.routes[0].metric: True must be a non-negative number"),
    (case("fabric_networks.training.routes", ["10.0.0.0/8 via 198.18.0.1"]),
     "fabric_networks.training.routes[0]: expected a mapping, got '10.0.0.0/8 via 198.18.0.1'"),
    (case("fabric_networks.training.routes", [{"to": "default", "via": "198.18.0.1"}]),
     "fabric_networks.training.routes[0].to: 'default' is not a destination subnet"),
    (case("fabric_networks.training.vlan", "0100"), "fabric_networks.training.vlan: '0100' is outside 1..4094"),
    (case("fabric_networks.training.vlan", 100.0), "fabric_networks.training.vlan: 100.0 is outside 1..4094"),
    (case("fabric_networks.training.vlan", [100]), "fabric_networks.training.vlan: [100] is outside 1..4094"),
    (case("fabric_networks.training.mtu", "9000"), "fabric_networks.training.mtu: '9000' is outside 68..9216"),
    (case("fabric_networks.training.mtu", 10 ** 400), "fabric_networks.training.mtu: 1000000"),
    (case("fabric_networks.training.speed_mbps", "100G"),
     "fabric_networks.training.speed_mbps: '100G' must be a link speed in Mbit/s"),
    (case("fabric_networks.training.speed_mbps", 0), "fabric_networks.training.speed_mbps: 0 must be a link speed"),
    (case("fabric_networks.training.allow_on_management", "true"),
     "fabric_networks.training.allow_on_management: 'true' must be true or false"),
    (case("fabric_networks.training.role", ["training"]),
     "fabric_networks.training.role: ['training'] is not one of management, training, storage"),
    (case("fabric_networks.training.subnet", ["198.18.0.0/22"]),
     "fabric_networks.training.subnet: ['198.18.0.0/22'] is not an IPv4 subnet"),
    (case("fabric_networks.training.subnet", "198.18.0.0/22\n"),
     "fabric_networks.training.subnet: '198.18.0.0/22\\n' is not an IPv4 subnet"),
    (case("fabric_networks.training.subnet6", "fd00:1::5/64"),
     "fabric_networks.training.subnet6: 'fd00:1::5/64' has host bits set (did you mean fd00:1::/64?)"),
    (case("fabric_networks.management.gateway", "192.0.2.1; reboot"),
     "fabric_networks.management.gateway: '192.0.2.1; reboot' is not an IP address"),
    (case("fabric_networks.management.gateway", "192.0.2.0"),
     "fabric_networks.management.gateway: 192.0.2.0 is the network or broadcast address of 192.0.2.0/24"),
    # bonds
    (case("fabric_bonds.bond1.mode", "active-backup", "fabric_bonds.bond1.lacp_rate", DELETE),
     "fabric_bonds.bond1.xmit_hash_policy: only applies to modes balance-xor, 802.3ad, balance-tlb "
     "(mode is active-backup)"),
    (case("fabric_bonds.bond1.mode", ["802.3ad"]), "fabric_bonds.bond1.mode: ['802.3ad'] is not one of balance-rr"),
    (case("fabric_bonds.bond1.lacp_rate", {"fast": 1}), "fabric_bonds.bond1.lacp_rate: {'fast': 1} is not one of"),
    (case("fabric_bonds.bond1.xmit_hash_policy", ["layer3+4"]),
     "fabric_bonds.bond1.xmit_hash_policy: ['layer3+4'] is not one of"),
    (case("fabric_bonds.bond1.miimon", "100"),
     "fabric_bonds.bond1.miimon: '100' must be a non-negative number of milliseconds"),
    (case("fabric_bonds.bond1.primary", ["ens1np0"], "fabric_bonds.bond1.mode", "active-backup",
          "fabric_bonds.bond1.lacp_rate", DELETE, "fabric_bonds.bond1.xmit_hash_policy", DELETE),
     "fabric_bonds.bond1.primary: ['ens1np0'] must be the name of one of the members"),
    (case("fabric_bonds.bond1.mtu", "9000"), "fabric_bonds.bond1.mtu: '9000' is outside 68..9216"),
    (case("fabric_bonds.bond1", ["ens1np0"]), "fabric_bonds.bond1: expected a mapping, got ['ens1np0']"),
    (case("fabric_bonds", {"ens3np0": {"members": ["ens1np0"], "mode": "active-backup"}}, "fabric_attachments.training", "ens3np0"),
     "fabric_bonds: 'ens3np0' is the name of an existing physical interface on this host"),
    (case("fabric_bonds.bond2", {"members": ["bond1"], "mode": "active-backup"}),
     "fabric_bonds.bond2.members[0]: 'bond1' is itself a bond in fabric_bonds"),
    (case("fabric_networks.storage.vlan", DELETE, "fabric_bonds.bond1.mtu", 1500),
     "fabric_bonds.bond1.mtu: 1500 is below the MTU 9000 of network storage it carries untagged"),
    # attachments to what the intent does not own
    (case("fabric_attachments.training", "bond0"),
     "fabric_attachments.training: 'bond0' is an existing bond interface this intent does not own"),
    (case("fabric_attachments.training", "bond0.100"),
     "fabric_attachments.training: 'bond0.100' is an existing vlan interface this intent does not own"),
    (case("fabric_attachments.training", "lo"),
     "fabric_attachments.training: 'lo' is an existing loopback interface this intent does not own"),
    (case("fabric_attachments.training", "ens1np0"),
     "fabric_attachments.training: 'ens1np0' is a member of bond bond1; attach to the bond"),
    (case("fabric_attachments.backup", "ens7np0"),
     "fabric_attachments.backup: 'backup' is not a network in fabric_networks"),
    (case("fabric_attachments", "ens8np0"), "fabric_attachments: expected a mapping of network to device"),
    # addresses
    ({"fabric_addresses": {"training": "fd00::5"}},
     "fabric_addresses.training: 'fd00::5', but network training has no subnet6 (ipv6)"),
    ({"fabric_addresses": {"training": {"ip4": "198.18.0.5"}}}, "fabric_addresses.training.ip4: unknown key"),
    ({"fabric_addresses": {"training": {"ipv4": "fd00::5"}}},
     "fabric_addresses.training.ipv4: 'fd00::5' is not an ipv4 address"),
    ({"fabric_addresses": {"training": "198.18.0.5/16"}},
     "fabric_addresses.training: '198.18.0.5/16' has prefix /16, but training is 198.18.0.0/22"),
    ({"fabric_addresses": {"training": ["198.18.0.5"]}},
     "fabric_addresses.training: ['198.18.0.5'] must be an address, or a mapping with ipv4 and/or ipv6"),
    ({"fabric_addresses": {"training": 5}},
     "fabric_addresses.training: 5 must be an address, or a mapping with ipv4 and/or ipv6"),
    ({"fabric_addresses": {"training": "198.18.0.5;reboot"}},
     "fabric_addresses.training: '198.18.0.5;reboot' is not an IP address"),
    ({"fabric_addresses": {"training": "198.18.3.255"}},
     "fabric_addresses.training: 198.18.3.255 is the network, broadcast or gateway address of training"),
    ({"fabric_host_index": True}, "fabric_host_index: True must be a positive number"),
    ({"fabric_host_index": 10 ** 30}, "fabric_host_index: 1000000000000000000000000000000 does not fit in"),
    (dict(case("fabric_networks.training.routes", [{"to": "fd00:9::/64", "via": "fd00:1::1"}],
               "fabric_networks.training.subnet6", "fd00:1::/64"),
          fabric_addresses={"training": "198.18.0.9", "management": "192.0.2.9", "storage": "198.18.8.9"},
          fabric_host_index=None),
     "fabric_networks.training.routes: the route to fd00:9::/64 is ipv6, but this host has no ipv6 address"),
]

# Legal but suspicious: the run goes through, and each is named in a warning. The first two are simply legal:
# text as -e key=value gives it, read as the role's argument spec reads it.
SUSPICIOUS = [
    ({"fabric_network_lldpd": "true", "fabric_network_rollback_timeout": "120", "fabric_my_label": 1},
     "fabric_my_label: not a variable gpuops.fabric reads"),
    ({"fabric_network_allow_management": "no", "fabric_network_confirm_timeout": "30", "fabric_x": 2},
     "fabric_x: not a variable gpuops.fabric reads"),
    ({"fabric_my_site_label": "x"}, "fabric_my_site_label: not a variable gpuops.fabric reads"),
    (case("fabric_bonds.bond9", {"members": ["ens5np0", "ens6np0"], "mode": "802.3ad"}),
     "fabric_bonds.bond9: carries no network"),
    (case("fabric_bonds.bond9", {"members": ["ens5np0"], "mode": "active-backup"}, "fabric_attachments.management", "bond9"),
     "fabric_bonds.bond9: carries the management network on one member"),
    (case("fabric_bonds.bond9", {"members": ["ens5np0"], "mode": "802.3ad"}, "fabric_attachments.management", "bond9"),
     "fabric_bonds.bond9: 802.3ad with one member gives no aggregation or redundancy"),
]


def _run(env, tmp_path, hosts, *extra):
    inventory = tmp_path / "inventory.yml"
    # JSON is YAML: keys that YAML would not round-trip through safe_dump (ints, booleans) stay as they are.
    with open(str(inventory), "w") as handle:
        handle.write(_inventory_text(hosts))
    return subprocess.run(["ansible-playbook", "-i", str(inventory), "gpuops.fabric.network_plan",
                           "-e", "fabric_allocation_file=" + str(tmp_path / "alloc.yml"),
                           "-e", "fabric_network_render_dir=" + str(tmp_path / "render"), "--forks", "10"] +
                          list(extra), env=dict(env, ANSIBLE_STDOUT_CALLBACK="default",
                                                ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
                          capture_output=True, text=True, timeout=600, cwd=REPO, check=False)


def _inventory_text(hosts):
    """YAML with the keys typed as the case says (an int key stays an int) and strings that keep every byte."""
    return yaml.dump({"all": {"vars": GROUP_VARS, "hosts": hosts}}, Dumper=yaml.SafeDumper, allow_unicode=False,
                     default_flow_style=False)


GROUP_VARS = dict(GOOD, ansible_connection="local", ansible_python_interpreter="{{ ansible_playbook_python }}",
                  fabric_host_index=17)


def _messages(stdout):
    """Every msg of the run's task results and every line the playbook's summary shows (which carries the
    warnings), read from the default callback's JSON after each "=> "."""
    decoder = json.JSONDecoder()
    msgs, lines = [], []
    position = stdout.find("=> ")
    while position >= 0:
        try:
            result, end = decoder.raw_decode(stdout, position + 3)
        except ValueError:
            end = position + 3
        else:
            msg = result.get("msg") if isinstance(result, dict) else None
            if isinstance(msg, list):
                lines.extend(str(m) for m in msg)
            elif msg:
                msgs.append(str(msg))
        position = stdout.find("=> ", end)
    return "\n".join(msgs), lines


@pytest.fixture(scope="module")
def bad_run(ansible_env, roots, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bad-intents")
    hosts = {}
    for number, (hostvars, _expected) in enumerate(BAD):
        # each host its own index, so that no collision message stands between a case and its own error
        hosts["case-%03d" % number] = dict(dict(fabric_host_index=20 + number), **hostvars)
        hosts["case-%03d" % number]["fabric_facts_root"] = roots["dgx8"]
    hosts["good-node"] = {"fabric_facts_root": roots["dgx8"], "fabric_host_index": 18}
    result = _run(ansible_env, tmp_path, hosts)
    return tmp_path, result


def test_at_least_a_hundred_bad_intents():
    assert len(BAD) >= 100


@pytest.mark.parametrize("number", range(len(BAD)), ids=["case-%03d" % n for n in range(len(BAD))])
def test_bad_intent_named_and_nothing_written(bad_run, number):
    tmp_path, result = bad_run
    assert result.returncode != 0
    messages, _warnings = _messages(result.stdout)
    expected = "case-%03d: %s" % (number, BAD[number][1])
    assert expected in messages, "\n".join(l for l in messages.splitlines() if l.startswith("case-%03d:" % number))
    assert not (tmp_path / "render").exists()
    assert not (tmp_path / "alloc.yml").exists()


def test_the_good_host_is_not_blamed(bad_run):
    _tmp_path, result = bad_run
    messages, _warnings = _messages(result.stdout)
    assert "good-node:" not in messages


def test_suspicious_intents_warn_and_go_through(ansible_env, roots, tmp_path):
    hosts = dict(("warn-%02d" % n, dict(hv, fabric_facts_root=roots["dgx8"], fabric_host_index=20 + n))
                 for n, (hv, _e) in enumerate(SUSPICIOUS))
    result = _run(ansible_env, tmp_path, hosts)
    assert result.returncode == 0, result.stdout[-3000:]
    _messages_text, warnings = _messages(result.stdout)
    text = "\n".join(warnings)
    for number, (_hv, expected) in enumerate(SUSPICIOUS):
        assert "warn-%02d: %s" % (number, expected) in text, text


def test_host_name_that_would_leave_the_render_folder(ansible_env, roots, tmp_path):
    """An inventory host named ../../x would have its files written two folders above the render folder."""
    hosts = {"../../escaped": {"fabric_facts_root": roots["dgx8"]}, "good-node": {"fabric_facts_root": roots["dgx8"]}}
    result = _run(ansible_env, tmp_path, hosts)
    assert result.returncode != 0
    messages, _warnings = _messages(result.stdout)
    assert "../../escaped: inventory host name '../../escaped' is not usable as a folder name" in messages
    assert not (tmp_path / "render").exists()
    assert not os.path.exists(str(tmp_path.parent / "escaped"))


def test_role_parameter_checked_where_it_is_used(ansible_env, tmp_path):
    """A play can hand the role its lldpd patterns as a role parameter, which the inventory pre-flight never sees:
    the role checks the value it would write into lldpd's configuration before its first task."""
    root = tmp_path / "node"
    (root / "etc").mkdir(parents=True)
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Network with lldpd", "hosts": "all", "gather_facts": False,
        "roles": [{"role": "gpuops.fabric.network", "fabric_network_lldpd": True, "fabric_network_root": str(root),
                   "fabric_network_lldpd_interfaces": "eno1\nconfigure system hostname x"}]}]))
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"node-a": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}))
    result = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)],
                            env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                            timeout=300, cwd=REPO, check=False)
    assert result.returncode != 0
    out = " ".join((result.stdout + result.stderr).split())
    assert 'fabric_network_lldpd_interfaces: \\"eno1\\\\nconfigure system hostname x\\" is not an lldpd' in out or \
        "fabric_network_lldpd_interfaces: \"eno1\\nconfigure system hostname x\" is not an lldpd" in out, out[-2000:]
    assert "TASK [gpuops.fabric.network : Gather topology facts]" not in result.stdout
    assert sorted(os.listdir(str(root / "etc"))) == []
