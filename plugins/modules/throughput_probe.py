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
      - A part with C(rdma) (the rdma probe, M(gpuops.fabric.probe_plan) with O(gpuops.fabric.probe_plan#module:rdma))
        also runs perftest at the end of the round's slot, after iperf3, which then has the slot less the duration
        and 25 s. C(rdma) holds this end's C(device), C(port), C(gid_index) (none on InfiniBand) and C(tcp_port);
        the server runs C(ib_write_bw -D) O(duration) then C(ib_write_lat), the client connects to the part's
        C(server) address, trying again while the peer's server is not up yet. An C(rdma) with C(skip) runs
        nothing. Each value is checked before it reaches an argv.
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
    - With the rdma probe, C(rdma) is the part's C(rdma) with perftest's results, C(gbps) (ib_write_bw's average,
      Gbit/s), C(bandwidth) (its row), C(latency) (ib_write_lat's row, microseconds, C(t_min_us), C(t_typical_us),
      C(t_avg_us), C(t_max_us), C(p99_us), C(p999_us)), C(error) (the first failure and its cause) and
      C(warnings).
  returned: rounds mode (not detached), collect mode
  type: list
  elements: dict
server_errors:
  description:
    - The rounds whose server did not start (rounds mode); each the round's part with C(round) and C(error).
    - With the rdma probe also the perftest servers that failed or were never reached, with C(tool=perftest).
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
import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import end_on_hangup  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import (  # noqa: E402
    PID_DIR, pidfile, stop,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.jobs import (  # noqa: E402
    JOB_PATTERN, STOPPED_BEFORE, Stopped, detach, is_runner, job_paths, mark_stopped, read_json, read_pid,
    runner_pidfile, stop_runner, stopped_since, unlink,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import check_targets  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.rounds import (  # noqa: E402
    CLOCK_OFF_S, round_parts, rounds, run_client, schedule, start_server, stop_servers,
)

ARRIVED = time.time()  # when this module began on the node


def _version(module, key):
    try:
        return ipaddress.ip_address(module.params[key]).version
    except ValueError:
        module.fail_json(msg="%s: %r is not an IP address" % (key, module.params[key]))


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


def run_rounds(module):
    """Every round of this node in one run: in round k the node serves, measures or idles. Each side waits for the
    other up to the end of its round's slot (k x O(round_timeout) from the start), so the rounds of all nodes stay
    in step without the controller: a late peer is waited for, a missing one costs its slot only. With O(detach), the
    run goes on in a process of its own and this returns at once; O(mode=collect) reads its result."""
    params = module.params
    parts = round_parts(module)
    error = check_targets(params["ping_targets"] or [], "ping_targets")
    if error:
        module.fail_json(msg=error)
    if any(p["role"] != "idle" for p in parts):
        for tool in ("iperf3", "timeout", "setsid"):
            module.get_bin_path(tool, required=True)  # missing: said now, not in a run nobody watches
    begin, offset, bound = schedule(module)
    if not os.path.isdir(PID_DIR):
        os.makedirs(PID_DIR, 0o700)
    runner = runner_pidfile(set(str(p["bind"]) for p in parts if p.get("bind")))
    stop_runner(runner)
    clock = dict(clock_offset=round(offset, 3) if offset is not None else None, start=round(begin, 3),
                 bound=round(bound, 3))
    if offset is not None and abs(offset) > CLOCK_OFF_S:
        module.warn("this node's clock is %.1f s off the controller's: the rounds start by the controller's "
                    "(run NTP or PTP on the nodes; the probes' timestamps are this node's)" % offset)
    if stopped_since(ARRIVED):
        module.fail_json(msg=STOPPED_BEFORE)
    if params["detach"]:
        if all(p["role"] == "idle" for p in parts) and not params["ping_targets"]:  # nothing to run
            module.exit_json(changed=False, job=None, msg="rounds: this node idles in all %d" % len(parts), **clock)
        result = detach(module, runner, bound, len(parts), lambda current: rounds(module, parts, begin, current, ARRIVED),
                        lambda current: stop_servers(parts, current))
        module.exit_json(changed=False, msg="rounds started: %d round(s) from %s" % (
            len(parts), time.strftime("%H:%M:%S", time.localtime(begin))), **dict(result, **clock))
    with open(runner, "w") as handle:
        handle.write("%d\n" % os.getpid())
    current = {}

    def ended(signum, _frame):  # mode=stop: no server left behind (Ansible's async limit kills with SIGKILL; the
        # server then ends on its own at its slot's end)
        stop_servers(parts, current)
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, ended)
    end_on_hangup(lambda: stop_servers(parts, current))
    try:
        result = rounds(module, parts, begin, current, ARRIVED)
    except Stopped:
        module.fail_json(msg=STOPPED_BEFORE)
    if read_pid(runner) == os.getpid():
        unlink(runner)
    module.exit_json(**dict(result, **clock))


def collect(module):
    """Wait for the detached rounds run O(job) to end (at most O(wait) seconds this call) and return its result."""
    job = module.params["job"]
    if not JOB_PATTERN.fullmatch(job or ""):
        module.fail_json(msg="job: %r is not a rounds job (as mode=rounds with detach returns it)" % job)
    pidpath, jobpath, resultpath = job_paths(job)
    until = time.time() + module.params["wait"]
    try:
        info = read_json(jobpath)
        if info is None:
            module.fail_json(msg="job: no rounds run %s on this node (started elsewhere, or collected already)" % job)
        pid, bound = int(info["pid"]), float(info["bound"])

        def own(found):  # a result of this run, not of a newer one that took its name since (a stale collect)
            return found if found is not None and found.get("runner") == pid else None

        def drop_job():  # only while it still names this run
            if (read_json(jobpath) or {}).get("pid") == pid:
                unlink(jobpath)
        while True:
            result = own(read_json(resultpath))
            if result is not None:
                break
            if not is_runner(pid):
                result = own(read_json(resultpath))  # it may have ended just now
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
    unlink(resultpath)
    drop_job()
    kept = dict((k, v) for k, v in result.items() if k in RESULT_KEYS)
    if result.get("failed"):
        kept.pop("msg", None)
        module.fail_json(msg=str(result.get("msg")), job=job, finished=True, **kept)
    module.exit_json(job=job, finished=True, **kept)


RESULT_KEYS = ("changed", "measurements", "server_errors", "round_seconds", "probes", "probes_error", "msg")


def halt(module):
    bind, port = module.params["bind"], module.params["port"]
    paths = [pidfile(bind, port)] if bind else sorted(glob.glob(os.path.join(PID_DIR, "iperf3-*.pid")))
    stopped = []
    if not bind:
        mark_stopped()  # a rounds start still on its way begins no round after this
        for path in sorted(glob.glob(os.path.join(PID_DIR, "rounds-*.pid"))):
            runner = stop_runner(path)  # the rounds runs first, so that they start no further server
            if runner:
                stopped.append(runner)
            unlink(path)
    for path in paths:
        pid = read_pid(path)
        if pid and stop(pid):
            stopped.append(pid)
        for name in (path, path[:-4] + ".log", path[:-4] + ".iperf3"):
            unlink(name)
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
    end_on_hangup()
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
