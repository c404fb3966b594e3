"""state=gathered: the owned files read back into the intent's shape, and the round trip.

For every intent in tests/fixtures/intents and every backend: render, read the files back, plan the
gathered intent again and render it: the bytes are the same (so the role reports no change). Also what
a hand edit looks like once gathered, and what cannot be said in the intent is listed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpuops.fabric.plugins.module_utils._network.readback import gather_intent, parse
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.plan import plan_host
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import NETWORK_RENDERERS as RENDERERS
from conftest import REPO

INTENTS_DIR = os.path.join(REPO, "tests", "fixtures", "intents")
INTENTS = sorted(f[:-4] for f in os.listdir(INTENTS_DIR) if f.endswith(".yml"))


@pytest.fixture(scope="module")
def facts(healthy):
    return healthy


def rendered(hostvars, facts, backend):
    plan, errors, _warnings = plan_host("node", hostvars, facts)
    assert errors == [], errors
    return dict((path, {"content": content, "mode": mode})
                for path, (content, mode) in RENDERERS[backend](plan).items())


def intent_of(name):
    with open(os.path.join(INTENTS_DIR, name + ".yml")) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("backend", sorted(RENDERERS))
@pytest.mark.parametrize("intent", INTENTS)
def test_round_trip(intent, backend, facts):
    original = intent_of(intent)
    files = rendered(original, facts, backend)
    gathered, missing = gather_intent(backend, files)
    assert missing == []
    # yaml round trip: what a user pastes into host_vars
    again = rendered(yaml.safe_load(yaml.safe_dump(gathered)), facts, backend)
    assert again == files
    assert set(gathered["fabric_networks"]) == set(original["fabric_networks"])
    for name, net in gathered["fabric_networks"].items():
        assert net["role"] == original["fabric_networks"][name].get("role", name)
        assert net.get("vlan") == original["fabric_networks"][name].get("vlan")
    assert gathered["fabric_attachments"] == original["fabric_attachments"]
    assert set(gathered["fabric_bonds"]) == set(original.get("fabric_bonds") or {})


def test_gathered_bond_vlan_reads_as_written(facts):
    files = rendered(intent_of("three_on_bond"), facts, "networkd")
    gathered, _missing = gather_intent("networkd", files)
    assert gathered["fabric_bonds"]["bond0"] == {
        "members": ["ens1np0", "ens2np0", "ens3np0", "ens4np0"], "mode": "802.3ad", "miimon": 100,
        "lacp_rate": "fast", "xmit_hash_policy": "layer3+4", "mtu": 9000}
    assert gathered["fabric_networks"]["training"] == {"role": "training", "vlan": 100, "mtu": 9000,
                                                       "subnet": "198.18.0.0/22"}
    assert gathered["fabric_networks"]["management"]["gateway"] == "192.0.2.1"
    assert gathered["fabric_addresses"]["storage"] == {"ipv4": "198.18.8.42"}


@pytest.mark.parametrize("backend", sorted(RENDERERS))
def test_a_hand_edit_is_what_gathered_says(backend, facts):
    """An MTU edited by hand on the node is what gathered reports, and rendering it gives the edited files."""
    files = rendered(intent_of("bond_vlan"), facts, backend)
    edited = {}
    for path, item in files.items():
        content = item["content"]
        content = content.replace("mtu: 9000", "mtu: 1500").replace("mtu=9000", "mtu=1500").replace(
            "MTUBytes=9000", "MTUBytes=1500")
        edited[path] = dict(item, content=content)
    gathered, _missing = gather_intent(backend, edited)
    assert [n.get("mtu") for n in gathered["fabric_networks"].values() if n.get("vlan")] == [1500]
    assert rendered(gathered, facts, backend) == edited


def test_unmarked_and_unrepresentable_are_listed():
    """Files without markers (edited, or from an older release) still gather, and say what was guessed."""
    content = "\n".join([
        "network:", "  version: 2", "  ethernets:", "    eno1:",
        "      addresses: [\"192.0.2.5/24\", \"192.0.2.6/24\"]",
        "      routes:", "        - to: default", "          via: \"192.0.2.1\"",
        "  vlans:", "    eno1.300:", "      id: 300", "      link: eno1",
        "      addresses: [\"198.18.12.5/24\"]", ""])
    gathered, missing = gather_intent("netplan", {"/etc/netplan/60-gpuops-fabric.yaml": {"content": content}})
    assert gathered["fabric_networks"]["eno1"] == {"role": "management", "subnet": "192.0.2.0/24",
                                                   "gateway": "192.0.2.1"}
    assert gathered["fabric_networks"]["vlan300"]["vlan"] == 300
    assert gathered["fabric_attachments"] == {"eno1": "eno1", "vlan300": "eno1"}
    assert any("second ipv4 address 192.0.2.6/24" in m for m in missing), missing
    assert any(m.startswith("eno1.300: no marker") for m in missing), missing


def test_networkd_units_and_keyfile_gateway_forms():
    ifaces = parse("networkd", {
        "/etc/systemd/network/60-gpuops-b.netdev": {"content": "[NetDev]\nName=b\nKind=bond\n[Bond]\n"
                                                               "Mode=active-backup\nMIIMonitorSec=1s\n"},
        "/etc/systemd/network/60-gpuops-p.network": {"content": "[Match]\nName=p\n[Network]\nBond=b\n"
                                                                "PrimarySlave=yes\n"}})
    bond = [i for i in ifaces if i["name"] == "b"][0]
    assert bond["miimon"] == 1000 and bond["primary"] == "p" and bond["members"] == ["p"]
    keyfile = "[connection]\ntype=ethernet\ninterface-name=e\n[ipv4]\naddress1=192.0.2.9/24\ngateway=192.0.2.1\n" \
              "method=manual\n"
    (iface,) = parse("networkmanager", {"/x": {"content": keyfile}})
    assert iface["addresses"] == ["192.0.2.9/24"] and iface["gateways"] == ["192.0.2.1"]


def _golden(backend):
    import os
    folder = os.path.join(REPO, "tests", "fixtures", "golden", "bond_vlan", backend)
    files = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as handle:
            files["/" + name.replace("__", "/")] = {"content": handle.read()}
    return files


@pytest.mark.parametrize("backend,damage,expected", [
    ("netplan", lambda t: t.replace("  version: 2", "  version: [2"), "60-gpuops-fabric.yaml line "),
    ("netplan", lambda t: "- just\n- a list\n", "60-gpuops-fabric.yaml: no 'network:' mapping"),
    ("networkmanager", lambda t: t.replace("[connection]", "connection"), "line 3: neither [section] nor key=value"),
    ("networkmanager", lambda t: t.replace("type=", "typ="), "no [connection] type"),
    ("networkd", lambda t: t.replace("[Match]", "Match"), "a setting before any [section]"),
    ("networkd", lambda t: t.replace("Name=", "Nmae="), "no [Match] Name="),
])
def test_broken_owned_files_are_named_with_path_and_line(backend, damage, expected):
    """A hand-broken owned file reads back as an error naming the file (and line), never as an empty intent.
    Starts from the golden files (rendered, checked by each backend's own tool), one file broken by hand."""
    files = _golden(backend)
    first = sorted(p for p in files if not p.endswith(".netdev"))[0]
    files[first] = {"content": damage(files[first]["content"])}
    with pytest.raises(ValueError) as error:
        gather_intent(backend, files)
    assert first.rsplit("/", 1)[1] in str(error.value) and expected in str(error.value), str(error.value)


@pytest.mark.parametrize("backend", ["netplan", "networkmanager", "networkd"])
def test_golden_files_read_back_without_problems(backend):
    intent, _missing = gather_intent(backend, _golden(backend))
    assert intent["fabric_bonds"]
