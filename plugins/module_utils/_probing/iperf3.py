# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""iperf3 probes: parsing iperf3's JSON and managing the server processes this collection starts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import signal
import time

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite

PID_DIR = "/run/gpuops-fabric/probes"


# ---- iperf3 -----------------------------------------------------------------------------------------------
def failed(error):
    """A client result without a measurement."""
    return {"gbps": None, "retransmits": None, "seconds": None, "error": error, "bytes": None, "mss": None,
            "retransmit_percent": None}


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_iperf3(text):
    """Goodput and retransmits from ``iperf3 -J`` (client side): {"gbps", "retransmits", "seconds", "error", "bytes",
    "mss", "retransmit_percent"}; the share of segments retransmitted counts a segment per MSS of bytes sent."""
    try:
        data = json.loads(text)
    except ValueError:
        return failed("iperf3 printed no JSON: %s" % (text.strip()[-300:] or "(nothing)"))
    if not isinstance(data, dict):
        return failed("iperf3 printed JSON that is not an object")
    if data.get("error"):
        return failed(str(data["error"])[:500])
    end = data.get("end") if isinstance(data.get("end"), dict) else {}
    received = end.get("sum_received") if isinstance(end.get("sum_received"), dict) else {}
    sent = end.get("sum_sent") if isinstance(end.get("sum_sent"), dict) else {}
    start = data.get("start") if isinstance(data.get("start"), dict) else {}
    bits, seconds = received.get("bits_per_second"), received.get("seconds")
    if finite(bits, low=0) is None:
        return failed("iperf3 JSON has no end.sum_received")
    if finite(seconds) is None:
        seconds = 0
    retransmits, sent_bytes, mss = _count(sent.get("retransmits")), _count(sent.get("bytes")), _count(
        start.get("tcp_mss_default"))
    share = None
    if retransmits is not None and sent_bytes and mss:
        share = round(100.0 * retransmits * mss / sent_bytes, 4)  # of the segments sent (bytes / MSS)
    return {"gbps": round(bits / 1e9, 3), "retransmits": retransmits, "seconds": round(seconds, 2), "error": None,
            "bytes": sent_bytes, "mss": mss, "retransmit_percent": share}


def pidfile(bind, port):
    return os.path.join(PID_DIR, "iperf3-%s-%d.pid" % (bind.replace(":", "_").replace("%", "_"), port))


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [a.decode("utf-8", "replace") for a in handle.read(65536).split(b"\0") if a]
    except (IOError, OSError):
        return []


def ours(pid):
    """Whether ``pid`` is still a probe server (the timeout wrapper or iperf3 itself), not a reused pid."""
    argv = cmdline(pid)
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


def servers_on(binds, proc="/proc"):
    """The process groups of probe servers (ours) bound to one of ``binds``: found by their command lines, so that
    a run stopped while it was starting a server (its group not known yet) leaves none behind."""
    wanted, groups = set(binds), set()
    try:
        pids = [int(name) for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        argv = cmdline(pid)
        if "-s" not in argv or "-B" not in argv or not ours(pid):
            continue
        index = argv.index("-B")
        if index + 1 < len(argv) and argv[index + 1] in wanted:
            try:
                groups.add(os.getpgid(pid))
            except OSError:
                pass
    return sorted(groups)
