"""The planner on known inputs: hand-computed bottlenecks and times, and the chart file."""

import copy
import struct

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.planner import (
    by_link_speed, chart, node_paths, scaling, table,
)


@pytest.fixture(scope="module")
def dgx8(healthy):
    return healthy


def test_rdma_rails_hand_computed(dgx8):
    # Each GPU sits on a Gen5 x16 switch with its own 400 Gb/s HCA: GPU link and slot 63.0 GB/s, line rate
    # 400/8 = 50 GB/s -> the line rate is the bottleneck; eight rails: 8 x 50 = 400 GB/s per node.
    plan = node_paths(dgx8, "rdma", mtu=9000)
    assert [(g["index"], g["nic"], g["path_type"], g["bottleneck"]) for g in plan["gpus"]][:2] == [
        (0, "mlx5_0", "PIX", "NIC line rate"), (1, "mlx5_1", "PIX", "NIC line rate")]
    assert plan["node"] == {"gbytes_per_s": 400.0, "limited_by": "NIC line rate"}
    # 1 GB over 2 nodes: 2 x 1/2 x 1e9 / 400e9 = 2.5 ms; 4 nodes: 2 x 3/4 x 1e9 / 400e9 = 3.75 ms
    rows = scaling(1e9, 400.0, 4, compute_seconds=0.1)
    assert [round(r["allreduce_s"] * 1000, 3) for r in rows] == [2.5, 3.333, 3.75]
    assert rows[0]["efficiency"] == pytest.approx(0.1 / 0.1025)


def test_tcp_over_the_bond_hand_computed(dgx8):
    # bond0 = eno1 + eno2 (2 x 10GbE, each port in a Gen3 x8 slot, 7.877 GB/s); the VLAN at MTU 9000:
    # goodput 20 x 8948/9038 = 19.80 Gbit/s = 2.475 GB/s -> the line rate sets the node's bandwidth.
    plan = node_paths(dgx8, "tcp", "bond0.100", mtu=9000)
    assert plan["node"]["limited_by"] == "NIC line rate"
    assert plan["node"]["gbytes_per_s"] == pytest.approx(20 * 8948 / 9038 / 8)
    gpu0 = plan["gpus"][0]
    assert gpu0["nic"] == "eno1" and gpu0["path_type"] == "NODE"
    # per GPU, one 10G leg: 10 x 8948/9038 / 8 = 1.2375 GB/s
    assert gpu0["bottleneck_gbytes_per_s"] == pytest.approx(10 * 8948 / 9038 / 8)
    speeds = dict((s["speed_gbe"], s) for s in by_link_speed(plan, "tcp", 9000, 1e9, 8, compute_seconds=0.2))
    # at 10 GbE each leg: the same 2.475 GB/s; 2 nodes: 1e9 / 2.475e9 = 0.404 s > 0.2 s compute -> ceiling at 2
    assert speeds[10]["gbytes_per_s"] == pytest.approx(plan["node"]["gbytes_per_s"])
    assert speeds[10]["ceiling_nodes"] == 2
    # at 100 GbE the two Gen3 x8 slots (2 x 7.877 GB/s) cap it, and 1 GB takes <= 2 x 7/8 / 15.75 = 0.111 s
    assert speeds[100]["gbytes_per_s"] == pytest.approx(2 * 7.877, rel=1e-3)
    assert speeds[100]["ceiling_nodes"] is None


def test_socket_crossing_and_unknowns(dgx8):
    facts = copy.deepcopy(dgx8)
    # planted: GPU 0's path to the bond's port crosses the sockets
    for path in facts["paths"]["gpu_nic"]:
        if path["gpu"] == facts["gpus"][0]["address"] and path["nic_names"][0] in ("eno1", "eno2"):
            path["type"] = "SYS"
    plan = node_paths(facts, "tcp", "bond0.100", mtu=9000)
    assert "socket crossing" in plan["gpus"][0]["unknown"]
    plan = node_paths(facts, "tcp", "bond0.100", mtu=9000, socket_gbytes=0.5)
    assert plan["gpus"][0]["bottleneck"] == "socket crossing" and plan["gpus"][0]["bottleneck_gbytes_per_s"] == 0.5


@pytest.mark.parametrize("call,message", [
    (lambda f: node_paths({}, "tcp", "eth0"), "facts: no GPUs on this node"),
    (lambda f: node_paths(f, "tcp", "eth9"), "interface: 'eth9' has no PCIe port under it"),
    (lambda f: scaling(1e9, 10.0, 1), "nodes: 1 must be 2 or more"),
])
def test_bad_input(call, message, dgx8):
    with pytest.raises(ModelError) as caught:
        call(dgx8)
    assert message in str(caught.value)


def test_table_and_chart(dgx8, tmp_path):
    plan = node_paths(dgx8, "rdma", mtu=9000)
    rows = scaling(1e9, plan["node"]["gbytes_per_s"], 8, 0.1)
    text = table("node1", plan, rows, 0.1)
    assert "| 0 | mlx5_0 | PIX | NIC line rate | 50.00 |" in text and "| 2 | 2.50 | 2% | 98% |" in text
    speeds = by_link_speed(plan, "rdma", 9000, 1e9, 8, 0.1)
    path = chart(str(tmp_path / "node1.png"), "node1", speeds, {"rows": rows, "gbytes_per_s": 400.0}, 0.1)
    with open(path, "rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (800, 500)
