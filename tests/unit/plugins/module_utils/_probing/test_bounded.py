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
