"""The sysfs reader on this machine's real kernel: interfaces created for the test, read back."""

import os
import subprocess

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._facts import gather
from conftest import require_tool

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creating interfaces needs root (CI runs as root)")


@pytest.fixture
def interfaces():
    ip = require_tool("ip")
    tag = "%03d" % (os.getpid() % 1000)
    bridge, veth, peer = "gfbr" + tag, "gfva" + tag, "gfvb" + tag
    commands = [
        [ip, "link", "add", bridge, "type", "bridge"],
        [ip, "link", "add", veth, "mtu", "9000", "type", "veth", "peer", "name", peer, "mtu", "9000"],
        [ip, "link", "set", veth, "master", bridge],
        [ip, "link", "set", bridge, "mtu", "9000"],
        [ip, "link", "set", veth, "up"],
        [ip, "link", "set", peer, "up"],
        [ip, "link", "set", bridge, "up"],
    ]
    try:
        for command in commands:
            subprocess.run(command, check=True, capture_output=True, timeout=30)
        yield bridge, veth, peer
    finally:
        for name in (veth, bridge):
            subprocess.run([ip, "link", "del", name], check=False, capture_output=True, timeout=30)


def test_real_bridge_and_veth(interfaces):
    bridge, veth, peer = interfaces
    nics = {n["name"]: n for n in gather(gather_subset=["nic"])["nics"]}
    assert nics[bridge]["kind"] == "bridge"
    assert nics[bridge]["mtu"] == 9000
    assert nics[veth]["kind"] == "virtual" and nics[veth]["address"] is None
    assert nics[veth]["mtu"] == 9000 and nics[veth]["operstate"] in ("up", "lowerlayerdown", "unknown")
    assert nics[peer]["mac"] and len(nics[peer]["mac"].split(":")) == 6
    assert nics["lo"]["kind"] == "loopback"
