# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""perftest's RDMA probes (ib_write_bw, ib_write_lat): their text reports parsed, whatever version printed them.

A report is a block of "Name : value" settings (two to a line in some versions, separated by tabs), the two ends'
addresses, and a table: a header line that starts with ``#bytes`` whose column names are separated by blanks (some
names hold one: "BW peak[Gb/sec]", "99% percentile[usec]"), then one row of numbers per message
size. Bandwidth is in MB/sec or MiB/sec (both 2^20 bytes) unless --report_gbits printed Gb/sec (10^9 bits); both
are returned in Gbit/s. A run by duration (-D) prints a latency table of four columns (no percentiles) and a
bandwidth peak of 0.00, returned as None (not measured). The output is read bounded: at most MAX_OUTPUT characters,
each line cut at MAX_LINE, at most MAX_ROWS rows; a line that is not what its place expects is skipped, never a
reason to fail."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import socket
import time

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import run_capped
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite

MAX_OUTPUT = 256 * 1024  # characters of a report looked at
MAX_LINE = 1000
MAX_ROWS = 64  # -a prints 23 sizes (2 B to 8 MiB)
MIB_GBITS = 2 ** 20 * 8 / 1e9  # one perftest MB/sec in Gbit/s

# column header (units stripped, lower case) -> key
_COLUMNS = {
    "#bytes": "bytes", "#iterations": "iterations",
    "bw peak": "bw_peak_gbps", "bw average": "bw_average_gbps", "msgrate": "msg_rate_mpps",
    "t_min": "t_min_us", "t_max": "t_max_us", "t_typical": "t_typical_us", "t_avg": "t_avg_us",
    "t_stdev": "t_stdev_us", "99% percentile": "p99_us", "99.9% percentile": "p999_us",
    "tps average": "tps_average",  # -D latency: 4 columns
}
BW_KEYS = ("bytes", "iterations", "bw_peak_gbps", "bw_average_gbps", "msg_rate_mpps")
LAT_KEYS = ("bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us",
            "p999_us", "tps_average")
# "Name : value" settings of the report's head, as keys
_SETTINGS = {"device": "device", "link type": "link_type", "gid index": "gid_index", "mtu": "mtu",
             "transport type": "transport", "connection type": "connection", "number of qps": "qps",
             "data ex. method": "exchange"}
# "Name : value", two to a line after a tab or (in a copy that expanded the tabs) a run of blanks
_NAME = r"[A-Za-z][A-Za-z0-9.*_/-]*(?: [A-Za-z0-9.*_/-]+)*"
_SETTING = re.compile(r"(%s)\s*:[ \t]*(\S.*?)(?=\s{2,}%s\s*:|\t|$)" % (_NAME, _NAME))
# a header's column names: "#bytes #iterations" are one blank apart, "BW peak[Gb/sec]" holds one
_HEADER = re.compile(r"BW \w+\[[^\]]*\]|[\d.]+% percentile\[[^\]]*\]|tps average|\S+")
_UNIT = re.compile(r"\[([^\]]*)\]\s*$")
# lines perftest (or the loader) prints when something went wrong; kept as the report's error
_ERROR = re.compile(r"(?i)\b(couldn'?t|could not|unable|failed|failure|error|cannot|can't|not supported|"
                    r"no such|invalid|timeout|timed out|mismatch|refused)\b")
_WARNING = re.compile(r"(?i)^\s*(?:[\w.-]+:\s*)?warning\b|^\s*conflicting cpu frequency")


def _lines(text):
    if not isinstance(text, str):
        text = (text or b"").decode("utf-8", "replace") if isinstance(text, bytes) else ""
    for line in text[:MAX_OUTPUT].replace("\r", "\n").split("\n"):
        yield line[:MAX_LINE]


def _column(name):
    """(key, unit) of a table header's column, or (None, unit) for one this parser does not know."""
    unit = _UNIT.search(name)
    bare = _UNIT.sub("", name).strip().lower()
    return _COLUMNS.get(bare), (unit.group(1).strip().lower() if unit else None)


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return finite(value)


# what perftest prints for a figure it could not compute (t_stdev of a run with one very slow write: "-nan")
_NOT_A_FIGURE = frozenset(("nan", "-nan", "+nan", "inf", "-inf", "+inf"))


def _row(columns, fields):
    """A table row as {key: number}: None where the row is not one (a field is neither a number nor perftest's
    nan or inf, or the count differs). A nan or inf field is None in the row (not measured); the row's other
    figures stand."""
    if len(fields) != len(columns):
        return None
    row = {}
    for (key, unit), field in zip(columns, fields):
        value = _number(field)
        if value is None:
            if field.lower() not in _NOT_A_FIGURE:
                return None
            if key in ("bytes", "iterations"):
                return None
            if key is not None:
                row[key] = None
            continue
        if key is None:
            continue
        if key.startswith("bw_"):
            if unit in ("mb/sec", "mib/sec"):
                value *= MIB_GBITS
            elif unit != "gb/sec":
                return None  # a unit this parser does not know: no figure rather than a wrong one
            value = round(value, 4)
        elif key in ("bytes", "iterations"):
            if value < 0 or value != int(value):
                return None
            value = int(value)
        row[key] = value
    if row.get("bw_peak_gbps") == 0 and row.get("bw_average_gbps"):
        row["bw_peak_gbps"] = None  # -D (and many iterations) prints 0.00: the peak was not measured
    return row


def parse_perftest(text):
    """{"test", "settings", "rows", "errors", "warnings"} from a perftest report (client or server side).

    ``test`` is perftest's own title ("RDMA_Write BW Test"), ``settings`` the head's known settings (device,
    link_type, gid_index, mtu, transport, connection, qps, exchange: as printed, gid_index and qps as numbers),
    ``rows`` the table (BW_KEYS or LAT_KEYS, numbers; bandwidth in Gbit/s, times in microseconds), ``errors`` and
    ``warnings`` the lines that say something went wrong or may be off (at most 20 each)."""
    result = {"test": None, "settings": {}, "rows": [], "errors": [], "warnings": []}
    columns = None
    for line in _lines(text):
        stripped = line.strip()
        if not stripped or set(stripped) <= set("-"):
            continue
        if stripped.startswith("#bytes"):
            columns = [_column(name) for name in _HEADER.findall(stripped)]
            continue
        if columns is not None and stripped[0].isdigit():
            row = _row(columns, stripped.split())
            if row is not None and len(result["rows"]) < MAX_ROWS:
                result["rows"].append(row)
                continue
        if result["test"] is None and stripped.endswith(" Test") and ":" not in stripped and len(stripped) < 80:
            result["test"] = stripped
            continue
        matched = False
        for setting in _SETTING.finditer(line):
            name = setting.group(1).lower()
            if name in _SETTINGS:
                key, value = _SETTINGS[name], setting.group(2).strip()
                if key in ("gid_index", "qps"):
                    value = int(value) if value.isdigit() else None
                result["settings"].setdefault(key, value)
                matched = True
        if matched:
            continue
        if _WARNING.match(stripped):
            if len(result["warnings"]) < 20:
                result["warnings"].append(stripped)
        elif _ERROR.search(stripped) and len(result["errors"]) < 20:
            result["errors"].append(stripped)
    return result


# ---- running a pair --------------------------------------------------------------------------------------------
RDMA_EXTRA_S = 25  # a round's slot with the rdma probe: + the measurement's duration (ib_write_bw -D) + this
LAT_ITERATIONS = 1000  # ib_write_lat's writes (2 bytes each): milliseconds on a real port
# where an end is software RoCE (rxe, siw): the CPU is the NIC, and a busy one took 22 ms a write under emulation
LAT_ITERATIONS_SOFTWARE = 200
# ib_write_lat runs until the round's slot ends: its writes are a ping-pong, so a client cut off early leaves its
# server waiting for the slot's end anyway. Under software emulation on a busy machine 1000 writes took 8 s and more
# (a fixed 10 s cut most of them). A run is started only while this much of the slot is left.
LAT_MIN_S = 10
SETUP_S = 10  # beyond -D: connecting the queue pairs and registering memory, slow under emulation
DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # an RDMA device name: never an option or a path
REFUSED = ("couldn't connect", "unable to open file descriptor for socket connection")


def part_problem(part):
    """Why an ``rdma`` entry of a round's part cannot be run (None when it can): the device, port, GID index and
    TCP port are checked before any of them reaches an argv."""
    if not isinstance(part, dict):
        return "%r is not a mapping" % (part,)
    if part.get("skip"):
        return None
    device = part.get("device")
    if not isinstance(device, str) or not DEVICE.match(device):
        return "device: %r is not an RDMA device name" % (device,)
    for key, low, high, nullable in (("port", 1, 255, False), ("gid_index", 0, 65535, True),
                                     ("tcp_port", 1, 65534, False), ("lat_iterations", 1, 100000, True)):
        value = part.get(key)
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return "%s: %r is not a whole number in %d..%d" % (key, value, low, high)
    return None


def perftest_argv(binary, part, extra, server=None, offset=0):
    """perftest's argv for this end of a pair: its device, port and GID index (none on InfiniBand), the exchange's
    TCP port (``tcp_port`` + ``offset``: ib_write_lat has the next one), no CPU frequency warning; ``server`` is the
    peer's address on the client."""
    argv = [binary, "-d", part["device"], "-i", str(part["port"]), "-p", str(part["tcp_port"] + offset), "-F"]
    if part.get("gid_index") is not None:
        argv += ["-x", str(part["gid_index"])]
    return argv + list(extra) + ([server] if server else [])


def _tools(duration, part):
    """(program, its options, its time limit (None: the rest of the slot), the least time a run is started with, its
    TCP port's offset from the part's tcp_port) in the order they run; ib_write_lat's writes as the plan counted them
    for both ends (``lat_iterations``), LAT_ITERATIONS where it did not."""
    iterations = part.get("lat_iterations") or LAT_ITERATIONS
    return (("ib_write_bw", ["-D", str(duration), "--report_gbits"], duration + SETUP_S, duration + SETUP_S, 0),
            ("ib_write_lat", ["-n", str(iterations)], None, LAT_MIN_S, 1))


def route_problem(server, bind=None):
    """What the kernel's routing says of the way to ``server`` (an address), without sending anything (a UDP socket's
    connect only looks the route up): no route (its error: none, blackhole, unreachable, prohibited), or a route
    that leaves from another address than this end's ``bind``; None when the route is this end's."""
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    try:
        socket.inet_pton(family, server)  # an address, never a name to resolve
    except (OSError, socket.error, ValueError, TypeError):
        return None
    try:
        probe = socket.socket(family, socket.SOCK_DGRAM)
    except (OSError, socket.error):
        return None  # no socket to ask with: nothing seen
    try:
        probe.connect((server, 9))
        source = probe.getsockname()[0]
    except (OSError, socket.error, ValueError) as exc:
        return "no route to %s (%s)" % (server, getattr(exc, "strerror", None) or exc)
    finally:
        probe.close()
    if bind and not _same_address(family, source, bind):
        return "the kernel routes %s from %s, not from this end's address %s" % (server, source, bind)
    return None


def _same_address(family, one, other):
    """Whether two texts spell the same address of ``family`` (IPv6 has many spellings of one address)."""
    try:
        return socket.inet_pton(family, one) == socket.inet_pton(family, str(other))
    except (OSError, socket.error, ValueError, TypeError):
        return False


def _unanswered(parsed, why):
    """Whether a client's run was cut by its time (``why``) having printed nothing: perftest prints its settings only
    once the peer's perftest has answered, so it never heard from it."""
    return bool(why) and not parsed["errors"] and not parsed["settings"] and not parsed["rows"]


def cause(parsed, why=None, silent=False):
    """What a failed perftest run says about its cause, in words: the TCP exchange that did not connect, the queue
    pair that could not reach RTR or RTS (the GID index, path MTU or route between the GIDs), or its own lines.
    ``silent``: a client that printed nothing before its time was up never heard from the peer's perftest."""
    errors = " ".join(parsed["errors"]).lower()
    if silent and _unanswered(parsed, why):
        return ("%s, having printed nothing: no answer from the peer's perftest (its TCP port dropped by a firewall, "
                "or the path down)" % why)
    if why:
        return why
    if any(r in errors for r in REFUSED):
        return ("no TCP connection to the peer's perftest (port closed, no route to its address, a firewall, or its "
                "server did not start): %s" % "; ".join(parsed["errors"][:2]))
    if "to rtr" in errors or "to rts" in errors or "connect the hca" in errors:
        return ("the queue pair did not connect (the GID index or its type, the path MTU, or no route between the "
                "two GIDs): %s" % "; ".join(parsed["errors"][:3]))
    if parsed["errors"]:
        return "; ".join(parsed["errors"][:3])
    return "perftest printed no result"


def run_client(module, part, server, duration, until, run=None, bind=None, route=None):
    """This end of a pair as the client: ib_write_bw for ``duration`` seconds, then ib_write_lat, each tried again
    while the peer's server is not up yet and ``until`` (a time) allows. {"gbps", "bandwidth", "latency", "error",
    "warnings"}: the average bandwidth in Gbit/s and its row, the latency row (microseconds: t_min, t_typical, t_avg,
    t_max, p99, p999), and the first failure's cause. Where the peer's perftest could not be reached, the kernel's
    route to ``server`` from this end's address ``bind`` is looked up (``route``, route_problem) and named when it
    explains it."""
    route = route or route_problem
    run = run or run_capped
    result = {"gbps": None, "bandwidth": None, "latency": None, "error": None, "warnings": []}
    for tool, extra, limit, minimum, offset in _tools(duration, part):
        binary = module.get_bin_path(tool)
        if not binary:
            result["error"] = "perftest is not installed (%s)" % tool
            return result
        pause = 0.3
        while True:
            left = until - time.time()
            if left < 1:
                result["error"] = "%s: no time left in the round's slot" % tool
                return result
            try:
                code, out, err, why = run(perftest_argv(binary, part, extra, server, offset),
                                          left if limit is None else min(limit, left), MAX_OUTPUT)
            except OSError as exc:
                code, out, err, why = None, "", "", "%s did not run: %s" % (tool, exc)
            parsed = parse_perftest(out + "\n" + err)
            refused = not parsed["rows"] and any(r in " ".join(parsed["errors"]).lower() for r in REFUSED)
            # the peer's server is not up yet (its iperf3 part, the start of its round): again, while the slot
            # still holds a whole run
            if not refused or time.time() + pause + minimum > until:
                break
            time.sleep(pause)
            pause = min(2.0, pause * 1.5)
        result["warnings"] += parsed["warnings"][:5]
        row = parsed["rows"][-1] if parsed["rows"] else None
        if row is None or (code not in (0, None) and not why):
            said = cause(parsed, why, silent=True)
            if refused or _unanswered(parsed, why):
                seen = route(server, bind)
                said = "%s; %s" % (said, seen) if seen else said
            result["error"] = "%s: %s" % (tool, said)
            return result
        if tool == "ib_write_bw":
            if row.get("bw_average_gbps") is None:  # printed as nan or inf
                result["error"] = "%s: perftest printed no average bandwidth" % tool
                return result
            result["bandwidth"], result["gbps"] = row, row.get("bw_average_gbps")
        else:
            result["latency"] = row
    return result


def run_server(module, part, duration, deadline, run=None):
    """This end of a pair as the server: ib_write_bw, then ib_write_lat, each waiting for the client until
    ``deadline`` (a time) at most. The errors, each a text (a server the client never reached says so)."""
    run = run or run_capped
    errors = []
    for tool, extra, _limit, _minimum, offset in _tools(duration, part):
        left = deadline - time.time()
        binary = module.get_bin_path(tool)
        if not binary:
            return ["perftest is not installed (%s)" % tool]
        if left < 1:
            errors.append("%s: no time left in the round's slot" % tool)
            break
        try:
            code, out, err, why = run(perftest_argv(binary, part, extra, offset=offset), left, MAX_OUTPUT)
        except OSError as exc:
            return ["%s did not run: %s" % (tool, exc)]
        parsed = parse_perftest(out + "\n" + err)
        if why or code != 0:
            stalled = why and "did not end within the slot: no client came, or the run stalled (%s)" % why
            errors.append("%s: %s" % (tool, cause(parsed, stalled)))
            break
    return errors
