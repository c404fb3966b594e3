"""PCIE-005 (a device's link below its own maximum), PCIE-003 for ports that are down, and the rule engine's promise
that one host with odd facts never costs the others their audit.

Real capture: hwloc-westmere-qib-4numa (open-mpi/hwloc tests/hwloc/linux/40intel64-2g2n4c+pcilocality.tar.bz2, see its
PROVENANCE.md): its dual-port Broadcom BCM5709 (14e4:1639, eth2/eth3, both ports down) at 0000:03:00 trained to
2.5 GT/s x1 (0.25 GB/s). The capture's old kernel wrote current_link_* only, so the card's own maximum is unknown there;
the copies below plant what is missing and say so."""

import copy
import datetime
import os
import shutil

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import REPORT_RENDERERS as RENDERERS
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import (
    CATALOG, evaluate_host, evaluate_inventory,
)

NO_EXPECT = {"gpu": {"width": None, "generation": None}, "nics": [], "rdma": False}
WESTMERE = "hwloc-westmere-qib-4numa"
BCM5709 = os.path.join("sys", "devices", "pci0000:00", "0000:00:06.0", "0000:03:00.1")


def of(findings, rule_id):
    return [f for f in findings if f["id"] == rule_id]


def run(facts, expect=None):
    return evaluate_host("node", facts, expect or NO_EXPECT)


def _westmere_copy(roots, tmp_path, **files):
    root = tmp_path / "westmere"
    shutil.copytree(roots[WESTMERE], str(root), symlinks=True)
    for name, text in files.items():
        (root / BCM5709 / name).write_text(text + "\n")
    return gather(root=str(root))


ETHTOOL_10G = {"supported_modes": ["100baseT/Full", "1000baseT/Full", "10000baseT/Full"],
               "supported_speeds_mbps": [100, 1000, 10000], "max_supported_mbps": 10000, "speed_mbps": None}
ETHTOOL_1G = {"supported_modes": ["10baseT/Half", "10baseT/Full", "100baseT/Full", "1000baseT/Full"],
              "supported_speeds_mbps": [10, 100, 1000], "max_supported_mbps": 1000, "speed_mbps": None}


# ---- the real capture ---------------------------------------------------------------------------------------------
def test_real_capture_downtrained_bcm5709_as_captured(roots):
    facts = gather(root=roots[WESTMERE])
    eth3 = [n for n in facts["nics"] if n["name"] == "eth3"][0]
    assert eth3["pci_link"]["current"] == {"speed_gts": 2.5, "generation": 1, "width": 1, "gbytes_per_s": 0.25}
    assert eth3["pci_link"]["max"]["generation"] is None and eth3["operstate"] == "down"
    findings, outcomes = run(facts)
    # no maximum in the capture: PCIE-005 cannot judge and says why
    assert outcomes["PCIE-005"][0] == "not_applicable" and "maximum" in outcomes["PCIE-005"][1]
    # both ports down and no link modes in a capture: nothing to judge the slot against (only the QDR HCA is)
    assert [f["subject"] for f in of(findings, "PCIE-003")] == ["0000:43:00"]


def test_real_capture_with_its_maximum_is_a_finding_though_both_ports_are_down(roots, tmp_path):
    # planted: the BCM5709's LnkCap (PCIe 2.0 x4 per Broadcom's product brief), as a newer kernel writes it
    facts = _westmere_copy(roots, tmp_path, max_link_speed="5 GT/s", max_link_width="4")
    findings, outcomes = run(facts)
    (finding,) = of(findings, "PCIE-005")
    assert finding["severity"] == "fail" and finding["subject"] == "0000:03:00.1"
    assert finding["message"].startswith("NIC 0000:03:00.1 (eth3) runs at Gen1 x1 (0.25 GB/s), below its maximum "
                                         "Gen2 x4 (generation and width down)")
    assert finding["evidence"]["ports"] == ["eth3"]
    assert outcomes["PCIE-005"][0] == "findings"


def test_real_capture_down_ports_judged_by_their_link_modes(roots):
    facts = copy.deepcopy(gather(root=roots[WESTMERE]))
    # planted: what `ethtool eth2/eth3` would say on the live node (subset link_modes); a 10GBASE-T card, as the
    # issue describes the card, and the real BCM5709 (1000baseT)
    for nic in facts["nics"]:
        if nic["name"] in ("eth2", "eth3"):
            nic["link_modes"] = ETHTOOL_10G
    (finding,) = [f for f in of(run(facts)[0], "PCIE-003") if f["subject"] == "0000:03:00"]
    assert finding["message"].startswith("card 0000:03:00: 2 port(s) x 10 Gb/s need 2.5 GB/s, its slot gives 0.25 "
                                         "GB/s (Gen1 x1)")
    assert "eth2: port is down; judged against its fastest supported mode 10000baseT/Full" in finding["message"]
    assert finding["evidence"]["ports_gbps"] == [10.0, 10.0]
    for nic in facts["nics"]:
        if nic["name"] in ("eth2", "eth3"):
            nic["link_modes"] = ETHTOOL_1G
    # two 1 Gb/s ports need exactly the 0.25 GB/s a Gen1 x1 link gives: enough, no finding
    assert [f["subject"] for f in of(run(facts)[0], "PCIE-003")] == ["0000:43:00"]


def test_prometheus_e810_at_its_maximum_passes(roots):
    _findings, outcomes = run(gather(root=roots["prometheus-procfs-pci-fragments"]))
    assert outcomes["PCIE-005"] == ("pass", None)


# ---- hand-written facts: the edge cases -------------------------------------------------------------------------
def _link(gen, width, max_gen, max_width):
    rate = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}
    eff = {1: 0.8, 2: 0.8}

    def end(g, w):
        if g is None and w is None:
            return {"speed_gts": None, "generation": None, "width": None, "gbytes_per_s": None}
        gb = rate[g] * w * eff.get(g, 128.0 / 130.0) / 8 if g and w else None
        return {"speed_gts": rate.get(g), "generation": g, "width": w, "gbytes_per_s": gb}
    return {"current": end(gen, width), "max": end(max_gen, max_width)}


def _device(address, kind, link, parent="0000:00:01.0"):
    return {"address": address, "kind": kind, "link": link, "parent": parent, "chain": [parent]}


def _node(*devices, **extra):
    port = _device("0000:00:01.0", "root_port", _link(None, None, 5, 16), parent=None)
    facts = {"pci": [port] + list(devices), "nics": []}
    facts.update(extra)
    return facts


def test_gpu_idle_at_gen1_is_info_cannot_judge():
    facts = _node(_device("0000:17:00.0", "gpu", _link(1, 16, 5, 16)))  # no gpus facts: PCIE-005 judges it
    (finding,) = of(run(facts)[0], "PCIE-005")
    assert finding["severity"] == "info" and "idle, cannot judge" in finding["message"]


def test_gpu_width_down_is_a_finding_at_any_generation():
    facts = _node(_device("0000:17:00.0", "gpu", _link(1, 8, 5, 16)))
    (finding,) = of(run(facts)[0], "PCIE-005")
    assert finding["severity"] == "fail" and "(width down)" in finding["message"]


def test_gpus_in_the_gpus_facts_are_left_to_pcie_001_and_002(healthy):
    facts = copy.deepcopy(healthy)
    address = facts["gpus"][0]["address"]
    for where in [facts["gpus"][0]] + [d for d in facts["pci"] if d["address"] == address]:
        where["link"]["current"].update(generation=1, speed_gts=2.5)  # planted: idle GPU at Gen1
    findings, _outcomes = run(facts)
    assert [f["severity"] for f in of(findings, "PCIE-002")] == ["info"]
    assert of(findings, "PCIE-005") == []  # not reported twice


def test_nic_generation_down_with_port_down_fails():
    nic = _device("0000:41:00.0", "nic", _link(2, 8, 4, 8))
    facts = _node(nic, nics=[{"name": "ens1f0", "kind": "physical", "address": "0000:41:00.0", "card": "0000:41:00",
                              "speed_mbps": None, "operstate": "down", "carrier": False,
                              "pci_link": nic["link"]}])
    (finding,) = of(run(facts)[0], "PCIE-005")
    assert finding["severity"] == "fail" and "NIC 0000:41:00.0 (ens1f0) runs at Gen2 x8" in finding["message"]
    assert "(generation down)" in finding["message"] and "whether or not a port is up" in finding["message"]


def test_hca_limited_by_its_slot_is_a_warning():
    slot = _device("0000:00:03.0", "root_port", _link(3, 8, 3, 8), parent=None)
    hca = _device("0000:c1:00.0", "rdma", _link(3, 8, 4, 16), parent="0000:00:03.0")
    facts = {"pci": [slot, hca], "nics": []}
    (finding,) = of(run(facts)[0], "PCIE-005")
    assert finding["severity"] == "warn" and "what its slot 0000:00:03.0 allows" in finding["message"]
    hca["link"] = _link(3, 4, 4, 16)  # below what the slot allows too: a fault again
    (finding,) = of(run(facts)[0], "PCIE-005")
    assert finding["severity"] == "fail" and "its slot 0000:00:03.0 allows Gen3 x8" in finding["message"]


def test_no_maximum_known_is_not_applicable():
    facts = _node(_device("0000:41:00.0", "nic", _link(1, 1, None, None)))
    assert run(facts)[1]["PCIE-005"][0] == "not_applicable"
    assert run({"nics": []})[1]["PCIE-005"] == ("not_applicable", "facts subset 'pci' was not gathered")


def test_nic_at_its_maximum_passes():
    assert run(_node(_device("0000:41:00.0", "nic", _link(4, 16, 4, 16))))[1]["PCIE-005"] == ("pass", None)


def test_pcie_003_down_port_falls_back_to_rdma_rate_then_nothing():
    link = _link(3, 4, 3, 4)  # 3.94 GB/s
    nic = {"name": "ib0", "kind": "ipoib", "address": "0000:43:00.0", "card": "0000:43:00", "speed_mbps": None,
           "operstate": "down", "carrier": False, "pci_link": link}
    rdma = [{"name": "mlx5_0", "address": "0000:43:00.0", "ports": [{"port": 1, "rate_gbps": 100, "rate": "100 Gb/sec "
                                                                     "(4X EDR)"}]}]
    findings = of(run({"nics": [nic], "rdma": rdma})[0], "PCIE-003")
    assert len(findings) == 1 and "ib0: port is down; judged against its RDMA rate 100 Gb/s" in findings[0]["message"]
    assert run({"nics": [nic], "rdma": []})[1]["PCIE-003"] == ("pass", None)  # nothing known: nothing judged


def test_pcie_003_ports_at_different_speeds_add_up():
    link = _link(3, 8, 3, 8)  # 7.88 GB/s = 63 Gb/s
    ports = [{"name": n, "kind": "physical", "address": "0000:41:00.%d" % i, "card": "0000:41:00", "speed_mbps": s,
              "operstate": "up", "carrier": True, "pci_link": link}
             for i, (n, s) in enumerate((("a", 50000), ("b", 25000)))]
    (finding,) = of(run({"nics": ports})[0], "PCIE-003")
    assert "2 ports (50 + 25 Gb/s) need 9.38 GB/s" in finding["message"]


# ---- one host's odd facts never stop the audit --------------------------------------------------------------------
def _odd(healthy, **values):
    facts = copy.deepcopy(healthy)
    [n for n in facts["nics"] if n["name"] == "ens3np0"][0].update(values)
    return facts


EXPECT = {"gpu": {"width": None, "generation": None}, "nics": [{"name": "ens*", "speed_mbps": 400000, "mtu": 9000}],
          "rdma": False}


@pytest.mark.parametrize("values,rule_ids", [
    ({"speed_mbps": 10 ** 400}, ["PCIE-003"]),
    ({"speed_mbps": "fast", "mtu": "9000"}, ["NET-001", "NET-004", "PCIE-003"]),
    ({"name": None, "kind": None, "address": None}, ["NET-001", "NET-004"]),
])
def test_a_rule_that_raises_is_an_internal_error_finding(healthy, values, rule_ids):
    findings, outcomes = run(_odd(healthy, **values), EXPECT)
    errors = [f for f in findings if f.get("internal_error")]
    assert sorted(f["id"] for f in errors) == rule_ids
    assert sorted(r for r, (status, _why) in outcomes.items() if status == "error") == rule_ids
    for error in errors:
        assert error["severity"] == CATALOG[error["id"]].severity  # fail rules: fail, so the gate does not pass
        assert error["subject"] == "internal error" and error["host"] == "node"
        assert ("rule %s (%s) could not be evaluated on host node: " % (error["id"], error["title"])
                in error["message"])
        assert error["evidence"]["exception"] in error["message"] and error["evidence"]["where"]
    # every other rule still ran
    assert outcomes["PCIE-001"] == ("pass", None) and outcomes["BOND-001"][0] == "pass"


def test_info_rule_that_raises_is_a_warning(healthy, monkeypatch):
    rule = CATALOG["LINK-002"]

    def broken(ctx):
        raise KeyError("supported_speeds_mbps")
    monkeypatch.setitem(CATALOG, "LINK-002", rule._replace(check=broken))
    findings, outcomes = run(healthy)
    (error,) = of(findings, "LINK-002")
    assert error["severity"] == "warn" and "KeyError: 'supported_speeds_mbps'" in error["message"]
    assert outcomes["LINK-002"] == ("error", "KeyError: 'supported_speeds_mbps'")


def test_inventory_rule_that_raises_is_a_finding(healthy):
    odd = copy.deepcopy(healthy)
    for nic in odd["nics"]:
        nic["mtu"] = [9000]  # planted: a list where a number belongs (unhashable)
    expect = dict(EXPECT, nics=[{"name": "ens*", "speed_mbps": None, "mtu": None}])
    findings, outcomes = evaluate_inventory({"a": (healthy, expect), "b": (odd, expect)})
    assert outcomes["NET-002"][0] == "error"
    (error,) = [f for f in findings if f.get("internal_error")]
    assert error["id"] == "NET-002" and error["host"] is None and error["severity"] == "warn"


def test_audit_reports_every_host_though_one_has_a_400_digit_speed(healthy):
    waiver = {"rule": "PCIE-003", "hosts": "*", "reason": "known", "expires": "2027-06-30"}
    inputs = {"odd": {"facts": _odd(healthy, speed_mbps=10 ** 400), "waivers": [waiver]},
              "fine": {"facts": healthy}}
    report, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert errors == []
    assert sorted((h["name"], h["status"]) for h in report["hosts"]) == [("fine", "audited"), ("odd", "audited")]
    (error,) = [f for f in report["findings"] if f.get("internal_error")]
    assert error["host"] == "odd" and error["id"] == "PCIE-003" and "OverflowError" in error["message"]
    assert error["waived"] is False  # a rule that could not run is never waived
    assert report["outcomes"]["odd"]["PCIE-003"]["status"] == "error"
    assert report["outcomes"]["fine"]["PCIE-003"]["status"] == "pass"
    assert report["summary"]["findings"]["fail"] == 1
    for render in RENDERERS.values():
        assert render(report)
