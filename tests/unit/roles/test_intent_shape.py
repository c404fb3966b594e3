"""The network role's entry point `intent` (roles/network/meta/argument_specs.yml) documents one entry of each of the
intent's name-keyed mappings for ansible-doc. The shape it states and the checks the collection runs must agree:
the keys, choices and defaults are the validator's own, and on generated entries Ansible's own ArgumentSpecValidator,
given the documented shape (NAME replaced by the entry's name), refuses nothing the collection accepts, while the
collection refuses everything Ansible's type checks refuse."""

import functools
import os

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent import validation
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import validate_bonds, validate_networks

from conftest import REPO


@functools.lru_cache(maxsize=None)
def entry_point():
    """The page, read once: the properties below ask for it on every example."""
    with open(os.path.join(REPO, "roles", "network", "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]["intent"]["options"]


def entry(variable):
    return entry_point()[variable]["options"]["NAME"]


def spec_of(documented):
    """An argument spec Ansible's validator takes: the documentation keys dropped, at every level."""
    spec = dict((k, v) for k, v in documented.items() if k not in ("description", "options"))
    if "options" in documented:
        spec["options"] = dict((k, spec_of(v)) for k, v in documented["options"].items())
    return spec


def ansible_errors(variable, name, value):
    spec = {variable: {"type": "dict", "options": {name: spec_of(entry(variable))}}}
    return ArgumentSpecValidator(spec).validate({variable: {name: value}}).error_messages


def test_the_page_names_the_validators_keys_choices_and_defaults():
    assert set(entry_point()) == {"fabric_networks", "fabric_bonds", "fabric_attachments", "fabric_addresses"}
    network, bond = entry("fabric_networks")["options"], entry("fabric_bonds")["options"]
    assert sorted(network) == sorted(validation.NETWORK_KEYS)
    assert sorted(network["routes"]["options"]) == sorted(validation.ROUTE_KEYS)
    assert network["role"]["choices"] == list(validation.ROLES)
    assert sorted(bond) == sorted(validation.BOND_KEYS)
    assert bond["mode"]["choices"] == list(validation.BOND_MODES)
    assert bond["lacp_rate"]["choices"] == list(validation.LACP_RATES)
    assert bond["xmit_hash_policy"]["choices"] == list(validation.HASH_POLICIES)
    addresses = " ".join(entry("fabric_addresses")["description"])
    assert all(k in addresses for k in validation.ADDRESS_KEYS), addresses
    # the defaults the page states are the ones the validator applies
    bonds = validate_bonds({"bond0": {"members": ["eth0", "eth1"]}}, None, [], [])
    assert bonds["bond0"]["mode"] == bond["mode"]["default"] and bonds["bond0"]["miimon"] == bond["miimon"]["default"]
    networks = validate_networks({"n": {"subnet": "198.18.0.0/24"}}, [])
    assert networks["n"]["allow_on_management"] is network["allow_on_management"]["default"]
    # a network's role defaults to its name when that is one of the roles
    assert validate_networks({"storage": {"subnet": "198.18.0.0/24"}}, [])["storage"]["role"] == "storage"


# An entry valid by the collection's rules (most keys present), then at most one change: a value of another type, a
# value outside the choices, a key dropped, or a key the page does not know. The valid ones probe "the page allows
# what the collection accepts"; the changed ones probe the same on the edges. No explicit nulls: Ansible's validator
# refuses a null for a key with choices, where the collection reads some keys' null as the key left out.
WRONG = st.one_of(st.booleans(), st.integers(-5, 70000), st.text(max_size=6),
                  st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.sampled_from(["a", "to"]),
                                                                           st.integers(0, 3), max_size=2),
                  st.sampled_from(["mgmt", "lacp", "medium", "layer5", "often"]))


@st.composite
def changed(draw, entry):
    """``entry`` with at most one key changed (the routes' own keys included)."""
    entry = dict(entry)
    how = draw(st.sampled_from(["none", "none", "value", "drop", "unknown", "route"]))
    if how == "value" and entry:
        entry[draw(st.sampled_from(sorted(entry)))] = draw(WRONG)
    elif how == "drop" and entry:
        del entry[draw(st.sampled_from(sorted(entry)))]
    elif how == "unknown":
        entry["unknown_key"] = draw(st.integers(0, 1))
    elif how == "route" and entry.get("routes"):
        route = dict(entry["routes"][0])
        key = draw(st.sampled_from(["to", "via", "metric", "unknown_key"]))
        if draw(st.booleans()) and key in route:
            del route[key]
        else:
            route[key] = draw(WRONG)
        entry["routes"] = [route] + entry["routes"][1:]
    return entry


@st.composite
def networks(draw):
    net = {"subnet": "198.18.0.0/24"}
    optional = {
        "role": st.sampled_from(validation.ROLES), "subnet6": st.just("fd00:18::/64"),
        "gateway": st.just("198.18.0.1"), "gateway6": st.just("fd00:18::1"), "vlan": st.integers(1, 4094),
        "mtu": st.integers(68, 9216), "allow_on_management": st.booleans(), "speed_mbps": st.integers(1, 400000),
        "routes": st.lists(st.fixed_dictionaries({"to": st.just("198.19.0.0/16"), "via": st.just("198.18.0.9")},
                                                 optional={"metric": st.integers(0, 200)}), min_size=1, max_size=2)}
    for key, values in optional.items():
        if draw(st.booleans()):
            net[key] = draw(values)
    return draw(changed(net))


@st.composite
def bonds(draw):
    mode = draw(st.sampled_from(validation.BOND_MODES))
    members = draw(st.lists(st.sampled_from(["eth0", "eth1", "ens1f0"]), min_size=1, max_size=3, unique=True))
    bond = {"members": members if draw(st.integers(0, 3)) else "nics[].name", "mode": mode}
    if draw(st.booleans()):
        bond["miimon"] = draw(st.integers(0, 1000))
    if draw(st.booleans()):
        bond["mtu"] = draw(st.integers(68, 9216))
    if mode == "802.3ad" and draw(st.booleans()):
        bond["lacp_rate"] = draw(st.sampled_from(validation.LACP_RATES))
    if mode in validation.HASH_MODES and draw(st.booleans()):
        bond["xmit_hash_policy"] = draw(st.sampled_from(validation.HASH_POLICIES))
    if mode in ("active-backup", "balance-tlb", "balance-alb") and isinstance(bond["members"], list) \
            and draw(st.booleans()):
        bond["primary"] = draw(st.sampled_from(members))
    return draw(changed(bond))


FACTS = {"nics": [{"name": n, "kind": "physical"} for n in ("eth0", "eth1", "ens1f0")]}


def ours(variable, name, value):
    """The collection's errors for one entry."""
    errors = []
    if variable == "fabric_bonds":
        validate_bonds({name: value}, FACTS, errors, [])
    else:
        validate_networks({name: value}, errors, check_overlap=False, planning=False)
    return errors


def agree(variable, name, value):
    ansible = ansible_errors(variable, name, value)
    assert not (ansible and not ours(variable, name, value)), (
        "the collection accepts what the page refuses", value, ansible)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks())
def test_a_network_entry_the_collection_accepts_is_one_the_page_allows(net):
    agree("fabric_networks", "training", net)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bonds())
def test_a_bond_entry_the_collection_accepts_is_one_the_page_allows(bond):
    agree("fabric_bonds", "bond0", bond)


def test_the_generated_entries_are_mostly_ones_the_collection_accepts():
    """The properties above say something only when the collection accepts many of the entries they make: counted
    here on a fixed sample of each."""
    for variable, name, entries in (("fabric_networks", "training", networks()), ("fabric_bonds", "bond0", bonds())):
        accepted = []

        @settings(max_examples=200, derandomize=True, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(entries)
        def count(value):
            accepted.append(not ours(variable, name, value))  # pylint: disable=cell-var-from-loop

        count()
        assert sum(accepted) > len(accepted) // 3, (variable, sum(accepted), len(accepted))


def test_ansible_refuses_what_the_page_says_is_wrong_and_so_does_the_collection():
    """The direction the properties above cannot fail in: each wrong type, choice, missing key or unknown key is
    refused by Ansible's validator given the page, and by the collection, both naming the key."""
    subnet = {"subnet": "198.18.0.0/24"}
    for variable, name, value, key in (
            ("fabric_networks", "training", dict(subnet, mtu="jumbo"), "mtu"),
            ("fabric_networks", "training", dict(subnet, role="mgmt"), "role"),
            ("fabric_networks", "training", dict(subnet, routes=[{"to": "198.19.0.0/16"}]), "via"),
            ("fabric_networks", "training", dict(subnet, vlans=100), "vlans"),
            ("fabric_bonds", "bond0", {"members": ["eth0", "eth1"], "mode": "lacp"}, "mode"),
            ("fabric_bonds", "bond0", {"mode": "802.3ad"}, "members"),
            ("fabric_bonds", "bond0", {"members": ["eth0", "eth1"], "miimon": "often"}, "miimon")):
        refused = " ".join(ansible_errors(variable, name, value))
        assert name in refused and key in refused, (value, refused)
        errors = ours(variable, name, value)
        assert errors and all(key in e for e in errors), (value, errors)
