"""The molecule scenario of each role (extensions/molecule/<role>) on the project's namespace hosts: create,
converge, idempotence, check, verify, destroy — as a user testing a variation would run it."""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="namespace hosts need root (CI runs as root)")


@pytest.mark.parametrize("scenario", ["network", "nccl", "probes", "tuning"])
def test_scenario(scenario, ansible_env):
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1",
               NO_COLOR="1", ANSIBLE_FORCE_COLOR="0", PY_COLORS="0")
    # molecule.yml points ANSIBLE_COLLECTIONS_PATH at .cache/collections, which scripts/setup.sh installs
    done = subprocess.run([os.path.join(bindir, "molecule"), "test", "-s", scenario], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    # every action of the sequence ran and passed (destroy, create, [prepare,] converge, idempotence, check, verify,
    # destroy)
    actions = 8 if scenario == "tuning" else 7
    assert re.search(r"%s\s*:\s*actions=%d\s+successful=%d\s+disabled=0\s+skipped=0" % (scenario, actions, actions),
                     output), output[-3000:]
    assert "%s > idempotence: Executed: Successful" % scenario in output
    # prerun is off: molecule must not have copied this checkout into the user's collections
    assert not os.path.exists(os.path.expanduser("~/.ansible/collections/ansible_collections/gpuops"))
