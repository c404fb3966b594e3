"""PCIE-006 and the path's narrowest link (issue 32): each link from a GPU or NIC up to its root port judged against
the lower of its two ends' maxima, with the hop named, in the findings, the report's links rows, the metrics and the
HTML tree.

The machines: the hand-written 8-GPU node's sysfs tree (tests/fixtures/handwritten), and copies of it with one
switch uplink lowered BY HAND (each test says which file it rewrote), read through the real sysfs reader; every
stored capture (sysfs, hwloc and NCCL XML, whose switches carry only their current link)."""

import copy
import datetime
import os
import shutil

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import INTERNAL_KINDS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import path_bottleneck, path_hops
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import render_prometheus
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

from test_link_verdict_agrees import captures

# the hand-written node: GPU 0000:19:00.0 and HCA 0000:1a:00.0 sit below the switch 0000:17:00.0 (its upstream port),
# which sits below 0000:11:00.0, the upstream port of the first-level switch over four GPUs and four HCAs
UPLINK, TOP = "0000:17:00.0", "0000:11:00.0"
BELOW_UPLINK = ["0000:19:00.0", "0000:1a:00.0"]
BELOW_TOP = ["0000:15:00.0", "0000:16:00.0", "0000:19:00.0", "0000:1a:00.0"]


def lowered(roots, tmp_path, address, **files):
    """A copy of the hand-written node's sysfs tree with files of ``address`` rewritten BY HAND (name=content)."""
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    device = os.path.realpath(os.path.join(root, "sys", "bus", "pci", "devices", address))
    assert device.startswith(root)
    for name, content in files.items():
        with open(os.path.join(device, name), "w") as handle:
            handle.write(content + "\n")
    return gather(root=root)


def audit(facts):
    report, errors = run_audit({"h": {"facts": facts}}, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert errors == []
    return report


def hop_findings(report):
    return [f for f in report["findings"] if f["id"] == "PCIE-006"]


def metrics(report):
    found = {}
    for family in text_string_to_metric_families(render_prometheus(report)):
        for sample in family.samples:
            if sample.name.startswith("gpuops_fabric_pcie_path_"):
                found[(sample.name, sample.labels["address"])] = (sample.value, sample.labels.get("hop"))
    return found


def tree_state(report, address):
    return next(d["state"] for d in report["topology"]["h"]["devices"] if d["address"] == address)


def test_the_healthy_node_passes_and_names_each_path_narrowest_link(healthy):
    report = audit(healthy)
    assert report["outcomes"]["h"]["PCIE-006"]["status"] == "pass"
    pci = dict((d["address"], d) for d in healthy["pci"])
    hops = path_hops("0000:19:00.0", pci)
    assert [h["address"] for h in hops] == ["0000:19:00.0", UPLINK, TOP]  # own link, then each switch's uplink
    assert [h["verdict"]["verdict"] for h in hops] == ["ok", "ok", "ok"]
    # all at Gen5 x16: the first of equals, the device's own link
    assert path_bottleneck(hops)["address"] == "0000:19:00.0"


def test_an_uplink_trained_narrower_is_a_fail_naming_the_hop_and_the_devices_below(roots, tmp_path):
    facts = lowered(roots, tmp_path, UPLINK, current_link_width="8")  # HAND-EDITED: x16 -> x8
    report = audit(facts)
    [finding] = hop_findings(report)
    assert finding["subject"] == UPLINK and finding["severity"] == "fail"
    evidence = finding["evidence"]
    assert evidence["devices"] == BELOW_UPLINK and evidence["bottleneck_of"] == BELOW_UPLINK
    assert evidence["width_low"] is True and evidence["generation_low"] is False
    assert evidence["reach"] == {"generation": 5, "width": 16}
    assert evidence["slot"] == next(d for d in facts["pci"] if d["address"] == UPLINK)["parent"]
    assert finding["message"].startswith("switch upstream %s runs at Gen5 x8 (31.5 GB/s), below Gen5 x16 that both "
                                         "its ends allow" % UPLINK), finding["message"]
    assert "it is the narrowest link on the path of gpu 0000:19:00.0, rdma 0000:1a:00.0" in finding["message"]
    # the devices' own links are healthy: PCIE-001/002/005 say nothing of them
    assert not [f for f in report["findings"] if f["id"] in ("PCIE-001", "PCIE-002", "PCIE-005")]
    # the tree colours the hop, the report's rows and the metrics name it
    assert tree_state(report, UPLINK) == "below"
    row = next(r for r in report["links"] if r["address"] == "0000:19:00.0")
    assert row["path"] == {"bottleneck": UPLINK, "bottleneck_kind": "switch_upstream", "gbytes_per_s": 31.508,
                           "hops": 3, "below": [UPLINK]}
    shown = metrics(report)
    assert shown[("gpuops_fabric_pcie_path_bytes_per_second", "0000:19:00.0")] == (31508000000.0, UPLINK)
    assert shown[("gpuops_fabric_pcie_path_links_below", "0000:19:00.0")][0] == 1
    assert shown[("gpuops_fabric_pcie_path_links_below", "0000:15:00.0")][0] == 0  # the other branch


def test_a_top_uplink_a_generation_down_is_a_warning_for_every_device_below(roots, tmp_path):
    facts = lowered(roots, tmp_path, TOP, current_link_speed="16.0 GT/s PCIe")  # HAND-EDITED: Gen5 -> Gen4
    [finding] = hop_findings(audit(facts))
    assert finding["subject"] == TOP and finding["severity"] == "warn"
    assert finding["evidence"]["devices"] == BELOW_TOP == finding["evidence"]["bottleneck_of"]
    assert finding["evidence"]["generation_low"] is True and finding["evidence"]["width_low"] is False


def test_an_uplink_at_what_its_slot_allows_is_no_finding(roots, tmp_path):
    """A Gen5 switch in a Gen4 slot: its uplink at Gen4 is what both ends allow (capped by design, not trained low)."""
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    pci = os.path.join(root, "sys", "bus", "pci", "devices")
    for address, name, value in ((UPLINK, "current_link_speed", "16.0 GT/s PCIe"),  # HAND-EDITED
                                 ("0000:12:01.0", "max_link_speed", "16.0 GT/s PCIe")):  # its slot: the port above
        with open(os.path.join(os.path.realpath(os.path.join(pci, address)), name), "w") as handle:
            handle.write(value + "\n")
    facts = gather(root=root)
    slot = next(d for d in facts["pci"] if d["address"] == UPLINK)["parent"]
    assert slot == "0000:12:01.0"
    report = audit(facts)
    assert hop_findings(report) == []
    assert tree_state(report, UPLINK) == "capped"
    row = next(r for r in report["links"] if r["address"] == "0000:19:00.0")
    assert row["path"]["bottleneck"] == UPLINK and row["path"]["below"] == []


def test_every_capture_reads_its_paths(roots):
    """On every stored machine: each GPU's and NIC's path starts at the device and climbs its chain, the narrowest
    link is one of its hops, and PCIE-006 either judged something or says why it could not."""
    judged = not_applicable = 0
    for name, how in captures(roots):
        facts = gather(**how)
        pci = dict((d["address"], d) for d in facts.get("pci") or [])
        for device in pci.values():
            if device["kind"] not in ("gpu", "accelerator", "nic", "rdma"):
                continue
            hops = path_hops(device["address"], pci)
            assert hops[0]["address"] == device["address"], name
            # then every bridge of its chain with a link of its own, in order, up to the root port
            climbed = [a for a in device["chain"] if a in pci and pci[a]["kind"] not in INTERNAL_KINDS]
            assert [h["address"] for h in hops[1:]] == climbed, name
            narrowest = path_bottleneck(hops)
            assert narrowest is None or narrowest in hops
        outcome = audit(facts)["outcomes"]["h"]["PCIE-006"]
        if outcome["status"] == "not_applicable":
            not_applicable += 1
            assert "reports both its current and its maximum" in outcome["reason"] or "not gathered" in \
                outcome["reason"], (name, outcome)
        else:
            judged += 1
    assert judged and not_applicable


@pytest.mark.parametrize("link", [None, "x", {"current": "Gen4"}, {"current": {"generation": 10 ** 400}}])
def test_odd_hop_links_are_not_judged(healthy, link):
    facts = dict(healthy, pci=[dict(d, link=link) if d["address"] == UPLINK else d for d in healthy["pci"]])
    report = audit(facts)
    assert report["outcomes"]["h"]["PCIE-006"]["status"] == "pass"
    assert hop_findings(report) == []


# ---- PCIE-007: the kernel's own verdict, beside the facts' ---------------------------------------------------

def with_log(roots, tmp_path, text, **lowered_files):
    """The hand-written tree (with files of UPLINK rewritten BY HAND when given) and ``text`` as its saved kernel log
    (var/log/dmesg)."""
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    device = os.path.realpath(os.path.join(root, "sys", "bus", "pci", "devices", UPLINK))
    for name, content in lowered_files.items():
        with open(os.path.join(device, name), "w") as handle:
            handle.write(content + "\n")
    os.makedirs(os.path.join(root, "var", "log"))
    with open(os.path.join(root, "var", "log", "dmesg"), "w") as handle:
        handle.write(text)
    return gather(root=root)


# HAND-WRITTEN in the kernel's format (drivers/pci/pci.c): the GPU below UPLINK, limited by UPLINK's x8 link; the
# kernel names the port at the link's upper end, UPLINK's slot
LIMITED = ("[    0.812345] pci 0000:19:00.0: 252.064 Gb/s available PCIe bandwidth, limited by 32.0 GT/s PCIe x8 link at "
           "%s (capable of 504.128 Gb/s with 32.0 GT/s PCIe x16 link)\n")


def test_the_kernel_and_the_facts_agree_on_a_lowered_uplink(roots, tmp_path, healthy):
    slot = next(d for d in healthy["pci"] if d["address"] == UPLINK)["parent"]
    facts = with_log(roots, tmp_path, "[    0.000000] Linux version 6.8.0\n" + LIMITED % slot, current_link_width="8")
    assert facts["kernel_pcie"]["source"].endswith("var/log/dmesg") and facts["kernel_pcie"]["oldest_s"] == 0
    report = audit(facts)
    [finding] = [f for f in report["findings"] if f["id"] == "PCIE-007"]
    assert finding["subject"] == "0000:19:00.0" and finding["severity"] == "warn"
    assert finding["evidence"]["hop"] == UPLINK and finding["evidence"]["facts_verdict"] == "below"
    assert "limited by 32.0 GT/s x8 at %s" % slot in finding["message"]
    assert "the facts agree: switch upstream %s runs at Gen5 x8" % UPLINK in finding["message"]


def test_a_kernel_line_the_link_no_longer_shows_is_information(roots, tmp_path, healthy):
    slot = next(d for d in healthy["pci"] if d["address"] == UPLINK)["parent"]
    facts = with_log(roots, tmp_path, LIMITED % slot)  # the uplink is at x16 now
    [finding] = [f for f in audit(facts)["findings"] if f["id"] == "PCIE-007"]
    assert finding["severity"] == "info" and finding["evidence"]["facts_verdict"] == "ok"
    assert "runs at Gen5 x16, its best, now" in finding["message"]


def test_a_real_kernel_log_of_other_devices_passes(roots, tmp_path, realdata):
    with open(realdata("kernel-pcie-bandwidth", "gpu-h100-gen4-switch-ml-engineering.txt")) as handle:
        text = handle.read()
    facts = with_log(roots, tmp_path, text)
    assert len(facts["kernel_pcie"]["entries"]) == 2  # read, about devices this node does not have
    assert audit(facts)["outcomes"]["h"]["PCIE-007"]["status"] == "pass"


def test_a_log_without_the_boot_or_without_a_log_cannot_judge(roots, tmp_path, healthy):
    late = with_log(roots, tmp_path, "[86400.123456] eth0: link up\n")
    outcome = audit(late)["outcomes"]["h"]["PCIE-007"]
    assert outcome["status"] == "not_applicable" and "no longer holds the messages of the boot" in outcome["reason"]
    assert "(its oldest is 86400 s after boot)" in outcome["reason"]
    outcome = audit(healthy)["outcomes"]["h"]["PCIE-007"]  # the hand-written tree has no saved kernel log
    assert outcome["status"] == "not_applicable" and "could not be read" in outcome["reason"]


def test_a_kernel_log_linking_out_of_the_capture_is_not_read(roots, tmp_path):
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    os.makedirs(os.path.join(root, "var", "log"))
    outside = tmp_path / "outside.log"
    outside.write_text(LIMITED % "0000:00:00.0")
    os.symlink(str(outside), os.path.join(root, "var", "log", "dmesg"))
    assert gather(root=root)["kernel_pcie"] == {"source": None, "oldest_s": None, "entries": []}


def test_an_idle_gpu_is_not_its_own_paths_bottleneck(roots, tmp_path):
    """Found in review: a GPU idling at Gen1 below an uplink trained to x8 was named its path's narrowest link (and
    the metric said 4 GB/s). An idle GPU carries what it reaches under load."""
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    pci = os.path.join(root, "sys", "bus", "pci", "devices")
    for address, name, value in ((UPLINK, "current_link_width", "8"),  # HAND-EDITED
                                 ("0000:19:00.0", "current_link_speed", "2.5 GT/s PCIe")):  # the GPU idles
        with open(os.path.join(os.path.realpath(os.path.join(pci, address)), name), "w") as handle:
            handle.write(value + "\n")
    report = audit(gather(root=root))
    [finding] = hop_findings(report)
    assert finding["evidence"]["bottleneck_of"] == BELOW_UPLINK
    row = next(r for r in report["links"] if r["address"] == "0000:19:00.0")
    assert row["path"]["bottleneck"] == UPLINK and row["path"]["gbytes_per_s"] == 31.508


def test_a_chain_naming_the_device_or_a_bridge_twice_and_a_slot_without_a_maximum(healthy):
    facts = copy.deepcopy(healthy)
    pci = dict((d["address"], d) for d in facts["pci"])
    gpu = pci["0000:19:00.0"]
    gpu["chain"] = ["0000:19:00.0"] + gpu["chain"] + gpu["chain"]  # HAND-EDITED
    assert [h["address"] for h in path_hops("0000:19:00.0", pci)] == ["0000:19:00.0", UPLINK, TOP]
    pci[UPLINK]["link"]["current"]["width"] = 8
    pci[pci[UPLINK]["parent"]]["link"]["max"] = {"generation": None, "width": None}
    [finding] = hop_findings(audit(facts))
    assert "below its own maximum Gen5 x16 (its slot %s gives no maximum)" % pci[UPLINK]["parent"] in finding["message"]


def test_a_nic_address_of_the_wrong_type_does_not_stop_the_audit(healthy):
    facts = copy.deepcopy(healthy)
    facts["nics"][0]["address"] = ["0000:01:00.0"]  # HAND-EDITED: a list where a text belongs
    report = audit(facts)
    assert report["links"]
