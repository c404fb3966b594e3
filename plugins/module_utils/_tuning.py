# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Host tuning for the TCP-first path, as pure functions: socket buffers sized to the bandwidth-delay product, the
NIC's ring sizes (``ethtool -g``), and the IRQs of a NIC kept on its NUMA node. The module host_tuning reads the node
and applies; everything here only computes, so it is tested on captures.

Shipped to the nodes: standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Socket buffers: twice the bandwidth-delay product of one flow (TCP's receive window needs the BDP plus what the
# application has not read yet; Linux gives half of the buffer to its own bookkeeping by tcp_adv_win_scale), as a
# power of two, never under 4 MiB and never above 1 GiB.
MIN_BUFFER = 4 * 1024 * 1024
MAX_BUFFER = 1024 * 1024 * 1024
BUFFER_SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
MAX_SYSCTL_TEXT = 256  # a sysctl value longer than this is not one of ours: junk


def buffer_size(speed_mbps, rtt_ms):
    """Bytes of socket buffer a flow at ``speed_mbps`` needs over ``rtt_ms`` of round trip: 2 x BDP, rounded up to
    a power of two, between MIN_BUFFER and MAX_BUFFER. (bytes, BDP in bytes)."""
    bdp = int(speed_mbps * 1e6 / 8 * rtt_ms / 1000.0)
    size = MIN_BUFFER
    while size < 2 * bdp and size < MAX_BUFFER:
        size *= 2
    return size, bdp


def parse_sysctl(text):
    """A value as /proc/sys prints it: a list of ints ("4096\\t131072\\t6291456" -> [4096, 131072, 6291456]), or None
    for anything else (empty, junk, too long)."""
    if text is None or len(text) > MAX_SYSCTL_TEXT:
        return None
    words = text.split()
    if not words or not all(re.match(r"^[0-9]{1,19}\Z", w) for w in words):
        return None
    return [int(w) for w in words]


def wanted_buffers(current, size):
    """The four buffer sysctls (name -> list of ints) that give flows ``size`` bytes, never lower than what the node
    has: the maxima of net.core.[rw]mem_max and the third field of net.ipv4.tcp_[rw]mem are raised to ``size`` where
    they are below it; tcp_[rw]mem keep their minimum and default. ``current``: name -> list of ints or None (not
    readable: left out)."""
    wanted = {}
    for name in BUFFER_SYSCTLS:
        value = current.get(name)
        if name.startswith("net.core."):
            if value is not None and len(value) == 1:
                wanted[name] = [max(value[0], size)]
        elif value is not None and len(value) == 3:
            wanted[name] = [value[0], value[1], max(value[2], size)]
    return wanted


def sysctl_file(values, basis):
    """The sysctl.d file (sorted, one "name = value" a line) that keeps ``values`` across reboots."""
    lines = ["# managed by gpuops.fabric (gpuops.fabric.tuning): %s" % basis]
    for name in sorted(values):
        lines.append("%s = %s" % (name, " ".join(str(v) for v in values[name])))
    return "\n".join(lines) + "\n"


# ---- ethtool -g -------------------------------------------------------------------------------------------------
_RING_LINE = re.compile(r"^(RX|RX Mini|RX Jumbo|TX):\s*([0-9]{1,9}|n/a)\s*\Z")
RING_KEYS = {"RX": "rx", "RX Mini": "rx-mini", "RX Jumbo": "rx-jumbo", "TX": "tx"}
MAX_ETHTOOL_TEXT = 64 * 1024


def parse_rings(text):
    """``ethtool -g`` output -> {"max": {"rx": n, ...}, "current": {...}} with the rings the NIC has (n/a left out),
    or None when the text has no "Pre-set maximums" and "Current hardware settings" sections. Lines past the four
    ring sizes (RX Buf Len, CQE Size, TX Push, ...) are left alone."""
    if not isinstance(text, str) or len(text) > MAX_ETHTOOL_TEXT:
        return None
    found, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Pre-set maximums"):
            section = found.setdefault("max", {})
            continue
        if line.startswith("Current hardware settings"):
            section = found.setdefault("current", {})
            continue
        match = _RING_LINE.match(line)
        if match and section is not None and match.group(2) != "n/a":
            section[RING_KEYS[match.group(1)]] = int(match.group(2))
    if not found.get("max") or not found.get("current"):
        return None
    return found


# A ring larger than this buys nothing for TCP and costs memory (each RX entry holds a buffer: some NICs allow a
# million entries, gigabytes per queue) and cache: rings go to the NIC's maximum, but not past this.
MAX_RING = 8192


def ring_changes(rings):
    """{ring: (current, target)} of the rings (rx, tx) below the NIC's maximum (at most MAX_RING) in parsed
    ``ethtool -g`` output."""
    changes = {}
    for ring in ("rx", "tx"):
        current, maximum = rings["current"].get(ring), rings["max"].get(ring)
        if current is not None and maximum:
            target = min(maximum, MAX_RING)
            if current < target:
                changes[ring] = (current, target)
    return changes
