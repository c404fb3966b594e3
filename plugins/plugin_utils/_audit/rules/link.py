# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family LINK: link modes the NIC and its partner advertise."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import attachments_of, ports_of


def _link_modes(ctx, roles=None):
    """[(network, net, port's NIC fact, link_modes)] for ports under attached networks (of ``roles``) with link
    modes."""
    found = []
    for name, net, device in attachments_of(ctx):
        if roles and net["role"] not in roles:
            continue
        for nic in ports_of(ctx.facts, device):
            modes = nic.get("link_modes")
            if modes and modes.get("supported_speeds_mbps"):
                found.append((name, net, nic, modes))
    if not found:
        raise NotApplicable("no port of an attached network reports its link modes (subset link_modes, live node, "
                            "a driver that reports them)")
    return found


@host_rule(
    "LINK-001", "NIC cannot reach the speed the network is built for", "fail",
    """fabric_networks.<name>.speed_mbps says what the network is built for; a port whose supported link modes stop
    below it caps the node at its own speed whatever the switch and cable can do.""",
    """Use a NIC (or transceiver) that supports the network's speed on this network, or correct speed_mbps.""")
def link_speed_capability(ctx):
    judged = 0
    for name, net, nic, modes in _link_modes(ctx):
        port = nic["name"]
        if not net.get("speed_mbps"):
            continue
        judged += 1
        if modes["max_supported_mbps"] < net["speed_mbps"]:
            ctx.finding(port, "%s supports up to %s Mb/s; network %s is built for %s Mb/s" % (
                port, modes["max_supported_mbps"], name, net["speed_mbps"]),
                {"network": name, "port": port, "supported_speeds_mbps": modes["supported_speeds_mbps"],
                 "speed_mbps": net["speed_mbps"]})
    if not judged:
        raise NotApplicable("no attached network sets speed_mbps")


@host_rule(
    "LINK-002", "No upgrade headroom on a training or storage port", "info",
    """Whether the network can get faster later without new NICs: a port already running at the fastest mode it
    supports (a 25G card at 25G) needs new hardware for the next step; a 25G card at 10G can move up with new optics
    or switch ports. Information for planning, with the card's port count (single or dual port).""",
    """Plan NICs with headroom (for example 100/200G cards) where the network will grow.""")
def link_headroom(ctx):
    for name, _net, nic, modes in _link_modes(ctx, roles=("training", "storage")):
        port = nic["name"]
        speed = modes.get("speed_mbps") or nic.get("speed_mbps")
        if speed and speed >= modes["max_supported_mbps"]:
            ctx.finding(port, "%s (network %s) runs at %s Mb/s, the fastest its card supports (%s-port card %s)" % (
                port, name, speed, nic.get("ports_on_card") or "?", nic.get("card") or "?"),
                {"port": port, "network": name, "speed_mbps": speed,
                 "supported_speeds_mbps": modes["supported_speeds_mbps"], "ports_on_card": nic.get("ports_on_card")})


@host_rule(
    "LINK-003", "10GBASE-T on a training link", "info",
    """Twisted-pair 10G (10GBASE-T) works, but within a rack DAC or AOC cables give lower latency (about 2 us less
    per link for the PHY) and draw several watts less per port; collective traffic notices the latency.""",
    """Prefer SFP+/SFP28 ports with DAC or AOC cables for training links within a rack.""")
def link_base_t(ctx):
    for name, _net, nic, modes in _link_modes(ctx, roles=("training",)):
        port = nic["name"]
        twisted = modes.get("port") == "twisted_pair" or "TP" in (modes.get("supported_ports") or [])
        if twisted and modes.get("media") == ["base-t"] and modes["max_supported_mbps"] >= 10000:
            ctx.finding(port, "%s (training network %s) is a BASE-T port (%s)" % (
                port, name, ", ".join(m for m in modes["supported_modes"] if m.startswith("10000base")) or
                "10G over twisted pair"), {"port": port, "network": name, "supported_modes": modes["supported_modes"]})
