"""nvidia-smi's own words read from real outputs posted publicly (tests/fixtures/realdata/nvidia-smi, each with its
PROVENANCE.md): `nvidia-smi -q` per GPU, `nvidia-smi topo -m` with and without its NIC legend."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvidia_smi import (
    bus_address, parse_smi_query, parse_topo_matrix,
)

DATA = os.path.join(REPO, "tests", "fixtures", "realdata", "nvidia-smi")


def text(name, filename):
    with open(os.path.join(DATA, name, filename), encoding="utf-8", errors="replace") as handle:
        return handle.read()


def test_query_of_an_idle_gpu_that_dropped_its_link():
    gpus = parse_smi_query(text("q-l4-idle-gen1-x8-thamada", "nvidia-smi-q.txt"))
    assert gpus == [{"address": "0000:01:00.0", "name": "NVIDIA L4", "performance_state": 8,
                     "generation": {"max": 4, "current": 1, "device_max": 4}, "width": {"max": 16, "current": 8}}]


def test_query_of_a_cloud_gpu_in_an_x8_slot_and_of_eight_gpus():
    [a10g] = parse_smi_query(text("q-a10g-aws-x8-of-x16-dcgm232", "nvidia-smi-q.txt"))
    assert a10g["address"] == "0000:00:1e.0" and a10g["width"] == {"max": 16, "current": 8}
    eight = parse_smi_query(text("q-a100-sxm4-40gb-8gpu-hostmax3-xuesongtap", "nvidia-smi-q.txt"))
    assert len(eight) == 8 and eight[0]["address"] == "0000:2f:00.0"
    assert all(g["generation"]["max"] == 4 and g["generation"]["current"] == 4 and g["performance_state"] == 0
               for g in eight)
    [h800] = parse_smi_query(text("q-h800-gpu0-of-8-gen5-llm-action", "nvidia-smi-q.txt"))
    assert h800["generation"]["max"] == 5


def test_topology_matrix_with_its_nic_legend():
    topo = parse_topo_matrix(text("topo-h200-8gpu-10nic-2numa-glm52", "topo-m.txt"))
    assert topo["columns"][:8] == ["GPU%d" % i for i in range(8)] and len(topo["columns"]) == 18
    assert topo["rows"]["GPU0"]["NIC3"] == "PIX" and topo["rows"]["GPU0"]["NIC0"] == "NODE"
    assert topo["rows"]["GPU4"]["NIC7"] == "PIX" and topo["rows"]["GPU4"]["NIC0"] == "SYS"
    assert topo["rows"]["GPU0"]["GPU1"] == "NV18" and topo["rows"]["GPU0"]["GPU0"] == "X"
    assert topo["numa_affinity"]["GPU0"] == "0" and topo["numa_affinity"]["GPU7"] == "1"
    assert topo["cpu_affinity"]["GPU4"] == "64-127,192-255"
    assert topo["nic_legend"]["NIC0"] == "mlx5_0"


def test_topology_matrices_of_older_drivers_and_spaces_for_tabs():
    power9 = parse_topo_matrix(text("topo-v100-power9-traverse-mlx5-columns", "topo-m.txt"))
    assert power9["columns"][4:] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"] and power9["nic_legend"] == {}
    assert power9["rows"]["GPU2"]["mlx5_2"] == "NODE" and power9["numa_affinity"]["GPU2"] == "8"
    a10 = parse_topo_matrix(text("topo-a10-4gpu-2nic-allsys-xuesongtap", "topo-m.txt"))
    assert a10["rows"]["GPU0"] == {"GPU0": "X", "GPU1": "SYS", "GPU2": "SYS", "GPU3": "SYS", "NIC0": "SYS",
                                   "NIC1": "SYS"}
    bonded = parse_topo_matrix(text("topo-a100-8gpu-17nic-bond-xuesongtap", "topo-m.txt"))
    assert len([c for c in bonded["columns"] if c.startswith("NIC")]) == 17


def test_matrix_variants_of_other_drivers():
    # HAND-WRITTEN in topo -m's tab layout: one GPU and no NIC (the one-GPU machine); an older driver's SOC and an
    # RDMA device column that is no mlx; an empty CPU Affinity cell kept in its place
    one = parse_topo_matrix("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n")
    assert one["rows"] == {"GPU0": {"GPU0": "X"}} and one["numa_affinity"] == {"GPU0": "0"}
    old = parse_topo_matrix("\tGPU0\tGPU1\tbnxt_re0\tCPU Affinity\nGPU0\t X \tSOC\tPXB\t0-7\n")
    assert old["rows"]["GPU0"] == {"GPU0": "X", "GPU1": "SYS", "bnxt_re0": "PXB"}
    assert old["cpu_affinity"] == {"GPU0": "0-7"}
    empty = parse_topo_matrix("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\t\t1\n")
    assert empty["cpu_affinity"] == {} and empty["numa_affinity"] == {"GPU0": "1"}


def test_odd_input_never_raises():
    assert parse_smi_query(None) == [] and parse_topo_matrix("") == {"columns": [], "rows": {}, "cpu_affinity": {},
                                                                     "numa_affinity": {}, "nic_legend": {}}
    assert parse_smi_query("GPU 00000000:18:00.0\n    Performance State : Pxx\n    Link Width\n        Max : 99999x\n")
    assert bus_address("00000000:1E:00.0") == "0000:1e:00.0" and bus_address("junk") is None
