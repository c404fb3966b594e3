"""The sysfs reader on this machine's real kernel: interfaces created for the test, read back."""

import os
import re
import subprocess

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from conftest import require_tool
from testbed import net

ADDRESS = net(0) + ".1"  # this run's test-bed /24 (tests/utils/testbed.py): two runs never share it

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creating interfaces needs root (CI runs as root)")


@pytest.fixture
def interfaces():
    ip = require_tool("ip")
    tag = "%03d" % (os.getpid() % 1000)  # the names: unique per process
    bridge, veth, peer = "gfbr" + tag, "gfva" + tag, "gfvb" + tag
    commands = [
        [ip, "link", "add", bridge, "type", "bridge"],
        [ip, "link", "add", veth, "mtu", "9000", "type", "veth", "peer", "name", peer, "mtu", "9000"],
        [ip, "link", "set", veth, "master", bridge],
        [ip, "link", "set", bridge, "mtu", "9000"],
        [ip, "link", "set", veth, "up"],
        [ip, "link", "set", peer, "up"],
        [ip, "link", "set", bridge, "up"],
        # Addresses from the benchmark range, on a test interface of our own.
        [ip, "addr", "add", ADDRESS + "/24", "dev", veth],
        [ip, "-6", "addr", "add", "fd18::1/64", "dev", veth, "nodad"],
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


def test_real_addresses_and_duplicates(interfaces):
    import datetime
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
    _bridge, veth, _peer = interfaces
    facts = gather(gather_subset=["nic"])
    nic = [n for n in facts["nics"] if n["name"] == veth][0]
    assert nic["ipv4"] == [ADDRESS + "/24"]
    assert "fd18::1/64" in nic["ipv6"]
    # The same machine listed as two inventory hosts: its addresses in the intent's networks collide.
    networks = {"training": {"role": "training", "subnet": net(0) + ".0/24"}}
    report, errors = run_audit({"a": {"facts": facts, "networks": networks}, "b": {"facts": facts, "networks": networks}},
                               datetime.date.today(), "now")
    assert not errors
    dup = [f for f in report["findings"] if f["id"] == "NET-007" and f["evidence"]["address"] == ADDRESS]
    assert sorted(f["host"] for f in dup) == ["a", "b"] and dup[0]["subject"] == veth


def test_the_nic_s_own_counters_on_this_machine():
    """ethtool -S of this machine's physical NICs (virtio here) merged into the counters: the driver's drop counters
    read back, per-queue ones summed under one name, XDP's deliberate drops left out."""
    import shutil
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import merge_switch_side
    ethtool = require_tool("ethtool")
    facts = gather(root="/", gather_subset=["nic", "counters"])
    physical = [n["name"] for n in facts["nics"] if n.get("address")]
    if not physical:
        pytest.skip("this machine has no PCI network device")

    def run(argv):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        return done.returncode, done.stdout, done.stderr

    merge_switch_side(facts, run, shutil.which, {"counters"})
    raw = subprocess.run([ethtool, "-S", physical[0]], capture_output=True, text=True, timeout=30, check=False)
    if raw.returncode != 0:
        pytest.skip("%s has no driver statistics: %s" % (physical[0], raw.stderr.strip()))
    stats = facts["counters"]["nic_stats"].get(physical[0])
    names = [line.split(":")[0].strip() for line in raw.stdout.splitlines()[1:] if ":" in line]
    wanted = [n for n in names if "drop" in n and "xdp" not in n]
    assert wanted, raw.stdout  # every driver seen here counts drops
    assert stats and all("xdp" not in k for k in stats), stats
    for name in wanted:
        summed = re.sub(r"^(rx|tx)(\d+)_", r"\1*_", re.sub(r"^(rx|tx)_queue_(\d+)_", r"\1_queue_*_", name))
        assert summed in stats, (name, stats)


def test_the_kernel_log_read_live():
    """PCIE-007's input on this machine's real kernel: a bandwidth line in the kernel's own format is written into
    the real ring buffer (/dev/kmsg, as root), read back live by the sysfs reader among the thousands of records
    there, and PCIE-007 on the live facts judges only the devices the facts have. The line names a PCI function this
    machine does not have and says it is this test's (its first word), so no audit of this machine, now or later,
    takes it for a verdict on one of its devices: the kernel keeps it until the ring buffer wraps."""
    absent = next(a for a in ("0000:fe:1f.7", "0000:fd:1f.7", "0000:fc:1f.7")
                  if not os.path.exists(os.path.join("/sys/bus/pci/devices", a)))
    marker = "gpuops-fabric-test-%d" % os.getpid()
    line = ("<6>%s virtio-pci %s: 2.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s PCIe x1 link at %s "
            "(capable of 63.008 Gb/s with 8.0 GT/s PCIe x8 link)\n" % (marker, absent, absent))
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(line)
    facts = gather(gather_subset=["pci", "nic"])
    log = facts["kernel_pcie"]
    assert log["source"] == "/dev/kmsg" and isinstance(log["oldest_s"], int) and log["oldest_s"] >= 0
    mine = [e for e in log["entries"] if e["device"] == absent and e["driver"] == "virtio-pci"]
    assert mine, log["entries"][-5:]
    assert mine[-1] == {"driver": "virtio-pci", "device": absent, "available_gbps": 2.0, "limited": True,
                        "limit_speed_gts": 2.5, "limit_width": 1, "limit_at": absent, "capable_gbps": 63.008,
                        "capable_speed_gts": 8.0, "capable_width": 8}
    import datetime
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
    report, errors = run_audit({"live": {"facts": facts, "status": "audited"}}, datetime.date.today(),
                               datetime.datetime.now(datetime.timezone.utc).isoformat())
    assert errors == []
    assert not [f for f in report["findings"] if f["id"] == "PCIE-007" and f["subject"] == absent]
    assert report["outcomes"]["live"]["PCIE-007"]["status"] in ("pass", "findings", "not_applicable")
