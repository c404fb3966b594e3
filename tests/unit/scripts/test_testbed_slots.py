"""Test-bed slots (tests/utils/testbed.py): two runs at once get different slots, hence different names and
addresses; a run's children inherit its slot; a slot frees itself when its run ends, killed or not."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

UTILS = os.path.join(REPO, "tests", "utils")
HOLD = ("import sys, time; sys.path.insert(0, %r); import testbed; print(testbed.slot(), testbed.name('gfx'), "
        "testbed.net(12), flush=True); time.sleep(float(sys.argv[1]))" % UTILS)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="leases live in /run (CI runs as root)")


def start(seconds, **env):
    environ = dict(os.environ)
    environ.pop("GPUOPS_TESTBED_SLOT", None)
    environ.update(env)
    return subprocess.Popen([sys.executable, "-c", HOLD, str(seconds)], stdout=subprocess.PIPE, text=True,
                            env=environ)


def test_runs_at_once_get_their_own_slot_and_a_slot_frees_when_its_run_ends():
    first = start(30)
    line = first.stdout.readline().split()
    second = start(0)
    other = second.stdout.readline().split()
    second.wait(timeout=30)
    assert line[0] != other[0] and line[1] != other[1] and line[2] != other[2]
    assert line[1] == "gfx" + "abcdefgh"[int(line[0])]
    first.kill()  # killed, not ended: the kernel drops its lock all the same
    first.wait(timeout=30)
    again = start(0)
    assert again.stdout.readline().split()[0] == min(line[0], other[0])
    again.wait(timeout=30)


def test_a_pinned_slot_and_its_addresses():
    pinned = start(0, GPUOPS_TESTBED_SLOT="5")
    assert pinned.stdout.readline().split() == ["5", "gfxf", "198.19.76"]
    pinned.wait(timeout=30)
    bad = subprocess.run([sys.executable, "-c", HOLD, "0"], capture_output=True, text=True, check=False,
                         env=dict(os.environ, GPUOPS_TESTBED_SLOT="9"))
    assert bad.returncode != 0 and "GPUOPS_TESTBED_SLOT='9': a slot 0-7" in bad.stderr
