"""Soft-RoCE (rdma_rxe) as the sysfs reader and STAB-004 see it, on a device planted in a copy of the hand-written
8-GPU node (HAND-WRITTEN, not captured: the layout is the 6.1 kernel's, from its source -- the device under
/sys/devices/virtual/infiniband with the netdev in its own ``parent`` attribute and no PCI function
(drivers/infiniband/sw/rxe/rxe_verbs.c), node_type 1 (a channel adapter), a GID table of RoCE v2 entries only
(index 0 the link-local address, then the netdev's IPv4 addresses), counters in hw_counters only under rxe's own
names (rxe_hw_counters.c), the IB MTU from the netdev's less 80 header bytes with 256 as its floor (rxe_param.h,
rxe_net.c). The VM tests read a live one (issue 35)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import os

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.rdma import roce_active_mtu
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.json_report import render_json
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
from sysfs_tree import copy_root, write

RXE_COUNTERS = ("sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "send_rnr_err",
                "rcvd_seq_err", "ack_deferred", "retry_exceeded_err", "retry_rnr_exceeded_err", "completer_retry_err",
                "send_err", "link_downed", "rdma_sends", "rdma_recvs")


def plant_rxe(root, netdev="bond0.100", name="rxe0", mtu=None, counters=None):
    """A Soft-RoCE device over ``netdev`` (its MTU set to ``mtu`` where given), as `rdma link add NAME type rxe
    netdev NETDEV` leaves it."""
    device = os.path.join(root, "sys", "devices", "virtual", "infiniband", name)
    port = os.path.join(device, "ports", "1")
    for sub in ("gids", os.path.join("gid_attrs", "types"), os.path.join("gid_attrs", "ndevs"), "hw_counters"):
        os.makedirs(os.path.join(port, sub))
    write(os.path.join(device, "node_type"), "1: CA\n")
    write(os.path.join(device, "parent"), netdev + "\n")
    write(os.path.join(port, "state"), "4: ACTIVE\n")
    write(os.path.join(port, "phys_state"), "5: LinkUp\n")
    write(os.path.join(port, "rate"), "100 Gb/sec (4X EDR)\n")
    write(os.path.join(port, "link_layer"), "Ethernet\n")
    table = ["fe80:0000:0000:0000:5054:00ff:fe00:0111", "0000:0000:0000:0000:0000:ffff:c612:0011"]
    for index in range(4):  # the table has 1024 entries; the unused ones read as zeros
        gid = table[index] if index < len(table) else "0000:0000:0000:0000:0000:0000:0000:0000"
        write(os.path.join(port, "gids", str(index)), gid + "\n")
        if index < len(table):
            write(os.path.join(port, "gid_attrs", "types", str(index)), "RoCE v2\n")
            write(os.path.join(port, "gid_attrs", "ndevs", str(index)), netdev + "\n")
    for counter in RXE_COUNTERS:
        write(os.path.join(port, "hw_counters", counter), "%d\n" % (counters or {}).get(counter, 0))
    os.symlink(os.path.join("..", "..", "devices", "virtual", "infiniband", name),
               os.path.join(root, "sys", "class", "infiniband", name))
    if mtu is not None:
        write(os.path.join(os.path.realpath(os.path.join(root, "sys", "class", "net", netdev)), "mtu"), "%d\n" % mtu)
    return port


def rxe(facts, name="rxe0"):
    return next(r for r in facts["rdma"] if r["name"] == name)


def test_a_soft_roce_device_over_a_vlan(roots, tmp_path):
    root = copy_root(roots, "dgx8", tmp_path)
    plant_rxe(root, mtu=2140)
    facts = gather(root=root)
    device = rxe(facts)
    assert (device["software"], device["address"], device["numa_node"], device["netdevs"]) == (
        "rxe", None, None, ["bond0.100"])
    (port,) = device["ports"]
    assert (port["netdev"], port["link_layer"], port["state"], port["rate_gbps"]) == (
        "bond0.100", "Ethernet", "ACTIVE", 100.0)
    # RoCE v2 entries only: the link-local address at 0, the VLAN's IPv4 address at 1 (on a ConnectX: 3)
    assert (port["roce_v2_gid_index"], port["roce_v2_ipv4"]) == (1, "198.18.0.17")
    assert [g["type"] for g in port["gids"]] == ["RoCE v2", "RoCE v2"]
    # 2140 - 80 = 2060: IB MTU 2048 (a ConnectX subtracts 96: 1024)
    assert port["active_mtu"] == 2048 and roce_active_mtu(2140) == 1024
    # the hardware device beside it is read as before
    mlx = rxe(facts, "mlx5_0")
    assert mlx["software"] is None and mlx["address"] == "0000:16:00.0" and mlx["ports"][0]["active_mtu"] == 4096
    assert "rdma_rxe" in facts["kernel_modules"] and "siw" in facts["kernel_modules"]
    assert facts["counters"]["roce_ports"]["rxe0/1"] == "bond0.100"


def test_soft_roce_mtus_follow_its_own_headers():
    # rxe_set_mtu: netdev MTU less 80, the largest IB MTU that fits, 256 where none does
    assert [roce_active_mtu(m, soft=True) for m in (9000, 4176, 4175, 1500, 1104, 1103, 300, 100)] == [
        4096, 4096, 2048, 1024, 1024, 512, 256, 256]
    assert [roce_active_mtu(m) for m in (9000, 4192, 4191, 1500, 1120, 1119, 300)] == [
        4096, 4096, 2048, 1024, 1024, 512, None]


def test_soft_iwarp_is_named_and_given_no_roce_mtu(roots, tmp_path):
    root = copy_root(roots, "dgx8", tmp_path)
    port = plant_rxe(root, netdev="eno1", name="siw0")
    write(os.path.join(os.path.dirname(os.path.dirname(port)), "node_type"), "4: RNIC\n")
    device = rxe(gather(root=root), "siw0")
    assert device["software"] == "siw" and device["netdevs"] == ["eno1"] and device["ports"][0]["active_mtu"] is None


def test_a_parent_that_is_no_interface_here_names_none(roots, tmp_path):
    root = copy_root(roots, "dgx8", tmp_path)
    port = plant_rxe(root)
    device_dir = os.path.dirname(os.path.dirname(port))
    write(os.path.join(device_dir, "parent"), "../../etc/passwd\n")
    device = rxe(gather(root=root))
    # the GID table still names the port's netdev; the device's own list holds only interfaces that exist
    assert device["netdevs"] == [] and device["ports"][0]["netdev"] == "bond0.100"


def test_soft_roce_counters_are_read_and_judged(roots, tmp_path):
    """Its hw_counters under rxe's names: a sequence gap the responder saw, a sequence NAK the sender got, a
    retransmission begun, the retries used up, the link going down: STAB-004 names them between two readings;
    packets sent and received grow quietly."""
    root = copy_root(roots, "dgx8", tmp_path)
    port = plant_rxe(root, counters={"sent_pkts": 1000, "rcvd_pkts": 1000})
    first = gather(root=root)
    counters = first["counters"]["rdma"]["rxe0/1"]
    assert counters == {"duplicate_request": 0, "out_of_seq_request": 0, "rcvd_seq_err": 0, "completer_retry_err": 0,
                        "retry_exceeded_err": 0, "link_downed": 0}
    today = datetime.date(2027, 1, 1)
    report, errors = run_audit({"n1": {"facts": first}}, today, "2027-01-01T00:00:00+00:00")
    assert errors == []
    baseline = tmp_path / "report.json"
    baseline.write_text(render_json(report))
    for counter, value in (("out_of_seq_request", 40), ("rcvd_seq_err", 12), ("completer_retry_err", 30),
                           ("sent_pkts", 90000), ("rcvd_pkts", 90000)):
        write(os.path.join(port, "hw_counters", counter), "%d\n" % value)
    second = copy.deepcopy(gather(root=root))
    second["counters"]["uptime_s"] = first["counters"]["uptime_s"] + 3600  # read an hour later, same boot
    report, errors = run_audit({"n1": {"facts": second, "baseline": str(baseline)}}, today,
                               "2027-01-01T01:00:00+00:00")
    assert errors == []
    found = [f for f in report["findings"] if f["id"] == "STAB-004" and f["subject"] == "rxe0/1"]
    assert len(found) == 1, report["outcomes"]["n1"]["STAB-004"]
    assert found[0]["evidence"]["counters"] == {"out_of_seq_request": 40, "rcvd_seq_err": 12,
                                                "completer_retry_err": 30}
