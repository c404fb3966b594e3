"""One verdict per PCIe link (pcie.link_verdict), held on every captured machine in tests/fixtures and the hand-written
nodes: the tree report.html draws (each link's colour), the PCIE findings and the Prometheus link metrics say the
same of each GPU, accelerator, NIC and HCA. Where they disagreed before: the tree drew a link whose current or best
was unknown as healthy (PCIE-005 and the GPU facts call it not judged), a NIC at what its slot allows as healthy
(PCIE-005 warns), and an accelerator at a lower generation as below its maximum (PCIE-005: idle, information)."""

import copy
import datetime
import glob
import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import ACCELERATOR_KINDS, KINDS, NETWORK_KINDS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import link_verdict
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import render_prometheus
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

REALDATA = os.path.join(REPO, "tests", "fixtures", "realdata")
JUDGED = ACCELERATOR_KINDS + NETWORK_KINDS
# PCIE-005's severity of each verdict for NICs, HCAs and accelerators outside the gpus facts; PCIE-001/002's for GPUs
SEVERITY_STATE = {"fail": "below", "warn": "capped", "info": "idle"}


def captures(roots):
    found = [("sysfs:" + name, {"root": root}) for name, root in sorted(roots.items())]
    for path in sorted(glob.glob(os.path.join(REALDATA, "hwloc-xml-*", "*.xml"))):
        found.append(("hwloc:" + os.path.relpath(path, REALDATA), {"source": "hwloc_xml", "path": path}))
    for path in sorted(glob.glob(os.path.join(REALDATA, "rccl-*", "*.xml"))):
        found.append(("nccl:" + os.path.relpath(path, REALDATA), {"source": "nccl_xml", "path": path}))
    return found


def card(address):
    return str(address).rsplit(".", 1)[0]


def planted(healthy):
    """HAND-WRITTEN changes to the hand-written node's facts: its first Gen4+ NIC's card trained to Gen3 in a slot
    whose port allows Gen3 only (capped), and an accelerator outside the gpus facts idling at Gen1 (idle)."""
    facts = copy.deepcopy(healthy)
    pci = dict((d["address"], d) for d in facts["pci"])
    nic = next(d for d in facts["pci"] if d["kind"] in ("nic", "rdma") and (d["link"]["max"]["generation"] or 0) > 3 and
               pci.get(d["parent"]))
    for function in facts["pci"]:  # every function of the card shares its link
        if card(function["address"]) == card(nic["address"]):
            function["link"]["current"]["generation"] = 3
    for port in facts["nics"]:  # and its interfaces' facts say the same
        if port.get("address") and card(port["address"]) == card(nic["address"]) and port.get("link"):
            for key in ("link", "pci_link"):  # pci_link: the deprecated copy
                port[key]["current"]["generation"] = 3
    pci[nic["parent"]]["link"]["max"]["generation"] = 3
    gpu = next(d for d in facts["pci"] if d["kind"] == "gpu")
    facts["gpus"] = [g for g in facts["gpus"] if g["address"] != gpu["address"]]
    gpu["kind"] = "accelerator"
    gpu["link"]["current"]["generation"] = 1
    return facts


def test_every_capture_agrees(roots, healthy):
    checked = {"below": 0, "idle": 0, "capped": 0, "ok": 0, "unknown": 0}
    for name, how in captures(roots) + [("planted", None)]:
        facts = gather(**how) if how else planted(healthy)
        report, errors = run_audit({"h": {"facts": facts}}, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
        assert not errors, (name, errors)
        tree = (report.get("topology") or {}).get("h")
        if not tree:
            continue
        said = {}
        for f in report["findings"]:
            if f["id"] in ("PCIE-001", "PCIE-002", "PCIE-005") and f["host"] == "h":
                said.setdefault(card(f["subject"]), set()).add(SEVERITY_STATE[f["severity"]])
        metrics = {}
        for family in text_string_to_metric_families(render_prometheus(report)):
            for sample in family.samples:
                if sample.name.startswith("gpuops_fabric_pcie_link_") and "address" in sample.labels:
                    metrics.setdefault(sample.labels["address"], {})[sample.name] = sample.value
        assert set(d["kind"] for d in facts.get("pci") or []) <= set(KINDS), name  # the contract's kinds only
        by_address = dict((d["address"], d) for d in facts.get("pci") or [])
        for nic in facts.get("nics") or []:  # an interface's link is its PCI function's, under the same key
            if nic.get("address") in by_address and how:
                assert nic["link"] == nic["pci_link"] == by_address[nic["address"]]["link"], (name, nic["name"])
        gpus = set(g["address"] for g in facts.get("gpus") or [])
        links = dict((d["address"], d.get("link") or {}) for d in facts.get("pci") or [])
        for device in tree["devices"]:
            if device["kind"] not in JUDGED:
                continue
            state, where = device["state"], "%s %s %s" % (name, device["kind"], device["address"])
            if state == "narrower":
                continue  # the uplink's state, about the device below it (PCIE-004)
            checked[state] += 1
            from_findings = said.get(card(device["address"]), set())
            if state in ("below", "capped", "idle"):
                assert state in from_findings, (where, state, from_findings)
            else:
                assert not from_findings & {"below", "capped"}, (where, state, from_findings)
            if state == "ok":  # judged healthy: its current and its best link were both known
                link = links.get(device["address"], {})
                now, best = link.get("current") or {}, link.get("max") or {}
                assert any(now.get(f) and best.get(f) for f in ("generation", "width")), (where, link)
            if device["address"] in gpus and state == "idle":
                assert "idle" in from_findings, where
            shown = metrics.get(device["address"])
            if shown and device["kind"] in ("nic", "rdma") and state in ("ok", "below", "capped"):
                now = (shown.get("gpuops_fabric_pcie_link_generation"), shown.get("gpuops_fabric_pcie_link_width"))
                best = (shown.get("gpuops_fabric_pcie_link_max_generation"),
                        shown.get("gpuops_fabric_pcie_link_max_width"))
                if None not in now + best:
                    # ok: at its best; below or capped: under its own best (capped: at the slot's)
                    assert (now == best) == (state == "ok"), (where, state, now, best)
    # the walk met every verdict it can tell apart (the check above could fail on each)
    assert all(checked.values()), checked


@pytest.mark.parametrize("kind, current, best, slot, verdict", [
    ("nic", (3, 8), (4, 16), None, "below"),
    ("nic", (3, 16), (4, 16), None, "below"),  # NICs do not lower their generation for power
    ("accelerator", (1, 16), (4, 16), None, "idle"),
    ("accelerator", (4, 8), (4, 16), None, "below"),  # width does not drop at idle
    ("nic", (3, 16), (4, 16), (3, 16), "capped"),  # a Gen4 card in a Gen3 slot, at what the slot allows
    ("rdma", (4, 16), (4, 16), (5, 16), "ok"),
    ("nic", (None, 16), (None, None), None, "unknown"),
])
def test_the_verdicts(kind, current, best, slot, verdict):
    def side(pair):
        return {"generation": pair[0], "width": pair[1]}
    got = link_verdict(kind, {"current": side(current), "max": side(best)}, side(slot) if slot else None)
    assert got["verdict"] == verdict, got
