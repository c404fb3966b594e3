"""The newest ansible-core: the collection built and installed by that core's own ansible-galaxy, and the demo
audit run by its ansible-playbook (on Python 3.12 or later, in .cache/core-newest-venv, which scripts/test.sh
makes), gives the same reports as the stored copy the rest of the suite checks with the oldest supported core."""

import os
import subprocess
import sys

from test_audit import GOLDEN_DAY, GOLDEN_DEMO, GOLDEN_FILES, TIMESTAMP

from conftest import REPO

NEWEST = os.path.join(REPO, ".cache", "core-newest-venv", "bin")


def core_version(bindir):
    said = subprocess.run([os.path.join(bindir, "ansible"), "--version"], capture_output=True, text=True, check=True)
    return said.stdout.split("[core ", 1)[1].split("]", 1)[0]


def test_the_demo_audit_is_the_same_on_the_newest_core(tmp_path):
    assert os.path.exists(os.path.join(NEWEST, "ansible-playbook")), (
        "no venv with the newest ansible-core: scripts/test.sh makes it where Python 3.12 or later is installed")
    newest = core_version(NEWEST)
    ours = core_version(os.path.dirname(sys.executable))
    assert tuple(map(int, newest.split(".")[:2])) >= (2, 21) and newest != ours, (newest, ours)
    build = tmp_path / "build"
    subprocess.run([os.path.join(NEWEST, "ansible-galaxy"), "collection", "build", "--output-path", str(build), REPO],
                   check=True, capture_output=True)
    tarball = [str(build / n) for n in os.listdir(str(build)) if n.endswith(".tar.gz")][0]
    subprocess.run([os.path.join(NEWEST, "ansible-galaxy"), "collection", "install", "-p", str(tmp_path / "c"),
                    tarball], check=True, capture_output=True)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "c"), ANSIBLE_STDOUT_CALLBACK="default",
               ANSIBLE_LOCALHOST_WARNING="0", PATH=NEWEST + os.pathsep + os.environ["PATH"])
    report_dir = str(tmp_path / "r")
    # the machine it runs on is left out, as in test_audit's golden comparison (its live sysfs differs)
    inventory = os.path.join(REPO, "demo", "inventory.yml")
    result = subprocess.run([os.path.join(NEWEST, "ansible-playbook"), "-i", inventory,
                             "gpuops.fabric.audit", "-e", "fabric_report_dir=" + report_dir,
                             "-e", "fabric_hosts=all:!this-machine", "-e", "fabric_audit_today=" + GOLDEN_DAY,
                             "-e", "ansible_python_interpreter=" + os.path.join(NEWEST, "python")],
                            env=env, capture_output=True, text=True, timeout=600, cwd=str(tmp_path), check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "[DEPRECATION WARNING]" not in result.stdout + result.stderr, result.stderr[-3000:]
    for name in GOLDEN_FILES:
        with open(os.path.join(report_dir, name)) as handle:
            produced = TIMESTAMP.sub("<timestamp>", handle.read()).replace(REPO, "<repo>")
        with open(os.path.join(GOLDEN_DEMO, name)) as handle:
            assert produced == handle.read(), "%s differs on ansible-core %s" % (name, newest)
