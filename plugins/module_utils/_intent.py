# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The network intent: validation (every error names the key path and value), addressing, and the
per-host plan of interfaces (members, bonds, VLANs) that the renderers turn into files.

Controller side only; needs netaddr.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import traceback

from ansible_collections.gpuops.fabric.plugins.module_utils._names import (
    ifname_problem,
    lldpd_pattern_problem,
    network_problem,
    type_word,
)

NETADDR_IMPORT_ERROR = None
try:
    import netaddr
except ImportError:  # pragma: no cover - declared in requirements.txt
    netaddr = None
    NETADDR_IMPORT_ERROR = traceback.format_exc()

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
# Every top-level variable the collection reads (and the results its playbooks register), so that a typo such as
# fabric_attachment is named instead of silently planning bonds that carry nothing.
KNOWN_VARIABLES = frozenset("""
fabric_networks fabric_bonds fabric_attachments fabric_host_index fabric_addresses fabric_allocation_file
fabric_hosts fabric_facts_source fabric_facts_root fabric_facts_path fabric_facts_nvml fabric_facts_lldp_socket
fabric_network_state fabric_network_backend fabric_network_root fabric_network_rollback_timeout
fabric_network_confirm_timeout fabric_network_allow_management fabric_network_lldpd fabric_network_lldpd_interfaces
fabric_network_render_dir fabric_nccl_mode fabric_nccl_interface fabric_nccl_env fabric_nccl_root
fabric_nccl_conf_path fabric_nccl_topo_file fabric_nccl_topo_path fabric_nccl_tests_launcher
fabric_nccl_tests_expected_busbw fabric_nccl_tests_timeout fabric_nccl_tests_binary fabric_nccl_tests_args
fabric_nccl_logs fabric_expectations fabric_waivers fabric_audit_fail_on fabric_report_dir
fabric_audit_baseline fabric_audit_window fabric_prometheus_textfile_dir fabric_audit_waiver_horizon_days
fabric_cabling fabric_switch fabric_probes_enabled fabric_probes fabric_probe_networks fabric_probe_duration
fabric_probe_min_fraction fabric_probe_server_lifetime fabric_probe_all_pairs_max fabric_probe_throughput_roles
fabric_probe_port fabric_probe_streams fabric_probe_ping_count fabric_probe_results fabric_probe_plan
fabric_plan_dir fabric_plan_gradient_bytes fabric_plan_compute_seconds fabric_plan_socket_gbytes_per_s
fabric_plan_nodes fabric_plan_mode fabric_plan fabric_demo_xml fabric_demo_roots
fabric_network_plan fabric_network_intent fabric_drift_result fabric_audit_result fabric_audit_gather
fabric_site_intent fabric_plan_gather fabric_audit_lines fabric_audit_yaml fabric_drift_lines fabric_drift_yaml
fabric_molecule_conf fabric_molecule_dir fabric_molecule_iperf3 fabric_molecule_netplan fabric_molecule_plan
fabric_molecule_project
""".split())


class IntentError(Exception):
    def __init__(self, errors):
        super(IntentError, self).__init__("\n".join(errors))
        self.errors = errors


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_ifname(name, where, errors):
    """The strict interface-name rule of _names (stricter than the kernel's: see there why)."""
    problem = ifname_problem(name)
    if problem:
        errors.append("%s: %r %s" % (where, name, problem))
        return False
    return True


# The variables that decide what the network role writes: a near miss of one of these is an error.
SHAPING_VARIABLES = frozenset(("fabric_networks", "fabric_bonds", "fabric_attachments", "fabric_addresses",
                               "fabric_host_index", "fabric_network_state", "fabric_network_backend"))
_BOOLEAN_TEXT = ("true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f")


def _did_you_mean(name, known, prefix="fabric_"):
    """A known name close to ``name``, compared without the shared prefix (which would make every pair look alike:
    a site's own fabric_site_owner is no typo of fabric_site_intent)."""
    cut = len(prefix)
    close = difflib.get_close_matches(str(name)[cut:], sorted(k[cut:] for k in known), n=1, cutoff=0.8)
    return " (did you mean %s%s?)" % (prefix, close[0]) if close else ""


def check_variables(hostvars, errors, warnings):
    """Top-level fabric_* variables the collection does not know: an error when one is close to a known name (a
    typo, almost surely), a warning otherwise. The role variables' values are checked here too, for every host,
    so that a bad value on one host stops the run before any host is changed."""
    for name in sorted(k for k in hostvars if isinstance(k, str) and k.startswith("fabric_")):
        if name not in KNOWN_VARIABLES:
            hint = _did_you_mean(name, KNOWN_VARIABLES)
            # An error only where the typo silently changes what is written to the nodes (fabric_attachment: bonds
            # that carry nothing); elsewhere a site's own fabric_ variable or registered result is only named.
            shaping = hint and _did_you_mean(name, SHAPING_VARIABLES)
            (errors if shaping else warnings).append("%s: not a variable gpuops.fabric reads%s" % (name, hint))
    state = hostvars.get("fabric_network_state", "merged")
    if state not in NETWORK_STATES:
        errors.append("fabric_network_state: %r is not one of %s" % (state, ", ".join(NETWORK_STATES)))
    seconds = {}
    for key, default in (("fabric_network_rollback_timeout", 180), ("fabric_network_confirm_timeout", 60)):
        value = hostvars.get(key, default)
        # -e key=value gives text; the role's argument spec takes "180" as 180, so does this check
        number = int(value) if isinstance(value, str) and value.strip().isdigit() and value.isascii() else value
        if not _is_int(number) or not 0 <= number <= 86400:
            errors.append("%s: %r must be a number of seconds (0..86400)" % (key, value))
        else:
            seconds[key] = number
    rollback, confirm = seconds.get("fabric_network_rollback_timeout"), seconds.get("fabric_network_confirm_timeout")
    if rollback and confirm is not None and confirm >= rollback:
        errors.append("fabric_network_confirm_timeout: %d is not below fabric_network_rollback_timeout %d (the node "
                      "would roll back while the controller still waits to confirm)" % (confirm, rollback))
    for key in ("fabric_network_allow_management", "fabric_network_lldpd"):
        value = hostvars.get(key, False)
        # what the role's argument spec (type bool) takes: booleans, and their spellings as text from -e
        if not isinstance(value, bool) and not (isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT):
            errors.append("%s: %r must be true or false" % (key, value))
    pattern = hostvars.get("fabric_network_lldpd_interfaces", "")
    problem = lldpd_pattern_problem(pattern)
    if problem:
        errors.append("fabric_network_lldpd_interfaces: %r %s" % (pattern, problem))
    root = hostvars.get("fabric_network_root", "/")
    if not isinstance(root, str) or not root.startswith("/") or "\0" in root or any(c in root for c in "\n\r"):
        errors.append("fabric_network_root: %r must be an absolute path" % (root,))


def key_path(key, name):
    """``key.name`` for the error messages; a name that is not printable text shows as its repr, so a newline or
    NUL in an inventory key cannot break the message it is named in."""
    if isinstance(name, str) and name.isprintable():
        return "%s.%s" % (key, name)
    return "%s[%r]" % (key, name)


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


def _address(text, where, errors):
    if not isinstance(text, str) or text != text.strip() or not text.isprintable():
        errors.append("%s: %r is not an IP address" % (where, text))
        return None
    try:
        return netaddr.IPAddress(str(text).split("/", maxsplit=1)[0])
    except (netaddr.AddrFormatError, ValueError, TypeError):
        errors.append("%s: %r is not an IP address" % (where, text))
        return None


def _reserved(net, gateway):
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
                gateway = _address(net[gkey], "%s.%s" % (where, gkey), errors)
                if gateway is not None and subnet is not None:
                    if gateway not in subnet:
                        errors.append("%s.%s: %s is outside %s.%s %s" % (where, gkey, gateway, where, skey, subnet))
                    elif gateway in _reserved(subnet, None):
                        errors.append("%s.%s: %s is the network or broadcast address of %s"
                                      % (where, gkey, gateway, subnet))
            if planning and net.get(gkey) is not None and item["role"] in ("training", "storage"):
                errors.append("%s.%s: only a management network's gateway becomes a default route, so this one would "
                              "be ignored; for a routed %s network give routes: [{to: <subnet>, via: %s}]"
                              % (where, gkey, item["role"], net[gkey]))
            item[skey], item[gkey] = subnet, gateway
        vlan = net.get("vlan")
        if vlan is not None:
            if not _is_int(vlan) or not 1 <= vlan <= 4094:
                errors.append("%s.vlan: %r is outside 1..4094" % (where, vlan))
            else:
                item["vlan"] = vlan
        mtu = net.get("mtu")
        if mtu is not None:
            if not _is_int(mtu) or not MTU_MIN <= mtu <= MTU_MAX:
                errors.append("%s.mtu: %r is outside %d..%d" % (where, mtu, MTU_MIN, MTU_MAX))
            else:
                item["mtu"] = mtu
        item["speed_mbps"] = None
        speed = net.get("speed_mbps")
        if speed is not None:
            if not _is_int(speed) or speed < 1:
                errors.append("%s.speed_mbps: %r must be a link speed in Mbit/s (1000, 10000, 25000, ...)"
                              % (where, speed))
            else:
                item["speed_mbps"] = speed
        routes = net.get("routes") or []
        if not isinstance(routes, list):
            errors.append("%s.routes: expected a list, got %r" % (where, routes))
            routes = []
        for index, route in enumerate(routes):
            rwhere = "%s.routes[%d]" % (where, index)
            if not isinstance(route, dict):
                errors.append("%s: expected a mapping, got %r" % (rwhere, route))
                continue
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
            via = _address(route.get("via"), "%s.via" % rwhere, errors) if route.get("via") is not None else None
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
            if metric is not None and (not _is_int(metric) or metric < 0):
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
        if present is not None and name in present and present[name].get("kind") != "bond":
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
                elif present[member]["kind"] != "physical":
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
        if not _is_int(miimon) or miimon < 0:
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
        if mtu is not None and (not _is_int(mtu) or not MTU_MIN <= mtu <= MTU_MAX):
            errors.append("%s.mtu: %r is outside %d..%d" % (where, mtu, MTU_MIN, MTU_MAX))
            mtu = None
        bonds[name] = {"name": name, "members": members, "mode": mode, "lacp_rate": lacp_rate,
                       "xmit_hash_policy": policy, "miimon": miimon if _is_int(miimon) else 100,
                       "primary": primary, "mtu": mtu}
    return bonds


def host_addresses(networks, index, explicit, errors):
    """{network: {"ipv4": "a/p" or None, "ipv6": ...}} from a per-host index or explicit addresses."""
    result = {}
    if index is not None and (not _is_int(index) or index < 1):
        errors.append("fabric_host_index: %r must be a positive number" % (index,))
        index = None
    if explicit is not None and not isinstance(explicit, dict):
        errors.append("fabric_addresses: expected a mapping of network to address, got %r" % (explicit,))
        explicit = {}
    explicit = explicit or {}
    for name in sorted(set(explicit) - set(networks), key=str):
        errors.append("fabric_addresses.%s: not a network in fabric_networks" % name)
    given_by = {}
    for name in sorted(set(explicit) & set(networks), key=str):
        given = explicit[name]
        where = "fabric_addresses.%s" % name
        if isinstance(given, dict):
            for unknown in sorted(set(given) - set(ADDRESS_KEYS), key=str):
                errors.append("%s.%s: unknown key (known: %s)" % (where, unknown, ", ".join(ADDRESS_KEYS)))
            items = [("%s.%s" % (where, f), f, given[f]) for f in ADDRESS_KEYS if given.get(f) is not None]
        elif isinstance(given, str):
            items = [(where, "ipv6" if ":" in given else "ipv4", given)]
        else:
            errors.append("%s: %r must be an address, or a mapping with ipv4 and/or ipv6" % (where, given))
            continue
        for gwhere, family, text in items:
            address = _address(text, gwhere, errors)
            if address is None:
                continue
            if address.version != (4 if family == "ipv4" else 6):
                errors.append("%s: %r is not an %s address" % (gwhere, text, family))
                continue
            skey = "subnet" if family == "ipv4" else "subnet6"
            subnet = networks[name][skey]
            if subnet is None:
                errors.append("%s: %r, but network %s has no %s (%s)" % (gwhere, text, name, skey, family))
                continue
            if "/" in str(text) and str(text).split("/", 1)[1] != str(subnet.prefixlen):
                errors.append("%s: %r has prefix /%s, but %s is %s (leave the prefix out)"
                              % (gwhere, text, str(text).split("/", 1)[1], name, subnet))
                continue
            given_by[(name, family)] = (gwhere, address)
    for name, net in networks.items():
        entry = {"ipv4": None, "ipv6": None}
        for family, skey, gkey in (("ipv4", "subnet", "gateway"), ("ipv6", "subnet6", "gateway6")):
            subnet = net[skey]
            if subnet is None:
                continue
            where, address = given_by.get((name, family), (None, None))
            if address is None and index is not None:
                address = subnet.network + index if index < subnet.size else None
                where = "fabric_host_index"
                if address is None:
                    errors.append("fabric_host_index: %d does not fit in %s %s" % (index, name, subnet))
                    continue
            if address is None:
                continue
            if address not in subnet:
                errors.append("%s: %s is outside %s %s" % (where, address, name, subnet))
            elif address in _reserved(subnet, net[gkey]):
                errors.append("%s: %s is the network, broadcast or gateway address of %s" % (where, address, name))
            else:
                entry[family] = "%s/%d" % (address, subnet.prefixlen)
        result[name] = entry
    return result


def allocate_indices(allocations, hosts, networks_by_host):
    """Pin an index to every host not yet in ``allocations`` (a dict host -> index), lowest free first.

    Existing entries never change, and entries of hosts no longer listed stay, so adding or removing
    hosts never renumbers the others. An index is free when no host holds it and it gives a usable
    address (not network, broadcast or gateway) in every network the host is on.
    """
    result = dict(allocations)
    taken = set(result.values())
    for host in hosts:
        if host in result:
            continue
        nets = networks_by_host.get(host, {}).values()
        # No index at or above the smallest subnet's size is usable: the search ends there, not at 2**24.
        limit = min([1 << 24] + [n[k].size for n in nets for k in ("subnet", "subnet6") if n[k] is not None])
        index = 1
        while True:
            if index not in taken and all(_usable(net, index) for net in nets):
                break
            index += 1
            if index >= limit:
                raise IntentError(["fabric_allocation_file: no free host index for %s (its smallest subnet has room "
                                   "for %d)" % (host, limit)])
        result[host] = index
        taken.add(index)
    return result


def _usable(net, index):
    for skey, gkey in (("subnet", "gateway"), ("subnet6", "gateway6")):
        subnet = net[skey]
        if subnet is None:
            continue
        if index >= subnet.size or (subnet.network + index) in _reserved(subnet, net[gkey]):
            return False
    return True


def plan_host(host, hostvars, facts, index=None):
    """Validate one host's intent and return (plan, errors, warnings).

    ``plan["interfaces"]`` lists what to configure in creation order (ports, bonds, VLANs), each with
    its final MTU: a parent carries at least the largest MTU of what rides on it.
    """
    errors, warnings = [], []
    if netaddr is None:
        return None, ["the netaddr Python library is required on the controller (pip install netaddr)"], []
    check_variables(hostvars, errors, warnings)
    networks = validate_networks(hostvars.get("fabric_networks"), errors)
    bonds = validate_bonds(hostvars.get("fabric_bonds"), facts, errors, warnings)
    attachments = hostvars.get("fabric_attachments") or {}
    if not isinstance(attachments, dict):
        errors.append("fabric_attachments: expected a mapping of network to device, got %r" % (attachments,))
        attachments = {}
    backend = hostvars.get("fabric_network_backend", "auto")
    if backend not in BACKENDS:
        errors.append("fabric_network_backend: %r is not one of %s" % (backend, ", ".join(BACKENDS)))
    present = dict((n["name"], n) for n in (facts or {}).get("nics") or []) if facts else None
    if index is None:
        index = hostvars.get("fabric_host_index")
    addresses = host_addresses(networks, index, hostvars.get("fabric_addresses"), errors)

    interfaces = {}
    member_of = dict((m, b["name"]) for b in bonds.values() for m in b["members"])
    for bond in bonds.values():
        for member in bond["members"]:
            interfaces[member] = {"name": member, "kind": "ethernet", "bond": bond["name"], "mtu": None,
                                  "networks": [], "addresses": [], "routes": []}
        interfaces[bond["name"]] = dict({"kind": "bond", "networks": [], "addresses": [], "routes": [],
                                         "mtu_from": "fabric_bonds.%s.mtu" % bond["name"] if bond["mtu"] else None},
                                        **bond)
    untagged, default_routes = {}, {}
    for network_name in sorted(attachments, key=str):
        device = attachments[network_name]
        where = key_path("fabric_attachments", network_name)
        if not isinstance(network_name, str):
            errors.append("fabric_attachments: key %r is a %s; network names are strings"
                          % (network_name, type_word(network_name)))
            continue
        if network_name not in networks:
            errors.append("%s: %r is not a network in fabric_networks" % (where, network_name))
            continue
        if not check_ifname(device, where, errors):
            continue
        if device in member_of:
            errors.append("%s: %r is a member of bond %s; attach to the bond" % (where, device, member_of[device]))
            continue
        if device not in bonds and present is not None and device not in present:
            errors.append("%s: %r is neither a bond in fabric_bonds nor an interface on this host" % (where, device))
            continue
        if device not in bonds and present is not None and present[device].get("kind") in ("bond", "vlan", "loopback"):
            errors.append("%s: %r is an existing %s interface this intent does not own; attach networks to ports or "
                          "to bonds in fabric_bonds (VLANs come from fabric_networks.<name>.vlan)"
                          % (where, device, present[device]["kind"]))
            continue
        net = networks[network_name]
        if device not in interfaces:
            interfaces[device] = {"name": device, "kind": "ethernet", "bond": None, "mtu": None, "networks": [],
                                  "addresses": [], "routes": []}
        target = device
        if net["vlan"] is not None:
            target = "%s.%d" % (device, net["vlan"])
            if not check_ifname(target, "%s (VLAN interface %s)" % (where, target), errors):
                continue
            if target in interfaces:
                errors.append("%s: VLAN %d on %s is already used by network %s" % (
                    where, net["vlan"], device, interfaces[target]["networks"][0]))
                continue
            interfaces[target] = {"name": target, "kind": "vlan", "parent": device, "id": net["vlan"], "mtu": None,
                                  "networks": [], "addresses": [], "routes": []}
        else:
            if device in untagged:
                errors.append("%s: %s already carries network %s untagged; give one of them a vlan"
                              % (where, device, untagged[device]))
                continue
            untagged[device] = network_name
        iface = interfaces[target]
        iface["networks"].append(network_name)
        if net["mtu"] and net["mtu"] > (iface["mtu"] or 0):
            iface["mtu_from"] = "fabric_networks.%s.mtu" % network_name
        iface["mtu"] = max(iface["mtu"] or 0, net["mtu"] or 0) or None
        for family in ("ipv4", "ipv6"):
            if addresses.get(network_name, {}).get(family):
                iface["addresses"].append(addresses[network_name][family])
        for gkey in ("gateway", "gateway6"):
            if net[gkey] is not None and net["role"] == "management":
                iface.setdefault("gateways", []).append(str(net[gkey]))
                default_routes.setdefault(gkey, []).append(network_name)
        iface["routes"].extend(net["routes"])
        for route in net["routes"]:
            family = "ipv6" if ":" in route["to"] else "ipv4"
            if not addresses.get(network_name, {}).get(family):
                errors.append("fabric_networks.%s.routes: the route to %s is %s, but this host has no %s address on "
                              "%s" % (network_name, route["to"], family, family, network_name))

    for gkey, names in sorted(default_routes.items()):
        if len(names) > 1:
            errors.append("fabric_attachments: %s each give a default route (fabric_networks.<name>.%s); a host gets "
                          "one default route per family: keep the %s on one management network"
                          % (" and ".join(names), gkey, gkey))
    roles = dict((n, networks[n]["role"]) for n in networks)
    mgmt_devices = set(attachments[n] for n in attachments if roles.get(n) == "management"
                       and isinstance(attachments[n], str))
    for n in attachments:
        if roles.get(n) == "training" and isinstance(attachments[n], str) and attachments[n] in mgmt_devices and not networks[n]["allow_on_management"]:
            warnings.append("fabric_attachments.%s: training network on %s, the management interface "
                            "(set fabric_networks.%s.allow_on_management: true if deliberate)" % (n, attachments[n], n))

    # Parents carry at least the largest MTU riding on them: VLAN -> its parent, bond -> its members.
    for iface in list(interfaces.values()):
        if iface["kind"] == "vlan" and iface["mtu"]:
            parent = interfaces[iface["parent"]]
            declared = bonds.get(parent["name"], {}).get("mtu")
            if declared and declared < iface["mtu"]:
                errors.append("fabric_bonds.%s.mtu: %d is below the MTU %d of VLAN %s riding on it"
                              % (parent["name"], declared, iface["mtu"], iface["name"]))
            if iface["mtu"] > (parent["mtu"] or 0):
                parent["mtu"], parent["mtu_from"] = iface["mtu"], iface.get("mtu_from")
    for iface in list(interfaces.values()):
        if iface["kind"] == "bond" and iface["mtu"]:
            for member in iface["members"]:
                if iface["mtu"] > (interfaces[member]["mtu"] or 0):
                    interfaces[member]["mtu"], interfaces[member]["mtu_from"] = iface["mtu"], iface.get("mtu_from")
    # What the NIC's driver allows (facts from netlink on a live node): a port, and so a bond or VLAN above it.
    for iface in interfaces.values():
        limit = (present or {}).get(iface["name"], {}).get("max_mtu")
        if iface["mtu"] and limit and iface["mtu"] > limit:
            errors.append("%s: %d is above the largest MTU %s supports (%d, as its driver reports)"
                          % (iface.get("mtu_from") or "fabric_networks", iface["mtu"], iface["name"], limit))
    for device, network_name in sorted(untagged.items()):
        wanted = networks[network_name]["mtu"]
        declared = bonds.get(device, {}).get("mtu")
        if declared and wanted and declared < wanted:
            errors.append("fabric_bonds.%s.mtu: %d is below the MTU %d of network %s it carries untagged"
                          % (device, declared, wanted, network_name))
        final = interfaces[device]["mtu"]
        if wanted and final and final > wanted:
            warnings.append("fabric_networks.%s.mtu: %d, but %s carries it untagged at MTU %d for the VLANs on it"
                            % (network_name, wanted, device, final))
    carried = set(untagged) | set(i["parent"] for i in interfaces.values() if i["kind"] == "vlan")
    for bond in sorted(bonds):
        if bond not in carried:
            warnings.append("fabric_bonds.%s: carries no network (no fabric_attachments entry names it)" % bond)
        elif len(bonds[bond]["members"]) == 1 and bond in mgmt_devices:
            warnings.append("fabric_bonds.%s: carries the management network on one member: no redundancy for the "
                            "controller's path" % bond)
    order = {"ethernet": 0, "bond": 1, "vlan": 2}
    planned = sorted(interfaces.values(), key=lambda i: (order[i["kind"]], i["name"]))
    plan = {"host": host, "backend": backend, "interfaces": planned, "addresses": addresses, "index": index,
            "roles": dict((name, net["role"]) for name, net in networks.items())}
    return plan, errors, warnings


def check_collisions(plans):
    """Addresses given to more than one host, across the inventory."""
    owners, errors = {}, []
    for host, plan in sorted(plans.items()):
        for network, entry in sorted(plan["addresses"].items()):
            for family in ("ipv4", "ipv6"):
                if entry.get(family):
                    owners.setdefault(entry[family].split("/")[0], []).append((host, network))
    for address, where in sorted(owners.items()):
        if len(set(h for h, _n in where)) > 1:
            errors.append("fabric_addresses: %s is given to %s" % (address, " and ".join("%s (%s)" % w for w in where)))
    return errors
