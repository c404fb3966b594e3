# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""A NIC's own counters from ``ethtool -S <port>`` (the driver's statistics, as the ethtool tool prints them): the
ones that say a frame was lost or damaged where the kernel's statistics cannot see it -- discards at the port's
buffer (mlx5 rx_discards_phy), a ring without buffers (rx_out_of_buffer, rx_missed_errors), physical-layer errors --
and the pause frames of flow control.

Each driver names its counters its own way, hundreds of them per queue; only those whose name says drop, discard,
error or pause are kept, and per-queue ones are summed under one name with ``*`` for the queue
(``rx*_xdp_drop``... is left out: XDP drops on purpose). ``parse(text)`` -> {name: count}; bounded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import MAX_COUNTER

MAX_BYTES = 2 * 1024 * 1024
MAX_LINES = 20000
MAX_KEPT = 256
_LINE = re.compile(r"^\s*([A-Za-z0-9_\[](?:[A-Za-z0-9_.\-\[\]: /()+#]{0,126}[A-Za-z0-9_\])])?):\s+([0-9]{1,20})\s*$")
# per-queue and per-ring names: mlx5 rx3_..., virtio/ice rx_queue_3_..., i40e rx-3.…, bnxt [3]: …, sfc rx-3.…
_QUEUE = (re.compile(r"^(rx|tx|ch|xdp)(\d+)_"), re.compile(r"^(rx|tx)_queue_(\d+)_"),
          re.compile(r"^(rx|tx)-(\d+)\."), re.compile(r"^\[(\d+)\]: "), re.compile(r"^(queue|q)_?(\d+)_"))
KINDS = (
    ("pause", re.compile(r"pause|xon|xoff|pfc")),
    ("discards", re.compile(r"drop|discard|out_of_buffer|missed|no_buffer|no_dma|fifo|overrun|rx_over|buff_alloc")),
    ("errors", re.compile(r"crc|fcs|symbol|error|_err(?:_|$|s)|jabber|fragment|undersize|oversize|align|fault")),
)
# counted on purpose or normal on fast links (XDP's own drops, FEC corrections per lane, checksum offload misses),
# or not frames (bytes, pause durations in microseconds, interrupts)
_IGNORED = re.compile(r"xdp|corrected|lane|csum|checksum|_fec_|bytes|duration|irq")


def queue_name(name):
    """``name`` with its queue or ring number as ``*`` (rx3_cache_full -> rx*_cache_full), else ``name``."""
    for pattern in _QUEUE:
        match = pattern.match(name)
        if match:
            start, end = match.span(match.lastindex)
            return name[:start] + "*" + name[end:]
    return name


def kind(name):
    """discards, errors or pause for a counter worth keeping; None for the rest."""
    lowered = name.lower()
    if _IGNORED.search(lowered):
        return None
    for label, pattern in KINDS:
        if pattern.search(lowered):
            return label
    return None


def parse(text):
    """{counter name: count} of the counters worth keeping (see ``kind``), per-queue ones summed; {} for output
    that holds none. Lines that are not ``name: count`` are skipped."""
    kept = {}
    for line in (text or "")[:MAX_BYTES].splitlines()[:MAX_LINES]:
        match = _LINE.match(line)
        if not match:
            continue
        name = queue_name(match.group(1))
        if kind(name) is None:
            continue
        if name not in kept and len(kept) >= MAX_KEPT:
            continue
        kept[name] = min(kept.get(name, 0) + int(match.group(2)), MAX_COUNTER)
    return dict(sorted(kept.items()))


def gather(run, ethtool, names):
    """{port: parse(output)} for the named ports on a live node; ports ethtool cannot read (no driver statistics,
    a virtual device) are left out."""
    found = {}
    if not ethtool:
        return found
    for name in names:
        if ifname_problem(name):
            continue  # never an argument ethtool could take for an option ("-s" is a valid Linux name)
        rc, out, _err = run([ethtool, "-S", name])
        if rc == 0 and out.strip():
            stats = parse(out)
            if stats:
                found[name] = stats
    return found
