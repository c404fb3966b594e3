# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the probe modules run on a node and how their output is read: ping with the don't-fragment bit, iperf3
servers with a bounded life, iperf3 clients (JSON), nccl-tests' all_reduce_perf table. Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import signal
import time

IPV4_HEADERS = 28   # 20 bytes IPv4 + 8 bytes ICMP
IPV6_HEADERS = 48   # 40 bytes IPv6 + 8 bytes ICMPv6
PID_DIR = "/run/gpuops-fabric/probes"


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


# ---- iperf3 -----------------------------------------------------------------------------------------------
def parse_iperf3(text):
    """Goodput and retransmits from ``iperf3 -J`` (client side). {"gbps", "retransmits", "seconds", "error"}."""
    try:
        data = json.loads(text)
    except ValueError:
        return {"gbps": None, "retransmits": None, "seconds": None,
                "error": "iperf3 printed no JSON: %s" % (text.strip()[-300:] or "(nothing)")}
    if data.get("error"):
        return {"gbps": None, "retransmits": None, "seconds": None, "error": str(data["error"])}
    end = data.get("end") or {}
    received = end.get("sum_received") or {}
    sent = end.get("sum_sent") or {}
    bits = received.get("bits_per_second")
    if bits is None:
        return {"gbps": None, "retransmits": None, "seconds": None, "error": "iperf3 JSON has no end.sum_received"}
    return {"gbps": round(bits / 1e9, 3), "retransmits": sent.get("retransmits"),
            "seconds": round(received.get("seconds") or 0, 2), "error": None}


def pidfile(bind, port):
    return os.path.join(PID_DIR, "iperf3-%s-%d.pid" % (bind.replace(":", "_").replace("%", "_"), port))


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except (IOError, OSError):
        return []


def ours(pid):
    """Whether ``pid`` is still a probe server (the timeout wrapper or iperf3 itself), not a reused pid."""
    argv = _cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]) in ("timeout", "iperf3") and any(
        os.path.basename(a) == "iperf3" for a in argv)


def _proc_address(text):
    """The address of a /proc/net/tcp{,6} field (hex, 32-bit words in host byte order) as an ip_address."""
    import ipaddress
    import struct
    raw = bytes.fromhex(text)
    words = struct.unpack("=%dI" % (len(raw) // 4), raw)
    return ipaddress.ip_address(struct.pack(">%dI" % len(words), *words))


def listening(port, address=None, proc="/proc"):
    """Whether a TCP socket listens on ``port`` (and on ``address`` when given) in this network namespace. Reads
    /proc/net/tcp and tcp6: a test connection would use up a one-off server's only client."""
    import ipaddress
    wanted = ipaddress.ip_address(address) if address else None
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc, "net", name)) as handle:
                lines = handle.read().splitlines()[1:]
        except (IOError, OSError):
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != "0A":
                continue
            local, _sep, hexport = fields[1].rpartition(":")
            if int(hexport, 16) != port:
                continue
            if wanted is None or _proc_address(local) == wanted:
                return True
    return False


def stop(pid, grace=2.0):
    """Terminate a probe server's process group (timeout and its iperf3); True when something was stopped."""
    if not ours(pid):
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except OSError as exc:
            if exc.errno == errno.ESRCH:
                return True
            raise
        deadline = time.time() + grace
        while time.time() < deadline:
            if not ours(pid):
                return True
            time.sleep(0.05)
    return True


# ---- nccl-tests -------------------------------------------------------------------------------------------
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(?:(-?\d+)\s+)?(%s|N/A)\s+(%s|N/A)\s+(%s|N/A)\s+(\S+)"
                  r"(?:\s+(%s|N/A)\s+(%s|N/A)\s+(%s|N/A)\s+(\S+))?\s*$" % ((_NUM,) * 6))
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(%s)" % _NUM)
_RANK = re.compile(r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*)$")


def _float(text):
    return None if text in (None, "N/A") else float(text)


def parse_nccl_tests(text):
    """The table nccl-tests prints (all_reduce_perf and friends), old layout (no root column) and new.

    Returns {"rows": [{"bytes", "count", "type", "redop", "root", "time_us", "algbw", "busbw", "wrong",
    "in_place": {...}}], "avg_busbw": float or None, "ranks": [{"rank", "host", "device", "bus", "name"}],
    "max_busbw": float or None}. busbw and algbw in GB/s as printed. A row with a non-numeric error/#wrong column
    (nccl-tests prints N/A without validation) has wrong None.
    """
    rows, ranks = [], []
    avg = None
    for line in text.splitlines():
        match = _RANK.search(line)
        if match:
            ranks.append({"rank": int(match.group(1)), "host": match.group(2), "device": int(match.group(3)),
                          "bus": match.group(4), "name": match.group(5).strip()})
            continue
        found = _AVG.search(line)
        if found:
            avg = float(found.group(1))
            continue
        if line.lstrip().startswith("#"):
            continue
        row = _ROW.match(line)
        if not row:
            continue
        g = row.groups()
        entry = {"bytes": int(g[0]), "count": int(g[1]), "type": g[2], "redop": g[3],
                 "root": int(g[4]) if g[4] is not None else None,
                 "time_us": _float(g[5]), "algbw": _float(g[6]), "busbw": _float(g[7]), "wrong": _wrong(g[8])}
        if g[9] is not None:
            entry["in_place"] = {"time_us": _float(g[9]), "algbw": _float(g[10]), "busbw": _float(g[11]),
                                 "wrong": _wrong(g[12])}
        rows.append(entry)
    busbws = [r["busbw"] for r in rows if r["busbw"] is not None]
    return {"rows": rows, "avg_busbw": avg, "ranks": ranks, "max_busbw": max(busbws) if busbws else None}


def _wrong(text):
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None
