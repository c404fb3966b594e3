# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Host tuning for the TCP-first path, as pure functions: socket buffers sized to the bandwidth-delay product, the
NIC's ring sizes (``ethtool -g``), and the IRQs of a NIC kept on its NUMA node. The module host_tuning reads the node
and applies; everything here only computes, so it is tested on captures.

Shipped to the nodes: standard library only (and the facts' cpulist reader)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import format_cpulist, parse_cpulist

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


# What the kernel takes for each buffer sysctl: how many fields, and each field's range. All four are kept in C ints;
# the fields of tcp_rmem/tcp_wmem are min, default, max, and current kernels refuse a field under 1. A value outside
# these was not read from a running kernel (a damaged capture, an image edited by hand): "sysctl --system" would
# refuse it at boot, so it is never written back.
INT_MAX = 2147483647
SYSCTL_SHAPES = {
    "net.core.rmem_max": (1, 0),
    "net.core.wmem_max": (1, 0),
    "net.ipv4.tcp_rmem": (3, 1),
    "net.ipv4.tcp_wmem": (3, 1),
}


def sysctl_problem(name, values):
    """Why ``values`` (a list of ints) is not a value the kernel takes for the buffer sysctl ``name``, or None."""
    if name not in SYSCTL_SHAPES:
        return "is not one of the buffer sysctls (%s)" % ", ".join(BUFFER_SYSCTLS)
    fields, lowest = SYSCTL_SHAPES[name]
    if len(values) != fields:
        return "has %d field%s; the kernel takes %s" % (
            len(values), "" if len(values) == 1 else "s", "one integer" if fields == 1 else "three (min default max)")
    for value in values:
        if not lowest <= value <= INT_MAX:
            if fields == 1:
                return "is outside %d..%d" % (lowest, INT_MAX)
            return "holds %d, outside %d..%d" % (value, lowest, INT_MAX)
    if fields == 3 and not values[0] <= values[1] <= values[2]:
        return "is not min <= default <= max"
    return None


def read_buffer_sysctl(name, text):
    """One buffer sysctl as read from the node: (list of ints, None) when the kernel would take it, else (None, a
    warning naming the key and the value). ``text`` None (not readable) gives (None, None)."""
    if text is None:
        return None, None
    values = parse_sysctl(text)
    shown = " ".join(text.split())[:80] if len(text) <= MAX_SYSCTL_TEXT else text[:80] + "..."
    if values is None:
        return None, "%s = %r is not a value this module understands (whole numbers only); left alone" % (
            name, shown)
    problem = sysctl_problem(name, values)
    if problem:
        return None, ("%s = %r %s: the kernel would refuse it, so it is neither raised nor written to the sysctl "
                      "file; fix it on the node" % (name, shown, problem))
    return values, None


def wanted_buffers(current, size):
    """The four buffer sysctls (name -> list of ints) that give flows ``size`` bytes, never lower than what the node
    has: the maxima of net.core.[rw]mem_max and the third field of net.ipv4.tcp_[rw]mem are raised to ``size`` where
    they are below it; tcp_[rw]mem keep their minimum and default. ``current``: name -> list of ints or None (not
    readable: left out). A value the kernel would not take (sysctl_problem) is left out too: nothing built on it is
    kept for the next boot."""
    wanted = {}
    for name in BUFFER_SYSCTLS:
        value = current.get(name)
        if value is None or sysctl_problem(name, value) is not None:
            continue
        if name.startswith("net.core."):
            wanted[name] = [max(value[0], size)]
        else:
            wanted[name] = [value[0], value[1], max(value[2], size)]
    return wanted


SYSCTL_DIR = "/etc/sysctl.d/"
# The sysctl file this collection writes (the module and the pre-flight, one rule): a plain file name directly in
# /etc/sysctl.d: letters, digits, _ and -, dots only between them (no "..", no leading dot, no slash), ending in .conf
# (systemd-sysctl and "sysctl --system" read nothing else there).
_SYSCTL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*\.conf\Z")
SYSCTL_NAME_RULE = ("a file name directly in %s: 1-64 characters of A-Z a-z 0-9 _ - and single dots between them, "
                    "ending in .conf" % SYSCTL_DIR)


def sysctl_file_problem(value):
    """Why ``value`` is not a sysctl_file this module writes (SYSCTL_NAME_RULE), or None."""
    if not isinstance(value, str) or not value.startswith(SYSCTL_DIR):
        return "is not in %s" % SYSCTL_DIR
    name = value[len(SYSCTL_DIR):]
    if len(name) > 64 or not _SYSCTL_NAME.match(name):
        return "is not %s" % SYSCTL_NAME_RULE
    return None


def sysctl_file(values, basis):
    """The sysctl.d file (sorted, one "name = value" a line) that keeps ``values`` across reboots."""
    lines = ["# managed by gpuops.fabric (gpuops.fabric.tuning): %s" % basis]
    for name in sorted(values):
        problem = sysctl_problem(name, values[name])
        if problem:  # by construction: the file holds only what the kernel takes at boot
            raise ValueError("%s = %s %s" % (name, " ".join(str(v) for v in values[name]), problem))
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


def plan_buffers(readings, speed, rtt_ms):
    """(live changes {name: (before text, after text)}, the sysctl file's text, size, bdp, notes, warnings), from
    ``readings`` as _tuning_node.read_buffers gives them.

    A value read from the node that the kernel would refuse (out of range, two fields where it takes three, junk) is
    a warning naming the key and the value, and that key is left out: not set live and not in the file for the next
    boot. Not our own default instead: such a value comes from a damaged capture or a hand-edited image, not from a
    running kernel, so what the node really runs with is unknown; writing a size over it could lower what an operator
    meant to set (this module never lowers), and writing the kernel's default min/default fields would invent
    values nobody chose. The operator who reads the warning fixes the one line; the other keys are still tuned."""
    size, bdp = buffer_size(speed, rtt_ms)
    current, notes, warnings = {}, [], []
    for name in BUFFER_SYSCTLS:
        reading = readings.get(name)
        if reading is None:
            current[name] = None  # its path was refused: the module fails before it writes anything
            continue
        text = reading["text"]
        current[name], problem = read_buffer_sysctl(name, text)
        if problem:
            warnings.append(problem)
        elif text is not None and not reading["writable"]:
            notes.append("%s: read-only here (%s; a network namespace or container has the host's): set it on "
                         "the host" % (name, text.strip()))
            current[name] = None
    wanted = wanted_buffers(current, size)
    basis = "socket buffers for %d Mb/s at %g ms round trip (2 x BDP of %d bytes)" % (speed, rtt_ms, bdp)
    live = dict((name, (" ".join(str(v) for v in current[name]), " ".join(str(v) for v in value)))
                for name, value in wanted.items() if current[name] != value)
    return live, sysctl_file(wanted, basis), size, bdp, notes, warnings


NUMA_NODE = re.compile(r"^[0-9]{1,4}\Z")  # a numa_node the kernel assigned (-1: none), and a path component


def plan_irqs(readings):
    """([(port, irq, before, after)], skipped): the interrupts of each port whose affinity leaves its NUMA node, from
    ``readings`` as _tuning_node.read_irqs gives them. An interrupt already on CPUs of its node (irqbalance's choice
    of one of them) is left where it is."""
    moves, skipped = [], []
    for reading in readings:
        port, numa = reading["port"], reading["numa"]
        if not reading["pci"]:
            skipped.append("%s: no PCI function (a virtual interface): IRQs not judged" % port)
            continue
        if not NUMA_NODE.match(numa):
            skipped.append("%s: the kernel knows no NUMA node for it (numa_node %s): IRQs left alone" % (
                port, numa or "missing"))
            continue
        cpus = parse_cpulist(reading["cpulist"])
        if not cpus:
            skipped.append("%s: NUMA node %s lists no CPUs: IRQs left alone" % (port, numa))
            continue
        if not reading["affinity"]:
            skipped.append("%s: no MSI interrupts listed: IRQs not judged" % port)
            continue
        node_cpus, wanted = set(cpus), format_cpulist(cpus)
        for irq, text in sorted(reading["affinity"].items()):
            current = parse_cpulist(text)
            if current is None:
                continue  # gone, or not readable: nothing to judge
            if set(current) - node_cpus:
                moves.append((port, irq, text, wanted))
    return moves, skipped
