"""systemd-networkd itself reads the networkd golden files.

The daemon runs for a few seconds in a throwaway network namespace and private mount namespace, with the
rendered files as its only configuration (a tmpfs over /etc/systemd/network and /run/systemd). Its log says
which netdevs it loaded and every key or line it refused; the test asserts every file loads and nothing is
refused. A planted unknown key proves the check can fail. Needs root (namespaces), like the other live tests.
"""

import os
import re
import subprocess
import uuid

import pytest

from conftest import REPO, require_tool

GOLDEN_DIR = os.path.join(REPO, "tests", "fixtures", "golden")
INTENTS = sorted(os.listdir(GOLDEN_DIR)) if os.path.isdir(GOLDEN_DIR) else []
NETWORKD = "/lib/systemd/systemd-networkd"
REFUSED = re.compile(r"(Unknown key|Unknown section|ignoring|Ignoring|Failed to parse|Invalid|not valid)")

RUNNER = r"""
set -e
mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/systemd/network /run/systemd/netif
mount -t tmpfs tmpfs /etc/systemd/network
cp "$1"/* /etc/systemd/network/
cd /etc/systemd/network
for f in *; do mv "$f" "${f##*__}"; done
SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_TARGET=console timeout 4 %s 2>&1 || true
""" % NETWORKD


def run_networkd(folder):
    require_tool("ip")
    require_tool("unshare")
    assert os.path.exists(NETWORKD), "systemd-networkd is not installed (Debian package systemd)"
    assert os.geteuid() == 0, "needs root for network and mount namespaces"
    namespace = "gpuops-nd-%s" % uuid.uuid4().hex[:8]
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        result = subprocess.run(["ip", "netns", "exec", namespace, "unshare", "-m", "--propagation", "private",
                                 "bash", "-c", RUNNER, "runner", folder],
                                capture_output=True, text=True, timeout=60, check=False)
    finally:
        subprocess.run(["ip", "netns", "delete", namespace], check=False)
    return result.stdout


def about_our_files(log):
    """The lines of networkd's log that name one of our files, or one of the netdevs they define."""
    return [line for line in log.splitlines() if "60-gpuops-" in line]


@pytest.mark.parametrize("intent", INTENTS)
def test_networkd_accepts(intent):
    folder = os.path.join(GOLDEN_DIR, intent, "networkd")
    log = run_networkd(folder)
    assert "Enumeration completed" in log, log[-3000:]
    refused = [line for line in about_our_files(log) if REFUSED.search(line)]
    assert refused == [], refused
    for name in sorted(os.listdir(folder)):
        if name.endswith(".netdev"):
            with open(os.path.join(folder, name)) as handle:
                text = handle.read()
            netdev = re.search(r"^Name=(.+)$", text, re.M).group(1)
            kind = re.search(r"^Kind=(.+)$", text, re.M).group(1)
            assert '%s: loaded "%s"' % (netdev, kind) in log, (name, log[-3000:])


def test_networkd_check_can_fail(tmp_path):
    """The same run with a planted unknown key and a line outside any section: networkd names both."""
    source = os.path.join(GOLDEN_DIR, "bond_vlan", "networkd")
    for name in os.listdir(source):
        with open(os.path.join(source, name)) as handle:
            text = handle.read()
        if name.endswith(".network") and "Bond=" not in text:
            text = "Stray=1\n" + text + "\n[Network]\nBondMode=fast\n"
        (tmp_path / name).write_text(text)
    refused = [line for line in about_our_files(run_networkd(str(tmp_path))) if REFUSED.search(line)]
    assert any("Unknown key 'BondMode'" in line for line in refused), refused
    assert any("Assignment outside of section" in line for line in refused), refused
