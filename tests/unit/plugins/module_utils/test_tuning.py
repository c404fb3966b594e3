"""Host tuning's arithmetic and readers (module_utils/_tuning.py, modules/host_tuning.py). The IRQ tree below is
hand-written in the kernel's layout (sysfs msi_irqs, numa_node, node cpulist, /proc/irq/N/smp_affinity_list): no
capture here has interrupts. The ring readers run on real `ethtool -g` captures (tests/fixtures/realdata/ethtool-g,
with PROVENANCE)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning import (
    INT_MAX, buffer_size, parse_rings, parse_sysctl, plan_buffers, plan_irqs, read_buffer_sysctl, ring_changes,
    sysctl_file, sysctl_problem, wanted_buffers,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning_node import Node, read_buffers, read_irqs

MiB = 1024 * 1024


@pytest.mark.parametrize("speed, rtt, size", [
    (10000, 1, 4 * MiB),          # 1.25 MB BDP: the 4 MiB floor
    (100000, 1, 32 * MiB),        # 12.5 MB: 25 MB, so 32 MiB
    (400000, 1, 128 * MiB),       # 50 MB: 100 MB, so 128 MiB
    (10000, 50, 128 * MiB),       # a path between sites
    (400000, 1000, 1024 * MiB),   # the 1 GiB ceiling
])
def test_buffer_size_is_twice_the_bdp_as_a_power_of_two(speed, rtt, size):
    got, bdp = buffer_size(speed, rtt)
    assert got == size and bdp == int(speed * 1e6 / 8 * rtt / 1000)
    assert got >= min(2 * bdp, 1024 * MiB) and (got == 4 * MiB or got // 2 < 2 * bdp)


def test_sysctl_values_and_never_lowering():
    assert parse_sysctl("4096\t131072\t6291456\n") == [4096, 131072, 6291456]
    for junk in (None, "", "abc", "-1", "1 2 x", "9" * 20, "1 " * 200):
        assert parse_sysctl(junk) is None, junk
    current = {"net.core.rmem_max": [212992], "net.core.wmem_max": [268435456],
               "net.ipv4.tcp_rmem": [4096, 131072, 6291456], "net.ipv4.tcp_wmem": None}
    wanted = wanted_buffers(current, 32 * MiB)
    assert wanted == {"net.core.rmem_max": [32 * MiB], "net.core.wmem_max": [268435456],  # an operator's larger value
                      "net.ipv4.tcp_rmem": [4096, 131072, 32 * MiB]}                      # stays; unreadable: left out
    assert wanted_buffers({"net.core.rmem_max": [1, 2], "net.ipv4.tcp_rmem": [5]}, MiB) == {}  # not the shape
    assert sysctl_file(wanted, "why") == ("# managed by gpuops.fabric (gpuops.fabric.tuning): why\n"
                                          "net.core.rmem_max = 33554432\nnet.core.wmem_max = 268435456\n"
                                          "net.ipv4.tcp_rmem = 4096 131072 33554432\n")


def _tree(tmp_path, files):
    for path, text in files.items():
        full = tmp_path / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return Node(str(tmp_path))


def test_buffers_planned_from_the_files_below_the_root(tmp_path):
    node = _tree(tmp_path, {"proc/sys/net/core/rmem_max": "212992\n", "proc/sys/net/core/wmem_max": "212992\n",
                            "proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
                            "proc/sys/net/ipv4/tcp_wmem": "4096 16384 junk\n"})
    # (read-only values, as inside a network namespace: tests/integration/test_tuning_nshosts.py, on the kernel)
    readings, before = read_buffers(node, "/etc/sysctl.d/60-gpuops-fabric.conf")
    live, after, size, bdp, notes, warnings = plan_buffers(readings, 100000, 1.0)
    assert size == 32 * MiB and bdp == 12500000 and before is None
    assert live == {"net.core.rmem_max": ("212992", "33554432"), "net.core.wmem_max": ("212992", "33554432"),
                    "net.ipv4.tcp_rmem": ("4096 131072 6291456", "4096 131072 33554432")}
    assert "net.ipv4.tcp_wmem" not in after and "net.core.wmem_max = 33554432" in after
    assert notes == [] and node.refused == []
    assert warnings == ["net.ipv4.tcp_wmem = '4096 16384 junk' is not a value this module understands (whole numbers "
                        "only); left alone"]


@pytest.mark.parametrize("name, text, why", [
    ("net.core.rmem_max", "9999999999999999999", "is outside 0..2147483647"),
    ("net.core.wmem_max", "2147483648", "is outside 0..2147483647"),
    ("net.core.rmem_max", "212992 212992", "has 2 fields; the kernel takes one integer"),
    ("net.ipv4.tcp_rmem", "4096\t131072", "has 2 fields; the kernel takes three (min default max)"),
    ("net.ipv4.tcp_wmem", "4096 16384 4194304 1", "has 4 fields; the kernel takes three (min default max)"),
    ("net.ipv4.tcp_rmem", "0 131072 6291456", "holds 0, outside 1..2147483647"),
    ("net.ipv4.tcp_rmem", "4096 131072 4294967296", "holds 4294967296, outside 1..2147483647"),
    ("net.ipv4.tcp_wmem", "4096 8388608 4194304", "is not min <= default <= max"),
])
def test_values_the_kernel_would_refuse_are_named_and_never_planned(tmp_path, name, text, why):
    values, warning = read_buffer_sysctl(name, text)
    shown = " ".join(text.split())
    assert values is None and warning.startswith("%s = %r %s: the kernel would refuse it" % (name, shown, why))
    assert sysctl_problem(name, [int(w) for w in text.split()]) == why
    assert wanted_buffers({name: [int(w) for w in text.split()]}, 32 * MiB) == {}  # even handed one directly
    with pytest.raises(ValueError) as caught:  # and the file is never built with it
        sysctl_file({name: [int(w) for w in text.split()]}, "why")
    assert name in str(caught.value) and why in str(caught.value)
    # planned from a root: warned, left out of the file for the next boot and out of the live changes
    files = dict(("proc/sys/" + n.replace(".", "/"), v) for n, v in (
        ("net.core.rmem_max", "212992\n"), ("net.core.wmem_max", "212992\n"),
        ("net.ipv4.tcp_rmem", "4096\t131072\t6291456\n"), ("net.ipv4.tcp_wmem", "4096\t16384\t4194304\n")))
    files["proc/sys/" + name.replace(".", "/")] = text + "\n"
    node = _tree(tmp_path, files)
    readings, _before = read_buffers(node, "/etc/sysctl.d/60-gpuops-fabric.conf")
    live, after, _size, _bdp, _notes, warnings = plan_buffers(readings, 100000, 1.0)
    assert warnings == [warning] and name not in live and name not in after
    assert len(live) == 3 and after.count(" = ") == 3


def test_values_the_kernel_takes_are_kept():
    assert read_buffer_sysctl("net.core.rmem_max", "2147483647\n") == ([INT_MAX], None)
    assert read_buffer_sysctl("net.core.rmem_max", "0") == ([0], None)
    assert read_buffer_sysctl("net.ipv4.tcp_rmem", "4096\t131072\t6291456") == ([4096, 131072, 6291456], None)
    assert read_buffer_sysctl("net.ipv4.tcp_rmem", "1 1 1") == ([1, 1, 1], None)
    assert read_buffer_sysctl("net.ipv4.tcp_rmem", None) == (None, None)  # not readable: nothing to say
    assert wanted_buffers({"net.core.rmem_max": [INT_MAX]}, 32 * MiB) == {"net.core.rmem_max": [INT_MAX]}


def test_irqs_leaving_their_numa_node_are_planned_back(tmp_path):
    device = "sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0"
    node = _tree(tmp_path, {
        device + "/numa_node": "1\n", device + "/msi_irqs/120": "msix\n", device + "/msi_irqs/121": "msix\n",
        device + "/msi_irqs/122": "msix\n", device + "/msi_irqs/bogus": "",
        "sys/devices/system/node/node1/cpulist": "16-31\n",
        "proc/irq/120/smp_affinity_list": "0-63\n",    # anywhere: moved to node 1
        "proc/irq/121/smp_affinity_list": "17\n",      # one CPU of node 1 (irqbalance's choice): left
        "proc/irq/122/smp_affinity_list": "3\n",       # the other socket: moved
        "sys/devices/virtual/net/veth0/ifindex": "5\n"})
    os.makedirs(str(tmp_path / device / "net" / "ens2np0"))
    os.makedirs(str(tmp_path / "sys/class/net"))
    os.symlink(os.path.join("..", "..", device[len("sys/"):], "net", "ens2np0"), str(tmp_path / "sys/class/net/ens2np0"))
    os.symlink("../..", str(tmp_path / device / "net" / "ens2np0" / "device"))
    os.symlink("../../devices/virtual/net/veth0", str(tmp_path / "sys/class/net/veth0"))
    moves, skipped = plan_irqs(read_irqs(node, ["ens2np0", "veth0"]))
    assert moves == [("ens2np0", 120, "0-63", "16-31"), ("ens2np0", 122, "3", "16-31")]
    assert skipped == ["veth0: no PCI function (a virtual interface): IRQs not judged"]
    # a FIFO where an affinity file belongs (a corrupt capture): named, never opened, so nothing blocks
    os.unlink(str(tmp_path / "proc/irq/122/smp_affinity_list"))
    os.mkfifo(str(tmp_path / "proc/irq/122/smp_affinity_list"))
    moves, _skipped = plan_irqs(read_irqs(node, ["ens2np0"]))
    assert moves == [("ens2np0", 120, "0-63", "16-31")]
    assert [w for w in node.warnings if "smp_affinity_list: not a regular file" in w]
    (tmp_path / device / "numa_node").write_text("-1\n")
    moves, skipped = plan_irqs(read_irqs(node, ["ens2np0"]))
    assert moves == [] and skipped == ["ens2np0: the kernel knows no NUMA node for it (numa_node -1): IRQs left alone"]


def test_the_plans_decide_from_readings_alone():
    """plan_buffers and plan_irqs read nothing: what the node said is their whole input (read_buffers, read_irqs)."""
    readings = {"net.core.rmem_max": {"text": "212992", "writable": False},   # a namespace: the host's
                "net.core.wmem_max": {"text": "212992", "writable": True},
                "net.ipv4.tcp_rmem": None,                                      # its path was refused
                "net.ipv4.tcp_wmem": {"text": None, "writable": False}}         # not readable
    live, after, size, _bdp, notes, warnings = plan_buffers(readings, 25000, 1.0)
    assert size == 8 * MiB and live == {"net.core.wmem_max": ("212992", "8388608")} and warnings == []
    assert notes == ["net.core.rmem_max: read-only here (212992; a network namespace or container has the host's): "
                     "set it on the host"]
    assert "net.core.wmem_max = 8388608" in after and "rmem" not in after
    port = {"port": "ens1", "pci": True, "numa": "0", "cpulist": "0-3", "affinity": {9: "0-7", 8: "2", 7: None}}
    assert plan_irqs([port]) == ([("ens1", 9, "0-7", "0-3")], [])
    assert plan_irqs([dict(port, cpulist="")]) == ([], ["ens1: NUMA node 0 lists no CPUs: IRQs left alone"])
    assert plan_irqs([dict(port, affinity={})]) == ([], ["ens1: no MSI interrupts listed: IRQs not judged"])
    assert plan_irqs([dict(port, numa="")]) == ([], ["ens1: the kernel knows no NUMA node for it (numa_node "
                                                     "missing): IRQs left alone"])


def test_ports_under_bonds_and_vlans(tmp_path):
    node = _tree(tmp_path, {"sys/class/net/bond0/bonding/slaves": "ens1f0np0 ens1f1np1 gone0\n",
                            "sys/class/net/ens1f0np0/mtu": "9000\n", "sys/class/net/ens1f1np1/mtu": "9000\n",
                            "sys/class/net/bond0.100/mtu": "9000\n"})
    os.symlink("../bond0", str(tmp_path / "sys/class/net/bond0.100/lower_bond0"))
    assert node.ports("bond0.100") == ["ens1f0np0", "ens1f1np1"] and node.ports("ens1f0np0") == ["ens1f0np0"]


REAL = os.path.join(REPO, "tests", "fixtures", "realdata", "ethtool-g")


@pytest.mark.parametrize("name, maximum, current, changes", [
    ("ixgbe-82599ES-netutils-linux.txt", {"rx": 4096, "rx-mini": 0, "rx-jumbo": 0, "tx": 4096},
     {"rx": 4096, "rx-mini": 0, "rx-jumbo": 0, "tx": 512}, {"tx": (512, 4096)}),
    ("bnx2-BCM5709-netutils-linux-eth0.txt", {"rx": 2040, "rx-mini": 0, "rx-jumbo": 8160, "tx": 255},
     {"rx": 255, "rx-mini": 0, "rx-jumbo": 0, "tx": 255}, {"rx": (255, 2040)}),
    ("bnx2-BCM5709-netutils-linux-eth1.txt", {"rx": 2040, "rx-mini": 0, "rx-jumbo": 8160, "tx": 255},
     {"rx": 2040, "rx-mini": 0, "rx-jumbo": 0, "tx": 255}, {}),
    ("e1000-netutils-linux.txt", {"rx": 4096, "rx-mini": 0, "rx-jumbo": 0, "tx": 4096},
     {"rx": 256, "rx-mini": 0, "rx-jumbo": 0, "tx": 256}, {"rx": (256, 4096), "tx": (256, 4096)}),
    ("ice-E810-XXV-xdp-newbies-2022.txt", {"rx": 8160, "tx": 8160}, {"rx": 4096, "tx": 4096},
     {"rx": (4096, 8160), "tx": (4096, 8160)}),
    # a million entries allowed: not past MAX_RING (8192), which is memory enough for TCP
    ("octeontx2-netdev-cqe-size-patch-2022.txt", {"rx": 1048576, "tx": 1048576}, {"rx": 256, "tx": 4096},
     {"rx": (256, 8192), "tx": (4096, 8192)}),
    ("usbnic-netdev-json-patch-2022-text.txt", {"rx": 4096}, {"rx": 100}, {"rx": (100, 4096)}),  # no TX ring
    ("virtio_net-viona-propolis1056-after.txt", {"rx": 2048, "tx": 256}, {"rx": 2048, "tx": 256}, {}),
    ("ena-ens5-notes.txt", {"rx": 16384, "tx": 1024}, {"rx": 1024, "tx": 1024}, {"rx": (1024, 8192)}),
    ("mlx4_en-ConnectX3-tuning-report.txt", {"rx": 8192, "rx-mini": 0, "rx-jumbo": 0, "tx": 8192},
     {"rx": 1024, "rx-mini": 0, "rx-jumbo": 0, "tx": 512}, {"rx": (1024, 8192), "tx": (512, 8192)}),
    ("virtio_net-this-ci-machine-eth0.txt", {"rx": 256, "tx": 256}, {"rx": 256, "tx": 256}, {}),
])
def test_rings_read_from_real_captures(name, maximum, current, changes):
    with open(os.path.join(REAL, name)) as handle:
        rings = parse_rings(handle.read())
    assert rings == {"max": maximum, "current": current}
    assert ring_changes(rings) == changes


def test_rings_junk():
    with open(os.path.join(REAL, "unknown-ens5f1np1-incus-os1012-json.txt")) as handle:
        assert parse_rings(handle.read()) is None  # JSON (ethtool --json -g): the module reads the text layout
    for junk in (None, "", "netlink error: Operation not supported", "Pre-set maximums:\nRX: 9\n", "x" * 70000,
                 "Pre-set maximums:\nRX: 99999999999\nCurrent hardware settings:\nRX: 1\n"):
        assert parse_rings(junk) is None, junk
