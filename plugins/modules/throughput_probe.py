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
    receiver's goodput in Gbit/s. A failed measurement (connection refused, timeout) is reported in RV(error), not as
    a failed task, so a probe round goes on.
  - O(mode=stop) stops the server this module started for O(bind) and O(port) (all of them when O(bind) is omitted).
    Only processes recorded in its pid files that still are C(timeout)/C(iperf3) are signalled.
  - The role C(gpuops.fabric.probes) runs these in rounds of disjoint pairs from M(gpuops.fabric.probe_plan) and
    stops the servers in an C(always) section.
  - Needs C(iperf3), coreutils C(timeout) and util-linux C(setsid) on the node.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.probe
  - gpuops.fabric.attributes.actiongroup
options:
  mode:
    description: Start a server, measure as a client, or stop servers.
    type: str
    choices: [server, client, stop]
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
gbps:
  description: Goodput the receiver saw, Gbit/s (client mode; null when the measurement failed).
  returned: client mode
  type: float
  sample: 9.41
retransmits:
  description: TCP retransmits the sender counted (client mode).
  returned: client mode
  type: int
seconds:
  description: Length of the measurement (client mode).
  returned: client mode
  type: float
error:
  description: Why the measurement failed (client mode), null when it did not.
  returned: client mode
  type: str
pid:
  description: The process group of the started server (timeout wrapper and iperf3).
  returned: server mode
  type: int
lifetime:
  description: Seconds after which the server ends on its own.
  returned: server mode
  type: int
stopped:
  description: Process groups stopped (stop mode).
  returned: stop mode
  type: list
  elements: int
"""

import glob  # noqa: E402  (after the documentation, as Ansible modules are laid out)
import ipaddress  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import (
    PID_DIR, listening, ours, parse_iperf3, pidfile, stop,
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


def serve(module):
    params = module.params
    bind, port = params["bind"], params["port"]
    _version(module, "bind")
    lifetime = params["lifetime"] if params["lifetime"] is not None else params["duration"] + 30
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
        module.fail_json(msg="could not start the iperf3 server: %s" % (err or out).strip(), argv=argv)
    deadline = time.time() + params["timeout"]
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
            module.exit_json(changed=False, pid=group, lifetime=lifetime, argv=server,
                             msg="iperf3 server on %s port %d for at most %d s" % (bind, port, lifetime))
        said = _read_text(log)
        if "error" in said.lower():
            if group:
                stop(group)
            module.fail_json(msg="iperf3 server on %s port %d did not start: %s" % (bind, port, said[-400:]),
                             argv=server)
        time.sleep(0.05)
    if group:
        stop(group)
    module.fail_json(msg="iperf3 server on %s port %d did not listen within %g s: %s"
                         % (bind, port, params["timeout"], _read_text(log)[-400:] or "(no output)"), argv=server)


def _read_text(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return ""


def measure(module):
    params = module.params
    _version(module, "server")
    iperf3 = module.get_bin_path("iperf3", required=True)
    argv = [iperf3, "-c", params["server"], "-p", str(params["port"]), "-t", str(params["duration"]),
            "-P", str(params["streams"]), "-J", "--connect-timeout", "3000"]
    if params["bind"]:
        argv += ["-B", params["bind"]]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=params["duration"] + 20, check=False)
        result = parse_iperf3(done.stdout.decode("utf-8", "replace"))
        if result["error"] and done.stderr:
            result["error"] += " (%s)" % done.stderr.decode("utf-8", "replace").strip()[-200:]
    except subprocess.TimeoutExpired:
        result = {"gbps": None, "retransmits": None, "seconds": None,
                  "error": "iperf3 client did not finish within %d s" % (params["duration"] + 20)}
    msg = ("%.3g Gbit/s from %s to %s" % (result["gbps"], params["bind"] or "(any)", params["server"])
           if result["gbps"] is not None else "measurement failed: %s" % result["error"])
    module.exit_json(changed=False, argv=argv, msg=msg, **result)


def halt(module):
    bind, port = module.params["bind"], module.params["port"]
    paths = [pidfile(bind, port)] if bind else sorted(glob.glob(os.path.join(PID_DIR, "iperf3-*.pid")))
    stopped = []
    for path in paths:
        pid = _read_pid(path)
        if pid and stop(pid):
            stopped.append(pid)
        for name in (path, path[:-4] + ".log", path[:-4] + ".iperf3"):
            if os.path.exists(name):
                os.unlink(name)
    module.exit_json(changed=False, stopped=stopped,
                     msg="stopped %d iperf3 server(s)" % len(stopped) if stopped else "no iperf3 server running")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["server", "client", "stop"], required=True),
            bind=dict(type="str"),
            server=dict(type="str"),
            port=dict(type="int", default=5201),
            duration=dict(type="int", default=5),
            streams=dict(type="int", default=1),
            lifetime=dict(type="int"),
            timeout=dict(type="float", default=5),
        ),
        required_if=[("mode", "server", ("bind",)), ("mode", "client", ("server",))],
        supports_check_mode=True,
    )
    params = module.params
    for key, low, high in (("port", 1, 65535), ("duration", 1, 3600), ("streams", 1, 128)):
        if not low <= params[key] <= high:
            module.fail_json(msg="%s: %r is outside %d..%d" % (key, params[key], low, high))
    if params["lifetime"] is not None and params["lifetime"] < 1:
        module.fail_json(msg="lifetime: %r must be at least 1" % params["lifetime"])
    {"server": serve, "client": measure, "stop": halt}[params["mode"]](module)


if __name__ == "__main__":
    main()
