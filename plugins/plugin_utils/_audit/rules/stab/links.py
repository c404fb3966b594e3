# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family STAB, its links, ports and devices: stability between two readings of the counters -- link flaps, interface errors and drops, PCIe
AER errors, RDMA port errors. Totals since boot say little (a NIC's own link-up at boot counts as a carrier change);
growth between an earlier audit's report (``fabric_audit_baseline``) and now says what happens while the cluster
runs. A counter lower than its baseline (a reboot, a driver reload) counts again from zero, never negatively.

The baseline is checked field by field first (baseline.check_counters): a host entry that cannot be used (not a
number where the uptime or boot time belongs, a reading from the future, the same reading as now) makes the host
judged exactly as without a baseline, and a counter that cannot be used is not compared. A rule that could compare
nothing is not applicable, never a pass."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import PORT_NETDEVS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ethtool_stats import kind as stats_kind
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import DEFAULT_TCP_RETRANSMIT_PERCENT
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.window import (
    DROP_SHARE, DROPS_PER_HOUR, INTERFACE_DROPS, INTERFACE_ERROR_TOTALS, INTERFACE_ERRORS, LINKED, MIN_TCP_SEGMENTS,
    NO_BASELINE, RDMA_PER_HOUR, RDMA_PORT_ERRORS, RDMA_TRANSPORT_ERRORS, bond_members, budget_value, compared_nothing,
    counter_section, counter_value, counters, interfaces_of, tcp_growth, tcp_of, window, without,
)


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
        raise NotApplicable(without(ctx, "link flaps are " + NO_BASELINE))
    if win.since_boot:
        # boot bounces links on its own (a bond enslaving its ports, NetworkManager taking over from the initrd)
        raise NotApplicable("the host rebooted after the baseline: link flaps are judged again from the next audit, "
                            "with this one as its baseline")
    for name in interfaces_of(win, LINKED):
        entry = win.now["interfaces"][name]
        downs = win.downs(name)
        if not downs:
            continue
        ctx.finding(name, "%s: the link went down %d time(s) %s (%s per hour)" % (
            name, downs, win.said(), win.per_hour(downs)),
            dict(win.evidence(), interface=name, flaps=downs, per_hour=win.per_hour(downs),
                 carrier_changes=entry.get("carrier_changes"), carrier_down_count=entry.get("carrier_down_count"),
                 carrier_up_count=entry.get("carrier_up_count")))
    compared_nothing(win, "link flaps")


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
        raise NotApplicable(without(ctx, "error and drop growth is " + NO_BASELINE))
    bonds = bond_members(ctx)
    members = set(m for ports in bonds.values() for m in ports)
    # a bond's statistics are its ports' summed: the ports are judged, the bond only where it has none counted
    counted = set(interfaces_of(win, PORT_NETDEVS))
    for name in interfaces_of(win, LINKED):
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
    compared_nothing(win, "error and drop growth")


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
    aer = counter_section(now, "aer")
    if not aer:
        raise NotApplicable("no AER counters (the kernel exposes aer_dev_* with AER on, for the GPUs', NICs' and "
                            "bridges' functions)")
    win = window(ctx)
    pci = ctx.pci()
    for address in sorted(aer):
        names = (pci.get(address) or {}).get("name") or (pci.get(address) or {}).get("kind") or "device"
        for kind in ("fatal", "nonfatal"):
            entry = aer[address].get(kind)
            total = counter_value(entry.get("total")) if isinstance(entry, dict) else None
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
    """InfiniBand and RoCE port counters that grew between two readings: link_downed (the link went down: any
    increase), link_error_recovery (the link retrained), integrity errors and buffer overruns, receive errors; symbol
    errors (the physical layer's bit errors, which a healthy link shows now and then) above 120 per hour; and the
    transport's own (out_of_sequence, packet_seq_err, local_ack_timeout_err: lost packets retransmitted, on RoCE
    usually a lossy fabric without PFC or ECN; Soft-RoCE names them out_of_seq_request, rcvd_seq_err,
    completer_retry_err and retry_exceeded_err). Each stalls the RDMA traffic of every collective on that port. The
    growth allowed per hour is fabric_expectations.rdma_counters (0 for all but symbol_error by default).""",
    """Physical-layer errors: the cable or transceiver and the switch port (mlxlink, the switch's port counters).
    Transport errors on RoCE: the lossless settings (PFC on the RoCE priority, ECN) along the whole path.""")
def rdma_errors(ctx):
    now = counters(ctx)
    if not counter_section(now, "rdma"):
        raise NotApplicable("no RDMA port counters (no RDMA device, or its driver exposes none)")
    win = window(ctx)
    if win is None:
        raise NotApplicable(without(ctx, "RDMA error growth is " + NO_BASELINE))
    limits = ctx.expect.get("rdma_counters") or RDMA_PER_HOUR
    for port in sorted(counter_section(now, "rdma")):
        grown = dict((c, win.growth("rdma", port, c)) for c in RDMA_PORT_ERRORS + RDMA_TRANSPORT_ERRORS)
        grown = dict((c, g) for c, g in grown.items() if g)
        # within its allowance: a counter allowed some growth per hour that grew less (a window of unknown length
        # allows none)
        tolerated = dict((c, g) for c, g in grown.items() if limits.get(c) and win.per_hour(g) is not None
                         and win.per_hour(g) <= limits[c])
        judged = dict((c, g) for c, g in grown.items() if c not in tolerated)
        if not judged:
            continue
        said = ", ".join("%s +%d%s" % (c, g, " (%s per hour, allowed %g)" % (win.per_hour(g), limits[c])
                                       if limits.get(c) else "") for c, g in sorted(judged.items()))
        ctx.finding(port, "%s: %s %s" % (port, said, win.said()),
                    dict(win.evidence(), port=port, counters=judged, tolerated=tolerated,
                         allowed_per_hour=dict((c, limits[c]) for c in sorted(judged) if limits.get(c)),
                         per_hour=dict((c, win.per_hour(g)) for c, g in sorted(judged.items()))))
    compared_nothing(win, "RDMA error growth")


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
    if not tcp_of(now):
        raise NotApplicable("no TCP counters (/proc/net/snmp was not read)")
    win = window(ctx)
    if win is None:
        raise NotApplicable(without(ctx, "TCP retransmits are " + NO_BASELINE))
    grown = tcp_growth(win)
    if grown is None:
        raise NotApplicable("TCP counters out_segs and retrans_segs are missing from one of the readings, or more "
                            "segments were sent again than sent")
    if grown["out_segs"] < MIN_TCP_SEGMENTS:
        raise NotApplicable("%d TCP segments sent %s: too few to judge a rate (at least %d)" % (
            grown["out_segs"], win.said(), MIN_TCP_SEGMENTS))
    share = 100.0 * grown["retrans_segs"] / grown["out_segs"]
    budget = budget_value(ctx.expect.get("tcp_retransmit_budget"), DEFAULT_TCP_RETRANSMIT_PERCENT, zero=True)
    if share > budget:
        ctx.finding("tcp", "%d of %d TCP segments sent again %s (%.3g%%), budget %.3g%% "
                    "(fabric_audit_max_tcp_retransmit_percent)" % (
                        grown["retrans_segs"], grown["out_segs"], win.said(), share, budget),
                    dict(win.evidence(), retrans_segs=grown["retrans_segs"], out_segs=grown["out_segs"],
                         retransmit_percent=round(share, 4), budget_percent=budget,
                         per_hour=win.per_hour(grown["retrans_segs"])))
