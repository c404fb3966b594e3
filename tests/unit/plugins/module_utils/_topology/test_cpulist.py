from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import (
    format_cpulist, parse_cpulist, parse_cpumask,
)


def test_cpulist_round_trip():
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert parse_cpulist("") == []
    assert parse_cpulist("3-1") is None
    assert parse_cpulist("a-b") is None
    assert parse_cpulist("1,,2") is None


def test_cpumask_words():
    # Kernel masks are 32-bit words, most significant first, comma separated.
    assert parse_cpumask("00000000,000000ff") == list(range(8))
    assert parse_cpumask("00000001,00000000") == [32]
    assert parse_cpumask("0x0000ff00") == list(range(8, 16))
    assert parse_cpumask("zz") is None


def test_hwloc_bitmap_form():
    # hwloc shortens words and writes an all-zero word as nothing.
    assert parse_cpumask("0x00000001,,0x0") == [64]
    assert parse_cpumask("0xff,0xffffffff") == list(range(40))
    assert parse_cpumask("0x123456789") is None
    assert parse_cpumask(",") is None


def test_bounds_and_merging():
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import MAX_CPUS
    assert MAX_CPUS == 16384  # twice the largest CONFIG_NR_CPUS (8192)
    assert parse_cpulist("0-%d" % (MAX_CPUS - 1)) == list(range(MAX_CPUS))
    assert parse_cpulist("0-%d" % MAX_CPUS) is None
    assert parse_cpulist("4-7,0-5,6") == list(range(8))  # overlaps merged, sorted
    assert parse_cpulist(" 1 , 3 ") == [1, 3]
    assert parse_cpulist("+1") is None and parse_cpulist("1_0") is None
    assert parse_cpumask("%s" % ",".join(["00000000"] * 1000 + ["1"])) == [0]  # leading zero words are fine
    assert parse_cpumask(",".join(["1"] + ["0"] * (MAX_CPUS // 32))) is None   # CPU 16384: beyond the bound
    assert format_cpulist([5, 1, 2, 3, 3]) == "1-3,5"
