# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""procfs parsers: /proc/net/bonding, if_inet6, fib_trie, route; and the route lookup an address takes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import sys
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import Bond, BondMember
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    hex_field, in_limits, is_hex, LIMITS, parse_decimal, short_text, UNKNOWN_SPEEDS,
)

BOND_MODE_NAMES = {
    "load balancing (round-robin)": "balance-rr",
    "fault-tolerance (active-backup)": "active-backup",
    "load balancing (xor)": "balance-xor",
    "fault-tolerance (broadcast)": "broadcast",
    "ieee 802.3ad dynamic link aggregation": "802.3ad",
    "transmit load balancing": "balance-tlb",
    "adaptive load balancing": "balance-alb",
}


def parse_proc_bonding(name, text, warn=None):
    """Parse /proc/net/bonding/<bond> (the bonding driver's status page).

    Numbers no kernel prints (a 400-digit speed, a negative count) are left None; ``warn(message)``,
    when given, hears about each.
    """
    bond = Bond(name=name)

    def number(key, value, what, unknown=()):
        result = _int_or_none(value)
        if result is None or result in unknown:
            return None
        if not in_limits(result, what):
            if warn is not None:
                where = ("%s: " % member.name) if member is not None else ""
                warn("%s%s: %s is outside %d..%d, ignored" % ((where, key, short_text(value)) + LIMITS[what]))
            return None
        return result

    member = None
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Slave Interface":
            member = BondMember(name=value)
            bond.members.append(member)
            section = "member"
            continue
        if line.startswith("details partner lacp pdu"):
            section = "partner"
            continue
        if line.startswith("details actor lacp pdu"):
            section = "actor"
            continue
        if line.startswith("Active Aggregator Info"):
            section = "active"
            continue
        if not sep:
            continue
        if member is None:
            if key == "Bonding Mode":
                bond.mode = BOND_MODE_NAMES.get(value.lower(), value)
            elif key == "Transmit Hash Policy":
                bond.xmit_hash_policy = value.split()[0] if value else None
            elif key == "MII Status":
                bond.mii_status = value
            elif key == "MII Polling Interval (ms)":
                bond.miimon = number(key, value, "miimon")
            elif key == "LACP rate":
                bond.lacp_rate = value
            elif section == "active" and key == "Aggregator ID":
                bond.active_aggregator_id = number(key, value, "aggregator_id")
            elif section == "active" and key == "Partner Mac Address":
                bond.partner_mac = value.lower()
            continue
        if section == "partner":
            if key == "system mac address":
                member.partner_mac = value.lower()
            continue
        if section == "actor":
            continue
        if key == "MII Status":
            member.mii_status = value
        elif key == "Speed":
            # "Speed: 100000 Mbps"; "Speed: Unknown" while the link is down
            speed = number(key, value.split()[0], "speed", UNKNOWN_SPEEDS) if value else None
            member.speed_mbps = speed if speed and speed > 0 else None
        elif key == "Duplex":
            member.duplex = value if value in ("full", "half") else None
        elif key == "Aggregator ID":
            member.aggregator_id = number(key, value, "aggregator_id")
        elif key == "Link Failure Count":
            member.link_failure_count = number(key, value, "link_failure_count")
    return bond


def _int_or_none(text):
    return parse_decimal(text) if isinstance(text, str) else None


def parse_if_inet6(text):
    """/proc/net/if_inet6 -> {interface: ["addr/prefix", ...]}; None when there is no file."""
    if text is None:
        return None
    result = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 6 or len(fields[0]) != 32 or not is_hex(fields[0].lower()) or len(fields[2]) > 2:
            continue
        prefix = hex_field(fields[2], 128)
        if prefix is None:
            continue
        address = ipaddress.IPv6Address(int(fields[0], 16))
        result.setdefault(fields[5], []).append("%s/%d" % (address, prefix))
    return result


def parse_fib_trie_local(text):
    """The local IPv4 addresses (leaves marked "/32 host LOCAL") of /proc/net/fib_trie, in order."""
    addresses, seen, last = [], set(), None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|-- "):
            last = stripped[4:].strip()
        elif stripped.startswith("/32 host LOCAL") and last and last not in seen:
            seen.add(last)
            addresses.append(last)
    return addresses


def parse_proc_route(text):
    """/proc/net/route -> [(interface, network int, mask int)] for connected (non-gateway) routes."""
    routes = []
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        destination, gateway, mask = (hex_field(fields[i], 0xFFFFFFFF) for i in (1, 2, 7))
        if destination is None or gateway is None or mask is None:
            continue
        if gateway == 0 and mask != 0:
            # The kernel prints these little-endian words in host order on x86: swap to network order.
            routes.append((fields[0], _swap32(destination), _swap32(mask)))
    return routes


def _swap32(value):
    """/proc/net/route prints network-order words as host-order integers."""
    return int.from_bytes(value.to_bytes(4, sys.byteorder), "big")


def _ipv4_value(address):
    parts = address.split(".")
    if len(parts) != 4 or not all(0 < len(p) <= 3 and _decimal_ascii(p) and int(p) < 256 for p in parts):
        return None
    return int.from_bytes(bytes(int(p) for p in parts), "big")


def _decimal_ascii(text):
    return all(c in "0123456789" for c in text)


class RouteIndex:
    """Connected routes by prefix length, longest first: a lookup costs at most 32 dict probes."""

    def __init__(self, routes):
        by_mask = {}
        for iface, network, mask in routes:
            by_mask.setdefault(mask, {}).setdefault(network, iface)  # the first route listed wins, as in route_for
        self.masks = sorted(by_mask.items(), key=lambda item: -item[0])

    def lookup(self, address):
        value = _ipv4_value(address)
        if value is None:
            return None, None
        for mask, networks in self.masks:
            iface = networks.get(value & mask)
            if iface is not None:
                return iface, bin(mask).count("1")
        return None, None


def route_for(address, routes):
    parts = address.split(".")
    if len(parts) != 4 or not all(p.isdecimal() and int(p) < 256 for p in parts):
        return None, None
    value = int.from_bytes(bytes(int(p) for p in parts), "big")
    best = None
    for iface, network, mask in routes:
        if value & mask == network and (best is None or mask > best[1]):
            best = (iface, mask)
    if best is None:
        return None, None
    return best[0], bin(best[1]).count("1")
