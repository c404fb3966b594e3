# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family BOND: bond members and LACP."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable, host_rule

# ---- bonds ------------------------------------------------------------------------------------------


def _bonds(ctx):
    ctx.need("bonds")
    if not ctx.facts["bonds"]:
        raise NotApplicable("no bond on this host")
    return ctx.facts["bonds"]


@host_rule(
    "BOND-001", "Bond member down", "fail",
    """A bond with a member down runs at a fraction of its bandwidth, without redundancy, and often unnoticed.""",
    """Check the member's cable, transceiver and switch port; `cat /proc/net/bonding/<bond>` shows the state.""")
def bond_member_down(ctx):
    for bond in _bonds(ctx):
        for member in bond["members"]:
            if member["mii_status"] not in (None, "up"):
                ctx.finding("%s/%s" % (bond["name"], member["name"]), "%s member %s is %s"
                            % (bond["name"], member["name"], member["mii_status"]),
                            {"mii_status": member["mii_status"], "link_failure_count": member["link_failure_count"]})


@host_rule(
    "BOND-002", "No LACP partner", "fail",
    """An 802.3ad bond whose members see no LACP partner (partner MAC all zeros) is not aggregated by the
    switch: traffic uses one link at best, or the bond falls back to a single port.""",
    """Configure an LACP port-channel (MLAG across two switches) on the switch ports of this bond's members,
    with matching speed and LACP rate.""")
def bond_lacp_partner(ctx):
    lacp = [b for b in _bonds(ctx) if b["mode"] == "802.3ad"]
    if not lacp:
        raise NotApplicable("no 802.3ad bond")
    for bond in lacp:
        for member in bond["members"]:
            if member["has_partner"] is False:
                ctx.finding("%s/%s" % (bond["name"], member["name"]), "%s member %s has no LACP partner"
                            % (bond["name"], member["name"]), {"partner_mac": member["partner_mac"]})


@host_rule(
    "BOND-003", "Bond members in different aggregators", "fail",
    """In 802.3ad only the members of the active aggregator carry traffic; members in other aggregators
    (different switch, different LACP key, mismatched speed) sit idle.""",
    """Put all members' switch ports in one port-channel (or one MLAG pair) with the same speed and settings.""")
def bond_aggregators(ctx):
    lacp = [b for b in _bonds(ctx) if b["mode"] == "802.3ad"]
    if not lacp:
        raise NotApplicable("no 802.3ad bond")
    for bond in lacp:
        ids = dict((m["name"], m["aggregator_id"]) for m in bond["members"] if m["aggregator_id"] is not None)
        if len(set(ids.values())) > 1:
            ctx.finding(bond["name"], "%s members are in %d aggregators: %s" % (
                bond["name"], len(set(ids.values())), ", ".join("%s=%s" % kv for kv in sorted(ids.items()))),
                {"aggregator_ids": ids, "active_aggregator_id": bond["active_aggregator_id"]})


@host_rule(
    "BOND-004", "Bond members at different speeds", "warn",
    """Members at different speeds cannot share an 802.3ad aggregator, and in other modes the slower member
    caps the flows hashed onto it.""",
    """Use members of one speed; check cables and switch port speeds of the slower member.""")
def bond_speeds(ctx):
    for bond in _bonds(ctx):
        speeds = dict((m["name"], m["speed_mbps"]) for m in bond["members"] if m["speed_mbps"])
        if len(set(speeds.values())) > 1:
            ctx.finding(bond["name"], "%s members run at different speeds: %s" % (
                bond["name"], ", ".join("%s=%d Mb/s" % kv for kv in sorted(speeds.items()))), {"speeds": speeds})
