# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""throughput_probe's work on the node: one-off iperf3 servers, a measurement with pings beside it, and a node's
rounds in step with the other nodes' (each round a slot of the run's schedule). ``module`` is the running
AnsibleModule: its parameters, its tools and its way to fail."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os
import threading
import time

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import (
    STDOUT, TimeoutExpired, run_bounded,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import (
    PID_DIR, failed, listening, ours, parse_iperf3, pidfile, servers_on, stop,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.jobs import Stopped, read_pid, stopped_since
from ansible_collections.gpuops.fabric.plugins.module_utils._probing import perftest
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import (
    MAX_OUTPUT, MAX_PINGS, latency_argv, probe_paths, said_paths, summarize_latency,
)

CLOCK_OFF_S = 10.0  # a node clock this far from the controller's (beyond the task's transport) is corrected for


def start_server(module, bind, port, lifetime, wait):
    """Start a one-off iperf3 server on ``bind``:``port`` that ends after ``lifetime`` seconds whatever happens.
    Returns (process group, None, argv) once it listens, or (None, why it did not start, argv)."""
    iperf3 = module.get_bin_path("iperf3", required=True)
    timeout = module.get_bin_path("timeout", required=True)
    setsid = module.get_bin_path("setsid", required=True)
    if not os.path.isdir(PID_DIR):
        os.makedirs(PID_DIR, 0o700)
    path = pidfile(bind, port)
    old = read_pid(path)
    if old and ours(old):
        stop(old)  # a server of an earlier, interrupted run on the same address and port
    log, own_pid = path[:-4] + ".log", path[:-4] + ".iperf3"
    for name in (log, own_pid):
        if os.path.exists(name):
            os.unlink(name)
    server = [timeout, "-k", "2", str(lifetime), iperf3, "-s", "-1", "-B", bind, "-p", str(port),
              "--idle-timeout", str(lifetime), "-I", own_pid]
    # setsid -f: a new session (so the process group can be stopped as one) that outlives this module; the shell
    # only points its output at the log and its input at /dev/null before it becomes `timeout`.
    argv = [setsid, "-f", "sh", "-c", 'exec "$@" >"$0" 2>&1 </dev/null', log] + server
    rc, out, err = module.run_command(argv)
    if rc != 0:
        return None, "could not start the iperf3 server: %s" % (err or out).strip(), server
    deadline = time.time() + wait
    group = None
    while time.time() < deadline:
        pid = read_pid(own_pid)
        if pid and group is None:
            try:
                group = os.getpgid(pid)
            except OSError:
                pass
            if group:
                with open(path, "w") as handle:
                    handle.write("%d\n" % group)
        if group and listening(port, bind):
            return group, None, server
        said = read_text(log)
        if "error" in said.lower():
            if group:
                stop(group)
            return None, "iperf3 server on %s port %d did not start: %s" % (bind, port, said[-400:]), server
        time.sleep(0.05)
    if group:
        stop(group)
    return None, "iperf3 server on %s port %d did not listen within %g s: %s" % (
        bind, port, wait, read_text(log)[-400:] or "(no output)"), server


def read_text(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return ""


def _ping(argv, timeout):
    """One ping run summarized; its error when it could not run."""
    try:
        done = run_bounded(argv, timeout, stderr=STDOUT)
    except TimeoutExpired:
        return {"error": "ping did not finish within %g s" % timeout}
    except OSError as exc:
        return {"error": "ping did not run: %s" % exc}
    output = done.stdout[:MAX_OUTPUT].decode("utf-8", "replace")
    summary = summarize_latency(output)
    summary["error"] = None if summary["sent"] else "ping gave no summary: %s" % (output.strip()[-200:] or "(nothing)")
    return summary


def _iperf3(argv, limit, during=None):
    """Run the iperf3 client, ``during(cancelled)`` in a thread beside it; the parsed result and what ``during``
    returned. ``cancelled`` is set when iperf3 ended (a refused connection ends it at once)."""
    box, cancelled = {}, threading.Event()
    helper = None
    if during:
        helper = threading.Thread(target=lambda: box.update(value=during(cancelled)))
        helper.daemon = True
        helper.start()
    try:
        done = run_bounded(argv, limit)
        result = parse_iperf3(done.stdout.decode("utf-8", "replace"))
        if result["error"] and done.stderr:
            result["error"] += " (%s)" % done.stderr.decode("utf-8", "replace").strip()[-200:]
    except TimeoutExpired:
        result = failed("iperf3 client did not finish within %d s" % limit)
    except OSError as exc:
        result = failed("iperf3 did not run: %s" % exc)
    cancelled.set()
    if helper is not None:
        helper.join(limit)  # the pings end on their own (count and deadline): bounded
    return result, box.get("value")


# not listening yet; or still serving an earlier client (a round's port serves one client, so not for long)
REFUSED = ("connection refused", "server is busy")
RETRY_FIRST_S = 0.3  # a refused client tries again after 0.3 s, then 1.5 times later each time ...
RETRY_MAX_S = 2.0  # ... at most 2 s


def run_client(module, bind, server, port, connect_until=None):
    """One measurement from ``bind`` to ``server``:``port`` with the module's duration, streams and latency options:
    (result as RETURN describes it, iperf3's argv). ``connect_until``: a time until which a refused connection is
    tried again (the server of this round is not up yet), the idle pings going first."""
    params = module.params
    version = ipaddress.ip_address(server).version
    iperf3 = module.get_bin_path("iperf3", required=True)
    duration = params["duration"]
    argv = [iperf3, "-c", server, "-p", str(port), "-t", str(duration),
            "-P", str(params["streams"]), "-J", "--connect-timeout", "3000"]
    if bind:
        argv += ["-B", bind]
    latency, during = None, None
    if params["latency"]:
        interval = params["latency_interval"]
        ping = module.get_bin_path("ping")
        latency = {"interval": interval, "idle": None, "loaded": None, "error": None}
        if not ping:
            latency["error"] = "ping is not installed (iputils-ping)"
        else:
            def pings(count):
                return latency_argv(ping, server, version, count, interval=interval, wait=2, source=bind)
            idle = params["latency_idle_count"]
            latency["idle"] = _ping(pings(idle), idle * interval + 10)
            # Under load: from the end of slow start to just before iperf3 stops sending.
            ramp = min(1.0, duration / 4.0)
            loaded = min(MAX_PINGS, max(1, int((duration - ramp - 0.3) / interval + 1e-9)))

            def during(cancelled):
                if cancelled.wait(ramp):
                    return None  # iperf3 ended before the load began (refused): no loaded pings
                return _ping(pings(loaded), loaded * interval + 10)
    pause = RETRY_FIRST_S
    while True:
        result, loaded_summary = _iperf3(argv, duration + 20, during)
        refused = result["gbps"] is None and any(r in str(result["error"]).lower() for r in REFUSED)
        if not refused or connect_until is None or time.time() + pause >= connect_until:
            break
        # each try is an iperf3 process: a client whose peer starts late (many nodes, forks fewer than hosts) backs
        # off rather than spending the CPUs the other nodes' starts need
        time.sleep(pause)
        pause = min(RETRY_MAX_S, pause * 1.5)
    if latency is not None:
        # pings beside a measurement that failed measured an idle path: not latency under load
        latency["loaded"] = loaded_summary if result["gbps"] is not None else None
        if latency["error"] is None:
            errors = [part["error"] for part in (latency["idle"], latency["loaded"]) if part and part.get("error")]
            latency["error"] = errors[0] if errors else None
    result["latency"] = latency
    return result, argv


def round_parts(module):
    """The O(rounds) list checked before anything runs: each entry idle, or a server or client part with
    addresses of one IP version and a port."""
    parts = []
    for index, part in enumerate(module.params["rounds"]):
        where = "rounds[%d]" % index
        if not isinstance(part, dict) or part.get("role") not in ("server", "client", "idle"):
            module.fail_json(msg="%s: %r is not a server, client or idle part" % (where, part))
        if part["role"] != "idle":
            for key in ("bind", "port") + (("server",) if part["role"] == "client" else ()):
                if part.get(key) in (None, ""):
                    module.fail_json(msg="%s.%s: missing" % (where, key))
            try:
                versions = set(ipaddress.ip_address(str(part[k])).version for k in ("bind", "server") if k in part
                               and (k == "bind" or part["role"] == "client"))
            except ValueError as exc:
                module.fail_json(msg="%s: %s" % (where, exc))
            if len(versions) != 1:
                module.fail_json(msg="%s: bind %s and server %s are not of the same IP version" % (
                    where, part.get("bind"), part.get("server")))
            port = part.get("port")
            if isinstance(port, str) and port.isdecimal():
                port = int(port)
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                module.fail_json(msg="%s.port: %r is not a port (1..65535)" % (where, part.get("port")))
            part = dict(part, port=port)
            if part.get("rdma") is not None:
                problem = perftest.part_problem(part["rdma"])
                if problem:
                    module.fail_json(msg="%s.rdma.%s" % (where, problem))
        parts.append(part)
    return parts


def wait_server(group, deadline):
    """Until the one-off server ends (its client measured) or ``deadline``; then it is stopped."""
    while ours(group) and time.time() < deadline:
        time.sleep(0.1)
    stop(group)


def _rdma(part):
    """The part's rdma probe entry when it runs perftest (planned, not skipped), else None."""
    rdma = part.get("rdma")
    return rdma if isinstance(rdma, dict) and not rdma.get("skip") else None


def rdma_seconds(params):
    """What the rdma probe adds to a round's slot, at its end: ib_write_bw's run and ib_write_lat's."""
    return params["duration"] + perftest.RDMA_EXTRA_S


def slot_seconds(params):
    rdma = any(_rdma(p) for p in params["rounds"] if isinstance(p, dict))
    return params["round_timeout"] or (params["duration"] + 30 + (
        params["latency_idle_count"] * params["latency_interval"] if params["latency"] else 0) + (
        rdma_seconds(params) if rdma else 0))


def schedule(module):
    """(when round 1 begins on this node's clock, the node clock's offset from the controller's in seconds or None,
    the run's bound: the last slot's end plus 30 s)."""
    params = module.params
    now = time.time()
    offset = None
    if params["controller_time"] is not None:
        offset = now - params["controller_time"]
    begin = now
    if params["start_at"] is not None:
        # a clock close to the controller's is trusted (the difference is mostly the task's way here); one far off
        # is corrected for, so that this node still starts with the others
        begin = params["start_at"] + (offset if offset is not None and abs(offset) > CLOCK_OFF_S else 0)
        if begin - now > 3600:
            module.fail_json(msg="start_at: %r is %d s after this node's clock: more than an hour" % (
                params["start_at"], begin - now))
    targets = len(params["ping_targets"] or [])
    pings = -(-targets // 8) * 2 * (params["ping_count"] * 0.2 + 2)  # at most, 8 at a time (as path_probe)
    bound = max(begin, now + pings) + params["start_skew"] + len(params["rounds"]) * slot_seconds(params) + 30
    return begin, offset, bound


def rounds(module, parts, begin, current, arrived):
    """Every round of this node, from ``begin`` (this node's clock) on: the result as RETURN describes it. ``current``
    holds the process group of the server running now, for whoever stops the run."""
    params = module.params
    slot = slot_seconds(params)
    probes, probes_error = None, None
    if params["ping_targets"] is not None:  # while the other nodes are being started (the role's margin allows for them)
        ping = module.get_bin_path("ping")
        if ping or not params["ping_targets"]:
            probes = probe_paths(module.run_command, ping, params["ping_targets"], params["ping_count"])
            current["probes"] = probes  # kept, should the rounds fail or be stopped
        else:  # the rounds still run (their latency part says the same)
            probes, probes_error = [], "ping is not installed (iputils-ping): no full-size pings"
    time.sleep(max(0.0, begin - time.time()))
    measurements, server_errors, spent = [], [], []
    for index, part in enumerate(parts):
        if stopped_since(arrived):
            raise Stopped()
        began = time.time()
        deadline = begin + params["start_skew"] + (index + 1) * slot
        rdma = _rdma(part)
        # with the rdma probe, iperf3's part of the slot ends early enough for perftest's at its end
        tcp_deadline = deadline - rdma_seconds(params) if rdma else deadline
        if part["role"] == "server":
            group, error, _argv = start_server(module, part["bind"], part["port"],
                                               max(1, int(tcp_deadline - time.time()) + 1), params["timeout"])
            if error:
                server_errors.append(dict(part, error=error, round=index + 1))
            else:
                current["group"] = group
                wait_server(group, tcp_deadline)
                current["group"] = None
            if rdma:
                for error in perftest.run_server(module, rdma, params["duration"], deadline):
                    server_errors.append(dict(part, tool="perftest", error=error, round=index + 1))
        elif part["role"] == "client":
            # the peer's server may start a little later (its previous round, the start of its run): try again until
            # there is just time left for the measurement in this slot
            result, _argv = run_client(module, part["bind"], str(part["server"]), part["port"],
                                       connect_until=tcp_deadline - params["duration"] - 1)
            measured = dict(part, round=index + 1, gbps=result["gbps"], retransmits=result["retransmits"],
                            retransmit_percent=result["retransmit_percent"], bytes=result["bytes"],
                            mss=result["mss"], latency=result["latency"], error=result["error"])
            if rdma:
                measured["rdma"] = dict(rdma, **perftest.run_client(module, rdma, str(part["server"]),
                                                                    params["duration"], deadline - 1,
                                                                    bind=part.get("bind") and str(part["bind"])))
            measurements.append(measured)
        spent.append(round(time.time() - began, 2))
    said = "%d round(s): %d measurement(s), %d failed, %d server(s) did not start" % (
        len(parts), len(measurements), sum(1 for m in measurements if m["error"]), len(server_errors))
    result = dict(changed=False, measurements=measurements, server_errors=server_errors, round_seconds=spent, msg=said)
    if probes is not None:
        result.update(probes=probes, probes_error=probes_error, msg="%s; %s" % (probes_error or said_paths(probes), said))
    return result


def stop_servers(parts, current):
    """Stop the server of the round running now, and any this run was starting when it was stopped (its group not
    known yet: found by its address, once the starting shell has become ``timeout``)."""
    if current.get("group"):
        stop(current["group"])
    binds = set(str(p["bind"]) for p in parts if p["role"] == "server")
    if binds:
        time.sleep(0.1)
        for group in servers_on(binds):
            stop(group)
