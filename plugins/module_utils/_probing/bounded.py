# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""A probe's program run with a time limit: ping, the iperf3 client and nccl-tests. AnsibleModule.run_command has
no time limit (a peer that never answers would hold the node's run past its round), keeps all output in memory
(NCCL_DEBUG=INFO from every rank of a launcher run goes to a file instead) and is not meant for the threads the
pings of many peers run in. The argv is always a list, never a shell string; stdin is /dev/null."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import signal
import subprocess

PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
TimeoutExpired = subprocess.TimeoutExpired


def end_on_hangup(cleanup=None):
    """A probe that waits on the node (a collect's wait, a round, pings, nccl-tests) ends through SystemExit when its
    SSH session hangs up (Ctrl-C on the controller, a dropped connection: sshd sends SIGHUP to the session's tty),
    after ``cleanup()`` where given. Python's default for SIGHUP ends the process at once, which left the AnsiballZ
    wrapper's payload folder (~130 KB) in the node's temporary directory each time; SystemExit runs the wrapper's
    cleanup, and subprocess.run kills a program it was waiting for. A hangup already ignored (nohup) stays so."""
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        return

    def hung_up(signum, _frame):
        if cleanup is not None:
            cleanup()
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGHUP, hung_up)


def run_bounded(argv, timeout, stdout=PIPE, stderr=PIPE, env=None):
    """Run ``argv`` (a list) for at most ``timeout`` seconds: the completed process (its returncode, stdout and
    stderr as bytes where piped). Raises TimeoutExpired past the limit (the program is killed) and OSError when it
    cannot start."""
    if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty list of strings, not %r" % (argv,))
    # the one place the probes run a program themselves, for the reasons above (ansible-core 2.21's pylint asks for
    # run_command here)
    # pylint: disable-next=ansible-bad-function
    return subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                          timeout=timeout, check=False)


def run_capped(argv, timeout, max_bytes, env=None):
    """Run ``argv`` (a list) for at most ``timeout`` seconds, keeping at most ``max_bytes`` of its standard output
    and of its standard error: (returncode, stdout, stderr, why), the outputs as text (UTF-8, errors replaced).
    A program that outlives its time or prints past the cap is killed: its returncode is then None and ``why``
    says which (a tool stuck on broken hardware, or printing without end, costs bounded time and memory).
    Raises OSError when it cannot start."""
    import os
    import select
    import time
    if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty list of strings, not %r" % (argv,))
    deadline = time.monotonic() + timeout
    # pylint: disable-next=ansible-bad-function
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=PIPE, stderr=PIPE, env=env)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept = {out_fd: [], err_fd: []}
    sizes = dict((fd, 0) for fd in kept)
    open_fds, why = set(kept), None
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "%s: no end within %g s" % (argv[0], timeout)
                break
            ready, _w, _x = select.select(list(open_fds), [], [], min(left, 1.0))
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.discard(fd)
                    continue
                room = max_bytes - sizes[fd]
                kept[fd].append(chunk[:room])
                sizes[fd] += len(chunk)
                if sizes[fd] > max_bytes:
                    why = "%s: more than %d bytes of output" % (argv[0], max_bytes)
                    open_fds.clear()
                    break
        if why is None:
            try:
                code = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                why = "%s: no end within %g s" % (argv[0], timeout)
        if why is not None:
            proc.kill()
            proc.wait()
            code = None
    finally:
        proc.stdout.close()
        proc.stderr.close()
    return (code, b"".join(kept[out_fd]).decode("utf-8", "replace"), b"".join(kept[err_fd]).decode("utf-8", "replace"),
            why)
