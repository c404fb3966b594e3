"""hwloc XML and NCCL topology XML readers on real files (tests/fixtures/realdata)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather


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
    via = one(facts["paths"]["gpu_nic"], gpu=gpus[0]["address"], nic="0000:07:00.0")["via"]
    assert via[0] == gpus[0]["address"] and one(facts["paths"]["links"], device=via[0])["basis"] == "max"


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


# ---- issue 13: reader bugs seen on real captures -------------------------------------------------

def _path(paths, a, b):
    found = [p for p in paths if {p.get("gpu"), p.get("peer", p.get("nic"))} == {a, b}]
    assert len(found) == 1, (a, b, len(found))
    return found[0]


def test_nccl_nested_switches_are_marked_by_the_reader(realdata):
    """RCCL dump of a 2 x (PLX switch over 4 PLX switches, one MI50 each) server: every nested <pci> bridge
    is a switch of its own (NCCL writes one element per switch), the top ones sit right below the CPU."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ncclxml import read_nccl_xml
    topo = read_nccl_xml(realdata("rccl-8p-pcie-nested-plx", "topo_8p_pcie.xml"))
    nested = sorted(a for a, d in topo.pci.items() if getattr(d, "nccl_nested_switch", False))
    assert nested == ["0000:1b:00.0", "0000:1e:00.0", "0000:21:00.0", "0000:24:00.0",
                      "0000:3d:00.0", "0000:41:00.0", "0000:44:00.0", "0000:47:00.0"]
    assert topo.pci["0000:1b:00.0"].parent == "0000:18:00.0"
    assert (topo.pci["0000:1b:00.0"].max_gts, topo.pci["0000:1b:00.0"].max_width) == (8.0, 16)
    assert topo.warnings == []


def test_nccl_nested_switches_give_pxb_at_the_nested_uplink(realdata):
    facts = gather(source="nccl_xml", path=realdata("rccl-8p-pcie-nested-plx", "topo_8p_pcie.xml"))
    kinds = dict((p["address"], p["kind"]) for p in facts["pci"])
    assert {kinds[a] for a in ("0000:18:00.0", "0000:1b:00.0", "0000:1e:00.0", "0000:3d:00.0")} == {"switch_upstream"}
    # GPUs under different second-level switches meet in the top switch: PXB, limited by the
    # nested switch's Gen3 x16 uplink (15.754 GB/s), not the GPUs' own Gen4 x16 links.
    pair = _path(facts["paths"]["gpu_gpu"], "0000:1d:00.0", "0000:20:00.0")
    assert pair["type"] == "PXB" and pair["common_bridge"] == "0000:18:00.0"
    assert pair["bottleneck_gbytes_per_s"] == 15.754
    assert pair["bottleneck_device"] in ("0000:1b:00.0", "0000:1e:00.0")
    nic = _path(facts["paths"]["gpu_nic"], "0000:1d:00.0", "0000:1a:00.0")
    assert nic["type"] == "PXB" and nic["bottleneck_gbytes_per_s"] == 15.754
    # Separate top switches on one CPU: through the host bridge.
    assert _path(facts["paths"]["gpu_gpu"], "0000:1d:00.0", "0000:3f:00.0")["type"] == "PHB"


def test_mi300x_still_pxb(realdata):
    """The MI300X dump nests three bridges per GPU; whatever the classification, GPU to its NIC stays PXB."""
    facts = gather(source="nccl_xml", path=realdata("rccl-mi300x-8gpu-cx7", "topo_8p_940.xml"))
    assert {g["nearest_nics"][0]["type"] for g in facts["gpus"]} == {"PXB"}


def test_hwloc_numa_distances_split_over_elements(realdata):
    """hwloc v2 writes at most 10 values per <u64values>: the TYAN S4881 export (8 nodes, 5 allowed) has
    25 values over three elements; the 4-socket one 16 over two. All of each matrix is read."""
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-tyan-8numa-cpusets", "16amd64-8n2c-cpusets.xml"))
    nodes = facts["numa"]["nodes"]
    assert [n["id"] for n in nodes] == [1, 2, 3, 4, 5]
    values = [v for n in nodes for v in n["distances"].values()]
    assert len(values) == 5 * 5
    for node in nodes:
        assert node["distances"] == dict((str(k), 10 if k == node["id"] else 20) for k in range(1, 6))
    assert [n["cpus"] for n in nodes] == ["2-3", "5", "6", "", ""]  # nodes 4 and 5 hold memory only
    assert facts["warnings"] == []
    facts = gather(source="hwloc_xml", path=realdata("hwloc-xml-4socket-nics-per-node", "96em64t-4n4d3ca2co-pci.xml"))
    matrix = [[n["distances"][str(k)] for k in range(4)] for n in facts["numa"]["nodes"]]
    assert matrix == [[10 if i == j else 26 for j in range(4)] for i in range(4)]
    facts = gather(source="hwloc_xml", path=realdata("hwloc-westmere-qib-4numa", "40intel64-2g2n4c+pcilocality.xml"))
    assert sum(len(n["distances"]) for n in facts["numa"]["nodes"]) == 16


HANDWRITTEN_DISTANCES = """<?xml version="1.0" encoding="UTF-8"?>
<!-- hand-written (not a capture): 12 NUMA nodes, so hwloc's 10-per-element split hits <indexes> too -->
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000fff" nodeset="0x00000fff" gp_index="1">
%(nodes)s
  </object>
  <distances2 type="NUMANode" nbobjs="%(nbobjs)s" kind="5" name="NUMALatency" indexing="%(indexing)s">
%(indexes)s
%(values)s
  </distances2>
</topology>
"""


def _distances_doc(tmp_path, nbobjs=12, indexing="os", drop=0):
    nodes = "\n".join('    <object type="NUMANode" os_index="%d" cpuset="0x%x" nodeset="0x%x" gp_index="%d"/>'
                      % (i, 1 << i, 1 << i, 100 + i) for i in range(12))
    ids = [100 + i for i in range(12)] if indexing == "gp" else list(range(12))
    values = [10 if i == j else 20 + abs(i - j) for i in range(12) for j in range(12)][:144 - drop]

    def chunks(items, tag):
        return "\n".join("    <%s>%s </%s>" % (tag, " ".join(str(v) for v in items[k:k + 10]), tag)
                         for k in range(0, len(items), 10))
    path = tmp_path / "dist.xml"
    path.write_text(HANDWRITTEN_DISTANCES % {"nodes": nodes, "nbobjs": nbobjs, "indexing": indexing,
                                             "indexes": chunks(ids, "indexes"), "values": chunks(values, "u64values")})
    return str(path)


@pytest.mark.parametrize("indexing", ["os", "gp"])
def test_hwloc_distances_indexes_split_too(tmp_path, indexing):
    facts = gather(source="hwloc_xml", path=_distances_doc(tmp_path, indexing=indexing))
    nodes = facts["numa"]["nodes"]
    assert len(nodes) == 12 and facts["warnings"] == []
    assert nodes[11]["distances"]["0"] == 31 and nodes[3]["distances"]["3"] == 10
    assert sum(len(n["distances"]) for n in nodes) == 144


@pytest.mark.parametrize("nbobjs,drop,message", [
    (12, 1, "143 values for nbobjs=12"),
    (11, 0, "more than nbobjs=11 indexes"),
    ("9" * 400, 0, "at most 1024 nodes"),
])
def test_hwloc_distances_count_checked(tmp_path, nbobjs, drop, message):
    facts = gather(source="hwloc_xml", path=_distances_doc(tmp_path, nbobjs=nbobjs, drop=drop))
    assert all(n["distances"] == {} for n in facts["numa"]["nodes"])
    assert any(message in w and "dist.xml" in w for w in facts["warnings"]), facts["warnings"]


HANDWRITTEN_TAHITI = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<!-- hand-written (not a capture), after the shape of hwloc 2.x exports: an AMD Tahiti (VGA class 0300)
     driven through OpenCL and ROCm SMI, a ConnectX-4 beside it, and a BMC VGA that only has a DRM node -->
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x000000ff" nodeset="0x00000001" gp_index="2"/>
    <object type="Bridge" gp_index="10" bridge_type="0-1" depth="0" bridge_pci="0000:[00-05]">
      <object type="Bridge" gp_index="11" bridge_type="1-1" depth="1" bridge_pci="0000:[01-01]"
              pci_busid="0000:00:01.0" pci_type="0604 [8086:6f02] [0000:0000] 01" pci_link_speed="7.876923">
        <object type="PCIDev" gp_index="12" pci_busid="0000:01:00.0" pci_type="0300 [1002:6798] [1002:0b00] 00"
                pci_link_speed="7.876923">
          <object type="OSDev" gp_index="13" name="card0" osdev_type="1"/>
          <object type="OSDev" gp_index="14" name="opencl0d0" subtype="OpenCL" osdev_type="5">
            <info name="GPUModel" value="Tahiti"/>
          </object>
          <object type="OSDev" gp_index="15" name="rsmi0" subtype="RSMI" osdev_type="1"/>
        </object>
        <object type="PCIDev" gp_index="16" pci_busid="0000:01:00.1" pci_type="0403 [1002:aaa0] [1002:aaa0] 00"/>
      </object>
      <object type="Bridge" gp_index="20" bridge_type="1-1" depth="1" bridge_pci="0000:[02-02]"
              pci_busid="0000:00:02.0" pci_type="0604 [8086:6f04] [0000:0000] 01" pci_link_speed="7.876923">
        <object type="PCIDev" gp_index="21" pci_busid="0000:02:00.0" pci_type="0207 [15b3:1013] [15b3:0008] 00"
                pci_link_speed="7.876923">
          <object type="OSDev" gp_index="22" name="mlx5_0" osdev_type="3"/>
        </object>
      </object>
      <object type="Bridge" gp_index="30" bridge_type="1-1" depth="1" bridge_pci="0000:[03-03]"
              pci_busid="0000:00:1c.0" pci_type="0604 [8086:8c10] [0000:0000] 01">
        <object type="PCIDev" gp_index="31" pci_busid="0000:03:00.0" pci_type="0300 [1a03:2000] [1a03:2000] 30">
          <object type="OSDev" gp_index="32" name="card1" osdev_type="1"/>
        </object>
      </object>
    </object>
  </object>
</topology>
"""


def test_hwloc_compute_osdev_marked(tmp_path, realdata):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.hwloc import read_hwloc_xml
    path = tmp_path / "tahiti.xml"
    path.write_text(HANDWRITTEN_TAHITI)
    topo = read_hwloc_xml(str(path))
    assert topo.pci["0000:01:00.0"].compute_osdevs == ["opencl0d0", "rsmi0"]
    assert not topo.pci["0000:03:00.0"].compute_osdevs  # ASPEED BMC: a DRM node only
    # Real captures: NVIDIA GPUs get theirs (CUDA/OpenCL/NVML, format 3 bit flags); the BMC's ES1000 none.
    topo = read_hwloc_xml(realdata("hwloc-xml-power8-p100-nvlink", "power8gpudistances.xml"))
    assert topo.pci["0002:01:00.0"].compute_osdevs == ["cuda0", "nvml0", "opencl0d0"]
    topo = read_hwloc_xml(realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))
    assert not topo.pci["0000:01:03.0"].compute_osdevs


def test_hwloc_vga_with_compute_osdev_is_a_gpu(tmp_path):
    path = tmp_path / "tahiti.xml"
    path.write_text(HANDWRITTEN_TAHITI)
    facts = gather(source="hwloc_xml", path=str(path))
    assert [(g["address"], g["vendor"]) for g in facts["gpus"]] == [("0000:01:00.0", "amd")]
    assert one(facts["pci"], address="0000:03:00.0")["kind"] == "other"
    assert one(facts["paths"]["gpu_nic"], gpu="0000:01:00.0", nic="0000:02:00.0")["type"] == "PHB"


def test_duplicate_bus_ids_warn(tmp_path, realdata):
    """The MI300X dump with its first NIC's <pci> element repeated (as a merge of two dumps would): one
    device, the first entry kept, and a note naming the bus id and the file."""
    with open(realdata("rccl-mi300x-8gpu-cx7", "topo_8p_940.xml")) as handle:
        text = handle.read()
    start = text.index('<pci busid="0000:07:00.0"')
    block = text[start:text.index("</pci>", start) + len("</pci>")]
    path = tmp_path / "dup.xml"
    path.write_text(text.replace(block, block + block.replace('speed="400000"', 'speed="200000"'), 1))
    facts = gather(source="nccl_xml", path=str(path))
    assert [p["address"] for p in facts["pci"]].count("0000:07:00.0") == 1
    assert any("0000:07:00.0" in w and "more than once" in w and str(path) in w for w in facts["warnings"])
    facts = gather(source="hwloc_xml", path=_dup_hwloc(tmp_path, realdata))
    assert any("0000:06:00.0" in w and "more than once" in w and "dup-hwloc.xml" in w for w in facts["warnings"])


def _dup_hwloc(tmp_path, realdata):
    with open(realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml")) as handle:
        text = handle.read()
    path = tmp_path / "dup-hwloc.xml"
    path.write_text(text.replace('pci_busid="0000:14:00.0"', 'pci_busid="0000:06:00.0"', 1))
    return str(path)
