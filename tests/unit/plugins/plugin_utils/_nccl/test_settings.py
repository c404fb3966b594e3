"""/etc/nccl.conf per node from its facts: golden files (tcp and rdma; hand-written and real captures), the
prefix trap, and every error naming the node and what is missing."""

import os

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import ifname_matches
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nccl_conf import parse_conf
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.settings import (
    nccl_settings, render_conf, socket_threads,
)
from conftest import REPO

GOLDEN = os.path.join(REPO, "tests", "fixtures", "golden_nccl")
# (case, fixture root, training interface, mode)
CASES = [
    ("dgx8-tcp", "dgx8", "bond0.100", "tcp"),
    ("dgx8-rdma", "dgx8", "bond0.100", "rdma"),
    ("dgx8-broken-rdma", "dgx8-broken", "bond0.100", "rdma"),
    ("xeonphi-mlx4-rdma", "hwloc-xeonphi-mlx4-2numa", "eth0", "rdma"),   # real capture, InfiniBand HCA
    ("westmere-qib-rdma", "hwloc-westmere-qib-4numa", "eth0", "rdma"),   # real capture, no GPU
    ("westmere-qib-tcp", "hwloc-westmere-qib-4numa", "eth0", "tcp"),
]


@pytest.fixture(scope="module")
def facts_of(roots):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = gather(root=roots[name])
        return cache[name]
    return get


@pytest.mark.parametrize("case,root,interface,mode", CASES, ids=[c[0] for c in CASES])
def test_golden(case, root, interface, mode, facts_of):
    settings, notes, _warnings, errors = nccl_settings(facts_of(root), interface, mode)
    assert errors == []
    text = render_conf(settings, notes)
    path = os.path.join(GOLDEN, case + ".conf")
    if os.environ.get("GPUOPS_UPDATE_GOLDEN"):
        with open(path, "w") as handle:
            handle.write(text)
    with open(path) as handle:
        assert text == handle.read()
    assert parse_conf(text) == dict(settings)


def test_dgx8_values(facts_of):
    tcp = dict(nccl_settings(facts_of("dgx8"), "bond0.100", "tcp")[0])
    # bond0 of two 10G ports (20000 Mbit/s): 2 x 2 sockets so flows hash over both legs
    assert tcp == {"NCCL_SOCKET_IFNAME": "=bond0.100", "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_NTHREADS": "2",
                   "NCCL_NSOCKS_PERTHREAD": "2"}
    rdma = dict(nccl_settings(facts_of("dgx8"), "bond0.100", "rdma")[0])
    assert rdma["NCCL_IB_HCA"] == "=" + ",".join("mlx5_%d:1" % i for i in range(8))  # storage NICs left out
    assert rdma["NCCL_IB_GID_INDEX"] == "3" and rdma["NCCL_NET_GDR_LEVEL"] == "PIX"


def test_broken_node_rdma(facts_of):
    settings, _notes, warnings, errors = nccl_settings(facts_of("dgx8-broken"), "bond0.100", "rdma")
    values = dict(settings)
    assert errors == []
    # GPU 0's own NIC went to the other socket; the nearest is mlx5_1, shared with GPU 1
    assert values["NCCL_IB_HCA"].startswith("=mlx5_1:1,mlx5_2:1")
    assert values["NCCL_NET_GDR_LEVEL"] == "LOC"
    assert any("neither nvidia_peermem nor nv_peer_mem is loaded" in w for w in warnings)


def test_the_prefix_trap(facts_of):
    """bond0 as a bare prefix would also take bond0.100; the rendered value names bond0 alone."""
    names = [n["name"] for n in facts_of("dgx8")["nics"]]
    assert ifname_matches("bond0", names) == ["bond0", "bond0.100"]
    value = dict(nccl_settings(facts_of("dgx8"), "bond0", "tcp")[0])["NCCL_SOCKET_IFNAME"]
    assert value == "=bond0" and ifname_matches(value, names) == ["bond0"]
    assert ifname_matches("^=lo", ["lo", "eno1"]) == ["eno1"]
    # the same trap on a real capture: a bare eth0 would also take the VLAN eth0.1015
    real = [n["name"] for n in facts_of("hwloc-xeonphi-mlx4-2numa")["nics"]]
    assert ifname_matches("eth0", real) == ["eth0", "eth0.1015"] and ifname_matches("=eth0", real) == ["eth0"]
    assert ifname_matches("=eno1,eno2", names) == ["eno1", "eno2"]


@pytest.mark.parametrize("speed,expected", [(None, None), (10000, None), (25000, (2, 2)), (100000, (4, 4)),
                                            (400000, (4, 4))])
def test_socket_threads(speed, expected):
    assert socket_threads(speed) == expected


def test_overrides_and_unknown_variables(facts_of):
    settings, notes, warnings, errors = nccl_settings(
        facts_of("dgx8"), "bond0.100", "tcp",
        overrides={"NCCL_SOCKET_NTHREADS": 8, "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAM": "eth"})
    values = dict(settings)
    assert errors == []
    assert values["NCCL_SOCKET_NTHREADS"] == "8" and values["NCCL_DEBUG"] == "WARN"
    assert values["NCCL_SOCKET_IFNAM"] == "eth"
    assert warnings == ["fabric_nccl_env.NCCL_SOCKET_IFNAM: not a variable NCCL documents; passed through as is "
                        "(a typo?)"]
    assert [n for n, _v in settings].count("NCCL_SOCKET_NTHREADS") == 1


@pytest.mark.parametrize("root,interface,mode,overrides,message", [
    ("dgx8", "bond0.300", "tcp", None, "node7: the training interface bond0.300 does not exist on this node"),
    ("dgx8", None, "tcp", None, "node7: no training interface"),
    ("dgx8", "bond0.100", "roce", None, "fabric_nccl_mode: 'roce' is not one of tcp, rdma"),
    ("prometheus-procfs-pci-fragments", None, "rdma", None, "node7: fabric_nccl_mode is rdma but the node has no active RDMA port"),
    ("dgx8", "bond0.100", "tcp", {"nccl_debug": "WARN"}, "fabric_nccl_env.nccl_debug: not an NCCL variable name"),
    ("dgx8", "bond0.100", "tcp", {"NCCL_DEBUG": ["WARN"]}, "fabric_nccl_env.NCCL_DEBUG: ['WARN'] must be a string or number"),
    ("dgx8", "bond0.100", "tcp", {"NCCL_DEBUG": "WARN\nNCCL_IB_DISABLE=0"}, "fabric_nccl_env.NCCL_DEBUG: 'WARN\\nNCCL_IB_DISABLE=0' must be one line"),
])
def test_errors_name_the_node_and_what_is_missing(root, interface, mode, overrides, message, facts_of):
    _settings, _notes, _warnings, errors = nccl_settings(facts_of(root), interface, mode, overrides, host="node7")
    assert any(message in e for e in errors), errors


def test_roce_without_an_ipv4_gid(facts_of):
    import copy
    facts = copy.deepcopy(facts_of("dgx8"))
    facts["rdma"][2]["ports"][0]["roce_v2_gid_index"] = None
    errors = nccl_settings(facts, "bond0.100", "rdma", host="node7")[3]
    assert errors == ["node7: no RoCE v2 GID with an IPv4 address on mlx5_2:1 (is the training address on its "
                      "netdev?)"]
    facts["rdma"][2]["ports"][0]["roce_v2_gid_index"] = 5
    errors = nccl_settings(facts, "bond0.100", "rdma", host="node7")[3]
    assert "the RoCE v2 IPv4 GID index differs between ports" in errors[0] and "mlx5_2:1=5" in errors[0]


@pytest.mark.parametrize("root", ["dgx8", "dgx8-broken", "hwloc-xeonphi-mlx4-2numa", "hwloc-westmere-qib-4numa",
                                  "hwloc-power9-v100-gpunuma"])
def test_topology_xml_round_trip(root, facts_of, tmp_path):
    """The generated NCCL topology file, read back by the collection's own NCCL-XML reader, gives the same devices
    (kinds, NUMA nodes, maximum links), RDMA ports and GPU-NIC path types as the facts it came from. Root ports
    and switch downstream ports are left out (NCCL's own dumps leave them out: one <pci> per switch), and
    nvidia-smi's NODE is NCCL's PHB."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.topology_file import topology_xml
    facts = facts_of(root)
    path = tmp_path / "topo.xml"
    path.write_text(topology_xml(facts))
    back = gather(source="nccl_xml", path=str(path))
    assert back["warnings"] == []

    def devices(f):
        return sorted((p["address"], p["kind"], p["numa_node"], (p["link"]["max"] or {}).get("width"),
                       (p["link"]["max"] or {}).get("generation")) for p in f["pci"] if p["kind"] not in ("root_port", "switch_downstream"))

    def paths(f, rename):
        return sorted((p["gpu"], p["nic"], rename.get(p["type"], p["type"])) for p in f["paths"]["gpu_nic"])

    def ports(f):
        return sorted((r["name"], p["port"]) for r in f["rdma"] if r.get("address") for p in r["ports"])

    assert devices(back) == devices(facts)
    assert paths(back, {}) == paths(facts, {"NODE": "PHB"})
    assert ports(back) == ports(facts)
    assert len(back["gpus"]) == len(facts["gpus"])


@pytest.mark.parametrize("vlan, expected", [
    (None, ("bond0", [])), (100, ("bond0.100", [])), (4094, ("bond0.4094", [])),
    (True, (None, ["fabric_networks.train.vlan: True is not a VLAN id (1 to 4094)"])),
    ("100", (None, ["fabric_networks.train.vlan: '100' is not a VLAN id (1 to 4094)"])),
    (0, (None, ["fabric_networks.train.vlan: 0 is not a VLAN id (1 to 4094)"])),
    (4095, (None, ["fabric_networks.train.vlan: 4095 is not a VLAN id (1 to 4094)"])),
    (100.0, (None, ["fabric_networks.train.vlan: 100.0 is not a VLAN id (1 to 4094)"])),
])
def test_the_training_interface_is_the_vlan_the_network_role_creates(vlan, expected):
    # the NCCL interface and the network role's VLAN interface come from one function (_names.vlan_interface): a
    # vlan that the intent's validation refuses is refused here too (it was "bond0.True" before)
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import training_interface
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import validate_networks
    networks = {"train": {"role": "training", "subnet": "198.18.0.0/24"}}
    if vlan is not None:
        networks["train"]["vlan"] = vlan
    assert training_interface({"fabric_networks": networks, "fabric_attachments": {"train": "bond0"}}) == expected
    errors = []
    validate_networks(networks, errors)
    assert bool([e for e in errors if ".vlan: " in e]) == (expected[0] is None), errors  # the role refuses the same
