"""The planner on the hand-written 8-GPU node: every figure is the model of NCCL's collectives (hand-computed here),
the node counts and the ceiling it shows, the node at other link speeds, the table and the chart file."""

import copy
import struct

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import predict, seconds
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.node_shape import shape_from_facts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.planner import (
    ceiling, chart, node_counts, plan_node, scaling, table,
)


@pytest.fixture(scope="module")
def dgx8(healthy):
    return healthy


def test_node_counts():
    assert node_counts(2) == [2]
    assert node_counts(8) == list(range(2, 9))
    assert node_counts(100) == list(range(2, 65)) + [100]
    assert node_counts(1000)[-5:] == [64, 128, 256, 512, 1000]
    for bad in (1, 0, True, 2.5, None):
        with pytest.raises(ModelError, match="nodes: .* must be a whole number, 2 or more"):
            node_counts(bad)


def test_rdma_rails_and_the_step_hand_computed(dgx8):
    # Each GPU has its own 400G RoCE port in a Gen5 x16 slot: NCCL counts the line at 400/8 x 0.96 = 48 GB/s, and
    # the GPU and slot at 16 x 240 / 80 = 48. The node's GPUs meet across the sockets (SYS, no NVLink in the facts):
    # shared memory through an Intel socket link, NCCL's 10 GB/s, caps the node and every node count.
    plan = plan_node(shape_from_facts(dgx8, "rdma"), 1e9, 8, compute_seconds=0.2)
    assert [(r["rail"], r["gpus"], r["gbytes_per_s"]) for r in plan["rails"]][:2] == [
        ("mlx5_0", ["0"], 48.0), ("mlx5_1", ["1"], 48.0)]
    assert plan["rails"][0]["limited_by"] == "line rate (400 Gbit/s, roce)"
    assert plan["node"]["busbw_gbytes_per_s"] == 10.0 and plan["across"]["busbw_gbytes_per_s"] == 10.0
    assert plan["across"]["limited_by"] == "socket interconnect (intel-skylake)"
    # 1 GB over 2 nodes (16 ranks): Simple, 8.4 + 26 x 5.7 + 4 x 14 = 212.6 us plus 1.875 x 1e9 B / 10 GB/s
    first = plan["scaling"][0]
    assert first["nodes"] == 2 and first["protocol"] == "Simple"
    assert first["allreduce_s"] == pytest.approx((212.6 + 187500.0) / 1e6)
    assert first["efficiency"] == pytest.approx(0.2 / (0.2 + first["allreduce_s"]))
    assert [r["nodes"] for r in plan["scaling"]] == list(range(2, 9))
    # at 10 GbE per port the eight rails give 8 x 1.2 = 9.6 GB/s, below the socket link: the network caps it
    speeds = dict((s["speed_gbe"], s) for s in plan["by_link_speed"])
    assert speeds[10]["across"]["busbw_gbytes_per_s"] == 9.6
    assert speeds[10]["across"]["limited_by"] == "network: 8 rails (8 x line rate (10 Gbit/s, roce))"
    assert speeds[400]["across"]["limited_by"] == "socket interconnect (intel-skylake)"


def test_tcp_over_the_bond_hand_computed(dgx8):
    # bond0 = eno1 + eno2 (2 x 10GbE); the VLAN at MTU 9000: goodput 20 x 8948/9038 = 19.80 Gbit/s = 2.475 GB/s
    plan = plan_node(shape_from_facts(dgx8, "tcp", "bond0.100"), 1e9, 8, compute_seconds=0.2)
    assert plan["rails"] == [{"rail": "bond0.100", "gpus": [str(i) for i in range(8)], "transport": "socket",
                              "gbits": 20.0, "mtu": 9000, "gbytes_per_s": pytest.approx(20 * 8948 / 9038 / 8),
                              "limited_by": "TCP goodput (20 Gbit/s at MTU 9000)"}]
    # 3 nodes, 24 ranks: 8.4 + 40 x 5.7 + 6 x 14 = 320.4 us plus 2 x 23/24 x 1e9 B over 2.475 GB/s
    three = plan["scaling"][1]
    assert three["allreduce_s"] == pytest.approx((320.4 + 2 * 23 / 24 * 1e9 / (20 * 8948 / 9038 / 8) / 1e3) / 1e6)
    # two nodes run NCCL's Tree: the network figure times 2 x 15/16
    assert plan["scaling"][0]["algorithm"] == "tree"
    assert plan["scaling"][0]["busbw_gbytes_per_s"] < 2 * 15 / 16 * 2.4751
    speeds = dict((s["speed_gbe"], s) for s in plan["by_link_speed"])
    # at 10 GbE a leg: the bond as it is, the ceiling (1 GB takes 0.40 s > 0.2 s of compute) at 2 nodes
    assert speeds[10]["across"]["busbw_gbytes_per_s"] == plan["across"]["busbw_gbytes_per_s"]
    assert speeds[10]["ceiling_nodes"] == 2 and plan["ceiling_nodes"] == 2
    # at 100 GbE a leg, the socket link (10 GB/s) caps it, and 8 nodes take 1.97 x 1e9 / 10e9 = 0.197 s < 0.2 s
    assert speeds[100]["across"]["limited_by"] == "socket interconnect (intel-skylake)"
    assert speeds[100]["ceiling_nodes"] is None


def test_the_ceiling_between_the_rows_is_exact(dgx8):
    shape = shape_from_facts(dgx8, "tcp", "bond0.100")
    rows = scaling(shape, 1e8, 1000)
    assert [r["nodes"] for r in rows][-4:] == [128, 256, 512, 1000]
    times = dict((n, seconds(shape, n, 1e8)["seconds"]) for n in range(2, 1001))
    # compute times that put the ceiling among the sparse rows, on one, and beyond the last
    for compute in (times[100], times[100] + 1e-7, times[700] - 1e-9, times[64], times[2], times[1000] + 1):
        expected = next((n for n in range(2, 1001) if times[n] >= compute), None)
        assert ceiling(shape, rows, 1e8, compute) == expected, compute
    assert ceiling(shape, rows, 1e8, None) is None


def test_the_socket_crossing_the_user_gives_replaces_nccls_figure(dgx8):
    facts = copy.deepcopy(dgx8)
    # planted: GPU 0's path to the bond's port crosses the sockets (it already does: NODE -> SYS for every GPU)
    for path in facts["paths"]["gpu_nic"]:
        if path["nic_names"][0] in ("eno1", "eno2"):
            path["type"] = "SYS"
    shape = shape_from_facts(facts, "tcp", "bond0.100", cpu_link=0.5)
    assert shape["rails"][0]["gpu_side"] == "socket crossing"
    assert shape["rails"][0]["gpu_side_gbytes_per_s"] == 0.5
    plan = plan_node(shape, 1e9, 4)
    assert plan["across"]["busbw_gbytes_per_s"] == 0.5
    assert plan["across"]["limited_by"] == "socket interconnect (as given)"


def test_what_the_model_cannot_figure_is_refused_naming_it(dgx8):
    facts = copy.deepcopy(dgx8)
    for gpu in facts["gpus"]:
        gpu["link"] = None
    facts["paths"]["gpu_gpu"] = []  # nothing says how the GPUs meet: their PCIe figure is all there is
    with pytest.raises(ModelError, match="the bus bandwidth on 2 nodes is not known: not known: GPU PCIe link"):
        plan_node(shape_from_facts(facts, "tcp", "bond0.100"), 1e9, 4)
    with pytest.raises(ModelError, match="rails: 4 nodes need at least one rail"):
        plan_node(shape_from_facts(dgx8, "tcp", "eth9"), 1e9, 4)
    with pytest.raises(ModelError, match="nodes: 1 must be a whole number, 2 or more"):
        plan_node(shape_from_facts(dgx8, "rdma"), 1e9, 1)


def test_table_and_chart(dgx8, tmp_path):
    plan = plan_node(shape_from_facts(dgx8, "rdma"), 1e9, 8, 0.1)
    text = table("node1", plan, 0.1)
    assert "| mlx5_0 | 0 | roce | 400 | 48 | line rate (400 Gbit/s, roce) |" in text
    assert "| 2 | 187.713 | 9.989 | Simple | 65% | 35% |" in text
    assert "| 10 GbE | 9.6 | network: 8 rails (8 x line rate (10 Gbit/s, roce)) |" in text
    assert predict(shape_from_facts(dgx8, "rdma"), 8)["busbw_gbytes_per_s"] == plan["across"]["busbw_gbytes_per_s"]
    path = chart(str(tmp_path / "node1.png"), "node1", plan, 0.1)
    with open(path, "rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (800, 500)
