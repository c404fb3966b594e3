# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Two readings of a host's counters, as the STAB rules and the reports' stability section compare them: the
baseline (an earlier report, or the first reading of fabric_audit_window) checked field by field, the growth of each
counter between the readings (a counter lower than before counts again from zero, never negatively), rates per hour,
and the host's TCP totals. A baseline that cannot be used makes the host judged exactly as without one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_BOND, PORT_NETDEVS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import MAX_COUNTER, finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import check_counters, same_boot
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import duration

INTERFACE_ERRORS = ("rx_crc_errors", "rx_frame_errors", "rx_fifo_errors", "rx_missed_errors", "rx_over_errors",
                    "rx_length_errors", "tx_carrier_errors", "tx_fifo_errors", "tx_aborted_errors")
# the totals the kernel sums the kinds above into: reported only where no kind explains them
INTERFACE_ERROR_TOTALS = ("rx_errors", "tx_errors")
INTERFACE_DROPS = (("rx_dropped", "rx_packets"), ("tx_dropped", "tx_packets"))
DROP_SHARE = 0.001  # drops of at most 0.1% of the packets are noise (unknown protocols, filtered VLANs) ...
DROPS_PER_HOUR = 60  # ... and so is less than one a minute (rx_packets leaves RoCE traffic out on RDMA NICs)
RDMA_PORT_ERRORS = ("link_downed", "link_error_recovery", "symbol_error", "local_link_integrity_errors",
                    "port_rcv_errors", "port_rcv_remote_physical_errors", "excessive_buffer_overrun_errors")
# the transport's: a NIC's (mlx5 names), then Soft-RoCE's (rxe_hw_counters.c): a gap in the sequence seen by the
# responder, a sequence NAK received, a retransmission begun, the retries used up (the queue pair failed)
RDMA_TRANSPORT_ERRORS = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err",
                         "out_of_seq_request", "rcvd_seq_err", "completer_retry_err", "retry_exceeded_err")
# How much each of them may grow per hour before STAB-004 names it (fabric_expectations.rdma_counters overrides):
# symbol errors are the physical layer's bit errors, which a healthy link shows now and then (at the InfiniBand
# specification's bit error rate of 10^-12, a 100 Gb/s port sees 360 per hour); above 120 per hour the link is
# marginal. Every other counter counts from its first increase, and link_downed always does (the link went down).
RDMA_PER_HOUR = {"symbol_error": 120}
ALWAYS_COUNTED = ("link_downed",)
NO_BASELINE = ("judged between two readings: set fabric_audit_baseline to an earlier audit's report.json (each "
               "report.json carries the counters), or fabric_audit_window to read them again that many seconds "
               "later in the same run")


def counter_section(counters, name):
    """One section of a counters reading (interfaces, aer, rdma) as {key: dict}: a hand-edited or corrupt baseline
    may hold anything there."""
    value = counters.get(name) if isinstance(counters, dict) else None
    if not isinstance(value, dict):
        return {}
    return dict((k, v) for k, v in value.items() if isinstance(v, dict))


def counter_value(value):
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
        self._sections = dict(((which, name), counter_section(readings[which], name))
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
        now = counter_value((self.section("now", section).get(key) or {}).get(name))
        if now is None:
            return None
        if self.since_boot:
            return self._judged(now)
        entry = self.section("before", section).get(key)
        if entry is None:
            return self._judged(None)  # not there at the baseline (hot-plugged, renamed, unusable): no window for it
        before = counter_value(entry.get(name))
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
        total = counter_value(entry.get("total")) if isinstance(entry, dict) else None
        if total is None:
            return None
        if self.since_boot:
            return self._judged(total)
        before = (self.section("before", "aer").get(address) or {}).get(kind)
        before_total = counter_value(before.get("total")) if isinstance(before, dict) else None
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
    same = same_boot(before, now)
    rebooted = same is False or (same is None and up < up_before)
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


def without(ctx, said):
    """The not-applicable reason of a growth rule without a usable baseline: ``said`` (how to get one), after what
    made the baseline unusable where it was."""
    why = unusable(ctx)
    return "%s; judged as without one: %s" % (why, said) if why else said


def compared_nothing(win, what):
    if win.compared_nothing():
        raise NotApplicable("%s: no counter could be compared with the earlier reading (each is missing there, or "
                            "cannot be used: see the policy warnings), so nothing is judged" % what)


# what has a link of its own that can go down: the ports and a bond (its VLANs follow it)
LINKED = PORT_NETDEVS + (NETDEV_BOND,)


def interfaces_of(win, kinds):
    return sorted(n for n, v in win.section("now", "interfaces").items() if v.get("kind") in kinds)


def bond_members(ctx):
    """{bond: [its ports]} from the NIC facts."""
    bonds = {}
    for nic in ctx.facts.get("nics") or []:
        if isinstance(nic, dict) and nic.get("bond_master"):
            bonds.setdefault(nic["bond_master"], []).append(nic.get("name"))
    return bonds


def budget_value(value, default, zero=False):
    """A budget from the probes' results: a finite number above 0 (``zero``: 0 too), else ``default``."""
    value = finite(value)
    if value is None or value < 0 or (value == 0 and not zero):
        return default
    return value


# ---- the host's own TCP, between two readings of /proc/net/snmp --------------------------------------------------
MIN_TCP_SEGMENTS = 100000  # fewer segments sent in the window than this say nothing about a rate (an idle host)


def tcp_of(counters_reading):
    value = counters_reading.get("tcp") if isinstance(counters_reading, dict) else None
    return value if isinstance(value, dict) else {}


def tcp_growth(win):
    """{"out_segs", "retrans_segs"} sent between the two readings of ``win``, or None. Either counter lower than
    before (a wrap, another boot) counts both again from zero; more sent again than sent is no reading."""
    now, before = tcp_of(win.now), tcp_of(win.before)
    values = dict((k, counter_value(now.get(k))) for k in ("out_segs", "retrans_segs"))
    earlier = dict((k, 0 if win.since_boot else counter_value(before.get(k))) for k in values)
    if any(v is None for v in list(values.values()) + list(earlier.values())):
        return None
    if any(values[k] < earlier[k] for k in values):
        earlier = dict((k, 0) for k in values)
    grown = dict((k, values[k] - earlier[k]) for k in values)
    return grown if grown["retrans_segs"] <= grown["out_segs"] else None
