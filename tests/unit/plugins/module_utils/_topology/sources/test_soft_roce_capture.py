"""A live Soft-RoCE device as a real kernel served it (tests/fixtures/realdata/soft-roce-vm, PROVENANCE.md): rxe0
over an 802.3ad bond carrying two VLANs, in a qemu VM of the test bed. The facts agree with what the RDMA tools
printed in the same capture (tools/: ibv_devinfo -v, rdma link show, rdma statistic show), and NCCL is told the GID
of the training VLAN's address, whichever VLAN trains."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import rdma_endpoint
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.settings import nccl_settings
from rdma_tools import expand_gid, ibv_devinfo


@pytest.fixture(scope="module")
def capture(roots):
    root = roots["soft-roce-vm"]

    def tool(name):
        with open(os.path.join(root, "tools", name)) as handle:
            return handle.read()
    return {"facts": gather(root=root), "tool": tool}


def test_the_facts_agree_with_the_tools(capture):
    facts = capture["facts"]
    assert facts["warnings"] == []
    assert facts["kernel_modules"]["rdma_rxe"] is True and facts["kernel_modules"]["siw"] is False
    (device,) = facts["rdma"]
    assert (device["name"], device["software"], device["address"]) == ("rxe0", "rxe", None)
    assert device["netdevs"] == ["bond0"]
    (port,) = device["ports"]
    said = ibv_devinfo(capture["tool"]("ibv_devinfo-v.txt"))["rxe0"][1]
    assert (said["state"], said["link_layer"], int(said["active_mtu"])) == ("PORT_ACTIVE", "Ethernet", 4096)
    assert (port["state"], port["link_layer"], port["active_mtu"]) == ("ACTIVE", "Ethernet", 4096)
    assert dict((g["index"], (g["gid"], g["type"])) for g in port["gids"]) == dict(
        (i, (expand_gid(gid), kind)) for i, (gid, kind) in said["gids"].items())
    link = capture["tool"]("rdma-link-show.txt").split()
    assert link[link.index("netdev") + 1] == port["netdev"] == "bond0"
    # each VLAN's address is a RoCE v2 GID of the bond's device, naming its VLAN
    assert [(g["index"], g["netdev"], g["ipv4"]) for g in port["gids"] if g["ipv4"]] == [
        (1, "bond0.100", "198.18.4.1"), (3, "bond0.200", "198.18.5.1")]


def test_the_counters_agree_with_rdma_statistic(capture):
    words = capture["tool"]("rdma-statistic-show.txt").split()
    assert words[:2] == ["link", "rxe0/1"]
    kernel = dict((words[i], int(words[i + 1])) for i in range(2, len(words) - 1, 2))
    read = capture["facts"]["counters"]["rdma"]["rxe0/1"]
    assert read and all(kernel[name] == value for name, value in read.items())
    assert set(read) == {"duplicate_request", "out_of_seq_request", "rcvd_seq_err", "completer_retry_err",
                         "retry_exceeded_err", "link_downed"}


@pytest.mark.parametrize("interface, index", [("bond0.100", 1), ("bond0.200", 3)])
def test_nccl_is_told_the_gid_of_the_training_vlan(capture, interface, index):
    settings, _notes, _warnings, errors = nccl_settings(capture["facts"], interface, mode="rdma")
    assert errors == []
    assert dict(settings)["NCCL_IB_HCA"] == "=rxe0:1" and dict(settings)["NCCL_IB_GID_INDEX"] == str(index)


def test_nccl_and_the_rdma_probe_take_one_gid_for_the_training_address(capture):
    """The nccl role and the rdma probe find the GID index of an address in one way (roce_v2_gid_index). After
    address churn the table's order is not the addresses' (the live drift test: an address that left and came back
    took a new slot): the training VLAN's own address is 198.18.4.1 at index 6, while index 1 now holds a second
    address of the VLAN. NCCL is told 6, the GID the probe runs on for that address; the older rule (the first GID
    naming the interface) said 1. The table edits are by hand, on the live capture's facts."""
    import copy
    facts = copy.deepcopy(capture["facts"])
    for nic in facts["nics"]:
        if nic["name"] == "bond0.100":
            nic["ipv4"] = ["198.18.4.1/24", "198.18.4.7/24"]
    port = facts["rdma"][0]["ports"][0]
    churned = []
    for gid in port["gids"]:
        if gid["index"] == 1:
            churned.append(dict(gid, gid=gid["gid"][:-1] + "7", ipv4="198.18.4.7"))
            churned.append(dict(gid, index=6))
        else:
            churned.append(gid)
    port["gids"] = churned
    settings, _notes, _warnings, errors = nccl_settings(facts, "bond0.100", mode="rdma")
    endpoint, why = rdma_endpoint(facts, "bond0.100", "198.18.4.1")
    assert errors == [] and why is None and endpoint["gid_index"] == 6
    assert dict(settings)["NCCL_IB_GID_INDEX"] == "6"


@pytest.mark.parametrize("interface, address, index", [
    ("bond0.100", "198.18.4.1", 1), ("bond0.200", "198.18.5.1", 3), ("bond0", "198.18.4.1", 1)])
def test_the_rdma_endpoint_of_an_address_is_its_gid(capture, interface, address, index):
    """What a perftest (or NCCL) between two addresses runs on: the port over the bond, and the GID the kernel's
    table holds for that address (ibv_devinfo, same capture)."""
    said = ibv_devinfo(capture["tool"]("ibv_devinfo-v.txt"))["rxe0"][1]["gids"]
    assert expand_gid(said[index][0]).endswith(":ffff:%02x%02x:%02x%02x" % tuple(int(b) for b in address.split(".")))
    endpoint, why = rdma_endpoint(capture["facts"], interface, address)
    assert why is None and endpoint == {"device": "rxe0", "port": 1, "link_layer": "Ethernet", "gid_index": index,
                                        "rate_gbps": 100.0, "active_mtu": 4096, "pci": None, "software": "rxe"}


def test_no_rdma_endpoint_names_the_cause(capture):
    import copy
    facts = capture["facts"]
    assert rdma_endpoint(facts, "bond0.100", "198.18.4.9") == (
        None, "rxe0:1 has no RoCE v2 GID for 198.18.4.9 (the address is not on a netdev of that port, or its GID "
              "table was not read)")
    assert rdma_endpoint(facts, "enp0s3", "10.0.2.15") == (None, "no RDMA port under enp0s3 (RDMA devices: rxe0)")
    assert rdma_endpoint(facts, "bond0.100", "not-an-address")[1] == "'not-an-address' is not an IP address"
    down = copy.deepcopy(facts)  # the capture changed by hand: its port down
    down["rdma"][0]["ports"][0]["state"] = "DOWN"
    assert rdma_endpoint(down, "bond0.100", "198.18.4.1") == (None, "rxe0:1 is DOWN, not ACTIVE")
    assert rdma_endpoint(dict(facts, rdma=[]), "bond0.100", "198.18.4.1") == (
        None, "no RDMA port under bond0.100 (RDMA devices: none)")


def test_an_infiniband_port_needs_no_gid_index(capture):
    """The capture changed by hand: the same port as InfiniBand (IPoIB over its netdev): the port's own GID serves,
    perftest and NCCL are given no index."""
    import copy
    ib = copy.deepcopy(capture["facts"])
    ib["rdma"][0]["ports"][0].update(link_layer="InfiniBand", gids=[])
    endpoint, why = rdma_endpoint(ib, "bond0", "198.18.4.1")
    assert why is None and (endpoint["device"], endpoint["gid_index"], endpoint["link_layer"]) == (
        "rxe0", None, "InfiniBand")
