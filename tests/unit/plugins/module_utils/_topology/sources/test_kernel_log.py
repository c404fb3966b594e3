"""The kernel's PCIe bandwidth lines ("... available PCIe bandwidth, limited by ... link at ..."), read from real
kernel logs posted publicly (tests/fixtures/realdata/kernel-pcie-bandwidth: each file as posted, PROVENANCE.md, and
expected.json, what a person reads in each line), and what no log may do to the reader."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

import pytest

from conftest import REALDATA
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.kernel_log import (
    MAX_ENTRIES, limited_devices, parse_pcie_bandwidth,
)

FOLDER = os.path.join(REALDATA, "kernel-pcie-bandwidth")
with open(os.path.join(FOLDER, "expected.json")) as _handle:
    EXPECTED = json.load(_handle)
FIELDS = ("driver", "device", "available_gbps", "limited", "limit_speed_gts", "limit_width", "limit_at",
          "capable_gbps", "capable_speed_gts", "capable_width")


def read(name):
    with open(os.path.join(FOLDER, name), encoding="utf-8", errors="replace") as handle:
        return parse_pcie_bandwidth(handle.read().splitlines())


def test_there_are_real_logs_of_each_kind():
    entries = [e for lines in EXPECTED.values() for e in lines]
    assert len(EXPECTED) >= 10
    assert sum(1 for e in entries if e["limited"]) >= 4 and sum(1 for e in entries if e["limited"] is False) >= 3
    # limited by the device's own slot (the port above it named) and by a link further up
    assert any(e["limit_at"] and e["limit_width"] and e["capable_width"] and e["limit_width"] < e["capable_width"]
               for e in entries)
    assert any(e["limited"] and e["limit_speed_gts"] and e["capable_speed_gts"] and
               e["limit_speed_gts"] < e["capable_speed_gts"] for e in entries)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_line_reads_as_a_person_reads_it(name):
    got = read(name)
    want = EXPECTED[name]
    assert [dict((k, e[k]) for k in FIELDS) for e in got] == [dict((k, e[k]) for k in FIELDS) for e in want]
    for entry, expected in zip(got, want):
        if expected["form"] == "ixgbe-legacy":
            assert (entry["link_speed_gts"], entry["link_width"]) == (expected["link_speed_gts"],
                                                                      expected["link_width"])
        assert entry["form"] == {"pre-5.x-speedstr": "pre-5.7"}.get(expected["form"], expected["form"])


def test_the_last_probe_of_a_device_stands():
    lines = ["mlx5_core 0000:5e:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x4 link at "
             "0000:5d:00.0 (capable of 63.008 Gb/s with 8.0 GT/s PCIe x8 link)",
             "nvidia 0000:3b:00.0: 8.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s PCIe x4 link at "
             "<unknown> (capable of 126.016 Gb/s with 8.0 GT/s PCIe x16 link)",
             "mlx5_core 0000:5e:00.0: 63.008 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)"]  # reseated
    limited = limited_devices(parse_pcie_bandwidth(lines))
    assert sorted(limited) == ["0000:3b:00.0"] and limited["0000:3b:00.0"]["limit_at"] is None
    flit = parse_pcie_bandwidth(["pci 0000:01:00.0: 1936.000 Gb/s available PCIe bandwidth (64.0 GT/s PCIe x16 "
                                 "link), in Flit mode"])  # PCIe 6 (hand-written in the kernel's format)
    assert flit[0]["capable_speed_gts"] == 64.0 and flit[0]["limited"] is False


@pytest.mark.parametrize("line", [
    "", "bandwidth", "x" * 100000, "pci 0000:01:00.0: " + "9" * 100000 + ".000 Gb/s available PCIe bandwidth",
    "pci 0000:01:00.0: 1.000 Gb/s available PCIe bandwidth, limited by 99999 GT/s PCIe x999 link at 0000:00:00.0",
    "pci zzzz:01:00.0: 1.000 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)",
    "\x00\xff pci 0000:01:00.0: (Speed:5.0GT/s, Width: x8",
    "pci 0000:01:00.0: " + "bandwidth " * 20000,
])
def test_odd_lines_are_skipped_in_bounded_time(line):
    start = time.monotonic()
    got = parse_pcie_bandwidth([line] * 20)
    assert time.monotonic() - start < 5  # generous: a backtracking regex takes minutes on these
    json.dumps(got)
    assert all(e["device"] != "zzzz:01:00.0" for e in got)


def test_entries_are_bounded():
    line = "ice 0000:10:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)"
    assert len(parse_pcie_bandwidth(line for _count in range(10000))) == MAX_ENTRIES
