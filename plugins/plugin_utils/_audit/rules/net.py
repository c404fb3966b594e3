# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family NET: interface speed, carrier, MTU, consistency across hosts, addresses and networks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import CARRIER_NETDEVS, PORT_NETDEVS, SOFTWARE_NETDEVS
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import base_interface
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import interface_addresses
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import (
    host_rule, inventory_rule, NotApplicable,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import training_on_management

# ---- expectations helpers ---------------------------------------------------------------------------
_MATCHES = {}


def _matches(name, pattern):
    key = (name, pattern)
    if key not in _MATCHES:
        if len(_MATCHES) > 100000:
            _MATCHES.clear()
        _MATCHES[key] = fnmatch.fnmatchcase(name, pattern)
    return _MATCHES[key]


def expected_nic(expect, name):
    """The first expectation entry whose name pattern matches the interface, or None."""
    for entry in expect.get("nics") or ():
        if _matches(name, entry["name"]):
            return entry
    return None


# ---- network ----------------------------------------------------------------------------------------
@host_rule(
    "NET-001", "Link slower than expected", "fail",
    """A port that negotiated below its expected speed (25G at 10G, 100G at 40G) caps every flow through it.
    Auto-negotiation against a wrong cable or a switch port configured lower is the usual cause.""",
    """Check the cable/transceiver and the switch port speed; `ethtool <if>` shows what was negotiated and
    what both ends advertise.""")
def net_speed(ctx):
    ctx.need("nics")
    if not ctx.expect.get("nics"):
        raise NotApplicable("no fabric_expectations.nics")
    for nic in ctx.facts["nics"]:
        entry = expected_nic(ctx.expect, nic["name"])
        if entry is None or not entry.get("speed_mbps"):
            continue
        if nic["speed_mbps"] is None:
            continue  # link down: NET-003 reports it
        if nic["speed_mbps"] < entry["speed_mbps"]:
            message = "%s runs at %d Mb/s, expected %d Mb/s" % (nic["name"], nic["speed_mbps"], entry["speed_mbps"])
            ctx.finding(nic["name"], message,
                        {"speed_mbps": nic["speed_mbps"], "expected_speed_mbps": entry["speed_mbps"]})


@host_rule(
    "NET-003", "Link down", "fail",
    """An expected interface without carrier carries nothing; a bond runs degraded, a network is cut off.""",
    """Check the cable, transceiver and the switch port (admin state, errdisable), then `ip link show`.""")
def net_carrier(ctx):
    ctx.need("nics")
    for nic in ctx.facts["nics"]:
        if nic["kind"] not in CARRIER_NETDEVS:
            continue
        down = nic["carrier"] is False or nic["operstate"] in ("down", "lowerlayerdown")
        if not down:
            continue
        expected = expected_nic(ctx.expect, nic["name"]) is not None or nic.get("bond_master")
        ctx.finding(nic["name"], "%s is %s (no carrier)%s" % (
            nic["name"], nic["operstate"] or "down", "" if expected else "; not an expected interface"),
            {"operstate": nic["operstate"], "carrier": nic["carrier"]}, severity=None if expected else "info")


@host_rule(
    "NET-004", "MTU differs from the expected MTU", "fail",
    """Jumbo frames only help when every hop carries them: an interface left at 1500 on a 9000 network
    fragments or drops large frames (TCP falls back to small segments, RDMA fails outright).""",
    """Set the MTU on the interface and on everything it rides on (bond, parent), persistently in the
    network configuration; check the switch ports carry the same frame size.""")
def net_mtu(ctx):
    ctx.need("nics")
    if not ctx.expect.get("nics"):
        raise NotApplicable("no fabric_expectations.nics")
    for nic in ctx.facts["nics"]:
        entry = expected_nic(ctx.expect, nic["name"])
        if entry is None or not entry.get("mtu") or nic["mtu"] is None:
            continue
        if nic["mtu"] != entry["mtu"]:
            ctx.finding(nic["name"], "%s has MTU %d, expected %d" % (nic["name"], nic["mtu"], entry["mtu"]),
                        {"mtu": nic["mtu"], "expected_mtu": entry["mtu"]})


@host_rule(
    "NET-005", "VLAN MTU above its parent's", "fail",
    """A VLAN can never send frames larger than its parent (bond or port) carries; a 9000-byte VLAN on a
    1500-byte bond is capped at 1500 and large frames are dropped.""",
    """Raise the parent's MTU to at least the largest MTU of what rides on it (members, bond, then VLAN).""")
def net_vlan_parent_mtu(ctx):
    ctx.need("vlans", "nics")
    mtu = dict((n["name"], n["mtu"]) for n in ctx.facts["nics"])
    for vlan in ctx.facts["vlans"]:
        parent = mtu.get(vlan["parent"])
        if vlan["mtu"] and parent and vlan["mtu"] > parent:
            ctx.finding(vlan["name"], "VLAN %s has MTU %d above its parent %s (%d)"
                        % (vlan["name"], vlan["mtu"], vlan["parent"], parent),
                        {"mtu": vlan["mtu"], "parent": vlan["parent"], "parent_mtu": parent})


@inventory_rule(
    "NET-002", "Speed or MTU differs across the inventory", "warn",
    """Hosts on the same network should run the same link speed and MTU: one slower host slows every
    collective it takes part in, and an MTU mismatch breaks large frames between some pairs only.""",
    """Make the outliers match the rest (cable, switch port, network configuration).""")
def net_consistency(ctx, hosts):
    groups = {}
    for host, (facts, expect) in hosts.items():
        for nic in facts.get("nics") or []:
            entry = expected_nic(expect, nic["name"])
            if entry is not None:
                groups.setdefault(entry["name"], []).append((host, nic))
    if not groups:
        raise NotApplicable("no fabric_expectations.nics on any host")
    for pattern, members in sorted(groups.items()):
        entry = [e for e in hosts[members[0][0]][1]["nics"] if e["name"] == pattern][0]
        for field in ("mtu", "speed_mbps"):
            if entry.get(field):
                continue  # an expected value: NET-001 / NET-004 judge each host against it
            values = {}
            for host, nic in members:
                if nic[field] is not None:
                    values.setdefault(nic[field], []).append((host, nic["name"]))
            if len(values) < 2:
                continue
            counts = sorted((len(v) for v in values.values()), reverse=True)
            majority = max(values, key=lambda v: len(values[v])) if counts[0] > counts[1] else None
            distribution = dict((str(k), len(v)) for k, v in sorted(values.items()))
            for value, where in sorted(values.items()):
                if value == majority:
                    continue
                for host, name in where:
                    if majority is None:
                        message = "%s %s is %s; %s interfaces differ across the inventory (%s)" % (
                            name, field, value, pattern, ", ".join("%s on %d" % kv for kv in distribution.items()))
                    else:
                        message = "%s %s is %s where most %s interfaces have %s" % (
                            name, field, value, pattern, majority)
                    ctx.finding(name, message, {"field": field, "value": value, "majority": majority,
                                                "pattern": pattern, "distribution": distribution}, host=host)


# ---- addressing (network intent plus the addresses on the hosts) -------------------------------------
@inventory_rule(
    "NET-006", "Networks with overlapping subnets", "fail",
    """Management, training and storage networks must not overlap: overlapping subnets make routing
    ambiguous, so training traffic can leave through the management interface (or the reverse) and
    firewall or QoS rules apply to the wrong traffic.""",
    """Give each network its own subnet (fabric_networks.<name>.subnet) and renumber the hosts on it.""")
def net_subnet_overlap(ctx, hosts):
    seen = {}
    for _host, (_facts, expect) in sorted(hosts.items()):
        for name, net in (expect.get("networks") or {}).items():
            for subnet in net["subnets"]:
                seen[(name, str(subnet))] = subnet
    if not seen:
        raise NotApplicable("no fabric_networks in the inventory")
    items = sorted(seen.items())
    for i, ((name_a, text_a), net_a) in enumerate(items):
        for (name_b, text_b), net_b in items[i + 1:]:
            if name_a != name_b and net_a.version == net_b.version and net_a.overlaps(net_b):
                ctx.finding("%s/%s" % (name_a, name_b), "networks %s (%s) and %s (%s) overlap"
                            % (name_a, text_a, name_b, text_b), {name_a: text_a, name_b: text_b})


@inventory_rule(
    "NET-007", "Address used by more than one host", "fail",
    """Two hosts with one address break whichever of them the switches learned last: connections reset,
    NCCL bootstrap hangs on the wrong peer, and the fault moves around as ARP caches expire. With a network
    intent only addresses in its networks count; without one, bridges and virtual interfaces are left out.""",
    """Give each host its own address (fabric_addresses or the allocation file), then check with
    `arping -D` before bringing the interface up.""")
def net_duplicate_addresses(ctx, hosts):
    owners = {}
    for host, (facts, expect) in sorted(hosts.items()):
        subnets = [s for net in (expect.get("networks") or {}).values() for s in net["subnets"]]
        kinds = dict((n["name"], n["kind"]) for n in facts.get("nics") or [])
        for iface, address in interface_addresses(facts):
            if subnets:
                # With a network intent, only its networks count: NAT and container bridges (docker0,
                # a hypervisor's user network) repeat the same private address on every host by design.
                if not any(address.ip in subnet for subnet in subnets):
                    continue
            elif kinds.get(iface) in SOFTWARE_NETDEVS:
                continue
            owners.setdefault(str(address.ip), []).append((host, iface))
    if not owners:
        raise NotApplicable("no host facts carry addresses (captures and XML sources have none)")
    for ip, where in sorted(owners.items()):
        distinct = sorted(set(host for host, _iface in where))
        if len(distinct) > 1:
            for host, iface in where:
                ctx.finding(iface, "%s on %s is also used by %s" % (ip, iface, ", ".join(h for h in distinct if h != host)),
                            {"address": ip, "hosts": distinct}, host=host)


@host_rule(
    "NET-008", "Training network on the management interface", "warn",
    """Collective traffic on the management interface competes with SSH, monitoring and image pulls,
    usually on a slower link, and a saturated training job can cut the node off from its controller.""",
    """Attach the training network to its own interfaces or bond (fabric_attachments.training), or set
    fabric_networks.<training>.allow_on_management: true where this is deliberate (small test clusters).""")
def net_training_on_management(ctx):
    networks = ctx.expect.get("networks") or {}
    training = [(n, v) for n, v in networks.items() if v["role"] == "training"]
    management = [(n, v) for n, v in networks.items() if v["role"] == "management"]
    if not training or not management:
        raise NotApplicable("fabric_networks names no training and management network")
    attachments = ctx.expect.get("attachments") or {}
    addresses = interface_addresses(ctx.facts)
    devices = {}
    for name, net in training + management:
        devices[name] = set(base_interface(ctx.facts, i) for i, a in addresses if any(a.ip in s for s in net["subnets"]))
        if attachments.get(name):
            devices[name].add(base_interface(ctx.facts, attachments[name]))
    for name, mgmt_name, shared in training_on_management(networks, devices):
        ctx.finding(shared[0], "training network %s rides on %s, the management interface (%s)" % (name, shared[0], mgmt_name),
                    {"training": name, "management": mgmt_name, "interfaces": shared,
                     "attachments": dict((k, attachments.get(k)) for k in (name, mgmt_name))})


# ---- the ports of multi-port cards, across the inventory ---------------------------------------------------------
def card_ports(facts):
    """{card (its PCI slot address): {"model": (vendor, device, subsystem vendor, subsystem device) of its first
    function, "ports": {name: up}}} of every card with more than one port (physical or IPoIB interfaces on its
    functions); a port is up when its carrier is, or its RDMA port is ACTIVE (an InfiniBand port has no netdev
    carrier of its own to say so)."""
    pci = dict((d["address"], d) for d in facts.get("pci") or [] if isinstance(d, dict) and d.get("address"))
    active = set(p.get("netdev") for d in facts.get("rdma") or [] if isinstance(d, dict)
                 for p in d.get("ports") or [] if isinstance(p, dict) and p.get("state") == "ACTIVE")
    cards = {}
    for nic in facts.get("nics") or []:
        if not isinstance(nic, dict) or nic.get("kind") not in PORT_NETDEVS or not nic.get("card") or \
                not nic.get("address"):
            continue
        card = cards.setdefault(nic["card"], {"model": None, "ports": {}})
        function = pci.get(nic["address"]) or {}
        model = tuple(function.get(k) for k in ("vendor_id", "device_id", "subsystem_vendor_id",
                                                "subsystem_device_id"))
        if card["model"] is None or nic["address"] < card["first"]:
            card["model"], card["first"] = model, nic["address"]
        card["ports"][nic["name"]] = nic.get("carrier") is True or nic.get("operstate") == "up" or \
            nic["name"] in active
    return dict((c, v) for c, v in cards.items() if len(v["ports"]) > 1 and None not in v["model"][:2])


@inventory_rule(
    "NET-009", "A multi-port card with fewer ports up than the same card on the other hosts", "warn",
    """Cards of one model are cabled alike across a cluster built from one design: a dual-port card with one port down
    where the same card elsewhere has both up is an uncabled port, a dead transceiver or a switch port shut, and the
    node runs on half its rails or without its bond's second leg. Judged per card model (PCI vendor, device and
    subsystem ids) where at least three cards of the model are in the audit and most of them have more ports up.""",
    """Check the port's cable and transceiver, the switch port's state, and the port's link (ethtool, `ibstat`);
    where the port is meant to be unused, waive this finding for that card.""")
def net_card_ports(ctx, hosts):
    by_model = {}
    for host in sorted(hosts):
        for card, entry in sorted(card_ports(hosts[host][0]).items()):
            by_model.setdefault(entry["model"], []).append((host, card, entry["ports"]))
    models = dict((m, cards) for m, cards in by_model.items() if len(cards) >= 3)
    if not models:
        raise NotApplicable("no card model with more than one port on at least three cards in the audit")
    for model in sorted(models, key=str):
        cards = models[model]
        counts = {}
        for _host, _card, ports in cards:
            up = sum(1 for v in ports.values() if v)
            counts[up] = counts.get(up, 0) + 1
        usual, seen = max(sorted(counts.items()), key=lambda kv: (kv[1], kv[0]))
        if seen * 2 <= len(cards):
            continue  # no majority: cabling differs by design (a model used for several roles)
        for host, card, ports in cards:
            up = [n for n in sorted(ports) if ports[n]]
            if len(up) >= usual:
                continue
            down = [n for n in sorted(ports) if not ports[n]]
            ctx.finding("%s (%s)" % (card, ", ".join(sorted(ports))), "card %s (%s %s) has %d of %d ports up (%s down); "
                        "%d of the %d cards of this model in the audit have %d up" % (
                            card, model[0], model[1], len(up), len(ports), ", ".join(down), seen, len(cards), usual),
                        {"card": card, "model": list(model), "up": up, "down": down, "usual_up": usual,
                         "cards_with_usual": seen, "cards": len(cards)}, host=host)
