"""The probes' bounded runner: argument lists only, a time limit that kills, output kept as bytes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import (
    STDOUT, TimeoutExpired, run_bounded,
)


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
