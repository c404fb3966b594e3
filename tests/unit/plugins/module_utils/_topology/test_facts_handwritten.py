"""The hand-written 8-GPU nodes (tests/fixtures/handwritten; NOT captured from a machine)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest


def one(items, **match):
    found = [i for i in items if all(i[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, len(found))
    return found[0]


def test_switch_levels_are_classified(healthy):
    kinds = {p["address"]: p["kind"] for p in healthy["pci"]}
    assert kinds["0000:10:01.0"] == "root_port"
    assert kinds["0000:11:00.0"] == "switch_upstream"
    assert kinds["0000:12:00.0"] == "switch_downstream"
    assert kinds["0000:13:00.0"] == "switch_upstream"
    assert kinds["0000:14:01.0"] == "switch_downstream"
    gpu = one(healthy["pci"], address="0000:15:00.0")
    assert gpu["chain"] == ["0000:14:00.0", "0000:13:00.0", "0000:12:00.0", "0000:11:00.0", "0000:10:01.0"]


def test_every_gpu_has_a_pix_nic(healthy):
    assert len(healthy["gpus"]) == 8
    for gpu in healthy["gpus"]:
        assert gpu["link_state"] == "ok"
        assert [n["type"] for n in gpu["nearest_nics"]] == ["PIX"]


def test_path_types_across_the_tree(healthy):
    gg = healthy["paths"]["gpu_gpu"]
    assert one(gg, gpu="0000:15:00.0", peer="0000:19:00.0")["type"] == "PXB"   # two switch levels
    assert one(gg, gpu="0000:15:00.0", peer="0000:35:00.0")["type"] == "NODE"  # other host bridge, same socket
    assert one(gg, gpu="0000:15:00.0", peer="0000:95:00.0")["type"] == "SYS"   # other socket
    gn = healthy["paths"]["gpu_nic"]
    pix = one(gn, gpu="0000:15:00.0", nic="0000:16:00.0")
    assert pix["common_bridge"] == "0000:13:00.0"
    assert pix["bottleneck_gbytes_per_s"] == pytest.approx(63.015, abs=0.001)
    # Gen5 x16 GPU to a Gen3 x8 management port: the X710's link is the ceiling.
    to_mgmt = one(gn, gpu="0000:15:00.0", nic="0000:01:00.0")
    assert to_mgmt["type"] == "NODE"
    assert (to_mgmt["bottleneck_device"], to_mgmt["bottleneck_gbytes_per_s"]) == ("0000:01:00.0", 7.877)
    # up from the GPU through both switch levels to its root port's link, across to the X710's own link
    assert to_mgmt["via"] == ["0000:15:00.0", "0000:13:00.0", "0000:11:00.0", "0000:01:00.0"]


def test_paths_name_their_links_once(healthy):
    """Each path names its links by device; each link's figures are in paths.links once (facts schema 2): every
    device a path names is there, each path's bottleneck is the narrowest of its links, and no link is kept that no
    path crosses."""
    links = healthy["paths"]["links"]
    table = dict((link["device"], link) for link in links)
    assert [link["device"] for link in links] == sorted(table)
    assert table["0000:01:00.0"] == {"device": "0000:01:00.0", "basis": "current", "speed_gts": 8.0, "generation": 3,
                                     "width": 8, "gbytes_per_s": 7.877}
    crossed = set()
    for path in healthy["paths"]["gpu_nic"] + healthy["paths"]["gpu_gpu"]:
        assert "links" not in path and all(device in table for device in path["via"])
        crossed.update(path["via"])
        narrowest = min(table[device]["gbytes_per_s"] for device in path["via"])
        assert path["bottleneck_gbytes_per_s"] == narrowest
        assert table[path["bottleneck_device"]]["gbytes_per_s"] == narrowest
    assert crossed == set(table)
    assert healthy["schema_version"] == 2


def test_roce_gid_and_active_mtu(healthy):
    mlx = one(healthy["rdma"], name="mlx5_0")
    (port,) = mlx["ports"]
    assert (port["roce_v2_gid_index"], port["roce_v2_ipv4"]) == (3, "198.18.0.17")
    assert port["active_mtu"] == 4096 and port["link_layer"] == "Ethernet"


def test_bond_and_vlan(healthy):
    (bond,) = healthy["bonds"]
    assert (bond["mode"], bond["lacp_rate"], bond["xmit_hash_policy"], bond["miimon"]) == ("802.3ad", "fast", "layer3+4", 100)
    assert [m["has_partner"] for m in bond["members"]] == [True, True]
    assert [m["aggregator_id"] for m in bond["members"]] == [1, 1]
    assert one(healthy["nics"], name="eno1")["bond_master"] == "bond0"
    assert healthy["vlans"] == [{"name": "bond0.100", "id": 100, "parent": "bond0", "source": "kernel", "mtu": 9000}]


def test_broken_gpu_at_x8(broken):
    gpu = one(broken["gpus"], address="0000:19:00.0")
    assert gpu["link_state"] == "degraded"
    assert gpu["link"]["current"]["width"] == 8 and gpu["link"]["max"]["width"] == 16
    assert "x8" in gpu["link_state_reason"]


def test_broken_nic_on_far_socket(broken):
    gpu = one(broken["gpus"], address="0000:15:00.0")
    assert [n["type"] for n in gpu["nearest_nics"]] == ["PXB"]
    moved = one(broken["nics"], name="ens1np0")
    assert (moved["address"], moved["numa_node"]) == ("0000:a1:00.0", 1)
    assert one(broken["paths"]["gpu_nic"], gpu="0000:15:00.0", nic="0000:a1:00.0")["type"] == "SYS"


def test_broken_dual_port_card_in_gen3_x8(broken):
    ports = [n for n in broken["nics"] if n["card"] == "0000:c1:00"]
    assert [p["ports_on_card"] for p in ports] == [2, 2]
    link = ports[0]["pci_link"]
    assert (link["current"]["generation"], link["current"]["width"]) == (3, 8)
    # Two 100GbE ports need 25 GB/s; the slot gives 7.9.
    assert link["current"]["gbytes_per_s"] * 8 < 2 * 100


def test_broken_bond_without_partner_and_vlan_mtu(broken):
    (bond,) = broken["bonds"]
    assert [m["has_partner"] for m in bond["members"]] == [False, False]
    assert [m["aggregator_id"] for m in bond["members"]] == [1, 2]
    assert bond["mtu"] == 1500
    assert broken["vlans"][0]["mtu"] == 1500
