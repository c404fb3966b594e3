"""Each host's PCIe/NUMA tree for the pictures of report.html: the devices of the facts, each link's state, the pairs
NCCL would use and the findings placed on the device they concern, from real captures and the hand-written DGX-like
nodes (tests/fixtures/handwritten: one healthy, one with planted faults); junk facts give no error."""

import copy
import datetime
import xml.etree.ElementTree as ET

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import topology
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.topology_svg import topology_svg
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

EXPECT = {"gpu": {"width": 16}, "nics": [{"name": "ens*np0", "speed_mbps": 400000, "mtu": 9000}], "rdma": True}
SVG = ""  # inline in HTML: no namespace declared (the HTML parser gives it SVG's)


def audit(inputs):
    report, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert not errors
    return report


def test_the_broken_node_shows_its_faults_where_they_are(roots):
    facts = gather(root=roots["dgx8-broken"])
    report = audit({"broken": {"facts": facts, "expectations": EXPECT}})
    tree = report["topology"]["broken"]
    devices = dict((d["address"], d) for d in tree["devices"])
    # every GPU and every NIC with a PCI function is drawn
    assert set(g["address"] for g in facts["gpus"]) <= set(devices)
    assert set(n["address"] for n in facts["nics"] if n["address"]) <= set(devices)
    # the GPU trained to x8 (planted) and the two ports of the card at c1:00 trained down: below their maximum
    assert sorted(a for a, d in devices.items() if d["state"] == "below") == [
        "0000:19:00.0", "0000:c1:00.0", "0000:c1:00.1"]
    gpu1 = devices["0000:19:00.0"]
    assert gpu1["label"] == "GPU1" and gpu1["findings"][0] == {"id": "PCIE-001", "severity": "fail"}
    assert {"id": "GDR-002", "severity": "fail"} in gpu1["findings"]  # the pair 19:00.0->1a:00.0: both ends
    assert "GDR-002" in [f["id"] for f in devices["0000:1a:00.0"]["findings"]]
    # a bond's finding on its members' functions, a bus (PCIE-003's "0000:c1:00") on all its functions
    assert "BOND-002" in [f["id"] for f in devices["0000:01:00.0"]["findings"]]
    assert all("PCIE-003" in [f["id"] for f in devices[a]["findings"]] for a in ("0000:c1:00.0", "0000:c1:00.1"))
    # the root ports and switch-internal ports have no link of their own to judge
    assert set(d["state"] for d in tree["devices"] if d["kind"] in ("root_port", "switch_downstream")) == {"unknown"}
    # each GPU paired with the NIC NCCL would use (its nearest); GPU0's ConnectX-7 was moved to a root port on socket 1
    # (planted: 0000:a1:00.0), so its nearest NIC is GPU1's, a switch further (PXB)
    assert len(tree["pairs"]) == 8 and {"gpu": "0000:15:00.0", "nic": "0000:1a:00.0", "type": "PXB"} in tree["pairs"]
    assert {"gpu": "0000:35:00.0", "nic": "0000:36:00.0", "type": "PIX"} in tree["pairs"]
    assert [b["numa"] for b in tree["bridges"]] == [0, 0, 0, 1, 1, 1, 1]


def test_the_healthy_node_has_no_bad_link_and_no_finding_on_a_device(healthy):
    report = audit({"ok": {"facts": copy.deepcopy(healthy)}})
    tree = report["topology"]["ok"]
    assert set(d["state"] for d in tree["devices"]) == {"ok", "unknown"}
    assert not [d for d in tree["devices"] if d["findings"]]


def test_a_switch_uplink_narrower_than_the_gpu_below_it(healthy):
    """Hand-modified from the healthy node's facts: the upstream port of GPU0's second-level switch at x8 (as in a
    riser or a slot wired x8), the GPU still x16 below it."""
    facts = copy.deepcopy(healthy)
    for device in facts["pci"]:
        if device["address"] == "0000:13:00.0":
            for side in ("current", "max"):
                device["link"][side]["width"] = 8
    tree = topology.host_tree(facts, [])
    states = dict((d["address"], d["state"]) for d in tree["devices"])
    assert states["0000:13:00.0"] == "narrower"
    assert states["0000:11:00.0"] == "ok" and states["0000:15:00.0"] == "ok"


def test_captures_of_other_sources_draw_too(realdata):
    hp = topology.host_tree(gather(source="hwloc_xml", path=realdata("hwloc-xml-hp-sl390-3gpu-ib",
                                                                     "24em64t-2n6c2t-pci.xml")), [])
    assert sorted(d["label"] for d in hp["devices"] if d["kind"] == "gpu") == ["GPU0", "GPU1", "GPU2"]
    assert [b["numa"] for b in hp["bridges"]] == [0, 1]
    mi300 = topology.host_tree(gather(source="nccl_xml", path=realdata("rccl-mi300x-8gpu-cx7", "topo_8p_940.xml")),
                               [])
    assert len([d for d in mi300["devices"] if d["kind"] == "gpu"]) == 8 and len(mi300["pairs"]) == 8


def test_junk_facts_and_hostile_names_give_a_well_formed_picture(roots):
    facts = copy.deepcopy(gather(root=roots["dgx8-broken"]))
    facts["pci"] += [None, 3, {"address": ["x"]}, {"address": "0000:ee:00.0", "kind": "gpu", "chain": "nope",
                                                   "parent": {"a": 1}, "link": {"current": {"width": "x16"}},
                                                   "numa_node": "zero"}]
    facts["gpus"].append({"address": "0000:ee:00.0", "index": True, "nearest_nics": [None, {"nic": 5}]})
    facts["nics"].append({"name": "<script>&\"", "address": "0000:ee:00.0"})
    facts["bonds"] = [{"name": "bond9", "members": None}, "junk"]
    facts["vlans"] = None
    tree = topology.host_tree(facts, [{"id": "X-001", "severity": "fail", "subject": None},
                                      {"id": "X-002", "severity": "warn", "subject": "<script>&\""}])
    junk = [d for d in tree["devices"] if d["address"] == "0000:ee:00.0"][0]
    assert junk["numa"] is None and junk["state"] == "unknown" and junk["link"] is None and junk["findings"] == [{"id": "X-002", "severity": "warn"}]
    svg = topology_svg("<host & co>", tree)
    root = ET.fromstring(svg)  # well formed: every name escaped
    assert root.get("data-host") == "<host & co>"
    assert len(root.findall(SVG + "g[@class]")) > 60
    assert topology.host_tree({"pci": "no"}, []) is None and topology.host_tree({}, []) is None


def test_a_huge_tree_is_cut_and_says_so():
    pci = [{"address": "0000:%02x:%02x.%d" % (bus, slot, fn), "kind": "nic", "numa_node": 0, "host_bridge": "pci0000:00"}
           for bus in range(4) for slot in range(32) for fn in range(4)]
    tree = topology.host_tree({"pci": pci}, [])
    assert len(tree["devices"]) == topology.MAX_DEVICES and tree["cut"] == 512 - topology.MAX_DEVICES
    assert "256 more bridges and devices not drawn" in topology_svg("h", tree)
