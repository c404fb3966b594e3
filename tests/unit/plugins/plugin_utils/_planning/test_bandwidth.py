"""The bandwidth model: the figures in DESIGN.md are the tests, plus hand-computed allreduce times."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import (
    ModelError, allreduce_time, ethernet_goodput, path_bottleneck, ring_allreduce_factor, tcp_payload,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import pcie_bandwidth


@pytest.mark.parametrize("speed,mtu,expected", [
    (10000, 1500, 9.41),   # DESIGN.md: 1448/1538
    (10000, 9000, 9.90),   # DESIGN.md: 8948/9038
    (25000, 1500, 23.54),
    (100000, 9000, 99.00),
    (400000, 9000, 396.02),
])
def test_goodput_design_figures(speed, mtu, expected):
    assert round(ethernet_goodput(speed, mtu), 2) == expected


def test_goodput_arithmetic():
    assert tcp_payload(1500) == 1448 and tcp_payload(9000) == 8948
    assert ethernet_goodput(10000, 1500) == pytest.approx(10 * 1448 / 1538)
    assert ethernet_goodput(10000, 1500, vlan=True) == pytest.approx(10 * 1448 / 1542)
    assert ethernet_goodput(10000, 1500, ipv6=True) == pytest.approx(10 * 1428 / 1538)
    assert ethernet_goodput(10000, 1500, timestamps=False) == pytest.approx(10 * 1460 / 1538)


def test_pcie_design_figures():
    assert [round(pcie_bandwidth(g, 16), 2) for g in (3, 4, 5)] == [15.75, 31.51, 63.02]


@pytest.mark.parametrize("size,ranks,bandwidth,seconds", [
    (1e9, 2, 1.0, 1.0),          # 2 * 1/2
    (1e9, 4, 1.0, 1.5),          # 2 * 3/4
    (4e9, 8, 12.5, 0.56),        # 2 * 7/8 * 4 / 12.5
    (1e9, 1, 1.0, 0.0),          # one rank moves nothing
])
def test_allreduce_hand_computed(size, ranks, bandwidth, seconds):
    assert allreduce_time(size, ranks, bandwidth) == pytest.approx(seconds)


@given(st.integers(min_value=2, max_value=100000))
def test_ring_factor_bounds(ranks):
    factor = ring_allreduce_factor(ranks)
    assert 1.0 <= factor < 2.0
    assert factor <= ring_allreduce_factor(ranks + 1)


@given(st.integers(min_value=1, max_value=800000), st.integers(min_value=576, max_value=9216))
def test_goodput_below_line_rate_and_grows_with_mtu(speed, mtu):
    assert 0 < ethernet_goodput(speed, mtu) < speed / 1000.0
    assert ethernet_goodput(speed, mtu) < ethernet_goodput(speed, mtu + 1)


def test_bottleneck():
    path = [{"name": "gpu", "gbytes_per_s": pcie_bandwidth(4, 16)},
            {"name": "uplink", "gbytes_per_s": pcie_bandwidth(4, 8)},
            {"name": "socket", "gbytes_per_s": None},
            {"name": "nic", "gbytes_per_s": ethernet_goodput(200000, 9000) / 8}]
    found = path_bottleneck(path)
    assert found["name"] == "uplink" and found["unknown"] == ["socket"]
    assert found["known"] == ["gpu", "uplink", "nic"]
    assert path_bottleneck([{"name": "x", "gbytes_per_s": None}]) is None


@pytest.mark.parametrize("call,message", [
    (lambda: ethernet_goodput("fast", 1500), "speed_mbps: expected a number, got 'fast'"),
    (lambda: ethernet_goodput(10000, 40), "mtu: 40 is below 68"),
    (lambda: ethernet_goodput(10000, 1500.5), "mtu: expected a whole number, got 1500.5"),
    (lambda: ethernet_goodput(10000, True), "mtu: expected a number, got True"),
    (lambda: allreduce_time(1e9, 0, 1.0), "ranks: 0 is below 1"),
    (lambda: allreduce_time(1e9, 4, 0), "bus_bandwidth: 0 GB/s moves nothing"),
    (lambda: allreduce_time(-1, 4, 1), "size_bytes: -1 is below 0"),
    (lambda: path_bottleneck("gpu"), "segments: expected a list"),
    (lambda: path_bottleneck([{"gbytes_per_s": 1}]), "segments[0]: expected a mapping with name"),
    (lambda: path_bottleneck([{"name": "a", "gbytes_per_s": "x"}]), "segments[0].gbytes_per_s: expected a number"),
])
def test_bad_input_names_argument_and_value(call, message):
    with pytest.raises(ModelError) as caught:
        call()
    assert message in str(caught.value)
