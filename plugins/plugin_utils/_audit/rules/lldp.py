# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family LLDP: what the switch says about each port."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.lldp import switch_name, switch_port_name
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import attachments_of, ports_of

# ---- the switch side, seen from the host (LLDP) and the NICs' link modes ---------------------------------------
ETHERNET_FRAME = 18  # 14 bytes header + 4 bytes FCS around the MTU; a VLAN tag adds 4


def _lldp(ctx):
    ctx.need("nics")
    lldp = ctx.facts.get("lldp")
    if lldp is None:
        raise NotApplicable("no LLDP facts (gathered on the live node only: subset lldp)")
    if not lldp.get("agent"):
        raise NotApplicable(lldp.get("reason") or "no LLDP agent")
    return lldp.get("ports") or {}


def _switch_port(neighbour):
    return "%s %s" % (switch_name(neighbour) or "?", switch_port_name(neighbour) or "?")


def _neighbours_under(ctx, wanted):
    """(network name, network, device, port, neighbour) for every LLDP neighbour of the ports under each attached
    network that has ``wanted`` (a key of the network, e.g. vlan or mtu)."""
    ports = _lldp(ctx)
    for name, net, device in attachments_of(ctx):
        if not net.get(wanted):
            continue
        for port in ports_of(ctx.facts, device):
            for neighbour in ports.get(port["name"]) or []:
                yield name, net, device, port["name"], neighbour


@host_rule(
    "LLDP-001", "Switch port does not carry the network's VLAN", "fail",
    """The switch port a network's traffic leaves on advertises its VLANs over LLDP (IEEE 802.1 port VLAN and VLAN
    name TLVs), and the VLAN the intent puts on this interface is not among them: tagged frames are dropped at the
    switch, so the node looks configured and reaches nothing on that network.""",
    """Add the VLAN to the switch port (or its port channel), or correct fabric_networks.<name>.vlan.""")
def lldp_vlan(ctx):
    judged = 0
    for name, net, device, port, neighbour in _neighbours_under(ctx, "vlan"):
        ids = set(v["id"] for v in neighbour.get("vlans") or [] if v.get("id") is not None)
        if not ids and neighbour.get("pvid") is None:
            continue  # the neighbour says nothing about VLANs
        judged += 1
        if net["vlan"] not in ids:
            advertised = ", ".join(str(i) for i in sorted(ids)) or "only PVID %s" % neighbour.get("pvid")
            ctx.finding(port, "%s (network %s, VLAN %d) leaves on %s, whose switch port %s does not carry VLAN %d "
                        "(it advertises %s)" % (device, name, net["vlan"], port, _switch_port(neighbour), net["vlan"],
                                                advertised),
                        {"network": name, "vlan": net["vlan"], "port": port, "neighbour": neighbour})
    if not judged:
        raise NotApplicable("no neighbour of a tagged network's ports advertises its VLANs")


@host_rule(
    "LLDP-002", "Bond member's switch port not aggregated with the others", "fail",
    """An 802.3ad bond needs each member's switch port in the same link aggregation. LLDP's link aggregation TLV
    says whether the neighbour's port is aggregated and in which aggregation: a member whose neighbour is not
    aggregated, or two members on one switch whose neighbours name different aggregations, is cabled to the wrong
    port or the switch has no matching port channel; the bond then carries traffic on one leg or flaps.""",
    """Put both switch ports in one port channel (LACP), or move the cable to the right port.""")
def lldp_aggregation(ctx):
    ports = _lldp(ctx)
    bonds = [b for b in ctx.facts.get("bonds") or [] if b.get("mode") == "802.3ad"]
    if not bonds:
        raise NotApplicable("no 802.3ad bond on this node")
    judged = 0
    for bond in bonds:
        seen = {}
        for member in bond.get("members") or []:
            name = member["name"] if isinstance(member, dict) else member
            for neighbour in ports.get(name) or []:
                judged += 1
                aggregation = neighbour.get("aggregation")
                if not aggregation or not aggregation.get("enabled"):
                    ctx.finding(name, "%s is a member of %s (802.3ad) but its switch port %s does not say it is "
                                "aggregated" % (name, bond["name"], _switch_port(neighbour)),
                                {"bond": bond["name"], "member": name, "neighbour": neighbour})
                    continue
                chassis = neighbour.get("chassis_id") or neighbour.get("chassis_name")
                seen.setdefault(chassis, []).append((name, aggregation.get("port_id"), neighbour))
        for chassis, entries in sorted(seen.items(), key=lambda kv: str(kv[0])):
            ids = sorted(set(str(e[1]) for e in entries))
            if len(ids) > 1:
                for name, port_id, neighbour in entries:
                    ctx.finding(name, "members of %s land on %s in different aggregations (%s): %s is in %s" % (
                        bond["name"], neighbour.get("chassis_name") or chassis, ", ".join(ids), name, port_id),
                        {"bond": bond["name"], "member": name, "aggregations": ids, "neighbour": neighbour})
    if not judged:
        raise NotApplicable("no bond member has an LLDP neighbour")


@host_rule(
    "LLDP-003", "Switch port's maximum frame size below the network's MTU", "fail",
    """The switch port advertises its maximum frame size (IEEE 802.3 TLV). A frame of the network's MTU needs MTU +
    18 bytes (+4 with a VLAN tag); a port that takes less drops every full-size frame, the classic 9000 on the host
    and 1500 on the switch.""",
    """Raise the switch port's MTU (frame size) to at least the network's MTU + 22, or lower
    fabric_networks.<name>.mtu.""")
def lldp_frame_size(ctx):
    judged = 0
    for name, net, _device, port, neighbour in _neighbours_under(ctx, "mtu"):
        if neighbour.get("mfs") is None:
            continue
        judged += 1
        needed = net["mtu"] + ETHERNET_FRAME + (4 if net.get("vlan") else 0)
        if neighbour["mfs"] < needed:
            ctx.finding(port, "switch port %s takes frames up to %d bytes; network %s (MTU %d%s) needs %d" % (
                _switch_port(neighbour), neighbour["mfs"], name, net["mtu"],
                ", VLAN %d" % net["vlan"] if net.get("vlan") else "", needed),
                {"network": name, "mtu": net["mtu"], "needed": needed, "neighbour": neighbour})
    if not judged:
        raise NotApplicable("no neighbour of an attached network's ports advertises a maximum frame size")


@host_rule(
    "LLDP-004", "Port cabled to another switch port than the cabling plan says", "fail",
    """fabric_cabling names, per node port, the switch and port it should be cabled to. LLDP says where it is: two
    bond legs swapped into the wrong switch, a node on the storage switch, a cable in the neighbouring port.""",
    """Move the cable to the planned switch port, or correct fabric_cabling.""")
def lldp_cabling(ctx):
    plan = ctx.expect.get("cabling") or {}
    if not plan:
        raise NotApplicable("no fabric_cabling for this host")
    ports = _lldp(ctx)
    for port, want in sorted(plan.items()):
        seen = ports.get(port) or []
        if not seen:
            ctx.finding(port, "%s should go to %s %s but LLDP sees no neighbour on it" % (
                port, want["switch"], want["port"]), {"plan": want, "neighbours": []})
            continue
        if not any(n.get("chassis_name") == want["switch"] and want["port"] in (n.get("port_id"), n.get("port_descr"))
                   for n in seen):
            ctx.finding(port, "%s should go to %s %s but is cabled to %s" % (
                port, want["switch"], want["port"], ", ".join(_switch_port(n) for n in seen)),
                {"plan": want, "neighbours": seen})
