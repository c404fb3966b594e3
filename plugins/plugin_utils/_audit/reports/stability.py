# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The reports' stability section: per host, each counter's growth over the window (since the baseline, or since
boot without one) and its rate per hour, from the same two readings the STAB rules compare (_audit/window.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import PORT_NETDEVS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ethtool_stats import kind as stats_kind
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import HostContext, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.window import (
    INTERFACE_DROPS, INTERFACE_ERRORS, LINKED, RDMA_PORT_ERRORS, RDMA_TRANSPORT_ERRORS, Window, counters,
    interfaces_of, tcp_growth, unusable, window,
)

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
    ports = interfaces_of(win, PORT_NETDEVS)
    aer = win.section("now", "aer")
    linked = interfaces_of(win, LINKED)
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
