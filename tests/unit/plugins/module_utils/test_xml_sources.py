"""hwloc XML and NCCL topology XML readers on real files (tests/fixtures/realdata)."""

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._facts import gather


def one(items, **match):
    found = [i for i in items if all(i[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, len(found))
    return found[0]


def test_hp_sl390_three_teslas_and_connectx2(realdata):
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))
    gpus = facts["gpus"]
    assert [(g["address"], g["numa_node"], g["vendor"]) for g in gpus] == [
        ("0000:06:00.0", 0, "nvidia"), ("0000:11:00.0", 1, "nvidia"), ("0000:14:00.0", 1, "nvidia")]
    assert {g["device_id"] for g in gpus} == {"0x06d2"}  # Tesla M2070 (hwloc gives no name here)
    # hwloc gives only GB/s of the current link (here Gen2 x8 = 4 GB/s).
    assert gpus[0]["link"]["current"] == {"speed_gts": None, "generation": None, "width": None, "gbytes_per_s": 4.0}
    hca = one(facts["rdma"], name="mlx4_0")
    assert (hca["address"], hca["numa_node"], hca["netdevs"]) == ("0000:05:00.0", 0, ["eth2", "ib0"])
    assert one(facts["nics"], name="ib0")["kind"] == "ipoib"
    paths = facts["paths"]["gpu_nic"]
    assert one(paths, gpu="0000:06:00.0", nic="0000:05:00.0")["type"] == "PHB"
    assert one(paths, gpu="0000:11:00.0", nic="0000:05:00.0")["type"] == "SYS"
    # The BMC's ATI ES1000 VGA is not a GPU.
    assert one(facts["pci"], address="0000:01:03.0")["kind"] == "other"


def test_power8_p100_parent_link_narrower(realdata):
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-power8-p100-nvlink", "power8gpudistances.xml"))
    gpus = facts["gpus"]
    assert [g["address"][:4] for g in gpus] == ["0002", "0003", "000a", "000b"]
    assert [g["numa_node"] for g in gpus] == [0, 0, 1, 1]
    for pair in facts["paths"]["gpu_gpu"]:
        assert pair["type"] in ("NODE", "SYS")
    for gpu in facts["pci"]:
        if gpu["kind"] == "gpu" and gpu["parent"]:
            parent = one(facts["pci"], address=gpu["parent"])
            assert parent["link"]["current"]["gbytes_per_s"] < gpu["link"]["current"]["gbytes_per_s"]


def test_four_socket_two_nics_per_node(realdata):
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-4socket-nics-per-node", "96em64t-4n4d3ca2co-pci.xml"))
    physical = [n for n in facts["nics"] if n["kind"] == "physical"]
    per_node = {}
    for nic in physical:
        per_node.setdefault(nic["numa_node"], []).append(nic["name"])
    assert {k: len(v) for k, v in per_node.items()} == {0: 2, 1: 2, 2: 2, 3: 2}
    assert facts["numa"]["count"] == 4


def test_cisco_vic_sriov(realdata):
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-cisco-vic-sriov-2numa", "16intel64-manyVFs.xml"))
    assert facts["numa"]["count"] == 2
    assert len(facts["pci"]) > 20  # the VIC's many virtual functions
    assert {n["numa_node"] for n in facts["nics"] if n["kind"] == "physical"} == {0, 1}


def test_mi300x_nccl_topology(realdata):
    facts = gather(source="nccl_xml", path=realdata("rccl-mi300x-8gpu-cx7", "topo_8p_940.xml"))
    gpus = facts["gpus"]
    assert len(gpus) == 8 and {g["vendor"] for g in gpus} == {"amd"}
    assert [g["numa_node"] for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert gpus[0]["link"]["max"] == {"speed_gts": 32.0, "generation": 5, "width": 16, "gbytes_per_s": 63.015}
    assert gpus[0]["link"]["current"]["generation"] is None  # NCCL records maxima only
    nearest = [g["nearest_nics"][0]["nic_names"] for g in gpus]
    assert nearest == [["mlx5_%d" % i] for i in range(8)]
    assert {g["nearest_nics"][0]["type"] for g in gpus} == {"PXB"}
    assert one(facts["rdma"], name="mlx5_0")["ports"][0]["rate_gbps"] == 400.0
    link_basis = one(facts["paths"]["gpu_nic"], gpu=gpus[0]["address"], nic="0000:07:00.0")["links"][0]["basis"]
    assert link_basis == "max"


def test_mi300a_one_nic_per_socket(realdata):
    facts = gather(source="nccl_xml", path=realdata("rccl-mi300a-4apu-slingshot", "topo_4p_940.xml"))
    gpus = facts["gpus"]
    assert len(gpus) == 4
    for gpu in gpus:
        (near,) = gpu["nearest_nics"]
        assert near["type"] == "PHB"
        nic = one(facts["pci"], address=near["nic"])
        assert nic["numa_node"] == gpu["numa_node"]
        assert nic["link"]["max"]["speed_gts"] == 16.0 and gpu["link"]["max"]["speed_gts"] == 32.0
    remote = [p for p in facts["paths"]["gpu_nic"] if p["type"] == "SYS"]
    assert len(remote) == 12
    # cxi speed="200000000" is not Mb/s; the reader refuses it and says so.
    assert one(facts["rdma"], name="cxi0")["ports"][0]["rate_gbps"] is None
    assert any("cxi0" in w and "plausible" in w for w in facts["warnings"])


@pytest.mark.parametrize("subset,present,absent", [
    (["min"], ["numa"], ["pci", "gpus", "paths"]),
    (["gpu"], ["numa", "gpus"], ["pci", "paths", "nics"]),
    (["all", "!paths"], ["pci", "gpus", "nics"], ["paths"]),
    (["!rdma", "!bond"], ["pci", "paths", "vlans"], ["rdma", "bonds"]),
    (["!all", "nic"], ["nics", "numa"], ["pci"]),
    (["pci", "!min"], ["pci"], ["numa"]),
])
def test_gather_subset(realdata, subset, present, absent):
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"),
                   gather_subset=subset)
    for key in present:
        assert key in facts, key
    for key in absent:
        assert key not in facts, key


def test_gather_subset_unknown_name():
    with pytest.raises(ValueError, match="gather_subset: 'gpus' is not one of"):
        gather(gather_subset=["gpus"])
