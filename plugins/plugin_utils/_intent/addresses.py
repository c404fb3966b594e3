# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Address allocation: each host's index in each network, pinned in the allocation file, and its addresses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.keys import is_int
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import (
    parse_address, reserved_addresses, ADDRESS_KEYS, IntentError,
)


def host_addresses(networks, index, explicit, errors):
    """{network: {"ipv4": "a/p" or None, "ipv6": ...}} from a per-host index or explicit addresses."""
    result = {}
    if index is not None and (not is_int(index) or index < 1):
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
            address = parse_address(text, gwhere, errors)
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
            elif address in reserved_addresses(subnet, net[gkey]):
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
        if index >= subnet.size or (subnet.network + index) in reserved_addresses(subnet, net[gkey]):
            return False
    return True
