"""Cross-check against an independent implementation: Debian's hwloc.

For each sysfs tree (real captures and the hand-written nodes), `lstopo --of xml` runs with HWLOC_FSROOT
on the tree; our hwloc-XML reader on that output must agree with our sysfs reader on the tree about
devices, NUMA locality, link speeds, interfaces and path types.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import parse_cpulist
from conftest import require_tool

TREES = ["hwloc-xeonphi-mlx4-2numa", "hwloc-westmere-qib-4numa", "hwloc-power9-v100-gpunuma", "dgx8", "dgx8-broken"]
BRIDGES = ("root_port", "switch_upstream", "switch_downstream", "other_bridge")


def lstopo_xml(root, out):
    lstopo = require_tool("lstopo")
    env = dict(os.environ, HWLOC_FSROOT=root, HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES="1")
    with open(out, "w") as handle:
        subprocess.run([lstopo, "--of", "xml", "--whole-io"], env=env, stdout=handle, stderr=subprocess.PIPE,
                       check=True, timeout=60)
    return out


# Devices whose kernel numa_node disagrees with their local_cpus. We report the kernel's numa_node
# (null for -1); hwloc places devices by local_cpus. Both captures say so in their PROVENANCE.
LOCALITY_DISAGREES = {
    "hwloc-xeonphi-mlx4-2numa": {"0000:00:02.0"},   # NVMe: numa_node -1, local_cpus 0-7 (node 0)
    "hwloc-westmere-qib-4numa": {"0000:43:00.0"},   # qib HCA: numa_node 2, local_cpus 0-39 (all nodes)
}
# The POWER9 capture removed CPUs from /sys/devices/system/cpu but not from the node cpulists.
CPUS_TRIMMED = {"hwloc-power9-v100-gpunuma"}


def view(facts):
    endpoints = {p["address"]: (p["kind"], p["numa_node"]) for p in facts["pci"] if p["kind"] not in BRIDGES}
    return {
        "numa_cpus": {n["id"]: n["cpus"] for n in facts["numa"]["nodes"]},
        "numa_memory": {n["id"]: n["memory_bytes"] for n in facts["numa"]["nodes"]},
        "endpoints": endpoints,
        "netdevs": {n["name"]: n["address"] for n in facts["nics"] if n["address"]},
        "rdma": {r["name"]: r["address"] for r in facts["rdma"] if r["address"]},
        "gpu_nic": {(p["gpu"], p["nic"]): p["type"] for p in facts["paths"]["gpu_nic"]},
        "gpu_gpu": {(p["gpu"], p["peer"]): p["type"] for p in facts["paths"]["gpu_gpu"]},
    }


@pytest.fixture(scope="module", params=TREES)
def both(request, roots, tmp_path_factory):
    root = roots[request.param]
    xml = lstopo_xml(os.path.realpath(root), str(tmp_path_factory.mktemp("lstopo") / "topology.xml"))
    return request.param, gather(root=root), gather(source="hwloc_xml", path=xml)


def test_same_numa_nodes(both):
    name, sysfs, hwloc = both
    ours, theirs = view(sysfs), view(hwloc)
    assert theirs["numa_memory"] == ours["numa_memory"]
    if name in CPUS_TRIMMED:
        assert sorted(theirs["numa_cpus"]) == sorted(ours["numa_cpus"])
        for node, cpus in theirs["numa_cpus"].items():
            assert set(_expand(cpus)) <= set(_expand(ours["numa_cpus"][node])), node
            assert bool(cpus) == bool(ours["numa_cpus"][node]), node
    else:
        assert theirs["numa_cpus"] == ours["numa_cpus"]
    for mine, other in zip(sysfs["numa"]["nodes"], hwloc["numa"]["nodes"]):
        if other["distances"]:
            assert other["distances"] == mine["distances"]


def test_same_devices_and_locality(both):
    name, sysfs, hwloc = both
    ours, theirs = view(sysfs), view(hwloc)
    assert ours["endpoints"], name
    assert sorted(theirs["endpoints"]) == sorted(ours["endpoints"])
    assert theirs["netdevs"] == ours["netdevs"]
    assert theirs["rdma"] == ours["rdma"]
    differ = set()
    for address, (kind, node) in ours["endpoints"].items():
        their_kind, their_node = theirs["endpoints"][address]
        assert their_kind == kind, address
        if their_node != node:
            differ.add(address)
            # hwloc's choice must be the one node holding the device's local CPUs (or none).
            assert their_node == _node_of_local_cpus(sysfs, address), address
    assert differ == LOCALITY_DISAGREES.get(name, set())


def _node_of_local_cpus(facts, address):
    local = set(_expand([p for p in facts["pci"] if p["address"] == address][0]["local_cpus"] or ""))
    holders = [n["id"] for n in facts["numa"]["nodes"] if local and local <= set(_expand(n["cpus"]))]
    return holders[0] if len(holders) == 1 else None


def _expand(cpulist):
    return parse_cpulist(cpulist) or []


def test_same_link_speeds(both):
    _name, sysfs, hwloc = both
    theirs = {p["address"]: p["link"]["current"]["gbytes_per_s"] for p in hwloc["pci"]}
    compared = 0
    for dev in sysfs["pci"]:
        ours = dev["link"]["current"]["gbytes_per_s"]
        if ours is not None and dev["address"] in theirs:
            assert theirs[dev["address"]] == pytest.approx(ours, abs=0.01), dev["address"]
            compared += 1
    assert compared or not any(p["link"]["current"]["gbytes_per_s"] for p in sysfs["pci"])


def test_same_path_types(both):
    _name, sysfs, hwloc = both
    assert view(hwloc)["gpu_nic"] == view(sysfs)["gpu_nic"]
    assert view(hwloc)["gpu_gpu"] == view(sysfs)["gpu_gpu"]


def test_upstream_expected_xml_agrees(roots, realdata):
    """hwloc's own expected output shipped with the capture (lstopo --whole-io, an older hwloc)."""
    sysfs = gather(root=roots["hwloc-xeonphi-mlx4-2numa"])
    ours = view(sysfs)
    theirs = view(gather(source="hwloc_xml",
                         path=realdata("hwloc-xeonphi-mlx4-2numa", "32em64t-2n8c+dax+nvme+mic+dimms.xml")))
    assert sorted(theirs["endpoints"]) == sorted(ours["endpoints"])
    differ = set(a for a in ours["endpoints"] if ours["endpoints"][a] != theirs["endpoints"][a])
    assert differ == LOCALITY_DISAGREES["hwloc-xeonphi-mlx4-2numa"]
    assert theirs["numa_cpus"] == ours["numa_cpus"]
    assert theirs["gpu_nic"] == ours["gpu_nic"]
