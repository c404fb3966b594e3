"""module_utils/_probing/bounded.py, with real programs (no fakes). run_bounded, the probes' runner: argument lists
only, a time limit that kills, output kept as bytes. run_capped, for the tools the facts ask: bounded in time and in
output (one that ends, one that never does, one that prints without end, one that writes to stderr, one that cannot
start)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import (
    STDOUT, TimeoutExpired, run_bounded, run_capped,
)
from ansible_collections.gpuops.fabric.plugins.modules.topology_facts import run_tool


def test_runs_an_argument_list_and_keeps_its_output():
    done = run_bounded(["/bin/sh", "-c", "printf 'a b'; printf err >&2; exit 3"], 10, stderr=STDOUT)
    assert (done.returncode, done.stdout) == (3, b"a berr")


def test_stdin_is_dev_null():
    assert run_bounded(["/bin/cat"], 10).stdout == b""  # would wait for input otherwise


def test_the_time_limit_kills():
    start = time.monotonic()
    with pytest.raises(TimeoutExpired):
        run_bounded(["/bin/sleep", "30"], 0.5)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("argv", ["ping -c 1 198.18.0.1", [], ["ping", 1], None])
def test_a_shell_string_or_junk_is_refused(argv):
    with pytest.raises(ValueError):
        run_bounded(argv, 1)


def test_a_missing_program_is_an_os_error():
    with pytest.raises(OSError):
        run_bounded(["/nonexistent/gpuops-probe"], 1)


def test_a_tool_that_ends():
    assert run_capped(["printf", "a\\nb"], 10, 1000) == (0, "a\nb", "", None)
    assert run_capped(["sh", "-c", "echo oops >&2; exit 3"], 10, 1000) == (3, "", "oops\n", None)


def test_a_tool_that_never_ends_is_killed():
    code, out, _err, why = run_capped(["sh", "-c", "echo started; exec sleep 60"], 0.5, 1000)
    assert code is None and out == "started\n" and why == "sh: no end within 0.5 s"


def test_a_tool_that_prints_without_end_is_cut():
    code, out, _err, why = run_capped(["yes"], 30, 100000)
    assert code is None and len(out) == 100000 and out.startswith("y\ny\n")
    assert why == "yes: more than 100000 bytes of output"


def test_a_child_that_closes_its_output_but_stays_is_killed_at_the_deadline():
    code, _out, _err, why = run_capped(["sh", "-c", "exec >&- 2>&-; sleep 60"], 0.5, 1000)
    assert code is None and "no end within" in why


def test_arguments_are_a_list_and_a_missing_program_raises():
    with pytest.raises(ValueError):
        run_capped("ls -l", 1, 10)
    with pytest.raises(OSError):
        run_capped(["/nonexistent/tool"], 1, 10)


def test_the_facts_module_notes_a_tool_it_cut():
    facts = {"warnings": []}
    assert run_tool(["/nonexistent/lldpctl", "-f", "json"], facts)[0] == 1
    assert facts["warnings"] == ["/nonexistent/lldpctl: [Errno 2] No such file or directory: '/nonexistent/lldpctl' "
                                 "(left out of the facts)"]
    assert run_tool(["printf", "{}"], facts) == (0, "{}", "")


HANGUP_SCRIPT = r"""
import os, signal, sys, tempfile, time
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import end_on_hangup, run_bounded
# as sshd starts a session's programs (the default), or as nohup does (ignored); this test's own runner may ignore
# SIGHUP (a CI job started under nohup), and an ignored signal is inherited
signal.signal(signal.SIGHUP, signal.SIG_IGN if sys.argv[2] == "ignored" else signal.SIG_DFL)
folder = tempfile.mkdtemp(dir=sys.argv[1])
try:  # what the AnsiballZ wrapper does around a module
    end_on_hangup(lambda: open(os.path.join(sys.argv[1], "cleaned"), "w").close())
    print(folder, flush=True)
    run_bounded(["sleep", sys.argv[3]], 60)  # a probe waiting for its program when the session hangs up
    print("slept", flush=True)
finally:
    os.rmdir(folder)
"""


@pytest.mark.parametrize("before", ["default", "ignored"])
def test_a_hangup_ends_the_wait_through_the_wrappers_cleanup(tmp_path, before):
    """SIGHUP (the SSH session gone) while a probe waits: the cleanup runs, the program waited for is killed, the
    process ends with 128 + SIGHUP and its finally clauses run (AnsiballZ's payload folder goes). A hangup the caller
    ignores (nohup) stays ignored."""
    import os
    import signal
    import subprocess
    import sys
    seconds = "30.%06d" % (os.getpid() % 1000000)  # this run's sleep, told apart from any other on the machine
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", HANGUP_SCRIPT, str(tmp_path), before, seconds],
                            stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)

    def sleeping():
        return subprocess.run(["pgrep", "-f", "^sleep %s$" % seconds], capture_output=True, check=False).returncode == 0
    try:
        folder = proc.stdout.readline().strip()
        assert os.path.isdir(folder)
        deadline = time.monotonic() + 10
        while not sleeping() and time.monotonic() < deadline:
            time.sleep(0.05)  # until the sleep runs: a hangup while it starts is another case
        assert sleeping()
        proc.send_signal(signal.SIGHUP)
        if before == "ignored":
            time.sleep(0.5)
            assert proc.poll() is None and sleeping()
            return
        assert proc.wait(timeout=10) == 128 + signal.SIGHUP
        assert proc.stdout.read() == ""  # the wait ended at the hangup
        assert not os.path.exists(folder) and os.path.exists(os.path.join(str(tmp_path), "cleaned"))
        assert not sleeping()  # killed, not orphaned
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the child and its sleep, whatever the test found
        except OSError:
            pass
        proc.wait(timeout=10)
