"""The sysfs reader on real captures (tests/fixtures/realdata, see each PROVENANCE.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather


def by(items, key, value):
    matches = [item for item in items if item[key] == value]
    assert len(matches) == 1, "%s=%s: %d matches" % (key, value, len(matches))
    return matches[0]


@pytest.fixture(scope="module")
def xeonphi(roots):
    return gather(root=roots["hwloc-xeonphi-mlx4-2numa"])


@pytest.fixture(scope="module")
def westmere(roots):
    return gather(root=roots["hwloc-westmere-qib-4numa"])


@pytest.fixture(scope="module")
def power9(roots):
    return gather(root=roots["hwloc-power9-v100-gpunuma"])


@pytest.fixture(scope="module")
def fragments(roots):
    return gather(root=roots["prometheus-procfs-pci-fragments"])


class TestXeonPhiMlx4:
    """Dell 2S E5-2680: Xeon Phi + ConnectX-3 FDR on NUMA 1, I350 on NUMA 0."""

    def test_numa(self, xeonphi):
        nodes = xeonphi["numa"]["nodes"]
        assert [(n["id"], n["cpus"]) for n in nodes] == [(0, "0-7"), (1, "8-15")]
        assert nodes[0]["distances"] == {"0": 10, "1": 21}
        assert nodes[1]["memory_bytes"] == 17179869184

    def test_mlx4_on_numa1_i350_on_numa0(self, xeonphi):
        pci = xeonphi["pci"]
        mlx4 = by(pci, "address", "0000:82:00.0")
        assert (mlx4["vendor_id"], mlx4["device_id"], mlx4["kind"], mlx4["numa_node"]) == ("0x15b3", "0x1003", "rdma", 1)
        assert mlx4["chain"] == ["0000:80:02.2"] and by(pci, "address", "0000:80:02.2")["kind"] == "root_port"
        eth0 = by(xeonphi["nics"], "name", "eth0")
        assert (eth0["address"], eth0["numa_node"], eth0["driver"], eth0["speed_mbps"]) == ("0000:02:00.0", 0, "igb", 1000)
        assert eth0["ports_on_card"] == 2

    def test_numa_minus_one_is_null(self, xeonphi):
        nvme = by(xeonphi["pci"], "address", "0000:00:02.0")
        assert nvme["kind"] == "nvme" and nvme["numa_node"] is None

    def test_accelerator_and_its_path(self, xeonphi):
        (phi,) = xeonphi["gpus"]
        assert (phi["address"], phi["kind"], phi["vendor"], phi["numa_node"]) == ("0000:83:00.0", "accelerator", "intel", 1)
        # Different root ports of the same host bridge: through the host bridge.
        assert phi["nearest_nics"] == [{"nic": "0000:82:00.0", "nic_names": ["ib0", "mlx4_0"], "type": "PHB"}]
        to_eth = by([p for p in xeonphi["paths"]["gpu_nic"] if p["gpu"] == phi["address"]], "nic", "0000:02:00.0")
        assert to_eth["type"] == "SYS"

    def test_infiniband(self, xeonphi):
        mlx4 = by(xeonphi["rdma"], "name", "mlx4_0")
        (port,) = mlx4["ports"]
        assert (port["state"], port["rate_gbps"], port["link_layer"], port["netdev"]) == ("ACTIVE", 56.0, "InfiniBand", "ib0")
        assert port["roce_v2_gid_index"] is None  # InfiniBand, not RoCE
        assert mlx4["numa_node"] == 1
        assert by(xeonphi["nics"], "name", "ib0")["kind"] == "ipoib"

    def test_non_pci_rdma_device(self, xeonphi):
        scif = by(xeonphi["rdma"], "name", "scif0")
        assert scif["address"] is None and scif["ports"] == []

    def test_virtual_interfaces(self, xeonphi):
        vlan = by(xeonphi["vlans"], "name", "eth0.1015")
        assert (vlan["id"], vlan["parent"], vlan["source"]) == (1015, "eth0", "name")
        assert by(xeonphi["nics"], "name", "br0")["kind"] == "virtual"
        assert by(xeonphi["nics"], "name", "lo")["kind"] == "loopback"
        assert any("eth0.1015" in w and "inferred" in w for w in xeonphi["warnings"])

    def test_down_link_speed_is_null(self, xeonphi):
        eth1 = by(xeonphi["nics"], "name", "eth1")
        assert eth1["operstate"] == "down" and eth1["speed_mbps"] is None


class TestWestmereQib:
    """4S E7-4870: almost no PCI locality (numa_node -1), QLogic QDR HCA on NUMA 2, old "8 GT/s" spelling."""

    def test_four_nodes_interleaved(self, westmere):
        nodes = westmere["numa"]["nodes"]
        assert [n["id"] for n in nodes] == [0, 1, 2, 3]
        assert nodes[0]["cpus"] == ",".join(str(c) for c in range(0, 40, 4))
        assert nodes[0]["distances"] == {"0": 10, "1": 20, "2": 20, "3": 20}

    def test_qib_locality_and_link(self, westmere):
        qib = by(westmere["pci"], "address", "0000:43:00.0")
        assert (qib["kind"], qib["numa_node"], qib["class"]) == ("rdma", 2, "0x0c0600")
        assert qib["link"]["current"] == {"speed_gts": 8.0, "generation": 3, "width": 4, "gbytes_per_s": 3.938}
        assert qib["link"]["max"]["speed_gts"] is None  # old kernel: no max_link_* files
        (port,) = by(westmere["rdma"], "name", "qib0")["ports"]
        assert (port["rate"], port["rate_gbps"], port["state"]) == ("40 Gb/sec (4X QDR)", 40.0, "ACTIVE")

    def test_bcm5709_without_locality(self, westmere):
        nics = [n for n in westmere["nics"] if n["name"].startswith("eth")]
        assert [n["name"] for n in nics] == ["eth0", "eth1", "eth2", "eth3"]
        assert all(n["numa_node"] is None for n in nics)
        assert by(westmere["pci"], "address", "0000:03:00.1")["link"]["current"]["speed_gts"] == 2.5

    def test_unknown_locality_gives_no_path_type(self, westmere, roots):
        from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import load_topology
        from ansible_collections.gpuops.fabric.plugins.module_utils._topology.paths import pci_path
        topo = load_topology(root=roots["hwloc-westmere-qib-4numa"])
        # eth0 (numa -1, host bridge 00) to the HCA (numa 2, host bridge 40): locality unknown.
        assert pci_path(topo, "0000:02:00.0", "0000:43:00.0")["type"] is None
        # eth0 and eth2 share host bridge pci0000:00 through different root ports.
        assert pci_path(topo, "0000:02:00.0", "0000:03:00.0")["type"] == "PHB"
        # The two functions of one BCM5709 sit under one bridge.
        assert pci_path(topo, "0000:02:00.0", "0000:02:00.1")["type"] == "PIX"


class TestPower9GpuNuma:
    """AC922: sparse NUMA ids, CPU-less GPU memory nodes, several PCI domains, no PCI hierarchy."""

    def test_sparse_and_cpuless_nodes(self, power9):
        nodes = power9["numa"]["nodes"]
        assert [n["id"] for n in nodes] == [0, 8, 250, 251, 252, 253, 254, 255]
        gpu_mem = [n for n in nodes if n["id"] >= 250]
        assert all(n["has_cpus"] is False and n["cpu_count"] == 0 for n in gpu_mem)
        assert all(n["memory_bytes"] == 15728640 * 1024 for n in gpu_mem)
        assert nodes[0]["distances"]["8"] == 40 and nodes[0]["distances"]["250"] == 80

    def test_domains_and_locality_from_local_cpus(self, power9):
        pci = {p["address"]: p for p in power9["pci"]}
        assert sorted(pci) == ["0004:05:00.0", "0004:06:00.0", "0006:00:00.0", "0007:00:00.0",
                               "0035:04:00.0", "0035:05:00.0"]
        # No numa_node files: the node follows local_cpus, as hwloc places them.
        assert [pci[a]["numa_node"] for a in sorted(pci)] == [0, 0, 0, 8, 8, 8]
        # VGA class without vendor ids in the capture: not claimed as GPUs.
        assert all(p["kind"] == "other" for p in pci.values()) and power9["gpus"] == []
        assert any("PCI hierarchy not captured" in w for w in power9["warnings"])


class TestProcfsFragments:
    """prometheus/procfs fixture: modern "x.0 GT/s PCIe" spelling, current < max on bridges, E810 on NUMA 1."""

    def test_new_spelling_and_narrow_links(self, fragments):
        pci = {p["address"]: p for p in fragments["pci"]}
        amd_port = pci["0000:00:02.1"]
        assert amd_port["kind"] == "root_port"
        assert (amd_port["link"]["current"]["width"], amd_port["link"]["max"]["width"]) == (4, 8)
        assert pci["0000:00:03.0"]["link"]["max"]["gbytes_per_s"] == pytest.approx(15.754, abs=0.001)
        assert pci["0000:01:00.0"]["kind"] == "nvme" and pci["0000:01:00.0"]["chain"] == ["0000:00:02.1"]

    def test_e810(self, fragments):
        e810 = by(fragments["nics"], "name", "enp162s0f0np0")
        assert (e810["address"], e810["numa_node"], e810["driver"]) == ("0000:a2:00.0", 1, "ice")
        assert e810["pci_link"]["current"] == {"speed_gts": 16.0, "generation": 4, "width": 8, "gbytes_per_s": 15.754}
        assert by(fragments["pci"], "address", "0000:a2:00.0")["local_cpus"] == "64-127"


def test_acs_parser():
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import parse_acs_control
    assert parse_acs_control(bytes(64)) == (False, None)  # header only: not root, or a capture
    space = bytearray(4096)
    space[0x100:0x104] = (0x0001 | (1 << 16) | (0x180 << 20)).to_bytes(4, "little")  # AER -> 0x180
    space[0x180:0x184] = (0x000D | (1 << 16)).to_bytes(4, "little")                   # ACS, last
    space[0x186:0x188] = (0x001D).to_bytes(2, "little")
    assert parse_acs_control(bytes(space)) == (True, 0x1D)
    loop = bytearray(4096)
    loop[0x100:0x104] = (0x0001 | (0x100 << 20)).to_bytes(4, "little")  # points at itself
    assert parse_acs_control(bytes(loop)) == (True, None)


def test_capture_bridges_have_no_readable_acs(xeonphi):
    bridges = [p for p in xeonphi["pci"] if p["kind"] == "root_port"]
    assert bridges and all(p["acs"]["readable"] is False for p in bridges)
    assert all(p["acs"] is None for p in xeonphi["pci"] if p["kind"] in ("nic", "rdma"))
