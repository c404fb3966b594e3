"""Readers that never crash, hang or blow up (issue 13).

Each test starts from a copy of a real capture (tests/fixtures/realdata, through the ``roots`` fixture) or of the
hand-written dgx8 node, and plants one hostile thing in it: a FIFO, a device node, an oversized or unreadable
file, an absurd number, a device present twice. The planted inputs are hand-written (each test says what it
plants); the normal cases are the captures themselves. Reads that could hang run in a thread with a join
timeout, so a regression fails instead of hanging the suite. No test here asserts a time.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import shutil
import socket
import threading
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysfs_tree import copy_root, find_dir, netdev_dir, replace_with_fifo, write
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import markers
from ansible_collections.gpuops.fabric.plugins.module_utils._network.netplan import parse_netplan
from ansible_collections.gpuops.fabric.plugins.module_utils._network.networkd import parse_networkd
from ansible_collections.gpuops.fabric.plugins.module_utils._network.networkmanager import parse_keyfiles
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs import files as _sysfs
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import hex_pair
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import (
    MAX_CPUS, format_cpulist, parse_cpulist, parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import parse_link_speed, parse_link_width
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import normalize_pci_address
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import (
    parse_fib_trie_local, parse_if_inet6, parse_proc_bonding, parse_proc_route,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.files import PROCFS_MAX_BYTES, SYSFS_MAX_BYTES
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import parse_acs_control, parse_uevent
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.rdma import ipv4_from_gid
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import parse_decimal

JOIN_TIMEOUT = 60
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])
XEONPHI = "hwloc-xeonphi-mlx4-2numa"
GPU = "0000:15:00.0"


def gather_in_thread(**kwargs):
    """gather() in a daemon thread: returns its facts, re-raises its exception, fails (not hangs) on a hang."""
    result = {}

    def run():
        try:
            result["facts"] = gather(**kwargs)
        except BaseException as exc:  # handed to the test thread
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(JOIN_TIMEOUT)
    assert not thread.is_alive(), "gather(%r) still running after %d s: a read blocks" % (kwargs, JOIN_TIMEOUT)
    if "error" in result:
        raise result["error"]
    return result["facts"]


@pytest.fixture
def dgx(roots, tmp_path):
    return copy_root(roots, "dgx8", tmp_path)


@pytest.fixture
def phi(roots, tmp_path):
    """A copy of the real Xeon Phi + ConnectX-3 capture."""
    return copy_root(roots, XEONPHI, tmp_path)


def by(items, key, value):
    (item,) = [i for i in items if i[key] == value]
    return item


# ---- 1. FIFOs, sockets, devices, directories where a file should be ------------------------------------
@pytest.mark.parametrize("relative", [
    "sys/devices/system/node/node0/cpulist",
    "sys/devices/system/node/node1/meminfo",
    "sys/class/net/eth0/mtu",
    "sys/class/net/eth0/speed",
    "sys/class/net/ib0/operstate",
    "sys/class/infiniband/mlx4_0/ports/1/rate",
    "proc/net/route",
    "etc/nccl.conf",
])
def test_fifo_in_a_real_capture_is_skipped_and_named(phi, relative):
    """Planted: a FIFO (no writer) in place of one file of the Xeon Phi capture. The read must return."""
    path = os.path.join(phi, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    os.mkfifo(path)
    facts = gather_in_thread(root=phi)
    assert any(os.path.basename(relative) in w and "not a regular file (a FIFO)" in w for w in facts["warnings"]), \
        facts["warnings"]


def test_fifo_in_the_pci_listing_is_not_opened(phi):
    """Planted: a FIFO as a PCI attribute (found through the directory listing, not a stat)."""
    replace_with_fifo(os.path.join(find_dir(phi, "0000:82:00.0"), "numa_node"))
    facts = gather_in_thread(root=phi)
    assert by(facts["pci"], "address", "0000:82:00.0")["numa_node"] is None
    assert any("0000:82:00.0/numa_node: not a regular file (a FIFO)" in w for w in facts["warnings"])


def test_device_node_and_socket_are_refused_unopened(phi, tmp_path):
    """Planted: eth0's mtu a link to /dev/zero (opening and reading it would give 64 KiB of NULs), its speed a
    UNIX socket, and node0's cpulist a directory."""
    eth0 = netdev_dir(phi, "eth0")
    os.unlink(os.path.join(eth0, "mtu"))
    os.symlink("/dev/zero", os.path.join(eth0, "mtu"))
    os.unlink(os.path.join(eth0, "speed"))
    here = os.getcwd()
    os.chdir(eth0)  # a socket path must fit sockaddr_un: bind by a relative name
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("speed")
    finally:
        os.chdir(here)
    cpulist = os.path.join(phi, "sys/devices/system/node/node0/cpulist")
    os.unlink(cpulist)
    os.mkdir(cpulist)
    try:
        facts = gather_in_thread(root=phi)
    finally:
        sock.close()
    nic = by(facts["nics"], "name", "eth0")
    assert nic["mtu"] is None and nic["speed_mbps"] is None
    warnings = "\n".join(facts["warnings"])
    assert "eth0/mtu: not a regular file (a character device)" in warnings
    assert "eth0/speed: not a regular file (a socket)" in warnings
    assert "node0/cpulist: not a regular file (a directory)" in warnings
    # the CPU list falls back on cpumap
    assert facts["numa"]["nodes"][0]["cpus"] == "0-7"


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_root_that_is_not_a_directory(tmp_path, kind):
    root = str(tmp_path / "root")
    if kind == "fifo":
        os.mkfifo(root)
    else:
        write(root, "not a tree\n")
    with pytest.raises(TopologyError) as err:
        gather_in_thread(root=root)
    assert root in str(err.value) and "not a directory" in str(err.value)
    assert ("a FIFO" if kind == "fifo" else "not a sysfs tree") in str(err.value)


# ---- bounded reads --------------------------------------------------------------------------------------
def test_oversized_sysfs_attribute_is_ignored_with_its_bound(phi):
    """Planted: node1's cpulist of 64 KiB + 1 (no sysfs attribute is larger than a page)."""
    write(os.path.join(phi, "sys/devices/system/node/node1/cpulist"), b"8" * (SYSFS_MAX_BYTES + 1))
    facts = gather_in_thread(root=phi)
    assert any("node1/cpulist: larger than %d bytes" % SYSFS_MAX_BYTES in w and "sysfs" in w
               for w in facts["warnings"])
    assert facts["numa"]["nodes"][1]["cpus"] == "8-15"  # from cpumap


def test_sysfs_attribute_at_the_bound_is_read(phi):
    """Planted: a cpulist padded with spaces to exactly the bound: still read."""
    text = b"8-15" + b" " * (SYSFS_MAX_BYTES - 5) + b"\n"
    assert len(text) == SYSFS_MAX_BYTES
    write(os.path.join(phi, "sys/devices/system/node/node1/cpulist"), text)
    facts = gather_in_thread(root=phi)
    assert facts["numa"]["nodes"][1]["cpus"] == "8-15"
    assert not any("node1" in w for w in facts["warnings"])


def test_procfs_files_have_their_own_larger_bound(phi):
    """Planted: /proc/net/route over the procfs bound, and a /proc/net/fib_trie above the sysfs bound but
    below the procfs one (read in full)."""
    os.makedirs(os.path.join(phi, "proc", "net"), exist_ok=True)
    header = b"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    line = b"eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    write(os.path.join(phi, "proc/net/route"), header + line * (PROCFS_MAX_BYTES // len(line) + 1))
    fib = b"Main:\n" + b"     |-- 10.0.0.9\n        /32 link BROADCAST\n" * 3000
    assert SYSFS_MAX_BYTES < len(fib) < PROCFS_MAX_BYTES
    write(os.path.join(phi, "proc/net/fib_trie"), fib)
    facts = gather_in_thread(root=phi)
    assert any("proc/net/route: larger than %d bytes" % PROCFS_MAX_BYTES in w and "procfs" in w
               for w in facts["warnings"])
    assert not any("fib_trie: larger" in w for w in facts["warnings"])


# ---- 2./3. CPU lists and masks ---------------------------------------------------------------------------
def test_cpulist_with_trailing_newline_and_nul_is_text(phi):
    """Planted: node0/cpulist and a PCI local_cpulist ending in "\\n\\0" as a real ARM capture has them."""
    write(os.path.join(phi, "sys/devices/system/node/node0/cpulist"), b"0-7\n\x00")
    write(os.path.join(find_dir(phi, "0000:82:00.0"), "local_cpulist"), b"8-15\n\x00\x00")
    facts = gather_in_thread(root=phi)
    assert facts["numa"]["nodes"][0]["cpus"] == "0-7"
    assert by(facts["pci"], "address", "0000:82:00.0")["local_cpus"] == "8-15"
    assert not any("not text" in w for w in facts["warnings"])


def test_nul_inside_text_is_still_refused(phi):
    write(os.path.join(phi, "sys/devices/system/node/node0/cpulist"), b"0-3\x00junk\n")
    facts = gather_in_thread(root=phi)
    assert any("node0/cpulist: not text" in w for w in facts["warnings"])


def test_hostile_cpumask_660kb():
    """Hand-written: a 660 KB mask of all-ones words (2.3 million CPUs) is junk; one of leading zero words
    with four CPUs set is four CPUs. Both return (the old parser shifted a big integer: quadratic)."""
    words = 660000 // 9
    assert parse_cpumask(",".join(["ffffffff"] * words)) is None
    assert parse_cpumask(",".join(["00000000"] * words + ["0000000f"])) == [0, 1, 2, 3]
    top = ",".join(["80000000"] + ["00000000"] * (MAX_CPUS // 32 - 1))
    assert parse_cpumask(top) == [MAX_CPUS - 1]
    assert parse_cpumask("00000001," + top) is None


def test_many_huge_ranges_stay_bounded():
    """Hand-written: "0-65536" repeated (beyond the bound: junk) and "0-16383" repeated 20000 times (merged
    before expansion: MAX_CPUS numbers, not 20000 x 16384)."""
    assert parse_cpulist(",".join(["0-65536"] * 20000)) is None
    tracemalloc.start()
    try:
        cpus = parse_cpulist(",".join(["0-%d" % (MAX_CPUS - 1)] * 20000))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cpus == list(range(MAX_CPUS))
    assert peak < 32 << 20
    assert parse_cpulist("5,3-4,0-2,2-3") == [0, 1, 2, 3, 4, 5]
    assert format_cpulist([3, 1, 2, 2]) == "1-3"


def test_cpulist_bounds():
    assert parse_cpulist("%d" % (MAX_CPUS - 1)) == [MAX_CPUS - 1]
    assert parse_cpulist("%d" % MAX_CPUS) is None
    assert parse_cpulist("9" * 400) is None
    assert parse_cpulist("\u0663") is None  # an Arabic-Indic digit: str.isdecimal() says yes, the kernel never
    assert parse_cpulist("1_0") is None


# ---- 4. absurd numbers --------------------------------------------------------------------------------------
HUGE = "9" * 400


def test_absurd_numbers_in_a_real_capture(phi):
    """Planted in the Xeon Phi capture: a 400-digit NIC speed, MTU and NUMA node, a negative speed other than -1,
    an impossible link width and rate, a 400-digit NUMA distance and node directory."""
    eth0, eth1 = netdev_dir(phi, "eth0"), netdev_dir(phi, "eth1")
    write(os.path.join(eth0, "speed"), HUGE + "\n")
    write(os.path.join(eth0, "mtu"), HUGE + "\n")
    write(os.path.join(eth1, "speed"), "-7\n")
    mlx4 = find_dir(phi, "0000:82:00.0")
    write(os.path.join(mlx4, "numa_node"), HUGE + "\n")
    write(os.path.join(mlx4, "current_link_width"), HUGE + "\n")
    write(os.path.join(mlx4, "current_link_speed"), "99999 GT/s\n")
    write(os.path.join(phi, "sys/devices/system/node/node1/distance"), "21 " + HUGE + "\n")
    os.mkdir(os.path.join(phi, "sys/devices/system/node/node" + HUGE[:200]))
    facts = gather_in_thread(root=phi)
    assert by(facts["nics"], "name", "eth0")["speed_mbps"] is None
    assert by(facts["nics"], "name", "eth0")["mtu"] is None
    assert by(facts["nics"], "name", "eth1")["speed_mbps"] is None
    dev = by(facts["pci"], "address", "0000:82:00.0")
    assert dev["numa_node"] is None and dev["link"]["current"]["width"] is None
    assert dev["link"]["current"]["speed_gts"] is None
    assert facts["numa"]["count"] == 2 and facts["numa"]["nodes"][1]["distances"] == {}
    warnings = "\n".join(facts["warnings"])
    for needle in ("eth0/speed: 99999999999999999999... (400 characters) is outside 0..3200000",
                   "eth0/mtu: 99999999999999999999... (400 characters) is outside 0..65575",
                   "eth1/speed: -7 is outside",
                   "0000:82:00.0/numa_node: 99999999999999999999... (400 characters) is outside -1..1023",
                   "0000:82:00.0/current_link_width: 99999999999999999999... (400 characters) is not a PCIe",
                   "0000:82:00.0/current_link_speed: '99999 GT/s' not understood",
                   "node1/distance: a distance outside 0..255",
                   "NUMA node 99999999999999999999... (200 characters) is outside 0..1023"):
        assert needle in warnings, needle
    json.dumps(facts, allow_nan=False)


def test_unknown_speed_spellings_stay_quiet(phi):
    """Planted: the kernel's spellings of an unknown speed (-1, and as unsigned on older kernels)."""
    for name, value in (("eth0", "-1"), ("eth1", "4294967295")):
        write(os.path.join(netdev_dir(phi, name), "speed"), value + "\n")
    facts = gather_in_thread(root=phi)
    assert by(facts["nics"], "name", "eth0")["speed_mbps"] is None
    assert by(facts["nics"], "name", "eth1")["speed_mbps"] is None
    assert not any("/speed" in w for w in facts["warnings"])


def test_absurd_numbers_on_bonds_vlans_and_rdma_do_not_reach_the_audit(dgx):
    """Planted in the hand-written dgx8: a 400-digit bond member speed and link failure count, an out of
    range VLAN id, a 400-digit RDMA rate and a 400-digit port directory. The facts hold None, and every host
    rule runs on them without an internal error."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import evaluate_host
    bonding = os.path.join(dgx, "proc/net/bonding/bond0")
    with open(bonding) as handle:
        text = handle.read()
    text = text.replace("Speed: 10000 Mbps", "Speed: %s Mbps" % HUGE, 1)
    text = text.replace("Link Failure Count: 0", "Link Failure Count: %s" % HUGE, 1)
    write(bonding, text)
    write(os.path.join(dgx, "proc/net/vlan/config"),
          "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\nbond0.100      | 70000  | bond0\n")
    ib = os.path.realpath(os.path.join(dgx, "sys/class/infiniband/mlx5_0"))
    write(os.path.join(ib, "ports/1/rate"), HUGE + " Gb/sec (4X NDR)\n")
    shutil.copytree(os.path.join(ib, "ports/1"), os.path.join(ib, "ports", HUGE[:100]), symlinks=True)
    facts = gather_in_thread(root=dgx)
    member = by(facts["bonds"][0]["members"], "name", "eno1")
    assert member["speed_mbps"] == 10000  # the bond page's value was absurd: sysfs speed of eno1 stands in
    assert member["link_failure_count"] is None
    rdma = by(facts["rdma"], "name", "mlx5_0")
    assert [p["port"] for p in rdma["ports"]] == [1] and rdma["ports"][0]["rate_gbps"] is None
    warnings = "\n".join(facts["warnings"])
    assert "bonding/bond0: eno1: Speed: 99999999999999999999... (400 characters) is outside" in warnings
    assert "eno1: Link Failure Count: 99999999999999999999... (400 characters) is outside" in warnings
    assert "vlan/config: bond0.100: VLAN id 70000 is outside 0..4095" in warnings
    assert "ports/1/rate: 99999999999999999999... (400 characters) Gb/s is outside" in warnings
    assert "port 99999999999999999999... (100 characters) is outside" in warnings
    json.dumps(facts, allow_nan=False)
    expect = {"gpu": {"width": None, "generation": None}, "nics": [], "rdma": False}
    _findings, outcomes = evaluate_host("node", facts, expect)
    assert not [r for r, (status, _reason) in outcomes.items() if status == "error"], outcomes


def test_nan_and_infinite_rates_are_not_numbers(dgx):
    """Planted: RDMA rates NaN and inf (float() takes both)."""
    ib = os.path.realpath(os.path.join(dgx, "sys/class/infiniband/mlx5_0"))
    write(os.path.join(ib, "ports/1/rate"), "nan Gb/sec\n")
    facts = gather_in_thread(root=dgx)
    assert by(facts["rdma"], "name", "mlx5_0")["ports"][0]["rate_gbps"] is None
    write(os.path.join(ib, "ports/1/rate"), "inf Gb/sec\n")
    facts = gather_in_thread(root=dgx)
    assert by(facts["rdma"], "name", "mlx5_0")["ports"][0]["rate_gbps"] is None
    json.dumps(facts, allow_nan=False)


class _NvmlError(Exception):
    pass


class _OneGpuNvml:
    """A fake pynvml (the library boundary) with one GPU at 0000:15:00.0; each test adds the answers it judges."""

    NVMLError = _NvmlError

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetPciInfo(self, handle):
        return type("Pci", (), {"busId": b"00000000:15:00.0"})()


def test_absurd_nvml_answers(roots):
    """A fake pynvml (the library boundary) answering a generation of 10**400, a width of 3 and a pstate of -2."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvml import read_nvml

    class Fake(_OneGpuNvml):
        def nvmlSystemGetDriverVersion(self):
            return "1"

        def __getattr__(self, name):
            answers = {"nvmlDeviceGetName": b"GPU", "nvmlDeviceGetUUID": "GPU-1",
                       "nvmlDeviceGetMaxPcieLinkGeneration": 10 ** 400, "nvmlDeviceGetMaxPcieLinkWidth": 16,
                       "nvmlDeviceGetCurrPcieLinkGeneration": 5, "nvmlDeviceGetCurrPcieLinkWidth": 3,
                       "nvmlDeviceGetPerformanceState": -2}
            return lambda handle: answers[name]

    warnings = []
    status, infos = read_nvml(Fake(), warn=warnings.append)
    info = infos["0000:15:00.0"]
    assert status["status"] == "used"
    assert (info.max_generation, info.current_generation, info.current_width, info.max_width,
            info.performance_state, info.name) == (None, 5, None, 16, None, "GPU")
    assert len(warnings) == 3 and all("GPU 0000:15:00.0" in w for w in warnings)
    assert info.nvlink is None  # NVLink calls of another shape: not known, not an error


def test_absurd_nvlink_answers():
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvml import read_nvml

    class Fake(_OneGpuNvml):
        def nvmlDeviceGetNvLinkState(self, handle, link):
            return [1, True, "1", 1.0, None, 1][link] if link < 6 else 1

        def nvmlDeviceGetNvLinkVersion(self, handle, link):
            return [10 ** 400, True, -1, "4", 4, 99][link % 6]

        def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, handle, link):
            return type("Pci", (), {"busId": [5, "x" * 100000, None, b"\xff", "0000:05:00.0", 1e9][link % 6]})()

        def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle, link):
            return [[], 2, "2", True, 2, None][link % 6]

        def __getattr__(self, name):
            raise _NvmlError("Not Supported")

    status, infos = read_nvml(Fake())
    assert status["status"] == "used", status
    nvlink = infos["0000:15:00.0"].nvlink
    # links 0 and 5 onwards are up (state 1; True, "1", 1.0 and None are not NVML's answer); one remote is readable
    assert nvlink["links"] == 14 and nvlink["version"] == 4
    # links whose far end has no readable address still count, by their type where NVML gives one
    assert nvlink["remotes"] == {"0000:05:00.0": {"links": 2, "type": "switch"},
                                 "unaddressed switch": {"links": 2, "type": "switch"},
                                 "unaddressed unknown": {"links": 10, "type": None}}


# ---- 5. a device present twice ---------------------------------------------------------------------------------
def _duplicate_mlx4(phi):
    """Copy the ConnectX-3 (0000:82:00.0, below root port 0000:80:02.2 of pci0000:80) under pci0000:00's root port
    0000:00:01.0, with numa_node 0 in the copy."""
    original = find_dir(phi, "0000:82:00.0")
    copy = os.path.join(find_dir(phi, "0000:00:01.0"), "0000:82:00.0")
    shutil.copytree(original, copy, symlinks=True)
    write(os.path.join(copy, "numa_node"), "0\n")
    return original, copy


def test_duplicate_device_is_read_where_the_bus_link_points(phi):
    original, copy = _duplicate_mlx4(phi)
    facts = gather_in_thread(root=phi)
    dev = by(facts["pci"], "address", "0000:82:00.0")
    assert (dev["numa_node"], dev["parent"], dev["host_bridge"]) == (1, "0000:80:02.2", "pci0000:80")
    assert any("0000:82:00.0: found 2 times" in w and copy in w and original in w and "read %s," % original in w
               for w in facts["warnings"]), facts["warnings"]


def test_duplicate_device_follows_a_moved_bus_link(phi):
    _original, copy = _duplicate_mlx4(phi)
    link = os.path.join(phi, "sys/bus/pci/devices/0000:82:00.0")
    os.unlink(link)
    os.symlink(os.path.relpath(copy, os.path.dirname(link)), link)
    facts = gather_in_thread(root=phi)
    dev = by(facts["pci"], "address", "0000:82:00.0")
    assert (dev["numa_node"], dev["parent"], dev["host_bridge"]) == (0, "0000:00:01.0", "pci0000:00")


def test_absolute_links_in_a_capture_stay_below_the_root(phi):
    """Planted: eth0's /sys/class/net link made absolute ("/sys/devices/..."), as some capture tools write them.
    It is read below the root, not from the machine running the tests."""
    link = os.path.join(phi, "sys/class/net/eth0")
    target = os.readlink(link)
    before = by(gather_in_thread(root=phi)["nics"], "name", "eth0")
    os.unlink(link)
    os.symlink("/sys/" + target.split("../", 2)[-1], link)
    after = by(gather_in_thread(root=phi)["nics"], "name", "eth0")
    assert after == before and after["address"] == "0000:02:00.0"


# ---- 6. unreadable files -------------------------------------------------------------------------------------
def _failing(monkeypatch, suffixes, error, on="open"):
    """Make os.open (or os.read of what was opened) fail with ``error`` for paths ending in one of ``suffixes``:
    the tests run as root, where permission bits do not stop a read."""
    real_open, real_read = os.open, os.read
    failing_fds = set()

    def fake_open(path, flags, *args, **kwargs):
        if str(path).endswith(suffixes):
            if on == "open":
                raise OSError(error, os.strerror(error), str(path))
            fd = real_open(path, flags, *args, **kwargs)
            failing_fds.add(fd)
            return fd
        return real_open(path, flags, *args, **kwargs)

    def fake_read(fd, size):
        if fd in failing_fds:
            failing_fds.discard(fd)
            raise OSError(error, os.strerror(error))
        return real_read(fd, size)

    monkeypatch.setattr(_sysfs.os, "open", fake_open)
    monkeypatch.setattr(_sysfs.os, "read", fake_read)


@pytest.mark.parametrize("error,on", [(errno.EACCES, "open"), (errno.EIO, "read"), (errno.EPERM, "open")])
def test_unreadable_files_are_named(phi, monkeypatch, error, on):
    """Permission denied / EIO on a plain read (node meminfo), on a quiet read (speed, which fails with EINVAL
    when the link is down and says nothing then) and on a PCI attribute read through the listing."""
    _failing(monkeypatch, ("node1/meminfo", "eth0/speed", "0000:82:00.0/numa_node"), error, on)
    facts = gather(root=phi)
    warnings = "\n".join(facts["warnings"])
    for name in ("node1/meminfo", "eth0/speed", "0000:82:00.0/numa_node"):
        assert "%s: unreadable (%s)" % (name, os.strerror(error)) in warnings, (name, warnings)
    assert facts["numa"]["nodes"][1]["memory_bytes"] is None
    assert by(facts["nics"], "name", "eth0")["speed_mbps"] is None


def test_einval_of_a_down_link_stays_quiet(phi, monkeypatch):
    _failing(monkeypatch, ("eth0/speed",), errno.EINVAL, "read")
    facts = gather(root=phi)
    assert not any("eth0/speed" in w for w in facts["warnings"])


def test_unreadable_directory_is_named(phi, monkeypatch):
    real = os.listdir
    target = os.path.join(phi, "sys/class/infiniband")

    def fake(path="."):
        if str(path) == target:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    monkeypatch.setattr(_sysfs.os, "listdir", fake)
    facts = gather(root=phi)
    assert any("sys/class/infiniband: directory unreadable (Permission denied)" in w for w in facts["warnings"])


def test_warnings_are_bounded(tmp_path):
    reader = SysfsReader(str(tmp_path))
    for index in range(_sysfs.MAX_WARNINGS + 250):
        reader.warn("odd %d" % index)
    os.makedirs(str(tmp_path / "sys"))
    topo = reader.read_all(parts=())
    assert len(topo.warnings) == _sysfs.MAX_WARNINGS + 1
    assert topo.warnings[-1].startswith("250 more warnings not listed")


# ---- determinism ----------------------------------------------------------------------------------------------
def test_facts_do_not_depend_on_listing_order(roots, monkeypatch):
    """Every directory listing reversed: the same facts, warnings included."""
    for name in (XEONPHI, "dgx8"):
        expected = gather(root=roots[name])
        real_listdir, real_scandir = os.listdir, os.scandir

        class Reversed:
            def __init__(self, path):
                self.inner = real_scandir(path)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.inner.close()

            def __iter__(self):
                return iter(reversed(list(self.inner)))

        monkeypatch.setattr(_sysfs.os, "listdir", lambda path=".": list(reversed(real_listdir(path))))
        monkeypatch.setattr(_sysfs.os, "scandir", Reversed)
        try:
            assert gather(root=roots[name]) == expected, name
        finally:
            monkeypatch.undo()


def test_facts_do_not_depend_on_the_order_files_list_things(dgx):
    """Planted: the bond page with its members in the other order, and /proc/net/if_inet6 with eno1's addresses
    in both orders (the kernel lists the newest first)."""
    lines = ["fd000000000000000000000000000002 02 40 00 80     eno1",
             "fe800000000000003efdfefffe000001 02 40 20 80     eno1"]
    os.makedirs(os.path.join(dgx, "proc/net"), exist_ok=True)
    write(os.path.join(dgx, "proc/net/if_inet6"), "\n".join(lines) + "\n")
    write(os.path.join(dgx, "proc/net/fib_trie"), "Main:\n")
    first = gather(root=dgx)
    write(os.path.join(dgx, "proc/net/if_inet6"), "\n".join(reversed(lines)) + "\n")
    bonding = os.path.join(dgx, "proc/net/bonding/bond0")
    with open(bonding) as handle:
        head, *members = handle.read().split("\nSlave Interface:")
    assert len(members) == 2
    write(bonding, head + "".join("\nSlave Interface:" + m.rstrip("\n") + "\n" for m in reversed(members)))
    second = gather(root=dgx)
    names = [m["name"] for m in second["bonds"][0]["members"]]
    assert names == sorted(names)
    assert by(second["nics"], "name", "eno1")["ipv6"] == ["fd00::2/64", "fe80::3efd:feff:fe00:1/64"]
    assert second == first


# ---- 7. property-based: random bytes into every text parser ----------------------------------------------------
def _text(data):
    return data.decode("utf-8", "surrogateescape")


def _bounded(func, *args):
    """Run a parser under tracemalloc; return its peak allocation."""
    tracemalloc.start()
    try:
        func(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


big_inputs = st.tuples(st.binary(max_size=200), st.integers(min_value=1, max_value=3000)).map(lambda t: t[0] * t[1])
cpu_like = st.lists(st.sampled_from(["0", "7", "16383", "16384", "65536", "-", ",", "0x", "f", "ffffffff", "\n",
                                     "\x00", " ", "9" * 30]), max_size=400).map("".join)


@SETTINGS
@given(data=st.one_of(st.binary(max_size=2000), big_inputs))
def test_every_text_parser_returns_on_random_bytes(data):
    text = _text(data)
    warnings = []
    limit = 200 * len(data) + (8 << 20)
    for func, args in ((parse_cpulist, (text,)), (parse_cpumask, (text,)), (parse_proc_route, (text,)),
                       (parse_if_inet6, (text,)), (parse_fib_trie_local, (text,)), (parse_uevent, (text,)),
                       (parse_proc_bonding, ("bond0", text, warnings.append)), (ipv4_from_gid, (text,)),
                       (normalize_pci_address, (text,)), (parse_link_speed, (text,)), (parse_link_width, (text,)),
                       (parse_decimal, (text,)), (parse_acs_control, (data,)), (hex_pair, (text,)),
                       (parse_keyfiles, ([text],)), (parse_networkd, ({"a.network": text, "b.netdev": text},)),
                       (markers, ([text],))):
        assert _bounded(func, *args) < limit, func.__name__


@SETTINGS
@given(text=cpu_like, repeat=st.integers(min_value=1, max_value=200))
def test_cpu_parsers_on_cpu_like_text(text, repeat):
    text = text * repeat
    for func in (parse_cpulist, parse_cpumask):
        cpus = func(text)
        assert cpus is None or (cpus == sorted(set(cpus)) and all(0 <= c < MAX_CPUS for c in cpus))


@SETTINGS
@given(data=st.binary(max_size=3000))
def test_netplan_parser_raises_only_value_error(data):
    try:
        parse_netplan(_text(data))
    except ValueError:
        pass


@SETTINGS
@given(doc=st.recursive(st.one_of(st.none(), st.booleans(), st.integers(),
                                  st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)),
                        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                st.dictionaries(st.sampled_from(
                                                    ["network", "ethernets", "bonds", "vlans", "mtu", "addresses",
                                                     "routes", "to", "via", "interfaces", "parameters", "id",
                                                     "link", "eno1", 1]), inner, max_size=4)),
                        max_leaves=20))
def test_netplan_parser_on_odd_shapes(doc):
    import yaml
    parse_netplan(yaml.safe_dump({"network": doc}))


@pytest.fixture(scope="module")
def reader_file(tmp_path_factory):
    return str(tmp_path_factory.mktemp("reader") / "attr")


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), big_inputs,
                      st.sampled_from([b"", b"\x00", b"\n\x00", b"-1\n", b"9" * 70000, b"\xff\xfe"])))
def test_reader_returns_on_random_files(tmp_path_factory, reader_file, data):
    """Random contents and sizes (up to past the sysfs bound) through the reader's own read: text or None."""
    write(reader_file, data)
    reader = SysfsReader(os.path.dirname(reader_file))
    text = reader.read(reader_file)
    value = reader.read_int(reader_file, what="mtu")
    assert text is None or isinstance(text, str)
    assert value is None or 0 <= value <= 65575
    if len(data) > SYSFS_MAX_BYTES:
        assert text is None and any("larger than" in w for w in reader.topo.warnings)


def test_the_bonding_driver_s_own_file_is_not_an_interface(dgx):
    """/sys/class/net/bonding_masters is a plain file the bonding driver adds beside the interfaces' links (seen on
    the test VMs' live kernel, where it was read as an interface with a warning); a FIFO there stays a warning."""
    clean = gather(root=dgx)
    write(os.path.join(dgx, "sys", "class", "net", "bonding_masters"), "bond0\n")
    facts = gather(root=dgx)
    assert not [w for w in facts["warnings"] if "bonding_masters" in w], facts["warnings"]
    assert [n["name"] for n in facts["nics"]] == [n["name"] for n in clean["nics"]]
    assert facts["bonds"] == clean["bonds"] and facts["warnings"] == clean["warnings"]
