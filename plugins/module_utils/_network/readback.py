# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Reading the files this collection owns back as network intent (state: gathered, and drift)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import BY_NAME
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import IFACE_BOND, IFACE_VLAN, markers


def parse(backend, files):
    """The interfaces configured by the owned files of ``backend``: {path: {"content": ...}}. An owned file that
    its backend could not read, or that says nothing it should, raises ValueError naming each file and line: a
    broken file must not read back as an empty intent."""
    texts = dict((path, item["content"]) for path, item in files.items())
    problems = []
    if not isinstance(backend, str) or backend not in BY_NAME:
        raise ValueError("unknown backend %r" % backend)
    ifaces = BY_NAME[backend].parse(texts, problems)
    if problems:
        raise ValueError("; ".join(problems))
    return ifaces


def to_intent(ifaces, marks):
    """Fold parsed interfaces into this host's intent. Returns (intent, unrepresented)."""
    intent = {"fabric_networks": {}, "fabric_bonds": {}, "fabric_attachments": {}, "fabric_addresses": {}}
    missing = []
    for iface in ifaces:
        if iface["kind"] != IFACE_BOND:
            continue
        bond = {"members": list(iface["members"]), "mode": iface["mode"], "miimon": iface["miimon"]}
        for key in ("lacp_rate", "xmit_hash_policy", "primary", "mtu"):
            if iface.get(key):
                bond[key] = iface[key]
        intent["fabric_bonds"][iface["name"]] = bond
    for iface in ifaces:
        if iface["bond"]:
            continue
        named = marks.get(iface["name"]) or []
        if not named and not iface["addresses"] and iface["kind"] != IFACE_VLAN:
            continue  # a parent that only carries VLANs: its MTU follows from them
        if named:
            network, role = named[0]
        else:
            network = "vlan%d" % iface["id"] if iface["kind"] == IFACE_VLAN else iface["name"]
            role = "management" if iface["gateways"] else "training"
            missing.append("%s: no marker comment names its network; called it %s with role %s"
                           % (iface["name"], network, role))
        net = {"role": role}
        if iface["kind"] == IFACE_VLAN:
            net["vlan"] = iface["id"]
        if iface["mtu"]:
            net["mtu"] = iface["mtu"]
        address = {}
        for family, skey in (("ipv4", "subnet"), ("ipv6", "subnet6")):
            mine = [a for a in iface["addresses"] if (":" in a) == (family == "ipv6")]
            if not mine:
                continue
            try:
                parsed = ipaddress.ip_interface(mine[0])
            except ValueError:
                missing.append("%s: %r is not an address with a prefix" % (iface["name"], mine[0]))
                continue
            net[skey] = str(parsed.network)
            address[family] = str(parsed.ip)
            for extra in mine[1:]:
                missing.append("%s: a second %s address %s has no place in the intent"
                               % (iface["name"], family, extra))
        for gateway in iface["gateways"]:
            gkey = "gateway6" if ":" in gateway else "gateway"
            if role != "management":
                missing.append("%s: gateway %s on a %s network (only management networks carry one)"
                               % (iface["name"], gateway, role))
            elif gkey not in net:
                net[gkey] = gateway
        if iface["routes"]:
            net["routes"] = [dict((k, v) for k, v in r.items() if v is not None) for r in iface["routes"]]
        for extra in named[1:]:
            missing.append("%s: also carries network %s, which one interface cannot hold twice"
                           % (iface["name"], extra[0]))
        intent["fabric_networks"][network] = net
        intent["fabric_attachments"][network] = iface["parent"] if iface["kind"] == IFACE_VLAN else iface["name"]
        if address:
            intent["fabric_addresses"][network] = address
    return intent, missing


def gather_intent(backend, files):
    ifaces = parse(backend, files)
    intent, missing = to_intent(ifaces, markers(item["content"] for item in files.values()))
    intent["fabric_network_backend"] = backend
    return intent, missing
