# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The files and the process of a detached rounds run of throughput_probe, on the node: its pid, job and result
files under PID_DIR, the stop mark of mode=stop, and the run itself, forked into a session of its own that writes
its result and ends by its bound whatever happens."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import signal
import stat
import threading
import time

from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import PID_DIR, cmdline

RUNNER_NAME = "gpuops-rounds"  # a detached rounds run names itself so (its command line is only the interpreter)
RESULT_MAX = 16 * 1024 * 1024  # a result file larger than this is not ours
JOB_PATTERN = re.compile(r"rounds-[0-9A-Za-z_.-]{1,80}")  # whole (fullmatch)
STOP_MARK = os.path.join(PID_DIR, "stopped")  # mode=stop's time: a rounds start sent before it runs no round
STOPPED_BEFORE = "the rounds run was stopped (mode=stop) before it began"


class Stopped(Exception):
    """mode=stop ran after this run's start arrived."""


class RunnerFailure(Exception):
    """fail_json inside the detached run (its output goes nowhere): the message for the result file."""


def read_pid(path):
    try:
        with open(path) as handle:
            return int(handle.read(64).strip())
    except (IOError, OSError, ValueError):
        return None


def unlink(path):
    try:
        os.unlink(path)
    except OSError:  # gone already (another stop on a machine shared by namespace hosts)
        pass


def comm(pid):
    """The name of process ``pid``; empty when there is none (or only a zombie, waiting to be reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            state = handle.read(4096).rpartition(")")[2].split()
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read(64).strip() if state and state[0] != "Z" else ""
    except (IOError, OSError, ValueError):
        return ""


def is_runner(pid):
    """Whether ``pid`` is still a rounds run of this module (not a reused pid): a detached run by its name, a run in
    the foreground (Ansible's async wrapper) by its command line."""
    return comm(pid) == RUNNER_NAME or any("throughput_probe" in arg for arg in cmdline(pid))


def stop_runner(path):
    """Stop the rounds run whose pid ``path`` holds (an earlier, interrupted play's, and its servers); its pid, or
    None."""
    pid = read_pid(path)
    if not pid or pid == os.getpid() or not is_runner(pid):
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return None
    deadline = time.time() + 5
    while is_runner(pid) and time.time() < deadline:
        time.sleep(0.05)
    return pid


def runner_pidfile(binds):
    """Where a rounds run keeps its pid: named by this node's first test address, so that nodes sharing a file
    system (network namespaces of one machine) keep theirs apart."""
    return os.path.join(PID_DIR, "rounds-%s.pid" % (sorted(binds)[0].replace(":", "_").replace("%", "_")
                                                    if binds else "idle"))


def stopped_since(arrived):
    """Whether mode=stop ran on this node after ``arrived`` (a start still on its way when the user stopped the
    probes, after a Ctrl-C, must not begin its rounds afterwards)."""
    try:
        return os.stat(STOP_MARK).st_mtime >= arrived
    except OSError:
        return False


def mark_stopped():
    """mode=stop's mark: a rounds start still on its way begins no round after this."""
    if os.path.isdir(PID_DIR):
        with open(STOP_MARK, "w") as handle:
            handle.write("%f\n" % time.time())


def job_paths(job):
    """The pid, job and result files of the run named ``job``."""
    base = os.path.join(PID_DIR, job)
    return base + ".pid", base + ".job", base + ".json"


def write_json(path, data):
    """``data`` as JSON in ``path``, whole or not at all (a reader never sees half a file), on disk before the
    name appears."""
    write_atomic(path, json.dumps(data, sort_keys=True), mode="0600")


def read_json(path):
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


def detach(module, runner, bound, rounds, run, cleanup):
    """Start ``run(current)`` in a process of its own (a new session, its output nowhere, named RUNNER_NAME) that
    writes its result to the job's result file and ends by ``bound`` whatever happens; ``cleanup(current)`` stops
    what it started. Returns the job's name and the run's pid, for mode=collect."""
    job = os.path.basename(runner)[:-4]
    pidpath, jobpath, resultpath = job_paths(job)
    for path in (resultpath, jobpath):
        unlink(path)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the forked runner (tested through the module on namespace hosts)
        code = 1
        try:
            os.close(read)
            os.setsid()
            if os.fork():
                os._exit(0)
            code = _detached(module, bound, run, cleanup, write, pidpath, resultpath)
        finally:
            os._exit(code)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as handle:
        said = handle.read(4096)
    if not said.strip().isdigit():
        module.fail_json(msg="the rounds run did not start: %s" % (said.strip() or "(no word from it)"))
    pid = int(said.strip())
    write_json(jobpath, dict(pid=pid, bound=bound, rounds=rounds))
    return dict(job=job, pid=pid)


def _detached(module, bound, run, cleanup, write, pidpath, resultpath):  # pragma: no cover - runs forked
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
        raise RunnerFailure(msg)
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
            cleanup(current)
            try:
                os.killpg(os.getpgid(0), signal.SIGTERM)  # the session's group: this run and what it ran
            except OSError:
                pass
            write_json(resultpath, dict(result, runner=os.getpid()))
            if read_pid(pidpath) == os.getpid():
                unlink(pidpath)
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
        result = run(current)
    except RunnerFailure as exc:
        result = dict(failed=True, msg="the rounds run failed: %s" % exc)
    except Stopped:
        result = dict(failed=True, msg=STOPPED_BEFORE)
    except Exception as exc:  # pylint: disable=broad-except
        result = dict(failed=True, msg="the rounds run failed: %s: %s" % (type(exc).__name__, exc))
    finish(result, 0)
    return 0
