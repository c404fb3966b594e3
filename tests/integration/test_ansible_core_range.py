"""Both ends of the supported ansible-core range run the tests. The whole suite runs in the main environment on the
oldest core that requires_ansible allows (tests/core-floor-constraints.txt); scripts/test.sh then runs the integration
tests again in .cache/core-newest-venv, on the newest core on PyPI (Python 3.12 or later). These tests run in both
runs. Each run checks that it is at one end (the tests run the ansible-playbook beside their own Python, conftest's
ansible_env); the main run checks that the newest environment exists (so the second run cannot quietly go missing);
and the places that state the range agree. test_audit's golden comparison of the demo reports runs in both runs, so
the two cores must give the same reports."""

import os
import re
import subprocess
import sys

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import REPO

NEWEST = os.path.join(REPO, ".cache", "core-newest-venv", "bin")


def read(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return handle.read()


def core_version(program):
    said = subprocess.run([program, "--version"], capture_output=True, text=True, check=True)
    return Version(said.stdout.split("[core ", 1)[1].split("]", 1)[0])


def core_spec(text):
    """The ansible-core specifier of a requirements text (its one ansible-core line)."""
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    found = [line[len("ansible-core"):] for line in lines if line.startswith("ansible-core")]
    assert len(found) == 1, found
    return SpecifierSet(found[0])


def floor():
    """The oldest core requires_ansible allows (meta/runtime.yml), as (major, minor)."""
    stated = yaml.safe_load(read("meta", "runtime.yml"))["requires_ansible"]
    match = re.fullmatch(r">=(\d+)\.(\d+)\.0", stated)
    assert match, stated
    return int(match.group(1)), int(match.group(2))


def newest():
    """The newest core the tests install (tests/core-newest-requirements.txt), as (major, minor)."""
    spec = core_spec(read("tests", "core-newest-requirements.txt"))
    lows = [Version(s.version) for s in spec if s.operator == ">="]
    assert len(lows) == 1, spec
    return lows[0].major, lows[0].minor


def test_this_run_is_at_one_end():
    ours = core_version(os.path.join(os.path.dirname(sys.executable), "ansible"))
    assert (ours.major, ours.minor) in (floor(), newest()), (str(ours), floor(), newest())


def test_the_newest_core_is_there_for_the_second_run():
    program = os.path.join(NEWEST, "ansible")
    assert os.path.exists(program), (
        "no venv with the newest ansible-core: scripts/test.sh makes it where Python 3.12 or later is installed")
    found = core_version(program)
    assert (found.major, found.minor) == newest(), str(found)
    assert floor() < newest()


def test_the_places_that_state_the_range_agree():
    low, high = floor(), newest()
    supported = core_spec(read("requirements.txt"))
    assert Version("%d.%d.0" % low) in supported and Version("%d.%d.99" % high) in supported, supported
    assert Version("%d.%d.99" % (low[0], low[1] - 1)) not in supported, supported
    assert Version("%d.%d.0" % (high[0], high[1] + 1)) not in supported, supported
    # the main environment's constraint is the floor, and the execution environment allows the same range
    assert core_spec(read("tests", "core-floor-constraints.txt")) == SpecifierSet(">=%d.%d,<%d.%d" % (
        low + (low[0], low[1] + 1)))
    ee = yaml.safe_load(read("ee", "execution-environment.yml"))
    assert core_spec(ee["dependencies"]["ansible_core"]["package_pip"]) == supported
    for role in sorted(os.listdir(os.path.join(REPO, "roles"))):
        meta = yaml.safe_load(read("roles", role, "meta", "main.yml"))
        assert meta["galaxy_info"]["min_ansible_version"] == "%d.%d" % low, role
