"""The bandwidth model of NCCL's collectives (issue 33): NCCL's own figures, hand-computed predictions, the curve
against message size, what it does with bad shapes, the shape it reads off facts (the hand-written 8-GPU node and a
real capture), and the stored corpus of published measurements it is held against (benchmarks/
model_accuracy_bench.py prints the ratios)."""

import copy
import json
import os

import pytest

from conftest import REALDATA
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import (
    at_line_rate, at_size, nvlink_per_link, pcie_gbytes, predict, seconds, summary,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.node_shape import (
    _rail_gpu_side, compute_capability, shape_from_facts,
)

CORPUS = os.path.join(REALDATA, "nccl-tests-results")
H100 = {"gpus": 8, "compute_capability": 9.0, "intra": "nvswitch", "nvlinks": 18, "pcie_generation": 5,
        "pcie_width": 16, "rails": [{"name": "mlx5_%d" % i, "transport": "ib", "gbits": 400} for i in range(8)]}


def test_nccls_own_figures():
    # topo.cc: width x {15, 30, 60, 120, 240, 480} / 80 GB/s; Gen3 x16 is NCCL's PCI_BW of 12
    assert [pcie_gbytes(g, 16) for g in (1, 2, 3, 4, 5, 6)] == [3.0, 6.0, 12.0, 24.0, 48.0, 96.0]
    assert pcie_gbytes(4, 8) == 12.0 and pcie_gbytes(7, 16) is None and pcie_gbytes(4, None) is None
    assert [nvlink_per_link(c) for c in (6.0, 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, None)] == [
        18.0, 20.0, 20.0, 20.0, 12.0, 12.0, 20.6, 40.1, None]
    assert [compute_capability(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA A40",
                                            "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB", "NVIDIA H200",
                                            "Matrox G200", None)] == [9.0, 8.0, 8.6, 8.9, 7.0, 9.0, None, None]


def test_one_node_nvswitch_ring_and_nvls_hand_computed():
    ring = predict(H100, 1)
    assert ring["busbw_gbytes_per_s"] == pytest.approx(18 * 20.6)
    assert ring["limited_by"] == "NVLink through NVSwitch (18 links x 20.6 GB/s)" and ring["algorithm"] == "ring"
    # NVLS: algorithm bandwidth 5/6 of the NVLink figure, times the all_reduce bus factor 2 x 7 / 8
    nvls = predict(dict(H100, nvls=True), 1)
    assert nvls["busbw_gbytes_per_s"] == pytest.approx(370.8 * 5 / 6 * 1.75, abs=0.001)
    assert nvls["algorithm"] == "nvls"
    # NCCL takes NVLS where it is faster: the ring's LL for small messages (its 15 us against NVLS's 23), NVLS from
    # 1 MiB on; never on two GPUs
    small = [p for p in nvls["curve"] if p["bytes"] == 8192][0]
    assert small["protocol"] == "LL" and at_size(nvls, 8192) == at_size(ring, 8192)
    assert at_size(nvls, 2 ** 20) > at_size(ring, 2 ** 20) and nvls["curve"][-1]["protocol"] == "NVLS"
    two = predict(dict(H100, gpus=2, nvls=True), 1)
    assert (two["algorithm"], two["busbw_gbytes_per_s"]) == ("ring", pytest.approx(370.8))
    with pytest.raises(ModelError, match="notes: expected a list of texts, got 1"):
        predict(dict(H100, notes=1), 1)


def test_the_curve_rises_from_latency_to_the_bus_figure():
    found = predict(H100, 1)
    sizes = [p["bytes"] for p in found["curve"]]
    assert sizes[0] == 8 and sizes[-1] == 2 ** 33
    busbw = [p["busbw_gbytes_per_s"] for p in found["curve"]]
    assert busbw == sorted(busbw) and busbw[-1] < found["busbw_gbytes_per_s"]
    assert found["curve"][0]["protocol"] == "LL" and found["curve"][-1]["protocol"] == "Simple"
    # 8 B on 8 ranks with LL: 6.6 + 14 steps x 0.6 us = 15.0 us; bus bytes 2 x 7/8 x 8 = 14
    assert found["curve"][0]["time_us"] == pytest.approx(15.0 + 14 / (1000 * 370.8 * 0.25), abs=0.001)
    assert at_size(found, 2 ** 30) == found["curve"][27]["busbw_gbytes_per_s"]
    assert at_size(found, 2 ** 40) == busbw[-1]


def test_across_nodes_the_rails_add_up_and_two_nodes_run_a_tree():
    shape = dict(H100, rails=[{"name": "mlx5_%d" % i, "transport": "ib", "gbits": 200} for i in range(4)])
    three = predict(shape, 3)
    assert three["busbw_gbytes_per_s"] == pytest.approx(4 * 25 * 0.96)  # NET_BW: 12 GB/s per 100 Gbit/s
    assert three["limited_by"] == "network: 4 rails (4 x line rate (200 Gbit/s, ib))"
    two = predict(shape, 2)
    assert two["busbw_gbytes_per_s"] == pytest.approx(96 * 2 * 15 / 16) and two["algorithm"] == "tree"
    # all_gather has no tree: the ring's figure, whatever the node count
    assert predict(shape, 2, "all_gather")["busbw_gbytes_per_s"] == pytest.approx(96)
    # eight 400G rails carry more than NVLink: the intra-node figure caps the two-node tree
    assert predict(H100, 2)["limited_by"].startswith("NVLink through NVSwitch")


def test_sockets_are_tcp_goodput_and_a_narrow_slot_or_gpu_side_caps_a_rail():
    tcp = {"gpus": 1, "intra": "pcie", "rails": [{"name": "eth0", "transport": "socket", "gbits": 10}]}
    found = predict(tcp, 2)
    assert found["busbw_gbytes_per_s"] == pytest.approx(10 * 1448 / 1538 / 8, abs=0.001)
    assert found["limited_by"] == "network: 1 rail (TCP goodput (10 Gbit/s at MTU 1500))"
    slot = dict(tcp, rails=[{"name": "mlx5_0", "transport": "roce", "gbits": 200, "slot_gbytes_per_s": 12.0}])
    assert predict(slot, 3)["limited_by"] == "network: 1 rail (PCIe slot)"
    side = dict(tcp, pcie_generation=3, pcie_width=8,
                rails=[{"name": "mlx5_0", "transport": "ib", "gbits": 100}])
    assert predict(side, 3)["busbw_gbytes_per_s"] == pytest.approx(6.0)  # Gen3 x8: 8 x 60 / 80


def test_pcie_peer_to_peer_through_intel_and_shared_memory_across_sockets():
    pcie = {"gpus": 4, "intra": "pcie", "pcie_generation": 4, "pcie_width": 16}
    assert predict(pcie, 1)["busbw_gbytes_per_s"] == pytest.approx(24.0)
    assert predict(dict(pcie, through_cpu="intel"), 1)["busbw_gbytes_per_s"] == pytest.approx(20.0)
    across = predict(dict(pcie, intra="shm", numa_crossing=True), 1)
    assert across["busbw_gbytes_per_s"] == 10.0 and "intel-skylake assumed" in across["segments"][-1]["source"]
    assert predict(dict(pcie, intra="shm", numa_crossing=True, cpu="amd-zen3"), 1)["busbw_gbytes_per_s"] == 24.0


def test_what_cannot_be_known_is_said_not_guessed():
    assert predict({"gpus": 1, "intra": "pcie"}, 1)["busbw_gbytes_per_s"] is None
    unknown = predict({"gpus": 2, "intra": "nvlink", "nvlinks": 4}, 1)
    assert unknown["busbw_gbytes_per_s"] is None and unknown["curve"] == []
    assert unknown["limited_by"].startswith("not known: NVLink (4 links, generation unknown)")


@pytest.mark.parametrize("shape, nodes, message", [
    ("x", 1, "shape: expected a mapping"),
    ({"gpus": 0, "intra": "pcie"}, 1, "gpus: 0 is outside 1..1024"),
    ({"gpus": True, "intra": "pcie"}, 1, "gpus: expected a whole number, got True"),
    ({"gpus": 2, "intra": "nvlinks"}, 1, "intra: expected one of nvswitch, nvlink, pcie, shm, got 'nvlinks'"),
    ({"gpus": 2, "intra": "nvswitch"}, 1, "nvlinks: nvswitch needs the number of NVLinks per GPU"),
    ({"gpus": 2, "intra": "pcie", "nvls": True}, 1, "nvls: NVLink SHARP needs intra nvswitch, not pcie"),
    ({"gpus": 2, "intra": "pcie", "cpu": "z80"}, 1, "cpu: expected one of"),
    ({"gpus": 2, "intra": "pcie"}, 2, "rails: 2 nodes need at least one rail"),
    ({"gpus": 2, "intra": "pcie", "rails": [{"transport": "ib", "gbits": float("nan")}]}, 2,
     "rails[0].gbits: expected a finite number, got nan"),
    ({"gpus": 2, "intra": "pcie", "rails": [{"transport": "ib", "gbits": 100, "mtu": 9000.5}]}, 2,
     "rails[0].mtu: expected a whole number, got 9000.5"),
    ({"gpus": 2, "intra": "pcie", "rails": [{"transport": "tcp", "gbits": 100}]}, 2,
     "rails[0].transport: expected one of ib, roce, efa, plugin, socket, got 'tcp'"),
    ({"gpus": 2, "intra": "pcie", "rails": ["mlx5_0"]}, 2, "rails[0]: expected a mapping, got 'mlx5_0'"),
    ({"gpus": 2, "intra": "pcie"}, 0, "nodes: 0 is outside 1..100000"),
    ({"gpus": 2, "intra": "pcie", "rails": [{"transport": "socket", "gbits": 10, "ports": 0}]}, 2,
     "rails[0].ports: 0 is outside 1..64"),
    ({"gpus": 2, "intra": "pcie", "rails": [{"transport": "socket", "gbits": 10, "gpus": "0,1"}]}, 2,
     "rails[0].gpus: expected a list of the GPUs on the rail, got '0,1'"),
    ({"gpus": 2, "intra": "shm", "numa_crossing": True, "cpu_link_gbytes_per_s": -1}, 1,
     "cpu_link_gbytes_per_s: -1 is outside 0.001..100000"),
])
def test_bad_shapes_name_the_key(shape, nodes, message):
    with pytest.raises(ModelError) as raised:
        predict(shape, nodes)
    assert message in str(raised.value)
    with pytest.raises(ModelError, match="collective: expected one of"):
        predict({"gpus": 2, "intra": "pcie"}, 1, "alltoall")


def test_shape_from_the_hand_written_node(healthy):
    shape = shape_from_facts(healthy)
    # its GPUs sit under two sockets (pairs across them are SYS): shared memory through the CPUs, by NCCL's default
    assert (shape["gpus"], shape["intra"], shape["pcie_generation"], shape["pcie_width"]) == (8, "shm", 5, 16)
    assert shape["numa_crossing"]
    assert [(r["name"], r["transport"], r["gbits"]) for r in shape["rails"]] == [
        ("mlx5_%d" % i, "roce", 400) for i in range(8)]  # RoCE ports (Ethernet link layer)
    assert "NVLink is not in the facts: the GPUs' PCIe paths are the intra-node figure" in shape["notes"]
    two = predict(shape, 2)
    assert two["busbw_gbytes_per_s"] == pytest.approx(10.0)  # the socket interconnect inside the node caps it
    assert two["limited_by"] == "socket interconnect (intel-skylake)"
    one_socket = dict(shape, intra="pcie", numa_crossing=False)
    assert predict(one_socket, 3)["busbw_gbytes_per_s"] == pytest.approx(48.0)  # Gen5 x16 peer to peer
    tcp = shape_from_facts(healthy, "tcp")
    assert tcp["rails"] and all(r["transport"] == "socket" for r in tcp["rails"])
    assert any(n.startswith("no training interface given: the NIC nearest each GPU is its rail") for n in tcp["notes"])


def test_shape_from_a_node_whose_gpus_meet_at_the_cpu(healthy):
    facts = copy.deepcopy(healthy)
    for path in facts["paths"]["gpu_gpu"]:
        path["type"] = "SYS" if path["gpu"] != path["peer"] else path["type"]
    shape = shape_from_facts(facts)
    assert shape["intra"] == "shm" and shape["numa_crossing"]
    assert predict(shape, 1)["limited_by"] == "socket interconnect (intel-skylake)"


def test_shape_from_a_real_capture():
    with open(os.path.join(REALDATA, "gpu-check-h200-vm", "facts.json")) as handle:
        facts = json.load(handle)
    facts = facts.get("gpuops_fabric") or facts
    shape = shape_from_facts(facts)
    # one H200 on Gen5 x16 in a VM, a virtio NIC without a speed: nothing to say across nodes, and one GPU alone
    assert (shape["gpus"], shape["compute_capability"], shape["pcie_generation"], shape["rails"]) == (1, 9.0, 5, [])
    assert "eth0: no link speed in the facts, left out" in shape["notes"]
    assert predict(shape, 1)["limited_by"] == "one GPU on one node: no collective traffic"


ODD = {"gpus": [{"address": "a", "link": "x"}], "paths": {"gpu_gpu": ["x", {"type": 5}]},
       "rdma": [{"address": 5, "ports": "x"}], "nics": [7]}


@pytest.mark.parametrize("facts", [None, {}, {"gpus": "x"}, ODD])
def test_odd_facts_give_an_error_or_a_shape(facts):
    try:
        shape = shape_from_facts(facts)
    except ModelError as error:
        assert "facts:" in str(error)
        return
    predict(shape, 1)


def _corpus():
    return sorted(n for n in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, n)))


def test_the_corpus_holds_every_class_the_issue_names():
    names = _corpus()
    assert len(names) >= 20
    docs = {}
    for name in names:
        for part in ("results.txt", "PROVENANCE.md", "expected.json", "shape.json"):
            assert os.path.isfile(os.path.join(CORPUS, name, part)), (name, part)
        with open(os.path.join(CORPUS, name, "expected.json")) as handle:
            expected = json.load(handle)
        with open(os.path.join(CORPUS, name, "shape.json")) as handle:
            docs[name] = (expected, json.load(handle))
    intra = set(e.get("intra") for e, _d in docs.values())
    assert {"nvswitch", "pcie_p2p", "pcie_shm", "nvlink_bridge"} <= intra
    transports = set(e.get("transport") for e, _d in docs.values())
    assert {"ib", "roce", "socket", "efa"} <= transports
    assert sum(1 for e, _d in docs.values() if e["poster_verdict"] == "bad") >= 2


@pytest.mark.parametrize("name", _corpus())
def test_every_stored_case_is_modelled_or_says_why(name):
    with open(os.path.join(CORPUS, name, "shape.json")) as handle:
        document = json.load(handle)
    assert document["written_by_hand"]
    if document["shape"] is None:
        assert document["not_modelled"]
        return
    assert document["shape"]["notes"], "each shape says what came from the post"
    found = predict(document["shape"], document["nodes"])
    assert found["busbw_gbytes_per_s"] > 0 and found["limited_by"]


ODD_VALUES = (None, "x", 5, -1, 1e308, float("nan"), True, [], {}, [1, "a"], {"a": [1]})


def _mutations(facts):
    """(where, facts) with one value the adapter reads replaced by each odd value."""
    for key in ("gpus", "rdma", "nics"):
        for field in sorted(set(k for item in facts.get(key) or [] for k in item)):
            for odd in ODD_VALUES:
                copied = copy.deepcopy(facts)
                copied[key][0][field] = odd
                yield "%s[0].%s=%r" % (key, field, odd), copied
        for odd in ODD_VALUES:
            copied = copy.deepcopy(facts)
            copied[key] = odd
            yield "%s=%r" % (key, odd), copied
    for kind in ("gpu_gpu", "gpu_nic", "nearest_nics"):
        for odd in ODD_VALUES:
            copied = copy.deepcopy(facts)
            copied["paths"][kind] = odd
            yield "paths.%s=%r" % (kind, odd), copied
            copied = copy.deepcopy(facts)
            if isinstance(copied["paths"][kind], list) and copied["paths"][kind]:
                for field in list(copied["paths"][kind][0]):
                    copied["paths"][kind][0][field] = odd
                yield "paths.%s[0].*=%r" % (kind, odd), copied


def test_no_value_in_the_facts_makes_the_adapter_raise_anything_but_model_error(healthy, broken):
    tried = 0
    for facts in (healthy, broken):
        for where, mutated in _mutations(facts):
            for mode in (None, "tcp", "rdma"):
                tried += 1
                try:
                    shape = shape_from_facts(mutated, mode, "bond0.100" if mode == "tcp" else None)
                    predict(shape, 2)
                except ModelError:
                    pass
                except Exception as error:  # pylint: disable=broad-except
                    raise AssertionError("%s (mode %s): %r" % (where, mode, error))
    assert tried > 1000


def _dump_facts(name):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.build import build_facts
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import resolve_subsets
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import classify_devices
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ncclxml import (
        DUMP_SUBSETS, read_nccl_xml,
    )
    topo = read_nccl_xml(os.path.join(REALDATA, "nccl-logs", name, "topo.xml"), excerpt=True)
    classify_devices(topo)
    return build_facts(topo, resolve_subsets(list(DUMP_SUBSETS)))


def test_nvswitch_from_a_real_nccl_dump():
    """A real H200 board's dump as posted (cut after three GPUs): each GPU's 18 links go to four NVSwitches."""
    facts = _dump_facts("b-topo-h200-baremetal-supermicro-partial")
    assert [g["nvlink"]["links"] for g in facts["gpus"]] == [18, 18, 18]
    assert all(g["nvlink"]["to_switch"] == 18 and g["nvlink"]["source"] == "nccl_xml" for g in facts["gpus"])
    shape = shape_from_facts(dict(facts, gpus=[dict(g, name="NVIDIA H200") for g in facts["gpus"]]))
    assert (shape["intra"], shape["nvlinks"], shape["nvls"]) == ("nvswitch", 18, True)
    assert predict(shape, 1)["limited_by"] == "NVLink through NVSwitch (18 links x 20.6 GB/s)"


def _with_nvlinks(facts, peers_of):
    facts = copy.deepcopy(facts)
    addresses = [g["address"] for g in facts["gpus"]]
    for index, gpu in enumerate(facts["gpus"]):
        peers = [{"address": addresses[p], "links": 2} for p in peers_of(index, len(addresses))]
        gpu["nvlink"] = {"links": 2 * len(peers), "version": 4, "to_switch": 0, "peers": peers, "source": "nvml"}
        gpu["name"] = "NVIDIA H100 PCIe"
    return facts


def test_nvlink_gpu_to_gpu_carries_a_ring_only_where_it_joins_every_gpu(healthy):
    pairs = shape_from_facts(_with_nvlinks(healthy, lambda i, n: [i ^ 1]))
    assert pairs["intra"] == "shm"
    assert "NVLink pairs do not join every GPU in a ring: the GPUs' PCIe paths are the intra-node figure" in (
        pairs["notes"])
    ring = shape_from_facts(_with_nvlinks(healthy, lambda i, n: [(i - 1) % n, (i + 1) % n]))
    assert (ring["intra"], ring["nvlinks"], ring.get("nvls")) == ("nvlink", 4, None)
    assert predict(ring, 1)["busbw_gbytes_per_s"] == pytest.approx(4 * 20.6)
    # two islands of four, each fully linked: every GPU reaches three others, but no NVLink ring joins all eight
    islands = shape_from_facts(_with_nvlinks(healthy, lambda i, n: [j for j in range(n) if j != i and j // 4 == i // 4]))
    assert islands["intra"] == "shm"
    assert "NVLink pairs do not join every GPU in a ring: the GPUs' PCIe paths are the intra-node figure" in (
        islands["notes"])
    none = copy.deepcopy(healthy)
    for gpu in none["gpus"]:
        gpu["nvlink"] = {"links": 0, "version": None, "to_switch": 0, "peers": [], "source": "nvml"}
    assert "no NVLink between the GPUs (the facts say none)" in shape_from_facts(none)["notes"]


# HAND-WRITTEN in NCCL's dump format: one GPU with a good <nvlink>, one whose count is not a number, one whose
# target is not a PCI address, and one to another GPU (tclass 0x030200)
ODD_DUMP = """<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0" gdr="1">
        <nvlink target="0000:07:00.0" count="6" tclass="0x068000"/>
        <nvlink target="0000:06:00.0" count="many" tclass="0x068000"/>
        <nvlink target="not-an-address" count="4" tclass="0x068000"/>
        <nvlink target="0000:2a:00.0" count="2" tclass="0x030200"/>
      </gpu>
    </pci>
  </cpu>
</system>
"""


def test_odd_nvlink_elements_of_a_dump_are_left_out_with_a_warning(tmp_path):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.build import build_facts
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import resolve_subsets
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import classify_devices
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ncclxml import read_nccl_xml
    path = tmp_path / "topo.xml"
    path.write_text(ODD_DUMP)
    topo = read_nccl_xml(str(path))
    classify_devices(topo)
    facts = build_facts(topo, resolve_subsets(["pci", "gpu"]))
    [gpu] = facts["gpus"]
    assert gpu["nvlink"] == {"links": 8, "version": None, "to_switch": 6, "source": "nccl_xml",
                             "peers": [{"address": "0000:2a:00.0", "links": 2}]}
    assert sum("<nvlink target=" in w and "ignored" in w for w in facts["warnings"]) == 2


def test_one_collective_at_one_size_is_the_curve_of_predict():
    # 2 nodes of the H100 shape, 1 GB: ranks 16, Tree across (8 x 48 x 2 x 15/16 = 720 GB/s) above NVLink's 370.8, so
    # NVLink caps the ring at 370.8; Simple: 8.4 + 26 x 3.4 + 4 x 14 = 152.8 us, plus 1.875 x 1e9 / 370.8e3 us
    found = seconds(H100, 2, 1e9)
    assert found["protocol"] == "Simple" and found["algorithm"] == "tree"
    assert found["seconds"] == pytest.approx((152.8 + 1.875e9 / 370800.0) / 1e6)
    assert found["busbw_gbytes_per_s"] == pytest.approx(1.875 * 1e9 / (found["seconds"] * 1e9))
    curve = dict((p["bytes"], p) for p in predict(H100, 2)["curve"])
    for size in (8, 4096, 2 ** 20, 2 ** 30):
        assert seconds(H100, 2, size)["seconds"] * 1e6 == pytest.approx(curve[size]["time_us"], abs=1e-3)
        assert seconds(H100, 2, size)["protocol"] == curve[size]["protocol"]
    assert seconds({"gpus": 1, "intra": "pcie"}, 1, 1e9)["seconds"] == 0.0
    assert seconds({"gpus": 2, "intra": "nvlink", "nvlinks": 4}, 1, 1e9)["seconds"] is None
    with pytest.raises(ModelError, match="size: -1 is outside"):
        seconds(H100, 2, -1)


def test_the_summary_and_the_node_at_another_line_rate():
    found = summary(predict(H100, 4))
    assert found == {"busbw_gbytes_per_s": 370.8, "limited_by": "NVLink through NVSwitch (18 links x 20.6 GB/s)",
                     "algorithm": "ring", "at_1mib_gbytes_per_s": at_size(predict(H100, 4), 2 ** 20)}
    # each rail's ports at 100 Gbit/s: 8 x 12 = 96 GB/s caps 4 nodes; a bond of two ports counts both
    slower = at_line_rate(H100, 100)
    assert predict(slower, 4)["busbw_gbytes_per_s"] == 96.0
    bond = dict(H100, rails=[{"name": "bond0", "transport": "socket", "gbits": 20, "ports": 2, "mtu": 9000}])
    assert at_line_rate(bond, 25)["rails"][0]["gbits"] == 50
    with pytest.raises(ModelError, match="gbits_per_port: 0 is outside"):
        at_line_rate(H100, 0)


def test_a_socket_interconnect_the_user_knows_replaces_nccls_figure():
    shape = {"gpus": 2, "intra": "shm", "numa_crossing": True, "pcie_generation": 4, "pcie_width": 16}
    assert predict(shape)["limited_by"] == "socket interconnect (intel-skylake)"
    given = predict(dict(shape, cpu_link_gbytes_per_s=5.0))
    assert given["busbw_gbytes_per_s"] == 5.0 and given["limited_by"] == "socket interconnect (as given)"


def test_a_link_between_a_gpu_and_its_nic_caps_the_rail_in_either_facts_schema(healthy):
    """GPUDirect RDMA from GPU 0 to a NIC under the next switch (PXB) crosses the switch's upstream link 13:00.0: that
    link, narrowed to x4, caps the GPU side. Facts of schema 2 name a path's links by device (paths.via, the figures
    once in paths.links); facts of schema 1 (stored captures, fact caches) held them in each path: both read alike."""
    facts = copy.deepcopy(healthy)
    for link in facts["paths"]["links"]:
        if link["device"] == "0000:13:00.0":
            link["width"] = 4
    gpu = next(g for g in facts["gpus"] if g["address"] == "0000:15:00.0")
    notes = []
    figure = _rail_gpu_side(facts, [gpu], "0000:1a:00.0", notes)
    assert figure == (12.0, "upstream link 0000:13:00.0") and notes == []
    table = dict((link["device"], link) for link in facts["paths"]["links"])
    old = copy.deepcopy(facts)
    for path in old["paths"]["gpu_nic"] + old["paths"]["gpu_gpu"]:
        path["links"] = [dict(table[device]) for device in path.pop("via")]
    del old["paths"]["links"]
    assert _rail_gpu_side(old, [gpu], "0000:1a:00.0", []) == figure
    # a path naming a device the links do not hold, or not as text: that link is not counted
    facts["paths"]["links"] = [link for link in facts["paths"]["links"] if link["device"] != "0000:13:00.0"]
    for path in facts["paths"]["gpu_nic"]:
        path["via"] = path["via"] + [5]
    assert _rail_gpu_side(facts, [gpu], "0000:1a:00.0", [])[1] != "upstream link 0000:13:00.0"


def test_without_gpudirect_rdma_the_links_up_to_the_cpu_cap_a_rail(healthy):
    """NCCL without GPUDirect RDMA stages the data in host memory (its path from the GPU to the NIC goes through the
    CPU): a switch uplink above a GPU and its NIC, narrowed to x4 in a copy of the hand-written node, caps that rail
    only then; with nvidia_peermem loaded the GPU and NIC under one switch never cross it."""
    facts = copy.deepcopy(healthy)
    for entry in facts["pci"]:
        if entry["address"] == "0000:13:00.0":  # the upstream port of the switch above GPU 0 and mlx5_0
            entry["link"]["current"]["width"] = 4
    direct = shape_from_facts(facts, "rdma")["rails"][0]
    assert (direct["name"], direct["gpu_side_gbytes_per_s"], direct["gpu_side"]) == ("mlx5_0", 48.0, "GPU link")
    facts["kernel_modules"]["nvidia_peermem"] = False
    facts["gpudirect"]["dmabuf"]["possible"] = False
    shape = shape_from_facts(facts, "rdma")
    bounced = shape["rails"][0]
    # NCCL's Gen5 x4: 4 x 240 / 80 = 12 GB/s
    assert (bounced["gpu_side_gbytes_per_s"], bounced["gpu_side"]) == (12.0, "upstream link 0000:13:00.0")
    assert any(n.startswith("no GPUDirect RDMA") for n in shape["notes"])
    assert predict(shape, 2)["inter"]["rails"][0]["limited_by"] == "mlx5_0: upstream link 0000:13:00.0"
    # facts that do not say which modules are loaded: GPUDirect RDMA assumed, and said
    del facts["kernel_modules"]
    shape = shape_from_facts(facts, "rdma")
    assert shape["rails"][0]["gpu_side_gbytes_per_s"] == 48.0
    assert any(n.startswith("GPUDirect RDMA assumed (the facts do not say") for n in shape["notes"])


def test_fast_sockets_say_what_the_model_does_not_count():
    """NCCL's socket transport opens threads x sockets TCP flows per connection (1 x 1 by default): on a 100G port
    the wire's goodput is an upper bound, and the prediction says so; on slower ports, and on one node, it does not."""
    v100 = {"gpus": 8, "compute_capability": 7.0, "intra": "nvlink", "nvlinks": 6,
            "rails": [{"name": "eth0", "transport": "socket", "gbits": 100, "mtu": 9000}]}
    assert any(n.startswith("NCCL's sockets: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD") for n in
               predict(v100, 4)["notes"])
    assert not any(n.startswith("NCCL's sockets") for n in predict(v100, 1)["notes"])
    bond = dict(v100, rails=[{"name": "bond0", "transport": "socket", "gbits": 50, "ports": 2}])
    assert not any(n.startswith("NCCL's sockets") for n in predict(bond, 4)["notes"])


@pytest.mark.parametrize("gpudirect, nccl, verdict", [
    ({"dmabuf": {"kernel": True, "open_module": None, "possible": None}}, None, None),  # the module not read
    ({"dmabuf": {"kernel": False, "open_module": True, "possible": False}}, None, False),
    ({"dmabuf": {"kernel": True, "open_module": True, "possible": True}}, {"values": {"NCCL_DMABUF_ENABLE": "0"}}, False),
    ("x", None, None), ({"dmabuf": 5}, None, None), ({"dmabuf": {}, "nvidia_driver": []}, {"values": "x"}, None),
])
def test_gpudirect_verdict_without_a_peer_memory_module(healthy, gpudirect, nccl, verdict):
    """No peer-memory module: DMA-BUF decides; what the facts cannot tell (or give in the wrong type) is unknown,
    GPUDirect RDMA assumed, never an exception."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.gpudirect import gdr_possible
    facts = copy.deepcopy(healthy)
    facts["kernel_modules"]["nvidia_peermem"] = False
    facts["gpudirect"] = gpudirect
    if nccl is not None:
        facts["nccl"] = nccl
    assert gdr_possible(facts) is verdict
    shape = shape_from_facts(facts, "rdma")
    assert any(n.startswith("no GPUDirect RDMA" if verdict is False else "GPUDirect RDMA assumed")
               for n in shape["notes"])
