# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""One host's network plan (ports, bonds, VLANs, addresses, routes) from its validated intent and facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._names import type_word, vlan_interface
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import (
    IFACE_BOND, IFACE_ETHERNET, IFACE_VLAN, interface_order,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_BOND, NETDEV_LOOPBACK, NETDEV_VLAN
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.addresses import host_addresses
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.keys import key_path
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import (
    BACKENDS, check_ifname, netaddr, read_attachments, training_on_management, validate_bonds, validate_networks,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import check_variables, network_variable


def plan_host(host, hostvars, facts, index=None):
    """Validate one host's intent and return (plan, errors, warnings).

    ``plan["interfaces"]`` lists what to configure in creation order (ports, bonds, VLANs), each with
    its final MTU: a parent carries at least the largest MTU of what rides on it.
    """
    errors, warnings = [], []
    if netaddr is None:
        return None, ["the netaddr Python library is required on the controller (pip install netaddr)"], []
    check_variables(hostvars, errors, warnings, only=network_variable)  # the pre-flight checks the rest
    networks = validate_networks(hostvars.get("fabric_networks"), errors)
    bonds = validate_bonds(hostvars.get("fabric_bonds"), facts, errors, warnings)
    attachments = read_attachments(hostvars.get("fabric_attachments"), errors)
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
            interfaces[member] = {"name": member, "kind": IFACE_ETHERNET, "bond": bond["name"], "mtu": None,
                                  "networks": [], "addresses": [], "routes": []}
        interfaces[bond["name"]] = dict({"kind": IFACE_BOND, "networks": [], "addresses": [], "routes": [],
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
        if device not in bonds and present is not None and present[device].get("kind") in (NETDEV_BOND, NETDEV_VLAN, NETDEV_LOOPBACK):
            errors.append("%s: %r is an existing %s interface this intent does not own; attach networks to ports or "
                          "to bonds in fabric_bonds (VLANs come from fabric_networks.<name>.vlan)"
                          % (where, device, present[device]["kind"]))
            continue
        net = networks[network_name]
        if device not in interfaces:
            interfaces[device] = {"name": device, "kind": IFACE_ETHERNET, "bond": None, "mtu": None, "networks": [],
                                  "addresses": [], "routes": []}
        target = device
        if net["vlan"] is not None:
            target = vlan_interface(device, net["vlan"])  # validated: 1 to 4094
            if not check_ifname(target, "%s (VLAN interface %s)" % (where, target), errors):
                continue
            if target in interfaces:
                errors.append("%s: VLAN %d on %s is already used by network %s" % (
                    where, net["vlan"], device, interfaces[target]["networks"][0]))
                continue
            interfaces[target] = {"name": target, "kind": IFACE_VLAN, "parent": device, "id": net["vlan"], "mtu": None,
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
    devices = dict((n, {attachments[n]}) for n in attachments if n in networks and isinstance(attachments[n], str))
    mgmt_devices = set().union(*(d for n, d in devices.items() if networks[n]["role"] == "management"))
    on_management = set(training for training, _management, _shared in training_on_management(networks, devices))
    for n in attachments:
        if n in on_management:
            warnings.append("fabric_attachments.%s: training network on %s, the management interface "
                            "(set fabric_networks.%s.allow_on_management: true if deliberate)" % (n, attachments[n], n))

    # Parents carry at least the largest MTU riding on them: VLAN -> its parent, bond -> its members.
    for iface in list(interfaces.values()):
        if iface["kind"] == IFACE_VLAN and iface["mtu"]:
            parent = interfaces[iface["parent"]]
            declared = bonds.get(parent["name"], {}).get("mtu")
            if declared and declared < iface["mtu"]:
                errors.append("fabric_bonds.%s.mtu: %d is below the MTU %d of VLAN %s riding on it"
                              % (parent["name"], declared, iface["mtu"], iface["name"]))
            if iface["mtu"] > (parent["mtu"] or 0):
                parent["mtu"], parent["mtu_from"] = iface["mtu"], iface.get("mtu_from")
    for iface in list(interfaces.values()):
        if iface["kind"] == IFACE_BOND and iface["mtu"]:
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
    carried = set(untagged) | set(i["parent"] for i in interfaces.values() if i["kind"] == IFACE_VLAN)
    for bond in sorted(bonds):
        if bond not in carried:
            warnings.append("fabric_bonds.%s: carries no network (no fabric_attachments entry names it)" % bond)
        elif len(bonds[bond]["members"]) == 1 and bond in mgmt_devices:
            warnings.append("fabric_bonds.%s: carries the management network on one member: no redundancy for the "
                            "controller's path" % bond)
    planned = interface_order(interfaces.values())
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
