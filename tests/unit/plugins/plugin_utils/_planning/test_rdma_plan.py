"""The rdma probe's plan (probe_plan with rdma): each end of a throughput pair runs perftest on the RDMA port and
RoCE v2 GID index its address uses, from the facts of a live Soft-RoCE VM (tests/fixtures/realdata/soft-roce-vm: rxe0
over a bond carrying the training and storage VLANs). The capture has no `ip addr`: the VLANs' addresses are set by
hand, and the second VM's facts are the first's with its addresses and GIDs changed by hand to vm2's (198.18.x.2), as
the test bed gives them; a peer without RDMA is the same facts with its devices removed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.pairing import targets

NETWORKS = {"training": {"name": "training", "role": "training", "subnet": "198.18.4.0/24", "vlan": 100, "mtu": 9000},
            "storage": {"name": "storage", "role": "storage", "subnet": "198.18.5.0/24", "vlan": 200, "mtu": 9000}}


def addressed(facts, n):
    """The capture's facts with VM n's addresses on its VLANs (the capture holds sysfs, not `ip addr`: set by hand,
    as the test bed gives them: 198.18.4.n training, 198.18.5.n storage) and, for vm2, in its GID table."""
    other = copy.deepcopy(facts)
    for nic in other["nics"]:
        nic["ipv4"] = {"bond0.100": ["198.18.4.%d/24" % n], "bond0.200": ["198.18.5.%d/24" % n]}.get(nic["name"], [])
    for port in other["rdma"][0]["ports"]:
        for gid in port["gids"]:
            if gid["ipv4"] in ("198.18.4.1", "198.18.5.1"):
                gid["ipv4"] = gid["ipv4"][:-1] + str(n)
                gid["gid"] = gid["gid"][:-1] + str(n)
    return other


@pytest.fixture(scope="module")
def vms(roots):
    captured = gather(root=roots["soft-roce-vm"])
    return {"vm1": addressed(captured, 1), "vm2": addressed(captured, 2)}


def inputs(vms, **changed):
    return dict((host, {"facts": changed.get(host, facts), "networks": NETWORKS,
                        "attachments": {"training": "bond0", "storage": "bond0"}}) for host, facts in vms.items())


def test_each_end_runs_on_the_gid_of_its_own_address(vms):
    planned = targets(inputs(vms), rdma=True, rdma_port=18515)
    rounds = planned["throughput"]
    assert [sorted(r) for r in rounds] == [["vm1", "vm2"]] * 2  # a round on each network
    by_network = {}
    for entries in rounds:
        client = [p for p in entries.values() if p["role"] == "client"][0]
        server = [p for p in entries.values() if p["role"] == "server"][0]
        by_network.setdefault(client["network"], []).append((client, server))
    for network, index in (("training", 1), ("storage", 3)):
        for client, server in by_network[network]:
            rdma = client["rdma"]
            assert (rdma["device"], rdma["port"], rdma["gid_index"], rdma["link_layer"]) == ("rxe0", 1, index, "Ethernet")
            assert (rdma["peer_device"], rdma["peer_port"], rdma["peer_gid_index"]) == ("rxe0", 1, index)
            assert rdma["expected_gbps"] == 96.0 and rdma["skip"] is None and rdma["notes"] == []
            assert rdma["software"] == ["rxe", "rxe"] and rdma["min_fraction"] == 0.8
            # software RoCE at an end: fewer latency writes, the same count at both
            assert rdma["lat_iterations"] == 200
            assert server["rdma"] == {"device": "rxe0", "port": 1, "gid_index": index, "link_layer": "Ethernet",
                                      "skip": None, "tcp_port": rdma["tcp_port"], "lat_iterations": 200}
    # two TCP ports per round (ib_write_bw's, and the next for ib_write_lat), as iperf3 has one
    assert [[p["rdma"]["tcp_port"] for p in r.values()] for r in rounds] == [[18515 + 2 * i] * 2 for i in range(2)]
    assert all("rdma" not in p for r in targets(inputs(vms))["throughput"] for p in r.values())


def test_repeated_passes_keep_a_port_per_round(vms):
    rounds = targets(inputs(vms), rdma=True, rdma_port=20000, repeat=2)["throughput"]
    assert [sorted(set(p["rdma"]["tcp_port"] for p in r.values())) for r in rounds] == [[20000 + 2 * i] for i in range(4)]
    assert [r["vm1"]["run"] for r in rounds] == [1, 1, 2, 2]


def test_a_peer_without_rdma_or_without_the_gid_is_skipped_with_the_cause(vms):
    bare = dict(copy.deepcopy(vms["vm2"]), rdma=[])
    for entries in targets(inputs(vms, vm2=bare), rdma=True)["throughput"]:
        network = entries["vm1"]["network"]
        assert entries["vm1"]["rdma"] == entries["vm2"]["rdma"] == {
            "skip": "vm2: no RDMA port under bond0.%d (RDMA devices: none)" % (100 if network == "training" else 200)}
    # vm2's storage address is no GID (its table was read before the address came): storage only is skipped
    stale = copy.deepcopy(vms["vm2"])
    stale["rdma"][0]["ports"][0]["gids"] = [g for g in stale["rdma"][0]["ports"][0]["gids"]
                                            if g["ipv4"] != "198.18.5.2"]
    for entries in targets(inputs(vms, vm2=stale), rdma=True)["throughput"]:
        if entries["vm1"]["network"] == "storage":
            assert entries["vm1"]["rdma"]["skip"].startswith("vm2: rxe0:1 has no RoCE v2 GID for 198.18.5.2")
        else:
            assert entries["vm1"]["rdma"]["skip"] is None


def test_what_differs_between_the_ends_is_noted(vms):
    slower = copy.deepcopy(vms["vm2"])
    slower["rdma"][0]["ports"][0].update(active_mtu=1024, rate_gbps=25.0)
    entries = targets(inputs(vms, vm2=slower), ["training"], rdma=True)["throughput"][0]
    (host,) = [h for h, p in entries.items() if p["role"] == "client"]
    client = entries[host]
    assert client["rdma"]["expected_gbps"] == 24.0  # the slower port, as NCCL counts a line
    mtu = {"vm1": 4096, "vm2": 1024}
    assert client["rdma"]["notes"] == ["active MTU %d on %s, %d on %s: the connection uses the smaller" % (
        mtu[host], host, mtu[client["peer"]], client["peer"])]


def test_latency_writes_are_counted_alike_at_both_ends(vms):
    """ib_write_lat's count is the plan's, the same at both ends (perftest's server waits for as many as it was told):
    1000 between hardware ports, 200 where either end is software RoCE (rxe here; the CPU is its NIC)."""
    hardware = dict((host, copy.deepcopy(facts)) for host, facts in vms.items())
    for facts in hardware.values():
        facts["rdma"][0]["software"] = None
    for changed, count in (({}, 200), (hardware, 1000), ({"vm1": hardware["vm1"]}, 200)):
        for entries in targets(inputs(vms, **changed), rdma=True)["throughput"]:
            assert [p["rdma"]["lat_iterations"] for p in entries.values()] == [count, count], (changed, entries)
