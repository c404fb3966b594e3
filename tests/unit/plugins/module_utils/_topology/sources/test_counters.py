"""The stability counters of the sysfs reader, on real files (tests/fixtures/realdata/sysfs-net-counters,
sysfs-pci-aer, sysfs-infiniband-counters, proc-net-snmp, each with PROVENANCE.md), on this machine's own /proc and
/sys, and on the hand-written nodes (tests/fixtures/handwritten/README.md says what they plant); bad files give
warnings, never a traceback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.counters import (
    AER_FILES, AER_ROOTPORT_FILES, NET_STATISTICS, RDMA_COUNTERS, RDMA_HW_COUNTERS, parse_aer, parse_btime, parse_counter, parse_proc_snmp_tcp,
    parse_uptime,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import AER_FILE_NAMES
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader

DATA = os.path.join(REPO, "tests", "fixtures", "realdata")


def test_the_pci_walk_lists_exactly_the_aer_files_the_counters_read():
    """The PCI walk keeps the types of AER_FILE_NAMES for the counters; a file named in one list and not the
    other would be read without its type or never read."""
    read = sorted(name for _key, name in AER_FILES + AER_ROOTPORT_FILES)
    assert read == sorted(AER_FILE_NAMES)


def text(*parts):
    with open(os.path.join(DATA, *parts)) as handle:
        return handle.read()


def test_aer_in_the_kernel_s_current_format():
    """An AMD Vega's aer_dev_* (short names, every type listed, all zero)."""
    device = ("sysfs-pci-aer", "amdgpu-vega-0000_09_00.0")
    for name in ("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"):
        assert parse_aer(text(*device + (name,))) == {"total": 0, "by_type": {}}


def test_aer_in_the_old_long_format():
    """The kernel ABI document's sample: long labels with spaces ("RELAY_NUM Rollover 0"), Receiver Error 2."""
    parsed = parse_aer(text("sysfs-pci-aer", "kernel-abi-doc-sample-0000_00_1c.0", "aer_dev_correctable"))
    assert parsed == {"total": 2, "by_type": {"Receiver Error": 2}}


@pytest.mark.parametrize("junk, expected", [
    ("", None), ("RxErr\n", None), ("RxErr x\nTOTAL_ERR_COR y", None),
    ("RxErr 1\nBadTLP 2", {"total": 3, "by_type": {"BadTLP": 2, "RxErr": 1}}),  # no TOTAL line: the sum
    ("RxErr 99999999999999999999999\nTOTAL_ERR_COR 1", {"total": 1, "by_type": {}}),  # past 64 bits: ignored
    ("RxErr 1\n" * 100000 + "TOTAL_ERR_COR 5", {"total": 1, "by_type": {"RxErr": 1}}),  # only the first lines read
])
def test_aer_junk(junk, expected):
    assert parse_aer(junk) == expected


def test_interface_statistics_of_a_real_igb_port():
    """A Dell node's Intel I350 (igb) eth0: rx_fifo_errors 2045, the rest as the files say."""
    directory = os.path.join(DATA, "sysfs-net-counters", "hwloc-32em64t-dell-igb-mlx4", "sys", "class", "net", "eth0",
                             "statistics")
    reader = SysfsReader(os.path.join(DATA, "sysfs-net-counters", "hwloc-32em64t-dell-igb-mlx4"))
    values = reader._counter_files(directory, NET_STATISTICS)
    assert values["rx_fifo_errors"] == 2045
    for name in NET_STATISTICS:
        on_disk = os.path.join(directory, name)
        assert values[name] == (int(open(on_disk).read()) if os.path.exists(on_disk) else None), name
    assert reader.topo.warnings == []


def test_carrier_counters_and_a_kernel_without_them():
    ttar = os.path.join(DATA, "sysfs-net-counters", "procfs-class-ttar-eth0", "sys", "class", "net", "eth0")
    reader = SysfsReader(DATA)
    assert reader._counter_files(ttar, ("carrier_changes", "carrier_up_count", "carrier_down_count")) == {
        "carrier_changes": 2, "carrier_up_count": 1, "carrier_down_count": 1}
    old = os.path.join(DATA, "sysfs-net-counters", "hwloc-32em64t-dell-igb-mlx4", "sys", "class", "net", "eth0")
    assert reader._counter_files(old, ("carrier_changes",)) == {"carrier_changes": None}  # before kernel 3.15
    assert reader.topo.warnings == []


def test_infiniband_port_counters_real_and_saturated():
    """mlx4 (ConnectX-3 FDR): port_xmit_wait 21833. qib (QLE7340): 32-bit data counters stuck at 4294967295
    (saturated, a valid number). mlx5 hw_counters: out_of_sequence 1."""
    reader = SysfsReader(DATA)
    mlx4 = os.path.join(DATA, "sysfs-infiniband-counters", "hwloc-32em64t-dell-igb-mlx4", "sys", "class",
                        "infiniband", "mlx4_0", "ports", "1", "counters")
    values = reader._counter_files(mlx4, RDMA_COUNTERS)
    assert values["port_xmit_wait"] == 21833 and values["symbol_error"] == 0 and values["link_downed"] == 0
    qib = os.path.join(DATA, "sysfs-infiniband-counters", "hwloc-40intel64-westmere-bnx2-qib", "sys", "class",
                       "infiniband", "qib0", "ports", "1", "counters")
    assert reader._counter_files(qib, ("port_rcv_data",)) == {"port_rcv_data": 4294967295}
    mlx5 = os.path.join(DATA, "sysfs-infiniband-counters", "procfs-class-ttar", "sys", "class", "infiniband",
                        "mlx5_0", "ports", "1", "hw_counters")
    assert reader._counter_files(mlx5, RDMA_HW_COUNTERS)["out_of_sequence"] == 1
    assert reader.topo.warnings == []


def test_proc_net_snmp_and_boot_time():
    snmp = parse_proc_snmp_tcp(text("proc-net-snmp", "node_exporter-fixtures", "proc", "net", "snmp"))
    assert snmp == {"in_segs": 57252008, "out_segs": 54915039, "retrans_segs": 227, "in_errs": 5}
    assert parse_btime(text("proc-net-snmp", "node_exporter-fixtures", "proc", "stat")) == 1418183276
    assert parse_proc_snmp_tcp("Tcp: A B\nTcp: 1\n") is None and parse_proc_snmp_tcp("") is None
    assert parse_btime("btime x") is None and parse_uptime("12.5 3.0") == 12.5 and parse_uptime("-1 x") is None


@pytest.mark.parametrize("value, expected", [("0", 0), ("18446744073709551615", (1 << 64) - 1),
                                             ("18446744073709551616", None), ("-1", None), ("1e3", None),
                                             (None, None), ("", None)])
def test_counter_values(value, expected):
    assert parse_counter(value) == expected


def test_this_machine_s_own_counters():
    """The live /sys and /proc of the machine running the tests: every physical interface's carrier_changes as
    its file says, the Tcp counters present, the uptime below the time since the boot time."""
    import time
    facts = gather(root="/", gather_subset=["counters"])
    counters = facts["counters"]
    assert counters["boot_time"] and 0 < counters["uptime_s"] <= time.time() - counters["boot_time"] + 5
    assert counters["tcp"]["out_segs"] >= 0
    assert counters["interfaces"], "no physical interface here?"
    for name, entry in counters["interfaces"].items():
        with open("/sys/class/net/%s/carrier_changes" % name) as handle:
            assert entry["carrier_changes"] == int(handle.read())


def test_hand_written_nodes(roots):
    healthy = gather(root=roots["dgx8"], gather_subset=["counters"])["counters"]
    assert healthy["boot_time"] == 1764547200 and healthy["uptime_s"] == 86400.0
    assert healthy["tcp"]["retrans_segs"] == 1200
    assert sorted(healthy["interfaces"]) == sorted(
        ["bond0", "bond0.100", "eno1", "eno2", "enp193s0f0np0", "enp193s0f1np1"] + ["ens%dnp0" % i for i in range(1, 9)])
    assert healthy["interfaces"]["ens1np0"]["kind"] == "physical" and healthy["interfaces"]["bond0"]["kind"] == "bond"
    assert healthy["interfaces"]["ens1np0"]["carrier_changes"] == 2
    assert all(a["correctable"]["total"] == 0 and a["nonfatal"]["total"] == 0 for a in healthy["aer"].values())
    assert "0000:19:00.0" in healthy["aer"] and "0000:10:01.0" in healthy["aer"]  # a GPU and a root port above it
    broken = gather(root=roots["dgx8-broken"], gather_subset=["counters"])["counters"]
    assert broken["aer"]["0000:19:00.0"] == {
        "correctable": {"total": 1557, "by_type": {"BadDLLP": 37, "BadTLP": 1520}},
        "fatal": {"total": 0, "by_type": {}}, "nonfatal": {"total": 1, "by_type": {"CmpltTO": 1}}}


def test_bad_counter_files_are_warnings(tmp_path):
    root = tmp_path / "root"
    net = root / "sys" / "devices" / "pci0000:00" / "0000:00:03.0" / "net" / "eth9"
    (net / "statistics").mkdir(parents=True)
    (root / "sys" / "class" / "net").mkdir(parents=True)
    os.symlink(os.path.relpath(str(net), str(root / "sys" / "class" / "net")), str(root / "sys" / "class" / "net" / "eth9"))
    (net / "carrier_changes").write_text("lots\n")
    (net / "statistics" / "rx_errors").write_text("1" * 400 + "\n")
    os.mkfifo(str(net / "statistics" / "tx_errors"))  # a FIFO where a counter belongs must not block
    (net / "statistics" / "rx_packets").write_text("7\n")
    facts = gather(root=str(root), gather_subset=["counters"])
    entry = facts["counters"]["interfaces"]["eth9"]
    assert entry["carrier_changes"] is None and entry["rx_errors"] is None and entry["tx_errors"] is None
    assert entry["rx_packets"] == 7
    warnings = "\n".join(facts["warnings"])
    assert "carrier_changes: 'lots' is not a counter" in warnings and "rx_errors" in warnings
    assert "tx_errors: not a regular file" in warnings


def test_this_machine_s_statistics_from_proc_net_dev_are_its_files():
    """On the live machine the interface statistics come from one read of /proc/net/dev (the kernel's sums), with
    the files behind a sum read only where it is above 0. Through the whole gather: every value lies between the
    files read just before and just after (the counters only grow), for every interface counted."""
    names = sorted(n for n in os.listdir("/sys/class/net") if os.path.isdir("/sys/class/net/%s/statistics" % n))
    reader = SysfsReader("/")
    assert reader._proc_net_dev(), "/proc/net/dev is this machine's own: it should be used"
    before = dict((n, reader._counter_files("/sys/class/net/%s/statistics" % n, NET_STATISTICS)) for n in names)
    counted = gather(root="/", gather_subset=["counters"])["counters"]["interfaces"]
    after = dict((n, reader._counter_files("/sys/class/net/%s/statistics" % n, NET_STATISTICS)) for n in names)
    assert counted
    for name, entry in counted.items():
        for key in NET_STATISTICS:
            assert before[name][key] <= entry[key] <= after[name][key], (name, key)
    assert reader.topo.warnings == []


def write_interface(root, name, statistics, proc_net_dev):
    net = root / "sys" / "devices" / "pci0000:00" / "0000:00:03.0" / "net" / name
    (net / "statistics").mkdir(parents=True)
    (root / "sys" / "class" / "net").mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(str(net), str(root / "sys" / "class" / "net")), str(root / "sys" / "class" / "net" / name))
    (net / "type").write_text("1\n")
    for key, value in statistics.items():
        (net / "statistics" / key).write_text("%s\n" % value)
    (root / "proc" / "net").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "net" / "dev").write_text(proc_net_dev)


HEADER = ("Inter-|   Receive                                                |  Transmit\n"
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier "
          "compressed\n")


@pytest.fixture
def trusted(monkeypatch):
    """A hand-written root's proc/net/dev taken as the live machine's would be (captures' are not)."""
    monkeypatch.setattr(SysfsReader, "trust_proc_net_dev", True)


def test_a_sum_above_zero_reads_its_files_and_a_zero_sum_none(tmp_path, trusted):
    """Hand-written: /proc/net/dev says eth9 received 3 frames with errors (frame column) and dropped none; the
    files say which (2 CRC, 1 length). A file behind a sum of 0 is not read: its junk gives no warning."""
    root = tmp_path / "root"
    write_interface(root, "eth9", {"rx_crc_errors": 2, "rx_length_errors": 1, "rx_over_errors": 0,
                                   "rx_frame_errors": 0, "rx_dropped": "junk", "rx_missed_errors": "junk",
                                   "rx_packets": 10},
                    HEADER + "  eth9: 1000 10 3 0 4 3 0 0 2000 20 1 5 0 6 0 0\n")
    facts = gather(root=str(root), gather_subset=["counters"])
    entry = facts["counters"]["interfaces"]["eth9"]
    assert (entry["rx_crc_errors"], entry["rx_length_errors"], entry["rx_over_errors"], entry["rx_frame_errors"]) == (
        2, 1, 0, 0)
    assert entry["rx_dropped"] == 0 and entry["rx_missed_errors"] == 0  # the sum is 0: the junk files unread
    assert (entry["rx_packets"], entry["rx_errors"], entry["rx_fifo_errors"], entry["tx_errors"], entry["tx_dropped"],
            entry["collisions"], entry["tx_carrier_errors"]) == (10, 3, 4, 1, 5, 6, 0)
    assert facts["warnings"] == []


@pytest.mark.parametrize("line", [
    "  eth9: 1 2 3\n",                                  # too few columns
    "  eth9: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 -1\n",  # not a counter
    "  eth9: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
    "  eth9 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",    # no colon
    "",
])
def test_an_odd_proc_net_dev_line_falls_back_to_the_files(tmp_path, line, trusted):
    root = tmp_path / "root"
    write_interface(root, "eth9", {"rx_packets": 7, "rx_crc_errors": 1}, HEADER + line)
    entry = gather(root=str(root), gather_subset=["counters"])["counters"]["interfaces"]["eth9"]
    assert entry["rx_packets"] == 7 and entry["rx_crc_errors"] == 1 and entry["tx_packets"] is None


def test_real_proc_net_dev_captures():
    """tests/fixtures/realdata/procfs-net-dev-captures (PROVENANCE.md): every line of 16 counters is an interface,
    in the kernel's format and the older one without a space after the colon; the columns land where the kernel puts
    them."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.counters import (
        parse_proc_net_dev,
    )
    nmon = parse_proc_net_dev(text("procfs-net-dev-captures", "nmon-lmon-comment.txt"))
    assert sorted(nmon) == ["eth0", "eth1", "lo", "sit0"]
    assert nmon["eth0"]["tx_errors"] == 781 and nmon["eth0"]["tx_carrier"] == 781 and nmon["eth0"]["tx_bytes"] == 458718
    centos = parse_proc_net_dev(text("procfs-net-dev-captures", "gopsutil-pr28-centos64.txt"))
    assert centos["eth1"]["rx_bytes"] == 79088109 and centos["eth1"]["tx_packets"] == 234067
    kvm = parse_proc_net_dev(text("procfs-net-dev-captures", "netdata-4536-kvm-host.txt"))
    assert kvm["br0"]["rx_drop"] == 17015 and kvm["br0"]["tx_bytes"] == 2134643924982
    aliases = parse_proc_net_dev(text("procfs-net-dev-captures", "gopsutil-pr317-alias-ifaces.txt"))
    assert aliases["tun999999"]["tx_dropped"] == 15 and aliases["eth0"]["rx_packets"] == 764654426
    assert "tun10001:1" in aliases and "tun10001:2" not in aliases  # its line was cut short in the post
    exporter = parse_proc_net_dev(text("procfs-net-dev-captures", "node-exporter-fixture.txt"))
    assert exporter["eth0"]["rx_bytes"] == 68210035552 and exporter["flannel.1"]["tx_dropped"] == 64
    assert "ibr10:30" in exporter and len(parse_proc_net_dev(text("procfs-net-dev-captures", "pyproc-pn-dev.txt"))) > 0


def test_a_drop_or_carrier_sum_reads_its_files(tmp_path, trusted):
    """Hand-written: receive drop 7 (5 dropped, 2 missed) and transmit carrier 3 (3 carrier errors, the window and
    heartbeat ones not kept) each read their files; a frame sum of 0 reads none."""
    root = tmp_path / "root"
    write_interface(root, "eth9", {"rx_dropped": 5, "rx_missed_errors": 2, "tx_carrier_errors": 3,
                                   "tx_aborted_errors": 0, "rx_crc_errors": "junk", "rx_packets": 10},
                    HEADER + "  eth9: 1000 10 0 7 0 0 0 0 2000 20 3 0 0 0 3 0\n")
    facts = gather(root=str(root), gather_subset=["counters"])
    entry = facts["counters"]["interfaces"]["eth9"]
    assert (entry["rx_dropped"], entry["rx_missed_errors"], entry["tx_carrier_errors"], entry["tx_aborted_errors"],
            entry["rx_crc_errors"]) == (5, 2, 3, 0, 0)
    assert facts["warnings"] == []


def test_proc_net_dev_of_another_namespace_or_a_capture_is_not_used(tmp_path, monkeypatch):
    """/proc/net/dev describes the reading process's network namespace: a row whose rx_packets disagree with the
    interface's file (another namespace's eth9), or a file naming other interfaces than /sys/class/net, is not used;
    nor is a capture's proc/net/dev unless trusted (its moment or machine may differ)."""
    root = tmp_path / "root"
    write_interface(root, "eth9", {"rx_packets": 5000, "rx_crc_errors": 4},
                    HEADER + "  eth9: 1000 80000 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n")  # more than the file: not it
    assert gather(root=str(root), gather_subset=["counters"])["counters"]["interfaces"]["eth9"]["rx_crc_errors"] == 4
    monkeypatch.setattr(SysfsReader, "trust_proc_net_dev", True)
    entry = gather(root=str(root), gather_subset=["counters"])["counters"]["interfaces"]["eth9"]
    assert entry["rx_crc_errors"] == 4 and entry["rx_packets"] == 5000  # the row (80000 packets) is not this eth9's
    (root / "proc" / "net" / "dev").write_text(HEADER + "  eth9: 1000 5000 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
                                               "  veth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n")
    entry = gather(root=str(root), gather_subset=["counters"])["counters"]["interfaces"]["eth9"]
    assert entry["rx_crc_errors"] == 4 and entry["tx_packets"] is None  # other names than sysfs: the files


@pytest.mark.parametrize("layout", ["tree", "bus only"])
def test_aer_files_typed_by_the_pci_walk(tmp_path, layout):
    """The AER files' types come from the PCI walk's own listing (no second listing per device), or from one of its
    own for a device found only under /sys/bus/pci/devices: a FIFO named aer_dev_fatal is named, never opened; two
    GPUs with the same all-zero text get equal but separate entries (one parse, shared by nothing)."""
    root = tmp_path / "root"
    vega = os.path.join(DATA, "sysfs-pci-aer", "amdgpu-vega-0000_09_00.0")
    top = root / "sys" / "devices" / "pci0000:00"
    bus = root / "sys" / "bus" / "pci" / "devices"
    bus.mkdir(parents=True)
    for address in ("0000:09:00.0", "0000:0a:00.0"):
        device = (top / address) if layout == "tree" else (root / "sys" / "flat" / address)
        device.mkdir(parents=True)
        (device / "class").write_text("0x030000\n")
        (device / "vendor").write_text("0x1002\n")
        (device / "device").write_text("0x687f\n")
        for name in ("aer_dev_correctable", "aer_dev_nonfatal"):
            with open(os.path.join(vega, name)) as handle:
                (device / name).write_text(handle.read())
        os.symlink(os.path.relpath(str(device), str(bus)), str(bus / address))
    fifo = (top if layout == "tree" else root / "sys" / "flat") / "0000:0a:00.0" / "aer_dev_fatal"
    os.mkfifo(str(fifo))
    facts = gather(root=str(root), gather_subset=["counters"])
    aer = facts["counters"]["aer"]
    zero = {"total": 0, "by_type": {}}
    assert aer["0000:09:00.0"] == {"correctable": zero, "nonfatal": zero, "fatal": None}
    assert aer["0000:0a:00.0"] == aer["0000:09:00.0"]
    assert aer["0000:09:00.0"]["correctable"] is not aer["0000:0a:00.0"]["correctable"]
    assert aer["0000:09:00.0"]["correctable"]["by_type"] is not aer["0000:0a:00.0"]["correctable"]["by_type"]
    assert [w for w in facts["warnings"] if "aer_dev_fatal: not a regular file (a FIFO)" in w], facts["warnings"]


def test_roce_ports_and_a_roce_lag_s_legs(roots, tmp_path):
    """roce_ports names the interface behind each RoCE port; a RoCE LAG (the port's GIDs on a bond, as mlx5_bond_0)
    also gets its legs in roce_lag, the interfaces whose PFC and ECN count. The hand-written node, then a copy with
    mlx5_0's GIDs moved onto bond0 (eno1, eno2)."""
    import shutil
    counters = gather(root=roots["dgx8"], gather_subset=["counters"])["counters"]
    assert counters["roce_ports"]["mlx5_0/1"] == "ens1np0" and len(counters["roce_ports"]) == 10
    assert counters["roce_lag"] == {} and counters["roce_pfc"] is None  # a capture: no dcb to ask
    copy = tmp_path / "dgx8"
    shutil.copytree(os.path.realpath(roots["dgx8"]), str(copy), symlinks=True)
    ndevs = copy / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "gid_attrs" / "ndevs"
    for name in os.listdir(str(ndevs)):
        (ndevs / name).write_text("bond0\n")
    counters = gather(root=str(copy), gather_subset=["counters"])["counters"]
    assert counters["roce_ports"]["mlx5_0/1"] == "bond0" and counters["roce_lag"] == {"bond0": ["eno1", "eno2"]}
