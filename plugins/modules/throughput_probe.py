#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: throughput_probe
short_description: Measure TCP goodput between two nodes with iperf3, with servers that cannot outlive the probe
version_added: 0.1.0
description:
  - O(mode=server) starts a one-off iperf3 server bound to this node's test address only (C(iperf3 -s -1 -B)),
    under C(timeout) so it ends after O(lifetime) seconds even when nobody connects and nobody stops it (the
    controller was interrupted, the connection dropped). It returns once the server listens.
  - O(mode=client) runs C(iperf3 -c) from O(bind) to O(server) for O(duration) seconds (JSON output) and returns the
    receiver's goodput in Gbit/s and the share of segments the sender retransmitted. With O(latency), it also pings
    the server, first idle and then while iperf3 runs, and returns both round-trip time distributions. A failed
    measurement (connection refused, timeout) is reported in RV(error), not as a failed task, so a probe round goes
    on.
  - O(mode=stop) stops the server this module started for O(bind) and O(port) (all of them, and a rounds run, when
    O(bind) is omitted).
    Only processes recorded in its pid files that still are C(timeout)/C(iperf3) are signalled.
  - O(mode=rounds) runs all of this node's rounds from M(gpuops.fabric.probe_plan) in one go (O(rounds), one part
    per round). In round k it serves one measurement, measures as a client or idles. The nodes keep in step by
    themselves, without the controller. A client whose server is not listening yet tries again, and each side
    waits for the other until the end of its round's slot, k times O(round_timeout) after its start. The role
    C(gpuops.fabric.probes) starts it on every node at once (O(detach)), so rounds cost no tasks and no forks.
  - With O(detach), the rounds run goes on in a process of its own (a new session, named C(gpuops-rounds)) and the
    task returns at once with RV(job); O(mode=collect) waits for that run to end (at most O(wait) seconds a call)
    and returns its result. Unlike Ansible's C(async), this is one module run to start, pipelined where the
    connection pipelines, and a poll every O(wait) seconds. The run ends by its bound (the last slot's end plus 30 s)
    whatever happens, its result kept in a file of its own.
  - O(start_at) gives every node the same start (the controller's clock); a node whose clock is more than 10 s off
    the controller's (O(controller_time)) is corrected for, with a warning.
  - Needs C(iperf3), coreutils C(timeout) and util-linux C(setsid) on the node.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.probe
  - gpuops.fabric.attributes.actiongroup
options:
  mode:
    description: Start a server, measure as a client, stop servers, run all rounds of this node, or collect a
      detached rounds run.
    type: str
    choices: [server, client, stop, rounds, collect]
    required: true
  bind:
    description: This node's address on the network under test (server and client bind to it).
    type: str
  server:
    description: The server's address (client mode).
    type: str
  port:
    description: TCP port of the server.
    type: int
    default: 5201
  duration:
    description: Seconds the client sends.
    type: int
    default: 5
  streams:
    description: Parallel TCP streams of the client (C(iperf3 -P)).
    type: int
    default: 1
  lifetime:
    description: Seconds after which a server ends whatever happens (default O(duration) + 30).
    type: int
  timeout:
    description: Seconds to wait for a server to listen.
    type: float
    default: 5
  rounds:
    description:
      - Rounds mode. This node's part of each round, in order, as M(gpuops.fabric.probe_plan) returns them in
        RV(gpuops.fabric.probe_plan#module:throughput_by_host); each a dict with C(role) C(server), C(client) or
        C(idle), and for a server C(bind) and C(port), for a client C(bind), C(server) and C(port). Other keys are
        returned with the measurement as they came.
    type: list
    elements: raw
  detach:
    description:
      - Rounds mode. Run the rounds in a process of their own and return at once with RV(job), for O(mode=collect).
    type: bool
    default: false
  start_at:
    description:
      - Rounds mode. When round 1 begins, in seconds since 1970 on the controller's clock (the same for every node);
        default at once. A node that starts later begins at once, its peers waiting for it within O(start_skew).
    type: float
  controller_time:
    description:
      - Rounds mode. The controller's clock when it sent this task (seconds since 1970), to notice a node clock more
        than 10 s off; O(start_at) is then converted to this node's clock.
    type: float
  ping_targets:
    description:
      - Rounds mode. Peers to ping with full-size frames first, as M(gpuops.fabric.path_probe) does with its
        O(gpuops.fabric.path_probe#module:targets) (the same dicts, from M(gpuops.fabric.probe_plan)'s RV(gpuops.fabric.probe_plan#module:jumbo)),
        while the run waits for O(start_at); the results are RV(probes).
    type: list
    elements: dict
  ping_count:
    description: Rounds mode. Full-size pings per entry of O(ping_targets) (small pings are as many).
    type: int
    default: 3
  job:
    description: Collect mode. The RV(job) that O(mode=rounds) with O(detach) returned on this node.
    type: str
  wait:
    description:
      - Collect mode. Seconds to wait for the run to end before returning with RV(finished) false (1 to 3600), so
        that a long run is polled rather than held in one silent connection.
    type: float
    default: 30
  start_skew:
    description:
      - Rounds mode. Seconds by which the nodes' runs may start apart (the controller starts them a few forks at a
        time); every round's slot ends that much later.
    type: float
    default: 0
  round_timeout:
    description:
      - Rounds mode. Seconds of each round's slot (more than O(duration) + 1), the longest a server waits for its
        client. Default O(duration) + 30, plus the idle pings with O(latency).
    type: float
  latency:
    description:
      - Client and rounds mode. Also measure latency under load. First O(latency_idle_count) plain pings from O(bind) to
        O(server) with the path idle, then pings every O(latency_interval) seconds while iperf3 loads the same path
        (from the end of slow start, at most 1 s in, until just before it stops sending).
      - The difference between the two is the queue the load builds (bufferbloat) and its jitter. Needs C(ping)
        (iputils-ping). Without it the goodput is still measured and RV(latency) says why latency was not.
    type: bool
    default: false
  latency_interval:
    description: Seconds between pings of the latency measurement (0.002 to 10; below 0.2 needs root with old iputils).
    type: float
    default: 0.2
  latency_idle_count:
    description: Pings sent with the path idle, before the load (1 to 1000).
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Serve one measurement on the training address
  gpuops.fabric.throughput_probe:
    mode: server
    bind: 198.18.1.2
    lifetime: 40

- name: Measure from the peer
  gpuops.fabric.throughput_probe:
    mode: client
    bind: 198.18.1.1
    server: 198.18.1.2
    duration: 5
  register: iperf

- name: Stop the server (also when the round failed)
  gpuops.fabric.throughput_probe:
    mode: stop
    bind: 198.18.1.2
"""

RETURN = r"""
measurements:
  description:
    - The client measurements of the rounds (rounds mode), in order; each the round's part with C(round) (from 1)
      and the client results C(gbps), C(retransmits), C(retransmit_percent), C(bytes), C(mss), C(latency), C(error).
  returned: rounds mode (not detached), collect mode
  type: list
  elements: dict
server_errors:
  description: The rounds whose server did not start (rounds mode); each the round's part with C(round) and C(error).
  returned: rounds mode (not detached), collect mode
  type: list
  elements: dict
round_seconds:
  description: Seconds each round took on this node (rounds mode).
  returned: rounds mode (not detached), collect mode
  type: list
  elements: float
gbps:
  description: Goodput the receiver saw, Gbit/s (client mode; null when the measurement failed).
  returned: client mode
  type: float
  sample: 9.41
retransmits:
  description: TCP retransmits the sender counted (client mode).
  returned: client mode
  type: int
bytes:
  description: Bytes the sender sent (client mode; null when iperf3 did not say).
  returned: client mode
  type: int
mss:
  description: The connection's TCP maximum segment size iperf3 reported (client mode).
  returned: client mode
  type: int
retransmit_percent:
  description: Retransmits as a share of the segments sent (bytes over MSS), in percent (client mode).
  returned: client mode
  type: float
  sample: 0.0112
latency:
  description:
    - Latency under load (client mode with O(latency); null otherwise). C(idle) and C(loaded) each hold C(sent),
      C(received), C(loss_percent), C(samples) and C(min_ms), C(p50_ms), C(p99_ms), C(max_ms) (nearest-rank
      percentiles of the replies' round-trip times; null without replies), and C(error); a part that did not run is
      null (no ping, or C(loaded) when the measurement failed) or holds only C(error) (ping did not finish).
    - C(interval) is the seconds between pings; C(error) is the first reason a part did not run.
  returned: client mode
  type: dict
  sample: {"interval": 0.2, "error": null,
           "idle": {"sent": 10, "received": 10, "loss_percent": 0.0, "samples": 10, "min_ms": 0.041, "p50_ms": 0.052,
                    "p99_ms": 0.081, "max_ms": 0.081, "error": null},
           "loaded": {"sent": 18, "received": 18, "loss_percent": 0.0, "samples": 18, "min_ms": 11.2, "p50_ms": 44.9,
                      "p99_ms": 51.3, "max_ms": 51.3, "error": null}}
seconds:
  description: Length of the measurement (client mode).
  returned: client mode
  type: float
error:
  description: Why the measurement failed (client mode), null when it did not.
  returned: client mode
  type: str
pid:
  description: The process group of the started server (timeout wrapper and iperf3), or the detached rounds run.
  returned: server mode, rounds mode with detach
  type: int
lifetime:
  description: Seconds after which the server ends on its own.
  returned: server mode
  type: int
probes:
  description:
    - The full-size pings of O(ping_targets), as M(gpuops.fabric.path_probe) returns them in its
      RV(gpuops.fabric.path_probe#module:probes).
  returned: rounds mode with ping_targets (not detached), collect mode
  type: list
  elements: dict
probes_error:
  description: Why the full-size pings of O(ping_targets) did not run (no C(ping) on the node), else null.
  returned: rounds mode with ping_targets (not detached), collect mode
  type: str
finished:
  description: Whether the detached run has ended (collect mode); the other results come with true.
  returned: collect mode
  type: bool
job:
  description:
    - The detached rounds run, for O(mode=collect) (file names under C(/run/gpuops-fabric/probes)).
    - Null when this node idles in every round (nothing runs, nothing to collect).
  returned: rounds mode with detach, collect mode
  type: str
  sample: rounds-198.18.1.2
clock_offset:
  description: This node's clock minus the controller's when the task arrived, seconds (with O(controller_time)).
  returned: rounds mode
  type: float
start:
  description: When round 1 began or begins, seconds since 1970 on this node's clock.
  returned: rounds mode
  type: float
bound:
  description: When the rounds run ends at the latest, seconds since 1970 on this node's clock.
  returned: rounds mode
  type: float
stopped:
  description: Process groups stopped, and the pid of a rounds run (stop mode).
  returned: stop mode
  type: list
  elements: int
"""

import glob  # noqa: E402  (after the documentation, as Ansible modules are laid out)
import ipaddress  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import stat  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import (  # noqa: E402
    STDOUT, TimeoutExpired, run_bounded,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import (
    PID_DIR, cmdline, failed, listening, ours, parse_iperf3, pidfile, servers_on, stop,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import (
    MAX_OUTPUT, MAX_PINGS, check_targets, latency_argv, probe_paths, said_paths, summarize_latency,
)


def _read_pid(path):
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (IOError, OSError, ValueError):
        return None


def _version(module, key):
    try:
        return ipaddress.ip_address(module.params[key]).version
    except ValueError:
        module.fail_json(msg="%s: %r is not an IP address" % (key, module.params[key]))


def start_server(module, bind, port, lifetime, wait):
    """Start a one-off iperf3 server on ``bind``:``port`` that ends after ``lifetime`` seconds whatever happens.
    Returns (process group, None, argv) once it listens, or (None, why it did not start, argv)."""
    iperf3 = module.get_bin_path("iperf3", required=True)
    timeout = module.get_bin_path("timeout", required=True)
    setsid = module.get_bin_path("setsid", required=True)
    if not os.path.isdir(PID_DIR):
        os.makedirs(PID_DIR, 0o700)
    path = pidfile(bind, port)
    old = _read_pid(path)
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
        pid = _read_pid(own_pid)
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
        said = _read_text(log)
        if "error" in said.lower():
            if group:
                stop(group)
            return None, "iperf3 server on %s port %d did not start: %s" % (bind, port, said[-400:]), server
        time.sleep(0.05)
    if group:
        stop(group)
    return None, "iperf3 server on %s port %d did not listen within %g s: %s" % (
        bind, port, wait, _read_text(log)[-400:] or "(no output)"), server


def serve(module):
    params = module.params
    bind, port = params["bind"], params["port"]
    _version(module, "bind")
    lifetime = params["lifetime"] if params["lifetime"] is not None else params["duration"] + 30
    group, error, argv = start_server(module, bind, port, lifetime, params["timeout"])
    if error:
        module.fail_json(msg=error, argv=argv)
    module.exit_json(changed=False, pid=group, lifetime=lifetime, argv=argv,
                     msg="iperf3 server on %s port %d for at most %d s" % (bind, port, lifetime))


def _read_text(path):
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


def _said(result, bind, server):
    msg = ("%.3g Gbit/s from %s to %s" % (result["gbps"], bind or "(any)", server)
           if result["gbps"] is not None else "measurement failed: %s" % result["error"])
    latency = result.get("latency")
    if latency and latency.get("loaded") and latency["loaded"].get("p99_ms") is not None and \
            latency["idle"].get("p50_ms") is not None:
        msg += "; ping p50 %s ms idle, p99 %s ms under load" % (latency["idle"]["p50_ms"], latency["loaded"]["p99_ms"])
    return msg


def measure(module):
    params = module.params
    version = _version(module, "server")
    if params["bind"] and _version(module, "bind") != version:
        module.fail_json(msg="bind: %s and server: %s are not of the same IP version" % (params["bind"], params["server"]))
    result, argv = run_client(module, params["bind"], params["server"], params["port"])
    module.exit_json(changed=False, argv=argv, msg=_said(result, params["bind"], params["server"]), **result)


ROUND_KEYS = ("role", "bind", "server", "port")


def _round_parts(module):
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
        parts.append(part)
    return parts


def _wait_server(group, deadline):
    """Until the one-off server ends (its client measured) or ``deadline``; then it is stopped."""
    while ours(group) and time.time() < deadline:
        time.sleep(0.1)
    stop(group)


def runner_pidfile(binds):
    """Where a rounds run keeps its pid: named by this node's first test address, so that nodes sharing a file
    system (network namespaces of one machine) keep theirs apart."""
    return os.path.join(PID_DIR, "rounds-%s.pid" % (sorted(binds)[0].replace(":", "_").replace("%", "_")
                                                    if binds else "idle"))


RUNNER_NAME = "gpuops-rounds"  # a detached rounds run names itself so (its command line is only the interpreter)
RESULT_MAX = 16 * 1024 * 1024  # a result file larger than this is not ours
CLOCK_OFF_S = 10.0  # a node clock this far from the controller's (beyond the task's transport) is corrected for
JOB_PATTERN = re.compile(r"rounds-[0-9A-Za-z_.-]{1,80}")  # whole (fullmatch)


def _comm(pid):
    """The name of process ``pid``; empty when there is none (or only a zombie, waiting to be reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            state = handle.read().rpartition(")")[2].split()
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip() if state and state[0] != "Z" else ""
    except (IOError, OSError, ValueError):
        return ""


def _runner(pid):
    """Whether ``pid`` is still a rounds run of this module (not a reused pid): a detached run by its name, a run in
    the foreground (Ansible's async wrapper) by its command line."""
    return _comm(pid) == RUNNER_NAME or any("throughput_probe" in arg for arg in cmdline(pid))


def stop_runner(path):
    """Stop the rounds run whose pid ``path`` holds (an earlier, interrupted play's, and its servers); its pid, or
    None."""
    pid = _read_pid(path)
    if not pid or pid == os.getpid() or not _runner(pid):
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return None
    deadline = time.time() + 5
    while _runner(pid) and time.time() < deadline:
        time.sleep(0.05)
    return pid


def _slot(params):
    return params["round_timeout"] or (params["duration"] + 30 + (
        params["latency_idle_count"] * params["latency_interval"] if params["latency"] else 0))


def _schedule(module):
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
    bound = max(begin, now + pings) + params["start_skew"] + len(params["rounds"]) * _slot(params) + 30
    return begin, offset, bound


def _rounds(module, parts, begin, current):
    """Every round of this node, from ``begin`` (this node's clock) on: the result as RETURN describes it. ``current``
    holds the process group of the server running now, for whoever stops the run."""
    params = module.params
    slot = _slot(params)
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
        if _stopped_since(ARRIVED):
            raise _Stopped()
        began = time.time()
        deadline = begin + params["start_skew"] + (index + 1) * slot
        if part["role"] == "server":
            group, error, _argv = start_server(module, part["bind"], part["port"],
                                               max(1, int(deadline - time.time()) + 1), params["timeout"])
            if error:
                server_errors.append(dict(part, error=error, round=index + 1))
            else:
                current["group"] = group
                _wait_server(group, deadline)
                current["group"] = None
        elif part["role"] == "client":
            # the peer's server may start a little later (its previous round, the start of its run): try again until
            # there is just time left for the measurement in this slot
            result, _argv = run_client(module, part["bind"], str(part["server"]), part["port"],
                                       connect_until=deadline - params["duration"] - 1)
            measurements.append(dict(part, round=index + 1, gbps=result["gbps"], retransmits=result["retransmits"],
                                     retransmit_percent=result["retransmit_percent"], bytes=result["bytes"],
                                     mss=result["mss"], latency=result["latency"], error=result["error"]))
        spent.append(round(time.time() - began, 2))
    said = "%d round(s): %d measurement(s), %d failed, %d server(s) did not start" % (
        len(parts), len(measurements), sum(1 for m in measurements if m["error"]), len(server_errors))
    result = dict(changed=False, measurements=measurements, server_errors=server_errors, round_seconds=spent, msg=said)
    if probes is not None:
        result.update(probes=probes, probes_error=probes_error, msg="%s; %s" % (probes_error or said_paths(probes), said))
    return result


def _stop_servers(parts, current):
    """Stop the server of the round running now, and any this run was starting when it was stopped (its group not
    known yet: found by its address, once the starting shell has become ``timeout``)."""
    if current.get("group"):
        stop(current["group"])
    binds = set(str(p["bind"]) for p in parts if p["role"] == "server")
    if binds:
        time.sleep(0.1)
        for group in servers_on(binds):
            stop(group)


STOP_MARK = os.path.join(PID_DIR, "stopped")  # mode=stop's time: a rounds start sent before it runs no round
ARRIVED = time.time()  # when this module began on the node
STOPPED_BEFORE = "the rounds run was stopped (mode=stop) before it began"


def _stopped_since(arrived):
    """Whether mode=stop ran on this node after ``arrived`` (a start still on its way when the user stopped the
    probes, after a Ctrl-C, must not begin its rounds afterwards)."""
    try:
        return os.stat(STOP_MARK).st_mtime >= arrived
    except OSError:
        return False


def _job_paths(job):
    base = os.path.join(PID_DIR, job)
    return base + ".pid", base + ".job", base + ".json"


def _write_json(path, data):
    """``data`` as JSON in ``path``, whole or not at all (a reader never sees half a file)."""
    part = "%s.%d.part" % (path, os.getpid())
    with os.fdopen(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        json.dump(data, handle, sort_keys=True)
    os.rename(part, path)


def _read_json(path):
    """The JSON object in ``path`` (at most RESULT_MAX bytes, a regular file), or None when there is none yet; an
    unreadable one raises ValueError."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("%s is not a regular file" % path)
        text = handle.read(RESULT_MAX + 1)
    if len(text) > RESULT_MAX:
        raise ValueError("%s is larger than %d bytes" % (path, RESULT_MAX))
    data = json.loads(text.decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("%s holds no JSON object" % path)
    return data


def run_rounds(module):
    """Every round of this node in one run: in round k the node serves, measures or idles. Each side waits for the
    other up to the end of its round's slot (k x O(round_timeout) from the start), so the rounds of all nodes stay
    in step without the controller: a late peer is waited for, a missing one costs its slot only. With O(detach), the
    run goes on in a process of its own and this returns at once; O(mode=collect) reads its result."""
    params = module.params
    parts = _round_parts(module)
    error = check_targets(params["ping_targets"] or [], "ping_targets")
    if error:
        module.fail_json(msg=error)
    if any(p["role"] != "idle" for p in parts):
        for tool in ("iperf3", "timeout", "setsid"):
            module.get_bin_path(tool, required=True)  # missing: said now, not in a run nobody watches
    begin, offset, bound = _schedule(module)
    if not os.path.isdir(PID_DIR):
        os.makedirs(PID_DIR, 0o700)
    runner = runner_pidfile(set(str(p["bind"]) for p in parts if p.get("bind")))
    stop_runner(runner)
    clock = dict(clock_offset=round(offset, 3) if offset is not None else None, start=round(begin, 3),
                 bound=round(bound, 3))
    if offset is not None and abs(offset) > CLOCK_OFF_S:
        module.warn("this node's clock is %.1f s off the controller's: the rounds start by the controller's "
                    "(run NTP or PTP on the nodes; the probes' timestamps are this node's)" % offset)
    if _stopped_since(ARRIVED):
        module.fail_json(msg=STOPPED_BEFORE)
    if params["detach"]:
        if all(p["role"] == "idle" for p in parts) and not params["ping_targets"]:  # nothing to run
            module.exit_json(changed=False, job=None, msg="rounds: this node idles in all %d" % len(parts), **clock)
        result = _detach(module, runner, parts, begin, bound)
        module.exit_json(changed=False, msg="rounds started: %d round(s) from %s" % (
            len(parts), time.strftime("%H:%M:%S", time.localtime(begin))), **dict(result, **clock))
    with open(runner, "w") as handle:
        handle.write("%d\n" % os.getpid())
    current = {}

    def ended(signum, _frame):  # mode=stop: no server left behind (Ansible's async limit kills with SIGKILL; the
        # server then ends on its own at its slot's end)
        _stop_servers(parts, current)
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, ended)
    try:
        result = _rounds(module, parts, begin, current)
    except _Stopped:
        module.fail_json(msg=STOPPED_BEFORE)
    if _read_pid(runner) == os.getpid():
        _unlink(runner)
    module.exit_json(**dict(result, **clock))


def _detach(module, runner, parts, begin, bound):
    """Start the rounds in a process of their own (a new session, its output nowhere, named RUNNER_NAME) that writes
    its result to a file and ends by ``bound`` whatever happens; RV(job) names it for O(mode=collect)."""
    job = os.path.basename(runner)[:-4]
    pidpath, jobpath, resultpath = _job_paths(job)
    for path in (resultpath, jobpath):
        _unlink(path)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the forked runner (tested through the module on namespace hosts)
        code = 1
        try:
            os.close(read)
            os.setsid()
            if os.fork():
                os._exit(0)
            code = _detached(module, parts, begin, bound, write, pidpath, resultpath)
        finally:
            os._exit(code)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as handle:
        said = handle.read()
    if not said.strip().isdigit():
        module.fail_json(msg="the rounds run did not start: %s" % (said.strip() or "(no word from it)"))
    pid = int(said.strip())
    _write_json(jobpath, dict(pid=pid, bound=bound, rounds=len(parts)))
    return dict(job=job, pid=pid)


class _Stopped(Exception):
    """mode=stop ran after this run's start arrived."""


class _RunnerFailure(Exception):
    """fail_json inside the detached run (its output goes nowhere): the message for the result file."""


def _detached(module, parts, begin, bound, write, pidpath, resultpath):  # pragma: no cover - runs forked
    """The body of the detached run; its exit status."""
    current, once = {}, threading.Lock()
    try:
        os.chdir("/")
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        top = min(os.sysconf("SC_OPEN_MAX"), 1 << 20) if hasattr(os, "sysconf") else 1024
        os.closerange(3, write)
        os.closerange(write + 1, max(write + 1, top))
        with open("/proc/self/comm", "w") as handle:
            handle.write(RUNNER_NAME)
        with open(pidpath, "w") as handle:
            handle.write("%d\n" % os.getpid())
    except (IOError, OSError, ValueError) as exc:
        os.write(write, ("could not detach: %s" % exc).encode("utf-8"))
        return 1
    os.write(write, b"%d" % os.getpid())
    os.close(write)

    def fail(msg=None, **_kwargs):
        raise _RunnerFailure(msg)
    module.fail_json = fail  # the AnsiballZ files are gone, and so is anybody to read what it prints

    def finish(result, code):
        """Once (the main loop, the watchdog and a signal may all end the run): stop the servers and this run's
        own children (an iperf3 client, a ping), write the result, end."""
        if not once.acquire(False):
            return
        try:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if current.get("probes") is not None and "probes" not in result:
                result = dict(result, probes=current["probes"])
            _stop_servers(parts, current)
            try:
                os.killpg(os.getpgid(0), signal.SIGTERM)  # the session's group: this run and what it ran
            except OSError:
                pass
            _write_json(resultpath, dict(result, runner=os.getpid()))
            if _read_pid(pidpath) == os.getpid():
                _unlink(pidpath)
        finally:
            os._exit(code)

    def ended(signum, _frame):
        finish(dict(failed=True, msg="the rounds run was stopped (signal %d)" % signum), 128 + signum)
    signal.signal(signal.SIGTERM, ended)
    watchdog = threading.Timer(max(1.0, bound - time.time()), finish,
                               (dict(failed=True, msg="the rounds run did not end by its bound"), 1))
    watchdog.daemon = True
    watchdog.start()
    try:
        result = _rounds(module, parts, begin, current)
    except _RunnerFailure as exc:
        result = dict(failed=True, msg="the rounds run failed: %s" % exc)
    except _Stopped:
        result = dict(failed=True, msg=STOPPED_BEFORE)
    except Exception as exc:  # pylint: disable=broad-except
        result = dict(failed=True, msg="the rounds run failed: %s: %s" % (type(exc).__name__, exc))
    finish(result, 0)
    return 0


def collect(module):
    """Wait for the detached rounds run O(job) to end (at most O(wait) seconds this call) and return its result."""
    job = module.params["job"]
    if not JOB_PATTERN.fullmatch(job or ""):
        module.fail_json(msg="job: %r is not a rounds job (as mode=rounds with detach returns it)" % job)
    pidpath, jobpath, resultpath = _job_paths(job)
    until = time.time() + module.params["wait"]
    try:
        info = _read_json(jobpath)
        if info is None:
            module.fail_json(msg="job: no rounds run %s on this node (started elsewhere, or collected already)" % job)
        pid, bound = int(info["pid"]), float(info["bound"])

        def own(found):  # a result of this run, not of a newer one that took its name since (a stale collect)
            return found if found is not None and found.get("runner") == pid else None

        def drop_job():  # only while it still names this run
            if (_read_json(jobpath) or {}).get("pid") == pid:
                _unlink(jobpath)
        while True:
            result = own(_read_json(resultpath))
            if result is not None:
                break
            if not _runner(pid):
                result = own(_read_json(resultpath))  # it may have ended just now
                if result is None:
                    drop_job()
                    module.fail_json(msg="the rounds run %s (pid %d) ended without a result (killed?)" % (job, pid))
                break
            if time.time() > bound + 15:
                stop_runner(pidpath)
                drop_job()
                module.fail_json(msg="the rounds run %s (pid %d) did not end by its bound" % (job, pid))
            if time.time() >= until:
                module.exit_json(changed=False, job=job, finished=False,
                                 msg="the rounds run %s goes on (until %s at the latest)" % (
                                     job, time.strftime("%H:%M:%S", time.localtime(bound))))
            time.sleep(0.2)
    except (ValueError, KeyError, TypeError) as exc:
        module.fail_json(msg="job %s: unreadable: %s" % (job, exc))
    _unlink(resultpath)
    drop_job()
    kept = dict((k, v) for k, v in result.items() if k in RESULT_KEYS)
    if result.get("failed"):
        kept.pop("msg", None)
        module.fail_json(msg=str(result.get("msg")), job=job, finished=True, **kept)
    module.exit_json(job=job, finished=True, **kept)


RESULT_KEYS = ("changed", "measurements", "server_errors", "round_seconds", "probes", "probes_error", "msg")


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:  # gone already (another stop on a machine shared by namespace hosts)
        pass


def halt(module):
    bind, port = module.params["bind"], module.params["port"]
    paths = [pidfile(bind, port)] if bind else sorted(glob.glob(os.path.join(PID_DIR, "iperf3-*.pid")))
    stopped = []
    if not bind:
        if os.path.isdir(PID_DIR):  # a rounds start still on its way begins no round after this
            with open(STOP_MARK, "w") as handle:
                handle.write("%f\n" % time.time())
        for path in sorted(glob.glob(os.path.join(PID_DIR, "rounds-*.pid"))):
            runner = stop_runner(path)  # the rounds runs first, so that they start no further server
            if runner:
                stopped.append(runner)
            _unlink(path)
    for path in paths:
        pid = _read_pid(path)
        if pid and stop(pid):
            stopped.append(pid)
        for name in (path, path[:-4] + ".log", path[:-4] + ".iperf3"):
            _unlink(name)
    module.exit_json(changed=False, stopped=stopped,
                     msg="stopped %d iperf3 server(s)" % len(stopped) if stopped else "no iperf3 server running")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["server", "client", "stop", "rounds", "collect"], required=True),
            rounds=dict(type="list", elements="raw"),
            detach=dict(type="bool", default=False),
            start_at=dict(type="float"),
            controller_time=dict(type="float"),
            job=dict(type="str"),
            ping_targets=dict(type="list", elements="dict"),
            ping_count=dict(type="int", default=3),
            wait=dict(type="float", default=30),
            round_timeout=dict(type="float"),
            start_skew=dict(type="float", default=0),
            bind=dict(type="str"),
            server=dict(type="str"),
            port=dict(type="int", default=5201),
            duration=dict(type="int", default=5),
            streams=dict(type="int", default=1),
            lifetime=dict(type="int"),
            timeout=dict(type="float", default=5),
            latency=dict(type="bool", default=False),
            latency_interval=dict(type="float", default=0.2),
            latency_idle_count=dict(type="int", default=10),
        ),
        required_if=[("mode", "server", ("bind",)), ("mode", "client", ("server",)), ("mode", "rounds", ("rounds",)),
                     ("mode", "collect", ("job",))],
        supports_check_mode=True,
    )
    params = module.params
    for key, low, high in (("port", 1, 65535), ("duration", 1, 3600), ("streams", 1, 128)):
        if not low <= params[key] <= high:
            module.fail_json(msg="%s: %r is outside %d..%d" % (key, params[key], low, high))
    if not 1 <= params["wait"] <= 3600:
        module.fail_json(msg="wait: %r is outside 1..3600 seconds" % params["wait"])
    if not 1 <= params["ping_count"] <= 100:
        module.fail_json(msg="ping_count: %r is outside 1..100" % params["ping_count"])
    if not 1 <= params["latency_idle_count"] <= 1000:
        module.fail_json(msg="latency_idle_count: %r is outside 1..1000" % params["latency_idle_count"])
    if not 0.002 <= params["latency_interval"] <= 10:
        module.fail_json(msg="latency_interval: %r is outside 0.002..10 seconds" % params["latency_interval"])
    if params["lifetime"] is not None and params["lifetime"] < 1:
        module.fail_json(msg="lifetime: %r must be at least 1" % params["lifetime"])
    if params["round_timeout"] is not None and not params["duration"] + 1 < params["round_timeout"] <= 86400:
        module.fail_json(msg="round_timeout: %r must be more than duration + 1 and at most 86400 seconds"
                             % params["round_timeout"])
    if not 0 <= params["start_skew"] <= 3600:
        module.fail_json(msg="start_skew: %r is outside 0..3600 seconds" % params["start_skew"])
    for key in ("start_at", "controller_time"):
        if params[key] is not None and not 0 < params[key] < 2 ** 33:
            module.fail_json(msg="%s: %r is not a time (seconds since 1970)" % (key, params[key]))
    if params["detach"] and params["mode"] != "rounds":
        module.fail_json(msg="detach: only rounds mode runs detached, not mode=%s" % params["mode"])
    {"server": serve, "client": measure, "stop": halt, "rounds": run_rounds, "collect": collect}[params["mode"]](module)


if __name__ == "__main__":
    main()
