# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family STAB, RoCE: congestion notifications the NIC receives but nobody acts on (STAB-009), and a RoCE
priority that is not lossless as the intent says (STAB-010), from the counters and the ports' PFC and ECN
configuration."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.window import (
    NO_BASELINE, compared_nothing, counter_section, counter_value, counters, window, without,
)


def _ecn_of(ctx, now, port):
    """(netdev, its roce_ecn configuration) of an RDMA port "device/n", from the facts; (None, None) unknown."""
    name, _sep, number = port.partition("/")
    for device in ctx.facts.get("rdma") or []:
        if isinstance(device, dict) and device.get("name") == name:
            for entry in device.get("ports") or []:
                if isinstance(entry, dict) and str(entry.get("port")) == number and entry.get("netdev"):
                    config = counter_section(now, "roce_ecn").get(entry["netdev"])
                    return entry["netdev"], config
    return None, None


def _ecn_off(netdev, config, point):
    """" (ecn/roce_np/enable is 0 for priorities 2, 5 on eth0)" where the port's configuration says so, else ""."""
    part = (config or {}).get(point)
    if not isinstance(part, dict) or not isinstance(part.get("read"), list):
        return ""
    off = sorted(p for p in part["read"] if p not in (part.get("enabled") or []))
    if not off:
        return ""
    folder = "roce_np" if point == "notification_point" else "roce_rp"
    return " (ecn/%s/enable is 0 for priorit%s %s on %s)" % (
        folder, "y" if len(off) == 1 else "ies", ", ".join(str(p) for p in off), netdev)


@host_rule(
    "STAB-009", "RoCE congestion notifications not acted on", "warn",
    """RoCE's congestion control (DCQCN) works in three steps: a switch queue that fills marks packets with ECN; the
    receiving NIC (the notification point) answers each marked flow with a congestion notification packet (CNP); the
    sending NIC (the reaction point) slows that flow down. Between two readings of the mlx5 hw_counters, marked
    packets arriving without CNPs sent (np_ecn_marked_roce_packets grows, np_cnp_sent does not) is a notification
    point that is off, and CNPs ignored (rp_cnp_ignored) a reaction point off for the traffic's priority: the senders
    never slow down, the queue grows until PFC pauses the port (and the pause spreads) or packets drop, and every
    collective on the path jitters. With fabric_expectations.roce.ecn false (a fabric run on PFC alone), CNPs are
    information: a switch marks ECN although the intent says it does not.""",
    """Enable ECN for the RoCE priority on both ends: /sys/class/net/<nic>/ecn/roce_np/enable/<prio> (the
    notification point sends CNPs) and ecn/roce_rp/enable/<prio> (the reaction point slows down), or the firmware's
    ROCE_CC_PRIO_MASK (mlxconfig); check the switch's ECN marking (WRED/ECN thresholds) on the RoCE queue, and PFC on
    the same priority end to end. A fabric meant to run without ECN: set fabric_expectations.roce.ecn to false and
    turn the switch's marking off.""")
def roce_congestion(ctx):
    now = counters(ctx)
    ports = counter_section(now, "rdma")
    watched = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored")
    ports = dict((k, v) for k, v in ports.items() if any(c in v for c in watched))
    if not ports:
        raise NotApplicable("no RoCE congestion counters (mlx5's hw_counters np_cnp_sent, rp_cnp_handled, ...)")
    win = window(ctx)
    if win is None:
        raise NotApplicable(without(ctx, "RoCE congestion counters are " + NO_BASELINE))
    roce = ctx.expect.get("roce") if isinstance(ctx.expect.get("roce"), dict) else {}
    for port in sorted(ports):
        grown = dict((c, win.growth("rdma", port, c)) for c in watched + ("roce_slow_restart_cnps",))
        marked, sent = grown["np_ecn_marked_roce_packets"], grown["np_cnp_sent"]
        ignored, handled = grown["rp_cnp_ignored"], grown["rp_cnp_handled"]
        # CNPs a sender handles after an idle period (slow restart) are not the fabric's marking
        congested = (handled or 0) - (grown["roce_slow_restart_cnps"] or 0)
        evidence = dict(win.evidence(), port=port, counters=dict((c, g) for c, g in sorted(grown.items())
                                                                 if g is not None))
        netdev, ecn = _ecn_of(ctx, now, port)
        if ecn:
            evidence.update(netdev=netdev, roce_ecn=ecn)
        if marked and sent == 0:
            ctx.finding(port, "%s: %d ECN-marked RoCE packets arrived and no CNP was sent %s: this port's "
                        "notification point is off%s, so its senders never slow down" % (
                            port, marked, win.said(), _ecn_off(netdev, ecn, "notification_point")),
                        dict(evidence, per_hour=win.per_hour(marked)))
        if ignored:
            ctx.finding(port, "%s: %d congestion notifications ignored %s (rp_cnp_ignored): the reaction point is off "
                        "for the traffic's priority%s, so this sender does not slow down when the fabric asks" % (
                            port, ignored, win.said(), _ecn_off(netdev, ecn, "reaction_point")),
                        dict(evidence, per_hour=win.per_hour(ignored)))
        if roce.get("ecn") is False and (congested > 0 or sent):
            ctx.finding(port, "%s: congestion notifications %s (%s) on a fabric fabric_expectations.roce.ecn says runs "
                        "without ECN: a switch marks ECN on the RoCE queue" % (
                            port, win.said(), ", ".join("%s +%d" % (c, g) for c, g in (
                                ("np_cnp_sent", sent), ("rp_cnp_handled", congested)) if g)),
                        evidence, severity="info")
    compared_nothing(win, "RoCE congestion")


def _roce_netdevs(now):
    """{interface: "what it is"} of a counters reading: the interfaces behind its roce_ports (RDMA ports whose link
    layer is Ethernet), a RoCE LAG's bond by its legs (roce_lag: PFC and ECN are set per physical port)."""
    ports = now.get("roce_ports") if isinstance(now, dict) else None
    lag = now.get("roce_lag") if isinstance(now, dict) and isinstance(now.get("roce_lag"), dict) else {}
    by_netdev = {}
    pairs = [(p, n) for p, n in (ports if isinstance(ports, dict) else {}).items()
             if isinstance(p, str) and isinstance(n, str) and n]
    for port, netdev in sorted(pairs):
        by_netdev.setdefault(netdev, []).append(port)
    found = {}
    for netdev, rdma in sorted(by_netdev.items()):
        legs = lag.get(netdev)
        legs = sorted(set(legs)) if isinstance(legs, list) and legs and all(
            isinstance(leg, str) and leg for leg in legs) else None
        for name in legs or [netdev]:
            found[name] = "%s (%s%s)" % (name, "a leg of %s: " % netdev if legs else "", ", ".join(rdma))
    return found


def _priorities(value):
    """A list of 802.1p priorities (ints 0..7) as the facts hold them, else None."""
    if not isinstance(value, list) or not all(counter_value(p) is not None and p <= 7 for p in value):
        return None
    return sorted(value)


@host_rule(
    "STAB-010", "RoCE priority not lossless as intended", "fail",
    """RoCE needs a fabric that drops (almost) nothing: a lost packet costs a go-back-N retransmission of everything
    after it, and a collective waits for the slowest flow. fabric_expectations.roce.priority names the 802.1p
    priority the RoCE traffic runs on; on every interface behind a RoCE port, priority flow control (PFC) must be on
    for that priority (dcb pfc show, else mlnx_qos, on a live node) unless fabric_expectations.roce.pfc is false (a
    fabric run on ECN alone), and ECN congestion control (DCQCN, mlx5's ecn/roce_np and ecn/roce_rp) must be on for it
    at both the notification and the reaction point unless fabric_expectations.roce.ecn is false. A part the node
    does not say (no dcb or mlnx_qos, a driver without DCB, no ecn folder) is not judged.""",
    """PFC on the RoCE priority: dcb pfc set dev <nic> prio-pfc <prio>:on (or mlnx_qos -i <nic> --pfc 0,0,0,1,0,0,0,0
    for priority 3), kept across reboots by the tool that configures the node (NetworkManager dispatcher, a systemd
    unit); the switch ports must have PFC on the same priority. ECN: echo 1 >
    /sys/class/net/<nic>/ecn/roce_np/enable/<prio> and ecn/roce_rp/enable/<prio>. If the fabric is meant to run without one of them, set
    fabric_expectations.roce.pfc or .ecn to false.""")
def roce_priority(ctx):
    roce = ctx.expect.get("roce") if isinstance(ctx.expect.get("roce"), dict) else {}
    priority = roce.get("priority")
    if counter_value(priority) is None or priority > 7:
        raise NotApplicable("no RoCE priority in the intent (set fabric_expectations.roce.priority, 0..7)")
    now = counters(ctx)
    netdevs = _roce_netdevs(now)
    if not netdevs:
        raise NotApplicable("no RoCE port (an RDMA port whose link layer is Ethernet)")
    pfc = now.get("roce_pfc") if isinstance(now.get("roce_pfc"), dict) else {}
    ecn = counter_section(now, "roce_ecn")
    judged, unread = False, []
    for netdev, where in sorted(netdevs.items()):
        if roce.get("pfc") is not False:
            entry = pfc.get(netdev) if isinstance(pfc.get(netdev), dict) else {}
            enabled = _priorities(entry.get("enabled"))
            if enabled is None:
                unread.append("%s: PFC" % netdev)
            else:
                judged = True
                if priority not in enabled:
                    ctx.finding(netdev, "%s: PFC is off for the RoCE priority %d (%s, %s): a full switch queue drops "
                                "its frames instead of pausing the sender, and RoCE retransmits from the lost one on"
                                % (where, priority, "on for %s" % ", ".join(str(p) for p in enabled) if enabled
                                   else "off for every priority", entry.get("source") or "dcb"),
                                {"netdev": netdev, "priority": priority, "pfc": entry})
        if roce.get("ecn") is not False:
            config = ecn.get(netdev) or {}
            for point, folder in (("notification_point", "roce_np"), ("reaction_point", "roce_rp")):
                part = config.get(point) if isinstance(config.get(point), dict) else {}
                read, enabled = _priorities(part.get("read")), _priorities(part.get("enabled"))
                if read is None or enabled is None or priority not in read:
                    unread.append("%s: ECN %s" % (netdev, folder))
                    continue
                judged = True
                if priority not in enabled:
                    ctx.finding(netdev, "%s: ECN congestion control is off for the RoCE priority %d at the %s "
                                "(ecn/%s/enable/%d is 0): %s" % (
                                    where, priority, point.replace("_", " "), folder, priority,
                                    "marked packets get no CNP, so the senders never slow down"
                                    if folder == "roce_np" else "this sender ignores the CNPs that ask it to slow down"),
                                {"netdev": netdev, "priority": priority, "roce_ecn": config})
    if not judged:
        raise NotApplicable("the RoCE ports' PFC and ECN configuration is not known (%s): PFC is read with dcb or "
                            "mlnx_qos on a live node, ECN from mlx5's ecn folder" % ", ".join(unread))
