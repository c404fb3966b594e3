# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family STAB: stability between two readings of the counters -- link flaps, interface errors and drops, PCIe
AER errors, RDMA port errors. Totals since boot say little (a NIC's own link-up at boot counts as a carrier change);
growth between an earlier audit's report (``fabric_audit_baseline``) and now says what happens while the cluster
runs. A counter lower than its baseline (a reboot, a driver reload) counts again from zero, never negatively.

The baseline is checked field by field first (baseline.check_counters): a host entry that cannot be used (not a
number where the uptime or boot time belongs, a reading from the future, the same reading as now) makes the host
judged exactly as without a baseline, and a counter that cannot be used is not compared. A rule that could compare
nothing is not applicable, never a pass."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_BOND, PORT_NETDEVS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ethtool_stats import kind as stats_kind
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import MAX_COUNTER, finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import (
    BOOT_TIME_SLACK_S, DEFAULT_TCP_RETRANSMIT_PERCENT, check_counters,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import HostContext, host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import (
    by_pair, duration, goodput, median, pair_subject, runs_said,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import default

INTERFACE_ERRORS = ("rx_crc_errors", "rx_frame_errors", "rx_fifo_errors", "rx_missed_errors", "rx_over_errors",
                    "rx_length_errors", "tx_carrier_errors", "tx_fifo_errors", "tx_aborted_errors")
# the totals the kernel sums the kinds above into: reported only where no kind explains them
INTERFACE_ERROR_TOTALS = ("rx_errors", "tx_errors")
INTERFACE_DROPS = (("rx_dropped", "rx_packets"), ("tx_dropped", "tx_packets"))
DROP_SHARE = 0.001  # drops of at most 0.1% of the packets are noise (unknown protocols, filtered VLANs) ...
DROPS_PER_HOUR = 60  # ... and so is less than one a minute (rx_packets leaves RoCE traffic out on RDMA NICs)
RDMA_PORT_ERRORS = ("link_downed", "link_error_recovery", "symbol_error", "local_link_integrity_errors",
                    "port_rcv_errors", "port_rcv_remote_physical_errors", "excessive_buffer_overrun_errors")
RDMA_TRANSPORT_ERRORS = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err")
NO_BASELINE = ("judged between two readings: set fabric_audit_baseline to an earlier audit's report.json (each "
               "report.json carries the counters), or fabric_audit_window to read them again that many seconds "
               "later in the same run")


def _section(counters, name):
    """One section of a counters reading (interfaces, aer, rdma) as {key: dict}: a hand-edited or corrupt baseline
    may hold anything there."""
    value = counters.get(name) if isinstance(counters, dict) else None
    if not isinstance(value, dict):
        return {}
    return dict((k, v) for k, v in value.items() if isinstance(v, dict))


def _counter(value):
    """A counter's value: an int from 0 to 2**64 - 1 (what a kernel counter holds), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNTER else None


class Window:
    """Two readings of one host's counters: ``now`` (its facts) and ``before`` (the baseline's, empty when the
    host rebooted since: then growth is the total since boot), ``seconds`` between them."""

    def __init__(self, now, before, seconds, since_boot, baseline_at, in_run=False):
        self.now, self.before, self.seconds, self.since_boot = now, before, seconds, since_boot
        self.baseline_at, self.in_run = baseline_at, in_run
        # each section checked once, not on every counter looked up
        readings = {"now": now, "before": before}
        self._sections = dict(((which, name), _section(readings[which], name))
                              for which in readings for name in ("interfaces", "aer", "rdma", "nic_stats"))
        # counters looked up that this reading has, and those of them judged (compared with the baseline, or since
        # boot after a reboot): a rule that judged none of them has compared nothing, and does not pass
        self.wanted, self.judged = 0, 0

    def _judged(self, value):
        self.wanted += 1
        if value is not None:
            self.judged += 1
        return value

    def compared_nothing(self):
        """Whether counters were looked up and none of them could be compared (missing or unusable before)."""
        return self.wanted > 0 and self.judged == 0

    def section(self, which, name):
        """A section (interfaces, aer, rdma, nic_stats) of ``now`` or ``before`` as {key: dict}."""
        return self._sections[(which, name)]

    def growth(self, section, key, name):
        """How much counter ``name`` of ``section[key]`` grew; None when either reading lacks it."""
        now = _counter((self.section("now", section).get(key) or {}).get(name))
        if now is None:
            return None
        if self.since_boot:
            return self._judged(now)
        entry = self.section("before", section).get(key)
        if entry is None:
            return self._judged(None)  # not there at the baseline (hot-plugged, renamed, unusable): no window for it
        before = _counter(entry.get(name))
        if before is None:
            return self._judged(None)
        return self._judged(now - before if now >= before else now)  # reset (driver reload, wrap): from zero

    def downs(self, name):
        """How often interface ``name``'s link went down: carrier_down_count's growth, else half the carrier
        changes (kernels before 4.16 count only those); None when neither is comparable."""
        downs = self.growth("interfaces", name, "carrier_down_count")
        if downs is None:
            changes = self.growth("interfaces", name, "carrier_changes")
            downs = (changes + 1) // 2 if changes is not None else None
        return downs

    def aer_growth(self, address, kind):
        """How much the total of AER ``kind`` (correctable, nonfatal, fatal) of ``address`` grew; None when either
        reading lacks it. Nested one level deeper than the other sections: {address: {kind: {total, by_type}}}."""
        entry = self.section("now", "aer").get(address, {}).get(kind)
        total = _counter(entry.get("total")) if isinstance(entry, dict) else None
        if total is None:
            return None
        if self.since_boot:
            return self._judged(total)
        before = (self.section("before", "aer").get(address) or {}).get(kind)
        before_total = _counter(before.get("total")) if isinstance(before, dict) else None
        if before_total is None:
            return self._judged(None)
        return self._judged(total - before_total if total >= before_total else total)

    def per_hour(self, count):
        return round(count * 3600.0 / self.seconds, 2) if self.seconds else None

    def evidence(self):
        return {"window_s": round(self.seconds, 1) if self.seconds is not None else None,
                "since_boot": self.since_boot, "baseline_at": self.baseline_at,
                "baseline": "fabric_audit_window" if self.in_run else "fabric_audit_baseline"}

    def said(self):
        span = duration(self.seconds) or "an unknown time"
        if self.since_boot:
            return "since boot (%s; the host rebooted after the %s)" % (
                span, "first reading" if self.in_run else "baseline")
        return "in the %s since the %s" % (span, "first reading" if self.in_run else "baseline")


def counters(ctx):
    value = ctx.facts.get("counters")
    if not isinstance(value, dict):
        raise NotApplicable("the facts have no counters (topology_facts with the counters subset on a live node)")
    return value


def _checked(ctx):
    """(Window or None, why the baseline cannot be used or None): the host's two readings after the baseline's
    fields were checked (baseline.check_counters); None without a baseline, or with one that cannot be used for this
    host, which is then judged exactly as without one. Checked once per host (the rules share the context)."""
    if "_baseline_window" in ctx.__dict__:
        return ctx.__dict__["_baseline_window"]
    now = counters(ctx)
    baseline = ctx.observed.get("baseline")
    before = baseline.get("counters") if isinstance(baseline, dict) else None
    if before is None:
        ctx.__dict__["_baseline_window"] = (None, None)
        return None, None
    in_run = bool(baseline.get("window_s"))
    check = check_counters(before, now)
    if check["counters"] is None:
        ctx.__dict__["_baseline_window"] = (None, "the %s of %s cannot be used (%s)" % (
            "first reading (fabric_audit_window)" if in_run else "baseline", ctx.host, "; ".join(check["host"])))
        return ctx.__dict__["_baseline_window"]
    before = check["counters"]
    up, up_before = now["uptime_s"], before["uptime_s"]
    boot, boot_before = finite(now.get("boot_time")), before["boot_time"]
    rebooted = up < up_before or (boot is not None and boot_before is not None
                                  and abs(boot - boot_before) > BOOT_TIME_SLACK_S)
    if rebooted:
        win = (now, {}, up, True, baseline.get("generated_at"), in_run)
    else:
        win = (now, before, up - up_before, False, baseline.get("generated_at"), in_run)
    ctx.__dict__["_baseline_window"] = (win, None)
    return win, None


def window(ctx):
    """The host's Window (a new one for each rule: it counts what the rule compared), or None when there is no
    baseline for it, or one that cannot be used (``unusable`` says why)."""
    args, _why = _checked(ctx)
    return Window(*args) if args is not None else None


def unusable(ctx):
    """Why the host's baseline cannot be used (naming the field and its value), or None."""
    return _checked(ctx)[1]


def _without(ctx, said):
    """The not-applicable reason of a growth rule without a usable baseline: ``said`` (how to get one), after what
    made the baseline unusable where it was."""
    why = unusable(ctx)
    return "%s; judged as without one: %s" % (why, said) if why else said


def _compared_nothing(win, what):
    if win.compared_nothing():
        raise NotApplicable("%s: no counter could be compared with the earlier reading (each is missing there, or "
                            "cannot be used: see the policy warnings), so nothing is judged" % what)


# what has a link of its own that can go down: the ports and a bond (its VLANs follow it)
LINKED = PORT_NETDEVS + (NETDEV_BOND,)


def _interfaces(win, kinds):
    return sorted(n for n, v in win.section("now", "interfaces").items() if v.get("kind") in kinds)


def _bond_members(ctx):
    """{bond: [its ports]} from the NIC facts."""
    bonds = {}
    for nic in ctx.facts.get("nics") or []:
        if isinstance(nic, dict) and nic.get("bond_master"):
            bonds.setdefault(nic["bond_master"], []).append(nic.get("name"))
    return bonds


@host_rule(
    "STAB-001", "Link flaps", "warn",
    """An interface whose link went down (and mostly up again) between two readings: each flap stalls every
    collective running over it (NCCL waits, then retries or aborts) and re-converges the bond and the switch. Judged
    per physical interface, bond and IPoIB port from carrier_down_count (half the carrier changes on kernels before
    4.16); not across a reboot, which bounces links by itself.""",
    """Look at the link on both ends: the switch port's log, the cable or transceiver (reseat, swap), the NIC's
    firmware; ethtool -S for the NIC's own link-down counters. Keep the node out of jobs until the link holds.""")
def link_flaps(ctx):
    win = window(ctx)
    if win is None:
        counters(ctx)
        raise NotApplicable(_without(ctx, "link flaps are " + NO_BASELINE))
    if win.since_boot:
        # boot bounces links on its own (a bond enslaving its ports, NetworkManager taking over from the initrd)
        raise NotApplicable("the host rebooted after the baseline: link flaps are judged again from the next audit, "
                            "with this one as its baseline")
    for name in _interfaces(win, LINKED):
        entry = win.now["interfaces"][name]
        downs = win.downs(name)
        if not downs:
            continue
        ctx.finding(name, "%s: the link went down %d time(s) %s (%s per hour)" % (
            name, downs, win.said(), win.per_hour(downs)),
            dict(win.evidence(), interface=name, flaps=downs, per_hour=win.per_hour(downs),
                 carrier_changes=entry.get("carrier_changes"), carrier_down_count=entry.get("carrier_down_count"),
                 carrier_up_count=entry.get("carrier_up_count")))
    _compared_nothing(win, "link flaps")


@host_rule(
    "STAB-002", "Interface errors or drops growing", "warn",
    """Receive and transmit errors (CRC, frame, FIFO and missed: a bad cable or optic, a ring buffer overrun) that
    grew between two readings, and drops above 0.1% of the packets and one a minute on interfaces outside bonds (a
    bond's idle port drops by design). Lost frames are retransmitted by TCP, which shows as jitter in every collective
    step. Judged per physical interface and IPoIB port; a bond only where none of its ports is counted (its
    statistics are theirs summed). On live nodes also the NIC's own counters (ethtool -S): any error, and discards
    (a port buffer overflowing, a ring without buffers: rx_discards_phy, rx_out_of_buffer) from one a minute.""",
    """CRC and frame errors: the cable, optic or switch port (swap them, read the switch port's counters). FIFO and
    missed errors and drops: the NIC's ring buffers (ethtool -G), IRQ affinity on the NIC's NUMA node (the role
    gpuops.fabric.tuning sets both, docs/tuning.md), a CPU starved of time; ethtool -S names the queue.""")
def interface_errors(ctx):
    win = window(ctx)
    if win is None:
        counters(ctx)
        raise NotApplicable(_without(ctx, "error and drop growth is " + NO_BASELINE))
    bonds = _bond_members(ctx)
    members = set(m for ports in bonds.values() for m in ports)
    # a bond's statistics are its ports' summed: the ports are judged, the bond only where it has none counted
    counted = set(_interfaces(win, PORT_NETDEVS))
    for name in _interfaces(win, LINKED):
        if name not in counted and any(m in counted for m in bonds.get(name, ())):
            continue
        grown = dict((c, win.growth("interfaces", name, c)) for c in INTERFACE_ERRORS)
        grown = dict((c, g) for c, g in grown.items() if g)
        if not grown:  # a total no kind explains (drivers that count only the total)
            totals = dict((c, win.growth("interfaces", name, c)) for c in INTERFACE_ERROR_TOTALS)
            grown = dict((c, g) for c, g in totals.items() if g)
        drops = {}
        # a bond port drops what arrives on it by design (an active-backup bond's idle port): drops are judged on
        # interfaces outside bonds only
        for drop, packets in INTERFACE_DROPS if name not in members else ():
            count, total = win.growth("interfaces", name, drop), win.growth("interfaces", name, packets)
            rate = win.per_hour(count) if count else None
            if count and (not total or count > DROP_SHARE * total) and rate is not None and rate >= DROPS_PER_HOUR:
                drops[drop] = count
        nic = nic_growth(win, name)
        if not grown and not drops and not nic:
            continue
        said = ", ".join("%s +%d" % (c, g) for c, g in sorted(dict(grown, **drops).items()))
        if nic:
            said = ", ".join(x for x in (said, "the NIC's own (ethtool -S) " + ", ".join(
                "%s +%d" % (c, g) for c, g in sorted(nic.items()))) if x)
        ctx.finding(name, "%s: %s %s" % (name, said, win.said()),
                    dict(win.evidence(), interface=name, errors=grown, drops=drops, nic_stats=nic,
                         per_hour=dict((c, win.per_hour(g)) for c, g in sorted(dict(grown, **dict(drops, **nic)).items()))))
    _compared_nothing(win, "error and drop growth")


def nic_growth(win, name):
    """The NIC's own error and discard counters (ethtool -S) of port ``name`` that grew: any error, discards from
    one a minute (a port buffer that overflows now and then under incast is a switch's everyday)."""
    grown = {}
    for counter in sorted(win.section("now", "nic_stats").get(name) or {}):
        label = stats_kind(counter)
        if label not in ("errors", "discards"):
            continue
        count = win.growth("nic_stats", name, counter)
        if not count:
            continue
        if label == "discards" and (win.per_hour(count) or 0) < DROPS_PER_HOUR:
            continue
        grown[counter] = count
    return grown


@host_rule(
    "STAB-003", "PCIe errors on a GPU or NIC path", "fail",
    """PCIe Advanced Error Reporting counts per device (aer_dev_*). A non-fatal or fatal error on a GPU, a NIC or a
    bridge above them means lost or poisoned transactions: a fail whenever one is counted (since boot without a
    baseline). Correctable errors are repaired by the link (replays) and cost bandwidth; growing between two
    readings they point at a riser, a retimer or a slot: a warning.""",
    """Reseat the device and its riser; check the slot's retimer and the BIOS PCIe settings (link speed, ASPM);
    read the kernel log (dmesg: 'AER:') for the device and error type; replace the part if the errors continue.""")
def pcie_errors(ctx):
    now = counters(ctx)
    aer = _section(now, "aer")
    if not aer:
        raise NotApplicable("no AER counters (the kernel exposes aer_dev_* with AER on, for the GPUs', NICs' and "
                            "bridges' functions)")
    win = window(ctx)
    pci = ctx.pci()
    for address in sorted(aer):
        names = (pci.get(address) or {}).get("name") or (pci.get(address) or {}).get("kind") or "device"
        for kind in ("fatal", "nonfatal"):
            entry = aer[address].get(kind)
            total = _counter(entry.get("total")) if isinstance(entry, dict) else None
            if not total:
                continue
            grown, when = total, "since boot"
            # an earlier audit reported what was counted before it; a window in this run did not: since boot
            if win is not None and not win.since_boot and not win.in_run:
                grown = win.aer_growth(address, kind)
                grown, when = (total, "since boot (not in the baseline)") if grown is None else (grown, win.said())
                if not grown:
                    continue
            ctx.finding(address, "%s (%s): %d %s PCIe error(s) %s (%s)" % (
                address, names, grown, "fatal" if kind == "fatal" else "non-fatal", when,
                ", ".join("%s %d" % (t, n) for t, n in sorted((entry.get("by_type") or {}).items())) or "types not "
                "listed"), dict(win.evidence() if win else {}, address=address, kind=kind, count=grown,
                                by_type=entry.get("by_type")))
        if win is None or win.since_boot:
            continue  # since boot the link's own training at boot counts too: only growth on one boot says anything
        entry = aer[address].get("correctable")
        grown = win.aer_growth(address, "correctable")
        if grown:
            ctx.finding(address, "%s (%s): %d correctable PCIe error(s) %s (%s per hour: %s)" % (
                address, names, grown, win.said(), win.per_hour(grown),
                ", ".join("%s %d" % (t, n) for t, n in sorted((entry.get("by_type") or {}).items())) or "types not "
                "listed"), dict(win.evidence(), address=address, kind="correctable", count=grown,
                                per_hour=win.per_hour(grown), by_type=entry.get("by_type")), severity="warn")


@host_rule(
    "STAB-004", "RDMA port errors growing", "warn",
    """InfiniBand and RoCE port counters that grew between two readings: link_downed and link_error_recovery (the
    link retrained), symbol and integrity errors (the physical layer), receive errors; and the transport's own
    (out_of_sequence, packet_seq_err, local_ack_timeout_err: lost packets retransmitted, on RoCE usually a lossy
    fabric without PFC or ECN). Each stalls the RDMA traffic of every collective on that port.""",
    """Physical-layer errors: the cable or transceiver and the switch port (mlxlink, the switch's port counters).
    Transport errors on RoCE: the lossless settings (PFC on the RoCE priority, ECN) along the whole path.""")
def rdma_errors(ctx):
    now = counters(ctx)
    if not _section(now, "rdma"):
        raise NotApplicable("no RDMA port counters (no RDMA device, or its driver exposes none)")
    win = window(ctx)
    if win is None:
        raise NotApplicable(_without(ctx, "RDMA error growth is " + NO_BASELINE))
    for port in sorted(_section(now, "rdma")):
        grown = dict((c, win.growth("rdma", port, c)) for c in RDMA_PORT_ERRORS + RDMA_TRANSPORT_ERRORS)
        grown = dict((c, g) for c, g in grown.items() if g)
        if not grown:
            continue
        said = ", ".join("%s +%d" % (c, g) for c, g in sorted(grown.items()))
        ctx.finding(port, "%s: %s %s" % (port, said, win.said()),
                    dict(win.evidence(), port=port, counters=grown,
                         per_hour=dict((c, win.per_hour(g)) for c, g in sorted(grown.items()))))
    _compared_nothing(win, "RDMA error growth")


def _ecn_of(ctx, now, port):
    """(netdev, its roce_ecn configuration) of an RDMA port "device/n", from the facts; (None, None) unknown."""
    name, _sep, number = port.partition("/")
    for device in ctx.facts.get("rdma") or []:
        if isinstance(device, dict) and device.get("name") == name:
            for entry in device.get("ports") or []:
                if isinstance(entry, dict) and str(entry.get("port")) == number and entry.get("netdev"):
                    config = _section(now, "roce_ecn").get(entry["netdev"])
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
    ports = _section(now, "rdma")
    watched = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored")
    ports = dict((k, v) for k, v in ports.items() if any(c in v for c in watched))
    if not ports:
        raise NotApplicable("no RoCE congestion counters (mlx5's hw_counters np_cnp_sent, rp_cnp_handled, ...)")
    win = window(ctx)
    if win is None:
        raise NotApplicable(_without(ctx, "RoCE congestion counters are " + NO_BASELINE))
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
    _compared_nothing(win, "RoCE congestion")


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
    if not isinstance(value, list) or not all(_counter(p) is not None and p <= 7 for p in value):
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
    if _counter(priority) is None or priority > 7:
        raise NotApplicable("no RoCE priority in the intent (set fabric_expectations.roce.priority, 0..7)")
    now = counters(ctx)
    netdevs = _roce_netdevs(now)
    if not netdevs:
        raise NotApplicable("no RoCE port (an RDMA port whose link layer is Ethernet)")
    pfc = now.get("roce_pfc") if isinstance(now.get("roce_pfc"), dict) else {}
    ecn = _section(now, "roce_ecn")
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


# ---- under load (the probes role's iperf3 measurements, with pings alongside) -------------------------------------
QUEUE_BYTES = 1000000  # the default queue a load may build: what a shallow-buffered switch port holds ...
MIN_QUEUE_DELAY_MS = 1.0  # ... and never less than this (scheduling noise on busy hosts)
DEFAULT_RETRANSMIT_PERCENT = default("fabric_probe_max_retransmit_percent")
LOST_UNDER_LOAD = (2, 0.05)  # pings lost under load worth a finding: at least 2, and 5% of those sent


def _measured(ctx):
    """The throughput measurements of the probes (list), or NotApplicable."""
    probes = ctx.observed.get("probes")
    if not isinstance(probes, dict) or not isinstance(probes.get("throughput"), list):
        raise NotApplicable("no throughput probe ran (opt in with fabric_probes_enabled: true or --tags probes)")
    return probes, [e for e in probes["throughput"] if isinstance(e, dict)]


def _budget(value, default, zero=False):
    """A budget from the probes' results: a finite number above 0 (``zero``: 0 too), else ``default``."""
    value = finite(value)
    if value is None or value < 0 or (value == 0 and not zero):
        return default
    return value


def _rtt(part, key):
    return _budget(part.get(key), None, zero=True) if isinstance(part, dict) else None


def _rate(value):
    """A positive finite rate (Gbit/s, Mb/s) or None."""
    return _budget(value, None)


def queue_budget(probes, entry):
    """(milliseconds of queueing allowed, what says so) for one measurement."""
    fixed = _budget(probes.get("queue_delay_ms"), None)
    if fixed is not None:
        return fixed, "fabric_probe_queue_delay_ms"
    gbps, speed = _rate(entry.get("gbps")), _rate(entry.get("speed_mbps"))
    rate = gbps * 1e9 if gbps else (speed * 1e6 if speed else None)
    if rate is None:
        return MIN_QUEUE_DELAY_MS, "no rate known: %g ms" % MIN_QUEUE_DELAY_MS
    drain = 8.0 * QUEUE_BYTES / rate * 1000
    if drain <= MIN_QUEUE_DELAY_MS:
        return MIN_QUEUE_DELAY_MS, "at least %g ms" % MIN_QUEUE_DELAY_MS
    return round(drain, 2), "1 MB of queue at %.3g Gbit/s" % (rate / 1e9)


def _latency_findings(ctx, probes, entry):
    """What one measurement's pings say: [(kind, weight, message, evidence)], and whether they could be judged."""
    latency = entry.get("latency")
    gbps = _rate(entry.get("gbps"))
    if not isinstance(latency, dict) or gbps is None or entry.get("error"):
        return [], False  # no load (the measurement failed: PROBE-004), or no pings
    idle, loaded = latency.get("idle"), latency.get("loaded")
    idle = idle if isinstance(idle, dict) else {}
    loaded = loaded if isinstance(loaded, dict) else {}
    idle_p50, loaded_p99 = _rtt(idle, "p50_ms"), _rtt(loaded, "p99_ms")
    sent, received = _counter(loaded.get("sent")), _counter(loaded.get("received"))
    evidence = {"peer": entry.get("peer"), "network": entry.get("network"), "gbps": gbps,
                "interval_s": latency.get("interval"), "idle": idle, "loaded": loaded}
    if entry.get("run"):
        evidence["run"] = entry["run"]
    where = "%s -> %s on %s" % (ctx.host, entry.get("peer"), entry.get("network"))
    if idle_p50 is None:
        return [], False  # no reply idle either (PROBE-002), or the pings did not run (PROBE-004)
    if sent and received == 0:
        return [("silent", sent, "%s: none of %d pings got a reply while iperf3 loaded the path (idle p50 %.3g ms)"
                 % (where, sent, idle_p50), evidence)], True
    if loaded_p99 is None:
        return [], False
    found = []
    budget, basis = queue_budget(probes, entry)
    delay = loaded_p99 - idle_p50
    loaded_p50 = _rtt(loaded, "p50_ms")
    evidence.update(queue_delay_ms=round(delay, 3), budget_ms=budget, basis=basis,
                    jitter_ms=round(loaded_p99 - (loaded_p50 if loaded_p50 is not None else loaded_p99), 3),
                    queue_bytes=int(max(delay, 0) / 1000.0 * gbps * 1e9 / 8))
    if delay > budget:
        found.append(("queue", delay, "%s: ping p99 %.3g ms while iperf3 loads the path, p50 %.3g ms idle: %.3g ms of "
                      "queue (about %s at %.3g Gbit/s), budget %.3g ms (%s)" % (
                          where, loaded_p99, idle_p50, delay, _size(evidence["queue_bytes"]), gbps, budget, basis),
                      evidence))
    lost = sent - received if sent and received is not None and received <= sent else 0
    idle_sent, idle_received = _counter(idle.get("sent")), _counter(idle.get("received"))
    idle_lost = (idle_sent - idle_received) / float(idle_sent) if idle_sent and idle_received is not None else 0
    if lost >= LOST_UNDER_LOAD[0] and lost / float(sent) >= LOST_UNDER_LOAD[1] and lost / float(sent) > idle_lost:
        found.append(("lost", lost / float(sent), "%s: %d of %d pings lost while iperf3 loads the path (%.3g%%; idle "
                      "%.3g%%): each costs a small message a retransmission timeout" % (
                          where, lost, sent, 100.0 * lost / sent, 100.0 * idle_lost), dict(evidence, lost=lost)))
    return found, True


@host_rule(
    "STAB-005", "Latency under load above budget", "warn",
    """Pings between two nodes while iperf3 loads the same path, against pings with the path idle. The difference of
    the p99 under load and the p50 idle is the queue the load built: a switch or host queue that holds tens of
    milliseconds of traffic (bufferbloat) makes every collective wait behind bulk data, and training steps jitter
    while each node's checks pass. The budget is the time 1 MB of queue (what a shallow-buffered switch port holds)
    takes to drain at the measured goodput, at least 1 ms, or fabric_probe_queue_delay_ms. Pings lost under load (at
    least 2 and 5%, more than idle) are small messages waiting for a retransmission timeout; no reply at all is a
    path that drops everything but the bulk flow.""",
    """Find the queue: the node's qdisc (`tc -s qdisc show dev <nic>`, a deep pfifo or tbf; fq or fq_codel keep it
    short), the NIC's ring and the switch port's buffer profile (a deep-buffer or lossless queue on a TCP network).
    For TCP, an AQM (fq_codel) or ECN on the switch keeps queues short; for RoCE, PFC and ECN as the intent says.""")
def latency_under_load(ctx):
    probes, measured = _measured(ctx)
    judged = False
    for entries in by_pair(measured):
        worst = {}  # per kind of finding, the worst run of the pair, and in how many runs it was found
        for entry in entries:
            found, seen = _latency_findings(ctx, probes, entry)
            judged = judged or seen
            for kind, weight, message, evidence in found:
                count = worst[kind][0] + 1 if kind in worst else 1
                if kind not in worst or weight > worst[kind][1]:
                    worst[kind] = (count, weight, message, evidence)
                else:
                    worst[kind] = (count,) + worst[kind][1:]
        for kind in ("silent", "queue", "lost"):
            if kind in worst:
                count, _weight, message, evidence = worst[kind]
                said = runs_said(entries, count)
                ctx.finding(pair_subject(entries[0], ctx.host), message + (
                    "%s (the worst shown)" % said if said else ""), dict(evidence, runs_found=count)
                    if said else evidence)
    if not judged:
        raise NotApplicable("no latency under load was measured (latency in fabric_probes, ping on the nodes)")


def _size(count):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return "%.3g %s" % (count / scale, unit)
    return "%d bytes" % count


@host_rule(
    "STAB-006", "TCP retransmits above budget", "warn",
    """The share of a measurement's segments the sender sent again (iperf3's retransmits over the bytes sent per
    segment). A flow that has its path to itself should lose almost nothing: retransmits are drops somewhere on the
    path (an overflowing shallow queue, a bad cable or optic, a policer), and each one stalls the flow for a round
    trip or a timeout, which a collective feels as jitter. The budget is fabric_probe_max_retransmit_percent
    (0.1% by default).""",
    """Look where packets drop: the interface and switch port error counters (STAB-002), a policer or shaper on the
    path, a speed mismatch between sender and receiver ports, NIC rings too small for the bursts (the role
    gpuops.fabric.tuning raises them); `ss -ti` on the node shows retransmits per connection.""")
def retransmits(ctx):
    probes, measured = _measured(ctx)
    budget = _budget(probes.get("max_retransmit_percent"), DEFAULT_RETRANSMIT_PERCENT, zero=True)
    judged = False
    for entries in by_pair(measured):
        counted = [(_budget(e.get("retransmit_percent"), None, zero=True), e) for e in entries if not e.get("error")]
        counted = [(share, e) for share, e in counted if share is not None]
        if not counted:
            continue
        judged = True
        entry = counted[0][1]
        if len(counted) == 1:
            share = counted[0][0]
            count, sent, mss = (_counter(entry.get(k)) for k in ("retransmits", "bytes", "mss"))
            said = " of %d segments" % (sent // mss) if sent and mss else ""
            over, runs = "", {}
        else:  # several runs: the share of all their segments, where every run counted them
            numbers = [[_counter(e.get(k)) for k in ("retransmits", "bytes", "mss")] for _s, e in counted]
            if all(None not in n and n[2] for n in numbers) and sum(b // m for _r, b, m in numbers):
                count, sent = sum(r for r, _b, _m in numbers), sum(b for _r, b, _m in numbers)
                segments = sum(b // m for _r, b, m in numbers)
                share, said = 100.0 * count / segments, " of %d segments" % segments
                over = " over %d runs" % len(counted)
            else:
                share, entry = max(counted, key=lambda c: c[0])
                count, sent = _counter(entry.get("retransmits")), _counter(entry.get("bytes"))
                said, over = "", " in the worst of %d runs" % len(counted)
            mss, runs = _counter(entry.get("mss")), {"runs": len(counted)}
        if share > budget:
            ctx.finding(pair_subject(entry, ctx.host), "%s -> %s on %s: %s retransmits%s%s (%.3g%%), budget %.3g%%" % (
                ctx.host, entry.get("peer"), entry.get("network"), count if count is not None else "some", said, over,
                share, budget),
                dict({"peer": entry.get("peer"), "network": entry.get("network"), "retransmits": count, "bytes": sent,
                      "mss": mss, "retransmit_percent": share, "budget_percent": budget, "gbps": entry.get("gbps")},
                     **runs))
    if not judged:
        raise NotApplicable("no throughput measurement counted its segments")


DEFAULT_GOODPUT_SPREAD_PERCENT = default("fabric_probe_max_goodput_spread_percent")


@host_rule(
    "STAB-008", "Goodput unstable across runs", "warn",
    """With fabric_probe_repeat at 2 or more the probes measure each pair that many times, a whole pass of the plan
    apart. On a path a flow has to itself, TCP goodput repeats within a few percent; a spread (the fastest run minus
    the slowest, over the median) above fabric_probe_max_goodput_spread_percent (10% by default) is a path that
    changes under the job: flows hashed onto different ECMP uplinks or bond legs of which one is congested or slower,
    a link that renegotiates, a shaper, or other traffic on a shared link. A collective runs at the pace of its
    slowest flow, so the slow runs are what training sees.""",
    """Compare the runs' retransmits (STAB-006) and the interface and switch port counters (STAB-002); check the
    bond legs' and uplinks' speeds and load (each run uses new ports, so an ECMP or bond hash may pick another
    path), and whether other jobs share the links.""")
def goodput_spread(ctx):
    probes, measured = _measured(ctx)
    budget = _budget(probes.get("max_goodput_spread_percent"), DEFAULT_GOODPUT_SPREAD_PERCENT)
    judged = False
    for entries in by_pair(measured):
        rates = [(goodput(e.get("gbps")), e) for e in entries if not e.get("error")]
        rates = [(gbps, e) for gbps, e in rates if gbps is not None]
        if len(rates) < 2:
            continue
        judged = True
        values = [gbps for gbps, _e in rates]
        middle, low, high = median(values), min(values), max(values)
        spread = 100.0 * (high - low) / middle if middle else (0.0 if high == low else float("inf"))
        if spread > budget:
            slowest = min(rates, key=lambda r: r[0])[1]
            ctx.finding(pair_subject(slowest, ctx.host), "%s -> %s on %s: goodput from %.3g to %.3g Gbit/s over %d "
                        "runs, %s, budget %.3g%%" % (
                            ctx.host, slowest.get("peer"), slowest.get("network"), low, high, len(rates),
                            "a spread of %.3g%% of the median %.3g Gbit/s" % (spread, middle)
                            if math.isfinite(spread) else "most runs carried nothing (a median of 0)", budget),
                        {"peer": slowest.get("peer"), "network": slowest.get("network"), "runs": values,
                         "median_gbps": middle, "spread_percent": round(spread, 2) if math.isfinite(spread) else None,
                         "budget_percent": budget, "retransmits": [e.get("retransmits") for _g, e in rates],
                         "slowest_run": slowest.get("run"), "expected_gbps": slowest.get("expected_gbps")})
    if not judged:
        raise NotApplicable("no pair was measured more than once (fabric_probe_repeat: 2 or more measures each pair "
                            "again)")


# ---- the host's own TCP, between two readings of /proc/net/snmp --------------------------------------------------
MIN_TCP_SEGMENTS = 100000  # fewer segments sent in the window than this say nothing about a rate (an idle host)


def _tcp(counters_reading):
    value = counters_reading.get("tcp") if isinstance(counters_reading, dict) else None
    return value if isinstance(value, dict) else {}


def tcp_growth(win):
    """{"out_segs", "retrans_segs"} sent between the two readings of ``win``, or None. Either counter lower than
    before (a wrap, another boot) counts both again from zero; more sent again than sent is no reading."""
    now, before = _tcp(win.now), _tcp(win.before)
    values = dict((k, _counter(now.get(k))) for k in ("out_segs", "retrans_segs"))
    earlier = dict((k, 0 if win.since_boot else _counter(before.get(k))) for k in values)
    if any(v is None for v in list(values.values()) + list(earlier.values())):
        return None
    if any(values[k] < earlier[k] for k in values):
        earlier = dict((k, 0) for k in values)
    grown = dict((k, values[k] - earlier[k]) for k in values)
    return grown if grown["retrans_segs"] <= grown["out_segs"] else None


@host_rule(
    "STAB-007", "Host TCP retransmits above budget", "warn",
    """The share of all TCP segments the host sent again between two readings (RetransSegs over OutSegs in
    /proc/net/snmp): every flow of the node counts -- NCCL over sockets, storage, checkpoints -- not only a probe's.
    Judged where at least 100000 segments were sent in between; the budget is
    fabric_audit_max_tcp_retransmit_percent (0.5% by default, since traffic to the internet counts too). A node
    that retransmits more loses packets somewhere on its paths, and each loss stalls a flow.""",
    """Find which path drops: the probes (STAB-006 per pair), the interface and switch port counters (STAB-002),
    `ss -ti` for the connections that retransmit and `nstat -az TcpRetransSegs TcpExtTCPLostRetransmit` for the
    kind. A shallow switch buffer under incast wants ECN (sysctl net.ipv4.tcp_ecn) or a smaller NCCL socket count.""")
def tcp_retransmits(ctx):
    now = counters(ctx)
    if not _tcp(now):
        raise NotApplicable("no TCP counters (/proc/net/snmp was not read)")
    win = window(ctx)
    if win is None:
        raise NotApplicable(_without(ctx, "TCP retransmits are " + NO_BASELINE))
    grown = tcp_growth(win)
    if grown is None:
        raise NotApplicable("TCP counters out_segs and retrans_segs are missing from one of the readings, or more "
                            "segments were sent again than sent")
    if grown["out_segs"] < MIN_TCP_SEGMENTS:
        raise NotApplicable("%d TCP segments sent %s: too few to judge a rate (at least %d)" % (
            grown["out_segs"], win.said(), MIN_TCP_SEGMENTS))
    share = 100.0 * grown["retrans_segs"] / grown["out_segs"]
    budget = _budget(ctx.expect.get("tcp_retransmit_budget"), DEFAULT_TCP_RETRANSMIT_PERCENT, zero=True)
    if share > budget:
        ctx.finding("tcp", "%d of %d TCP segments sent again %s (%.3g%%), budget %.3g%% "
                    "(fabric_audit_max_tcp_retransmit_percent)" % (
                        grown["retrans_segs"], grown["out_segs"], win.said(), share, budget),
                    dict(win.evidence(), retrans_segs=grown["retrans_segs"], out_segs=grown["out_segs"],
                         retransmit_percent=round(share, 4), budget_percent=budget,
                         per_hour=win.per_hour(grown["retrans_segs"])))


# ---- the reports' stability section --------------------------------------------------------------------------------
STABILITY_COUNTS = ("link_flaps", "interface_errors", "interface_drops", "nic_discards", "nic_errors",
                    "pause_frames", "pcie_correctable", "pcie_uncorrectable", "rdma_errors", "tcp_retrans_segs")


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _sum(values):
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def stability_row(host, facts, expect):
    """What the stability counters say of one host for the reports: each count's growth over the window (since the
    baseline, or since boot without one) and its rate per hour, the TCP share sent again. None when the host has no
    counters; a baseline the rules cannot use gives the since-boot figures, with ``basis`` saying so."""
    ctx = HostContext(host, facts, expect)
    try:
        now = counters(ctx)
        win = window(ctx)
    except NotApplicable:
        return None
    if win is None:
        up = finite(now.get("uptime_s"))
        win = Window(now, {}, up if up is not None and up > 0 else None, True, None)
        basis = "since boot (the baseline cannot be used)" if unusable(ctx) else "since boot"
    else:
        basis = "since boot (rebooted)" if win.since_boot else (
            "fabric_audit_window" if win.in_run else "fabric_audit_baseline")
    ports = _interfaces(win, PORT_NETDEVS)
    aer = win.section("now", "aer")
    linked = _interfaces(win, LINKED)
    # a boot bounces links and trains PCIe links by itself: the rules judge neither since boot, nor does the row
    counts = {
        "link_flaps": None if win.since_boot else _sum(win.downs(n) for n in linked),
        "interface_errors": _sum(win.growth("interfaces", n, c) for n in ports for c in INTERFACE_ERRORS),
        "interface_drops": _sum(win.growth("interfaces", n, d) for n in ports for d, _p in INTERFACE_DROPS),
        "pcie_correctable": None if win.since_boot else _sum(win.aer_growth(a, "correctable") for a in aer),
        "pcie_uncorrectable": _sum(win.aer_growth(a, k) for a in aer for k in ("nonfatal", "fatal")),
        "rdma_errors": _sum(win.growth("rdma", p, c) for p in win.section("now", "rdma")
                            for c in RDMA_PORT_ERRORS + RDMA_TRANSPORT_ERRORS),
    }
    stats = win.section("now", "nic_stats")
    for key, label in (("nic_discards", "discards"), ("nic_errors", "errors"), ("pause_frames", "pause")):
        # per port the counter of that kind that grew most: drivers count one loss in several (a ring's and the
        # port's total), so a sum would count it twice
        counts[key] = _sum(_max(win.growth("nic_stats", p, c) for c in stats[p] if stats_kind(c) == label)
                           for p in stats)
    tcp = tcp_growth(win) or {"out_segs": None, "retrans_segs": None}
    counts["tcp_retrans_segs"] = tcp["retrans_segs"]
    share = (round(100.0 * tcp["retrans_segs"] / tcp["out_segs"], 4)
             if tcp["out_segs"] and tcp["retrans_segs"] is not None else None)
    if all(v is None for v in counts.values()) and tcp["out_segs"] is None:
        return None  # counters read, none of them there (a partial capture): nothing to show
    return {"host": host, "basis": basis, "window_s": round(win.seconds, 1) if win.seconds is not None else None,
            "counts": counts,
            "per_hour": dict((k, win.per_hour(v) if v is not None else None) for k, v in counts.items()),
            "tcp_out_segs": tcp["out_segs"], "tcp_retransmit_percent": share}
