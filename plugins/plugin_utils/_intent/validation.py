# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The network intent validated: networks, bonds, attachments; every error names the key and the value."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem, network_problem, VLAN_IDS, vlan_id
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_BOND, NETDEV_PHYSICAL
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.keys import is_int, key_path, mappings_in

try:
    import netaddr
except ImportError:  # pragma: no cover - declared in requirements.txt; plan_host says so by name
    netaddr = None

ROLES = ("management", "training", "storage")
NETWORK_KEYS = ("role", "subnet", "subnet6", "gateway", "gateway6", "vlan", "mtu", "routes", "allow_on_management",
                "speed_mbps")
ROUTE_KEYS = ("to", "via", "metric")
BOND_KEYS = ("members", "mode", "lacp_rate", "xmit_hash_policy", "miimon", "primary", "mtu")
BOND_MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb")


# The kernel's bonding documentation: xmit_hash_policy "for balance-xor, 802.3ad, and tlb modes"; lacp_rate only in
# 802.3ad; primary only in active-backup, balance-tlb and balance-alb.
HASH_MODES = ("balance-xor", "802.3ad", "balance-tlb")
ADDRESS_KEYS = ("ipv4", "ipv6")
NETWORK_STATES = ("merged", "replaced", "rendered", "gathered")
HASH_POLICIES = ("layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4", "vlan+srcmac")
LACP_RATES = ("slow", "fast")
BACKENDS = ("auto", "netplan", "networkmanager", "networkd")
MTU_MIN, MTU_MAX = 68, 9216


class IntentError(Exception):
    def __init__(self, errors):
        super(IntentError, self).__init__("\n".join(errors))
        self.errors = errors


def check_ifname(name, where, errors):
    """The strict interface-name rule of _names (stricter than the kernel's: see there why)."""
    problem = ifname_problem(name)
    if problem:
        errors.append("%s: %r %s" % (where, name, problem))
        return False
    return True


def _network(text, version, where, errors):
    if not isinstance(text, str) or text != text.strip() or not text.isprintable():
        errors.append("%s: %r is not an IPv%d subnet" % (where, text, version))
        return None
    try:
        net = netaddr.IPNetwork(str(text))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        errors.append("%s: %r is not an IPv%d subnet" % (where, text, version))
        return None
    if net.version != version or "/" not in str(text):
        errors.append("%s: %r is not an IPv%d subnet in CIDR form" % (where, text, version))
        return None
    if net.ip != net.network:
        errors.append("%s: %r has host bits set (did you mean %s?)" % (where, text, net.cidr))
        return None
    return net


def parse_address(text, where, errors):
    if not isinstance(text, str) or text != text.strip() or not text.isprintable():
        errors.append("%s: %r is not an IP address" % (where, text))
        return None
    try:
        return netaddr.IPAddress(str(text).split("/", maxsplit=1)[0])
    except (netaddr.AddrFormatError, ValueError, TypeError):
        errors.append("%s: %r is not an IP address" % (where, text))
        return None


def reserved_addresses(net, gateway):
    reserved = {net.network}
    if net.version == 4 and net.prefixlen < 31:
        reserved.add(net.broadcast)
    if gateway is not None:
        reserved.add(gateway)
    return reserved


def validate_networks(value, errors, key="fabric_networks", check_overlap=True, planning=True):
    """{name: network} with netaddr subnets; errors name the key path. The audit reports overlapping subnets
    as a finding (NET-006) instead, so it can turn ``check_overlap`` off; and it reads networks only to judge
    them (``planning`` off): a gateway the planner would ignore does not stop a read-only audit."""
    networks = {}
    if value is None:
        return networks
    if not isinstance(value, dict):
        errors.append("%s: expected a mapping of network names, got %r" % (key, value))
        return networks
    for name in sorted(value, key=str):
        net = value[name]
        where = key_path(key, name)
        problem = network_problem(name)
        if problem:
            errors.append("%s: %r %s" % (key, name, problem))
            continue
        if not isinstance(net, dict):
            errors.append("%s: expected a mapping, got %r" % (where, net))
            continue
        for unknown in sorted(set(net) - set(NETWORK_KEYS), key=str):
            errors.append("%s.%s: unknown key (known: %s)" % (where, unknown, ", ".join(NETWORK_KEYS)))
        item = {"name": str(name), "role": net.get("role", name), "vlan": None, "mtu": None, "routes": [],
                "allow_on_management": net.get("allow_on_management", False) is True}
        if not isinstance(net.get("allow_on_management", False), bool):
            errors.append("%s.allow_on_management: %r must be true or false" % (where, net["allow_on_management"]))
        if item["role"] not in ROLES:
            errors.append("%s.role: %r is not one of %s" % (where, item["role"], ", ".join(ROLES)))
        if net.get("subnet") is None and net.get("subnet6") is None:
            errors.append("%s: needs subnet (IPv4) or subnet6 (IPv6)" % where)
        for version, skey, gkey in ((4, "subnet", "gateway"), (6, "subnet6", "gateway6")):
            subnet = _network(net[skey], version, "%s.%s" % (where, skey), errors) if net.get(skey) is not None else None
            gateway = None
            if net.get(gkey) is not None:
                gateway = parse_address(net[gkey], "%s.%s" % (where, gkey), errors)
                if gateway is not None and subnet is not None:
                    if gateway not in subnet:
                        errors.append("%s.%s: %s is outside %s.%s %s" % (where, gkey, gateway, where, skey, subnet))
                    elif gateway in reserved_addresses(subnet, None):
                        errors.append("%s.%s: %s is the network or broadcast address of %s"
                                      % (where, gkey, gateway, subnet))
                elif gateway is not None and planning and net.get(skey) is None:
                    # the host would get a default route through a gateway of a family it has no address in
                    errors.append("%s.%s: %s needs %s.%s, the subnet it is in (this host gets no IPv%d address "
                                  "in %s without it)" % (where, gkey, gateway, where, skey, version, name))
            if planning and net.get(gkey) is not None and item["role"] in ("training", "storage"):
                errors.append("%s.%s: only a management network's gateway becomes a default route, so this one would "
                              "be ignored; for a routed %s network give routes: [{to: <subnet>, via: %s}]"
                              % (where, gkey, item["role"], net[gkey]))
            item[skey], item[gkey] = subnet, gateway
        vlan = net.get("vlan")
        if vlan is not None:
            if vlan_id(vlan) is None:
                errors.append("%s.vlan: %r is outside %d..%d" % ((where, vlan) + VLAN_IDS))
            else:
                item["vlan"] = vlan
        mtu = net.get("mtu")
        if mtu is not None:
            if not is_int(mtu) or not MTU_MIN <= mtu <= MTU_MAX:
                errors.append("%s.mtu: %r is outside %d..%d" % (where, mtu, MTU_MIN, MTU_MAX))
            else:
                item["mtu"] = mtu
        item["speed_mbps"] = None
        speed = net.get("speed_mbps")
        if speed is not None:
            if not is_int(speed) or speed < 1:
                errors.append("%s.speed_mbps: %r must be a link speed in Mbit/s (1000, 10000, 25000, ...)"
                              % (where, speed))
            else:
                item["speed_mbps"] = speed
        for _index, rwhere, route in mappings_in(net.get("routes"), where + ".routes", errors):
            for unknown in sorted(set(route) - set(ROUTE_KEYS), key=str):
                errors.append("%s.%s: unknown key (known: %s)" % (rwhere, unknown, ", ".join(ROUTE_KEYS)))
            to = None
            try:
                to = netaddr.IPNetwork(str(route.get("to")))
                if "/" not in str(route.get("to")):
                    raise ValueError
            except (netaddr.AddrFormatError, ValueError, TypeError):
                errors.append("%s.to: %r is not a destination subnet" % (rwhere, route.get("to")))
            if to is not None and to.ip != to.network:
                errors.append("%s.to: %r has host bits set (did you mean %s?)" % (rwhere, route.get("to"), to.cidr))
                to = None
            via = parse_address(route.get("via"), "%s.via" % rwhere, errors) if route.get("via") is not None else None
            if route.get("via") is None:
                errors.append("%s.via: a route needs a gateway (via)" % rwhere)
            if via is not None and to is not None and via.version != to.version:
                errors.append("%s.via: %s is an IPv%d gateway for the IPv%d destination %s"
                              % (rwhere, via, via.version, to.version, to.cidr))
                via = None
            if via is not None:
                own = item["subnet"] if via.version == 4 else item["subnet6"]
                if own is None or via not in own:
                    errors.append("%s.via: %s is not in the network's own subnet" % (rwhere, via))
                    via = None
            metric = route.get("metric")
            if metric is not None and (not is_int(metric) or metric < 0):
                errors.append("%s.metric: %r must be a non-negative number" % (rwhere, metric))
            if to is not None and via is not None:
                item["routes"].append({"to": str(to.cidr), "via": str(via), "metric": metric})
        networks[str(name)] = item
    names = sorted(networks) if check_overlap else []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for skey in ("subnet", "subnet6"):
                na, nb = networks[a][skey], networks[b][skey]
                if na is not None and nb is not None and (na in nb or nb in na or na.first <= nb.first <= na.last):
                    errors.append("%s.%s.%s: %s overlaps %s.%s.%s %s" % (key, a, skey, na, key, b, skey, nb))
    return networks


def _select_members(selector, facts, where, errors):
    """A JMESPath expression over this host's gpuops_fabric facts giving interface names."""
    try:
        import jmespath
    except ImportError:
        errors.append("%s: a member selector needs the jmespath Python library on the controller" % where)
        return []
    try:
        found = jmespath.search(selector, facts or {})
    except jmespath.exceptions.JMESPathError as exc:
        errors.append("%s: %r is not a valid JMESPath expression (%s)" % (where, selector, exc))
        return []
    if not isinstance(found, list) or not all(isinstance(n, str) for n in found):
        errors.append("%s: %r must select a list of interface names, got %r" % (where, selector, found))
        return []
    return sorted(found)


def validate_bonds(value, facts, errors, warnings, key="fabric_bonds"):
    bonds = {}
    if value is None:
        return bonds
    if not isinstance(value, dict):
        errors.append("%s: expected a mapping of bond names, got %r" % (key, value))
        return bonds
    present = dict((n["name"], n) for n in (facts or {}).get("nics") or []) if facts else None
    owner = {}
    for name in sorted(value, key=str):
        bond = value[name]
        where = key_path(key, name)
        if not check_ifname(name, where, errors):
            continue
        if not isinstance(bond, dict):
            errors.append("%s: expected a mapping, got %r" % (where, bond))
            continue
        if present is not None and name in present and present[name].get("kind") != NETDEV_BOND:
            errors.append("%s: %r is the name of an existing %s interface on this host; a bond needs a name of its own"
                          % (key, name, present[name].get("kind") or "other"))
            continue
        for unknown in sorted(set(bond) - set(BOND_KEYS), key=str):
            errors.append("%s.%s: unknown key (known: %s)" % (where, unknown, ", ".join(BOND_KEYS)))
        mode = bond.get("mode", "802.3ad")
        if not isinstance(mode, str) or mode not in BOND_MODES:
            errors.append("%s.mode: %r is not one of %s" % (where, mode, ", ".join(BOND_MODES)))
        members = bond.get("members")
        if isinstance(members, str):
            members = _select_members(members, facts, "%s.members" % where, errors)
            if not members:
                errors.append("%s.members: selector %r matched no interface on this host" % (where, bond["members"]))
        elif not isinstance(members, list) or not members:
            errors.append("%s.members: %r must be a non-empty list of interface names or a JMESPath selector"
                          % (where, members))
            members = []
        checked = []
        for index, member in enumerate(members):
            mwhere = "%s.members[%d]" % (where, index)
            if not check_ifname(member, mwhere, errors):
                continue
            if member in value:
                errors.append("%s: %r is itself a bond in %s; bonds of bonds are not planned" % (mwhere, member, key))
                continue
            checked.append(member)
            if member in owner:
                errors.append("%s: %r is already a member of %s" % (mwhere, member, owner[member]))
            owner[member] = name
            if present is not None:
                if member not in present:
                    errors.append("%s: %r does not exist on this host" % (mwhere, member))
                elif present[member]["kind"] != NETDEV_PHYSICAL:
                    errors.append("%s: %r is a %s interface, not a physical port" % (mwhere, member,
                                                                                     present[member]["kind"]))
        members = checked
        if mode == "802.3ad" and len(members) == 1:
            warnings.append("%s: 802.3ad with one member gives no aggregation or redundancy" % where)
        lacp_rate = bond.get("lacp_rate")
        if lacp_rate is not None and (not isinstance(lacp_rate, str) or lacp_rate not in LACP_RATES):
            errors.append("%s.lacp_rate: %r is not one of %s" % (where, lacp_rate, ", ".join(LACP_RATES)))
        if lacp_rate is not None and mode != "802.3ad":
            errors.append("%s.lacp_rate: only applies to mode 802.3ad (mode is %s)" % (where, mode))
        policy = bond.get("xmit_hash_policy")
        if policy is not None and (not isinstance(policy, str) or policy not in HASH_POLICIES):
            errors.append("%s.xmit_hash_policy: %r is not one of %s" % (where, policy, ", ".join(HASH_POLICIES)))
        elif policy is not None and mode not in HASH_MODES:
            errors.append("%s.xmit_hash_policy: only applies to modes %s (mode is %s)"
                          % (where, ", ".join(HASH_MODES), mode))
        miimon = bond.get("miimon", 100)
        if not is_int(miimon) or miimon < 0:
            errors.append("%s.miimon: %r must be a non-negative number of milliseconds" % (where, miimon))
        primary = bond.get("primary")
        if primary is not None:
            if not isinstance(primary, str):
                errors.append("%s.primary: %r must be the name of one of the members" % (where, primary))
            elif mode not in ("active-backup", "balance-tlb", "balance-alb"):
                errors.append("%s.primary: only applies to active-backup, balance-tlb and balance-alb (mode is %s)"
                              % (where, mode))
            elif primary not in members:
                errors.append("%s.primary: %r is not one of the members %s" % (where, primary, members))
        mtu = bond.get("mtu")
        if mtu is not None and (not is_int(mtu) or not MTU_MIN <= mtu <= MTU_MAX):
            errors.append("%s.mtu: %r is outside %d..%d" % (where, mtu, MTU_MIN, MTU_MAX))
            mtu = None
        bonds[name] = {"name": name, "members": members, "mode": mode, "lacp_rate": lacp_rate,
                       "xmit_hash_policy": policy, "miimon": miimon if is_int(miimon) else 100,
                       "primary": primary, "mtu": mtu}
    return bonds


def read_attachments(value, errors):
    """fabric_attachments as a mapping (network name -> device), {} when unset; anything else is an error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append("fabric_attachments: expected a mapping of network to device, got %r" % (value,))
        return {}
    return value


def training_on_management(networks, devices):
    """[(training network, management network, sorted shared devices)] for each training network that rides on a
    device of a management network without ``allow_on_management``. ``devices``: {network name: set of devices}
    (the planned attachments before a change, or the interfaces the addresses sit on after it)."""
    training = [n for n, v in networks.items() if v["role"] == "training" and not v["allow_on_management"]]
    shared = []
    for management in (n for n, v in networks.items() if v["role"] == "management"):
        for name in training:
            common = sorted(devices.get(name, set()) & devices.get(management, set()))
            if common:
                shared.append((name, management, common))
    return shared
