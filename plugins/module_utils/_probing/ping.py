# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Full-size ping probes: the payload for an MTU, the argv, and parsing and judging ping's output."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import math
import re
from concurrent.futures import ThreadPoolExecutor

IPV4_HEADERS = 28   # 20 bytes IPv4 + 8 bytes ICMP
IPV6_HEADERS = 48   # 40 bytes IPv6 + 8 bytes ICMPv6


# ---- ping ---------------------------------------------------------------------------------------------------
def payload(mtu, version):
    """The largest ICMP echo payload a frame of ``mtu`` carries without fragmenting."""
    return mtu - (IPV6_HEADERS if version == 6 else IPV4_HEADERS)


def ping_argv(ping, address, size, version, count=3, wait=1.0, source=None):
    argv = [ping, "-n", "-M", "do", "-s", str(size), "-c", str(count), "-i", "0.2", "-W", "%g" % wait]
    if version == 6:
        argv.insert(1, "-6")
    if source:
        argv += ["-I", source]
    return argv + [address]


_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received(?:, \+(\d+) errors)?")
_LOCAL = re.compile(r"local error: (.*?)(?:\n|$)")


def parse_ping(output):
    """{"sent", "received", "errors", "local_error"} from iputils ping's output (-q)."""
    found = _SUMMARY.search(output)
    local = _LOCAL.search(output)
    result = {"sent": None, "received": None, "errors": 0, "local_error": local.group(1).strip() if local else None}
    if found:
        result.update(sent=int(found.group(1)), received=int(found.group(2)), errors=int(found.group(3) or 0))
    return result


def judge_ping(jumbo, small):
    """ok | loss (some jumbo replies lost) | mtu (small frames pass, full-size ones do not) | unreachable | error"""
    if jumbo.get("received") is None:
        return "error"
    if jumbo["received"] and jumbo["received"] == jumbo["sent"]:
        return "ok"
    if jumbo["received"]:
        return "loss"
    if jumbo.get("local_error"):
        return "mtu"
    if small.get("received"):
        return "mtu"
    return "unreachable" if small.get("received") is not None else "error"


TARGET_TYPES = (("peer", str, True), ("address", str, True), ("network", str, True), ("mtu", int, True),
                ("source", str, False), ("interface", str, False), ("interface_mtu", int, False),
                ("peer_interface", str, False), ("peer_mtu", int, False))


def check_targets(targets, where="targets"):
    """Why a list of ping targets (as gpuops.fabric.probe_plan gives them) is not one, naming the entry and key; None
    when it is."""
    if not isinstance(targets, list):
        return "%s: %r is not a list" % (where, targets)
    for index, target in enumerate(targets):
        if not isinstance(target, dict):
            return "%s[%d]: %r is not a dict" % (where, index, target)
        for key, kind, required in TARGET_TYPES:
            value = target.get(key)
            if value is None:
                if required:
                    return "%s[%d].%s: missing" % (where, index, key)
            elif not isinstance(value, kind) or isinstance(value, bool):
                return "%s[%d].%s: %r is not a%s" % (where, index, key, value, "n integer" if kind is int else " string")
        if not 68 <= target["mtu"] <= 65535:
            return "%s[%d].mtu: %r is outside 68..65535" % (where, index, target["mtu"])
    return None


def probe_path(run, ping, target, count, wait):
    """Full-size, then small pings from this node to ``target`` (``run``: AnsibleModule.run_command): the target with
    its payload, status (judge_ping), and both parts' summaries."""
    try:
        version = ipaddress.ip_address(target["address"]).version
    except ValueError:
        return dict(target, payload=None, status="error", jumbo={}, small={},
                    error="address %r is not an IP address" % target["address"])
    size = payload(target["mtu"], version)
    out = {}
    for kind, length in (("jumbo", size), ("small", 56)):
        _rc, stdout, stderr = run(ping_argv(ping, target["address"], length, version, count, wait, target.get("source")))
        out[kind] = parse_ping(stdout + "\n" + stderr)
        if out[kind]["sent"] is None:
            out[kind]["output"] = (stdout + stderr).strip()[-300:]
    return dict(target, payload=size, status=judge_ping(out["jumbo"], out["small"]), jumbo=out["jumbo"],
                small=out["small"])


def probe_paths(run, ping, targets, count=3, wait=1.0, parallel=8):
    """probe_path for every target, ``parallel`` at once, in the targets' order."""
    if not targets:
        return []
    with ThreadPoolExecutor(max_workers=min(parallel, len(targets))) as pool:
        return list(pool.map(lambda t: probe_path(run, ping, t, count, wait), targets))


def said_paths(probes):
    bad = [p for p in probes if p["status"] != "ok"]
    return "%d of %d path(s) carry full-size frames" % (len(probes) - len(bad), len(probes))


# ---- latency (round-trip times at idle and under load) ------------------------------------------------------------
MAX_OUTPUT = 4 << 20  # bytes of ping output read; a reply line is under 100, so this holds 40000 of them


def latency_argv(ping, address, version, count, interval=0.2, wait=2.0, source=None):
    """Plain (56-byte) pings at ``interval`` seconds, each waited for at most ``wait`` seconds."""
    argv = [ping, "-n", "-c", str(count), "-i", "%g" % interval, "-W", "%g" % wait]
    if version == 6:
        argv.insert(1, "-6")
    if source:
        argv += ["-I", source]
    return argv + [address]


MAX_PINGS = 20000  # per run: ~70 bytes a reply line, so a run's whole output stays far below MAX_OUTPUT
_REPLY = re.compile(r"^\d+ bytes from \S+(?: \(\S+\))?:? (?:icmp_)?seq=\d+ ")
_TIME = re.compile(r" time[=<] ?([0-9]{1,9}(?:\.[0-9]{1,9})?) ?ms")


def parse_rtts(output):
    """Round-trip times (ms) of the replies in iputils or busybox ping's per-packet lines, duplicates left out. Line
    by line with anchored patterns: linear in the output, whatever it holds."""
    rtts = []
    for line in output[:MAX_OUTPUT].splitlines():
        if not _REPLY.match(line) or "DUP" in line:
            continue
        found = _TIME.search(line, 0, 300)
        if found:
            rtts.append(float(found.group(1)))
    return rtts


def percentile(values, share):
    """The nearest-rank percentile (``share`` in 0..100) of ``values``; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(math.ceil(share / 100.0 * len(ordered))))
    return ordered[min(rank, len(ordered)) - 1]


def summarize_latency(output):
    """{"sent", "received", "loss_percent", "min_ms", "p50_ms", "p99_ms", "max_ms", "samples"} of one ping run;
    the times are None when no reply came, the counts None when ping printed no summary."""
    output = output[:MAX_OUTPUT]
    counts = parse_ping(output)
    rtts = parse_rtts(output)
    sent, received = counts["sent"], counts["received"]
    if received is None and rtts:
        received = len(rtts)
    loss = round(100.0 * (sent - received) / sent, 2) if sent and received is not None else None
    result = {"sent": sent, "received": received, "loss_percent": loss, "samples": len(rtts)}
    for key, value in (("min_ms", percentile(rtts, 0)), ("p50_ms", percentile(rtts, 50)),
                       ("p99_ms", percentile(rtts, 99)), ("max_ms", max(rtts) if rtts else None)):
        result[key] = round(value, 3) if value is not None else None
    return result
