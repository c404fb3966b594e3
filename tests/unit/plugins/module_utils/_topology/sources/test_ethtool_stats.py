"""The NIC's own counters (ethtool -S) on real captures of mlx5_core, ice, i40e and bnxt_en
(tests/fixtures/realdata/ethtool-S/PROVENANCE.md): what is kept, how per-queue counters are summed, and that no
output -- cut, huge or garbage -- costs more than its bounds."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ethtool_stats import (
    MAX_KEPT, gather, kind, parse, queue_name,
)

CAPTURES = ("bnxt_en-ethq-12q.txt", "i40e-ethq-12q-noheader-unindented.txt", "i40e-v2.3.2-k-ethq-12q.txt",
            "ice-ethq-128q.txt", "mlx5_core-connectx4-early-driver-ethq-16q.txt",
            "mlx5_core-connectx4-k4.15-ethq8-16q-unindented.txt")


def read(realdata, name):
    with open(realdata("ethtool-S", name)) as handle:
        return handle.read()


def per_queue_sum(text, prefix, suffix):
    total = 0
    for line in text.splitlines():
        name, _sep, value = line.strip().rpartition(": ")
        if name.startswith(prefix) and name.endswith(suffix) and name[len(prefix):-len(suffix)].isdigit():
            total += int(value)
    return total


@pytest.mark.parametrize("name", CAPTURES)
def test_every_capture_keeps_only_loss_and_pause_counters(realdata, name):
    stats = parse(read(realdata, name))
    assert stats, name
    assert all(kind(counter) in ("discards", "errors", "pause") for counter in stats)
    for left_out in ("xdp", "bytes", "csum", "duration"):
        assert not [c for c in stats if left_out in c], (left_out, stats)
    assert list(stats) == sorted(stats)  # facts are deterministic


def test_bnxt_rings_summed(realdata):
    text = read(realdata, "bnxt_en-ethq-12q.txt")
    stats = parse(text)
    # "[3]: rx_discards: 10573381" per ring: one counter, the rings' sum
    assert stats["[*]: rx_discards"] == per_queue_sum(text, "[", "]: rx_discards") == 123116579
    assert stats["rx_total_ring_discards"] == 655430134 and stats["rx_stat_discard"] == 49337
    assert stats["rx_pause_frames"] == 0 and stats["tx_pause_frames"] == 0


def test_i40e_and_ice(realdata):
    stats = parse(read(realdata, "i40e-v2.3.2-k-ethq-12q.txt"))
    assert stats["rx_dropped"] == 179160 and stats["port.rx_dropped"] == 0
    assert kind("port.link_xoff_rx") == "pause" and stats["port.link_xoff_rx"] == 0
    old = parse(read(realdata, "i40e-ethq-12q-noheader-unindented.txt"))  # no header, no indent: read all the same
    assert "port.rx_crc_errors" in old and "port.rx_priority_3_xoff" in old
    ice = parse(read(realdata, "ice-ethq-128q.txt"))
    assert {"rx_dropped.nic", "rx_crc_errors.nic", "link_xoff_rx.nic", "tx_errors"} <= set(ice)


def test_mlx5(realdata):
    text = read(realdata, "mlx5_core-connectx4-k4.15-ethq8-16q-unindented.txt")
    stats = parse(text)
    for counter in ("rx_discards_phy", "rx_out_of_buffer", "rx_crc_errors_phy", "rx_pause_ctrl_phy",
                    "tx_pause_ctrl_phy", "rx_symbol_err_phy", "rx*_wqe_err", "tx*_dropped"):
        assert counter in stats, counter
    assert stats["rx*_wqe_err"] == per_queue_sum(text, "rx", "_wqe_err")
    assert "rx_global_pause_duration" not in stats  # microseconds, not frames
    early = parse(read(realdata, "mlx5_core-connectx4-early-driver-ethq-16q.txt"))
    assert {"in_discards", "out_discards", "pause_ctrl_rx", "symbol_err", "tx*_0_dropped"} <= set(early)


@pytest.mark.parametrize("name, expected", [
    ("rx3_cache_full", "rx*_cache_full"), ("rx_queue_12_drops", "rx_queue_*_drops"), ("tx-7.tx_busy", "tx-*.tx_busy"),
    ("[11]: rx_discards", "[*]: rx_discards"), ("rx_discards_phy", "rx_discards_phy"), ("ch5_arm", "ch*_arm"),
])
def test_queue_names(name, expected):
    assert queue_name(name) == expected


@pytest.mark.parametrize("text", [
    "", "NIC statistics:\n", "no stats available\n", "\x00" * 4096, "rx_dropped: -5\nrx_dropped: 1e9\n",
    "rx_dropped: " + "9" * 30 + "\n", "x" * (3 * 1024 * 1024), ("a: b: " * 40000) + "1",
    "     rx_dropped : 3\n", "<script>_drop: 4\n", "rx_dropped: 12 extra\n",
])
def test_garbage_is_no_counter(text):
    assert parse(text) == {}


def test_bounded():
    lines = "".join("weird_drop_%d: 1\n" % i for i in range(MAX_KEPT + 50))
    assert len(parse(lines)) == MAX_KEPT
    assert parse("rx_dropped: 18446744073709551615\nrx_dropped: 9\n")["rx_dropped"] == 18446744073709551615


def test_gather_leaves_out_ports_without_statistics():
    outputs = {"ens1": (0, "NIC statistics:\n     rx_dropped: 7\n     rx_packets: 100\n", ""),
               "ens2": (94, "", "no stats available"), "ens3": (0, "NIC statistics:\n     rx_packets: 1\n", "")}
    calls = []

    def run(argv):
        calls.append(argv)
        return outputs[argv[-1]]
    # "-s" and "-i" are valid Linux interface names (the kernel refuses only '/', ':' and blanks) that ethtool would
    # take for options: never passed
    assert gather(run, "/usr/sbin/ethtool", ["ens1", "ens2", "-s", "ens3", "-i"]) == {"ens1": {"rx_dropped": 7}}
    assert calls == [["/usr/sbin/ethtool", "-S", "ens1"], ["/usr/sbin/ethtool", "-S", "ens2"],
                     ["/usr/sbin/ethtool", "-S", "ens3"]]  # argument lists, never a shell
    assert gather(run, None, ["ens1"]) == {}


def test_link_modes_gather_never_passes_an_odd_name():
    """sources/ethtool.py (link modes, ``ethtool <port>``): the same rule, on this machine's real ethtool where a
    port exists; "-h" (a valid Linux name) would be ethtool's help."""
    import shutil
    import subprocess
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import ethtool as link_modes
    calls = []

    def run(argv):
        calls.append(argv)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        return done.returncode, done.stdout, done.stderr
    ethtool = shutil.which("ethtool") or "/sbin/ethtool"
    found = link_modes.gather(run, ethtool, ["lo", "-h", "eth0;reboot"])
    assert calls == [[ethtool, "lo"]] and set(found) <= {"lo"}
