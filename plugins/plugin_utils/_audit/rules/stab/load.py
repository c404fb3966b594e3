# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family STAB, under load: the probes role's iperf3 measurements with pings alongside -- latency under load
above budget (STAB-005), TCP retransmits of a measurement (STAB-006) and the spread of repeated runs (STAB-008)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import by_pair, goodput, median, pair_subject, runs_said
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.window import budget_value, counter_value
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import default

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


def _rtt(part, key):
    return budget_value(part.get(key), None, zero=True) if isinstance(part, dict) else None


def _rate(value):
    """A positive finite rate (Gbit/s, Mb/s) or None."""
    return budget_value(value, None)


def queue_budget(probes, entry):
    """(milliseconds of queueing allowed, what says so) for one measurement."""
    fixed = budget_value(probes.get("queue_delay_ms"), None)
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
    sent, received = counter_value(loaded.get("sent")), counter_value(loaded.get("received"))
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
    idle_sent, idle_received = counter_value(idle.get("sent")), counter_value(idle.get("received"))
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
    budget = budget_value(probes.get("max_retransmit_percent"), DEFAULT_RETRANSMIT_PERCENT, zero=True)
    judged = False
    for entries in by_pair(measured):
        counted = [(budget_value(e.get("retransmit_percent"), None, zero=True), e) for e in entries if not e.get("error")]
        counted = [(share, e) for share, e in counted if share is not None]
        if not counted:
            continue
        judged = True
        entry = counted[0][1]
        if len(counted) == 1:
            share = counted[0][0]
            count, sent, mss = (counter_value(entry.get(k)) for k in ("retransmits", "bytes", "mss"))
            said = " of %d segments" % (sent // mss) if sent and mss else ""
            over, runs = "", {}
        else:  # several runs: the share of all their segments, where every run counted them
            numbers = [[counter_value(e.get(k)) for k in ("retransmits", "bytes", "mss")] for _s, e in counted]
            if all(None not in n and n[2] for n in numbers) and sum(b // m for _r, b, m in numbers):
                count, sent = sum(r for r, _b, _m in numbers), sum(b for _r, b, _m in numbers)
                segments = sum(b // m for _r, b, m in numbers)
                share, said = 100.0 * count / segments, " of %d segments" % segments
                over = " over %d runs" % len(counted)
            else:
                share, entry = max(counted, key=lambda c: c[0])
                count, sent = counter_value(entry.get("retransmits")), counter_value(entry.get("bytes"))
                said, over = "", " in the worst of %d runs" % len(counted)
            mss, runs = counter_value(entry.get("mss")), {"runs": len(counted)}
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
    budget = budget_value(probes.get("max_goodput_spread_percent"), DEFAULT_GOODPUT_SPREAD_PERCENT)
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
