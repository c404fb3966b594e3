"""The audit's Prometheus metrics (metrics.prom), from one audit of real captures and the hand-written nodes, read
back by the Prometheus project's own Python parser (prometheus_client); promtool and node_exporter read them in
tests/integration/test_prometheus.py."""

import copy
import datetime
import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.links import link_rows
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import (
    FAMILIES, render_prometheus,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit


def audit(inputs):
    result, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00", "0.1.0")
    assert errors == []
    return result


@pytest.fixture(scope="module")
def inputs(healthy, broken, realdata):
    return {
        "healthy": {"facts": healthy},
        "broken": {"facts": broken,
                   "waivers": [{"rule": "BOND-002", "hosts": "broken", "reason": "switch LAG pending",
                                "expires": "2027-01-31"}]},
        "sl390": {"facts": gather(source="hwloc_xml",
                                  path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))},
        "gone": {"facts": None, "status": "unreachable", "reason": "ssh: connect to host 127.0.0.1 port 1"},
    }


@pytest.fixture(scope="module")
def report(inputs):
    return audit(inputs)


def samples(text):
    """{metric name: {frozenset(labels): value}}, every family a gauge, no timestamps (node_exporter's textfile
    collector refuses them); no label set twice."""
    found = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            assert sample.timestamp is None, sample
            labels = frozenset(sample.labels.items())
            assert labels not in found.setdefault(sample.name, {}), (sample.name, sample.labels)
            found[sample.name][labels] = sample.value
    return found


def value(found, name, **labels):
    matches = [v for k, v in found.get(name, {}).items() if set(labels.items()) <= k]
    assert len(matches) == 1, (name, labels, matches)
    return matches[0]


def test_findings_hosts_and_counts_agree_with_the_report(report):
    found = samples(render_prometheus(report))
    assert value(found, "gpuops_fabric_hosts", status="audited") == 3
    assert value(found, "gpuops_fabric_hosts", status="unreachable") == 1
    assert value(found, "gpuops_fabric_host_status", host="gone") == 1
    assert ("status", "unreachable") in [k for k in found["gpuops_fabric_host_status"] if ("host", "gone") in k][0]
    for host in report["hosts"]:
        if host["status"] != "audited":
            assert not [k for k in found["gpuops_fabric_host_findings"] if ("host", host["name"]) in k]
            continue
        for severity in ("fail", "warn", "info"):
            assert value(found, "gpuops_fabric_host_findings", host=host["name"], severity=severity) == \
                host["counts"][severity]
        assert value(found, "gpuops_fabric_host_findings_waived", host=host["name"]) == host["waived"]
    active = [f for f in report["findings"] if not f["waived"]]
    assert sum(found["gpuops_fabric_rule_findings"].values()) == len(active)
    for finding in active:
        assert value(found, "gpuops_fabric_rule_findings", host=finding["host"] or "", rule=finding["id"],
                     severity=finding["severity"]) >= 1
    assert not [f for f in report["findings"] if f["waived"] and
                found["gpuops_fabric_rule_findings"].get(frozenset({("host", f["host"]), ("rule", f["id"]),
                                                                    ("severity", f["severity"])}))]


def test_link_facts_are_the_gathered_ones(report, inputs):
    found = samples(render_prometheus(report))
    broken = inputs["broken"]["facts"]
    for gpu in broken["gpus"]:
        labels = dict(host="broken", device="gpu%d" % gpu["index"], address=gpu["address"])
        assert value(found, "gpuops_fabric_pcie_link_width", **labels) == gpu["link"]["current"]["width"]
        assert value(found, "gpuops_fabric_pcie_link_max_width", **labels) == gpu["link"]["max"]["width"]
        assert value(found, "gpuops_fabric_pcie_link_generation", **labels) == gpu["link"]["current"]["generation"]
        assert value(found, "gpuops_fabric_pcie_link_bytes_per_second", **labels) == pytest.approx(
            gpu["link"]["current"]["gbytes_per_s"] * 1e9)
    # the hand-written broken node's GPU trained down to x8 shows as such (PCIE-001's subject)
    narrowed = [f["subject"] for f in report["findings"] if f["host"] == "broken" and f["id"] == "PCIE-001"]
    assert narrowed and all(value(found, "gpuops_fabric_pcie_link_width", host="broken", address=a) <
                            value(found, "gpuops_fabric_pcie_link_max_width", host="broken", address=a)
                            for a in narrowed)
    for nic in inputs["healthy"]["facts"]["nics"]:
        labels = dict(host="healthy", device=nic["name"])
        if nic["kind"] == "loopback":
            assert not [k for k in found["gpuops_fabric_nic_mtu_bytes"] if ("device", nic["name"]) in k
                        and ("host", "healthy") in k]
            continue
        assert value(found, "gpuops_fabric_nic_mtu_bytes", **labels) == nic["mtu"]
        if nic["speed_mbps"]:
            assert value(found, "gpuops_fabric_nic_speed_bytes_per_second", **labels) == nic["speed_mbps"] * 125000
        assert value(found, "gpuops_fabric_nic_up", **labels) == (1 if nic["operstate"] == "up" else 0)


def test_stability_rows_become_growth_and_rates(report):
    found = samples(render_prometheus(report))
    rows = [r for r in report["stability"] if any(v is not None for v in r["counts"].values())]
    assert rows and all(r["basis"] == "since boot" for r in rows)  # no baseline: lifetime totals, said so
    for row in rows:
        assert value(found, "gpuops_fabric_stability_window_seconds", host=row["host"], basis="boot") == \
            row["window_s"]
        for counter, count in row["counts"].items():
            if count is None:
                continue
            assert value(found, "gpuops_fabric_stability_growth", host=row["host"], basis="boot",
                         counter=counter) == count
            # from the count and the window, not the report's per-hour figure (rounded to 2 places for people)
            assert value(found, "gpuops_fabric_stability_rate_per_second", host=row["host"], basis="boot",
                         counter=counter) == pytest.approx(count / row["window_s"], rel=1e-12)


def test_a_windowed_row_is_labelled_so():
    row = {"host": "n1", "basis": "fabric_audit_window", "window_s": 2592000.0,
           "counts": {"link_flaps": 1, "interface_errors": None}, "tcp_retransmit_percent": 0.25}
    found = samples(render_prometheus({"stability": [row, dict(row, host="n2", basis="something else")]}))
    assert value(found, "gpuops_fabric_stability_growth", host="n1", basis="window", counter="link_flaps") == 1
    assert value(found, "gpuops_fabric_stability_rate_per_second", host="n1", counter="link_flaps") == \
        pytest.approx(1 / 2592000.0)  # one flap in 30 days is not 0
    assert value(found, "gpuops_fabric_tcp_retransmit_ratio", host="n1", basis="window") == pytest.approx(0.0025)
    assert not [k for k in found["gpuops_fabric_stability_growth"] if ("counter", "interface_errors") in k]
    assert not [k for s in found.values() for k in s if ("host", "n2") in k]  # a basis it does not know


def test_one_audit_gives_one_file(inputs, report):
    text = render_prometheus(report)
    assert render_prometheus(audit(dict(reversed(list(inputs.items()))))) == text
    names = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert names == [n for n, _h in FAMILIES if n in names]  # the fixed order
    samples(text)  # no timestamps


def test_label_values_are_escaped():
    odd = 'rack"7\\node\nb'
    report = {"summary": {"audited": 1}, "hosts": [{"name": odd, "status": "audited", "counts": {"fail": 1},
                                                   "waived": 0}],
              "findings": [{"host": odd, "id": "PCIE-001", "severity": "fail", "waived": False}],
              "links": link_rows({odd: {"nics": [{"name": "eth0", "kind": "physical", "mtu": 9000,
                                                  "operstate": "up"}]}})}
    text = render_prometheus(report)
    assert '{host="rack\\"7\\\\node\\nb",' in text
    found = samples(text)
    assert value(found, "gpuops_fabric_rule_findings", host=odd, rule="PCIE-001") == 1
    assert value(found, "gpuops_fabric_nic_mtu_bytes", host=odd, device="eth0") == 9000


def test_names_from_nodes_never_break_the_file_or_hide_a_device():
    """A name that is not UTF-8 (os.listdir gives it as a lone surrogate), a GPU that calls itself a NIC of an
    interface's name, two GPUs claiming one index, an operstate the kernel does not define, a fractional speed."""
    gpus = [{"index": 0, "address": "0000:01:00.0", "link": {"current": {"width": 16}}},
            {"index": 0, "address": "0000:02:00.0", "link": {"current": {"width": 8}}},
            {"index": None, "address": "eth0", "kind": "nic", "link": {"current": {"width": 4}}}]
    nics = [{"name": "eth0", "kind": "physical", "address": "0000:03:00.0", "mtu": 9000, "operstate": "up",
             "speed_mbps": 2.5},
            {"name": "eno\udcff\"x", "kind": "physical", "mtu": 1500, "operstate": "UP"}]
    facts = {"gpus": gpus, "nics": nics}
    text = render_prometheus({"links": link_rows({"n": facts})})
    text.encode("utf-8")  # what write_atomic does with it
    found = samples(text)
    widths = found["gpuops_fabric_pcie_link_width"]
    assert sorted(v for k, v in widths.items() if ("device", "gpu0") in k) == [8, 16]
    assert value(found, "gpuops_fabric_nic_mtu_bytes", device="eth0") == 9000  # not hidden by the GPU "eth0"
    assert value(found, "gpuops_fabric_nic_speed_bytes_per_second", device="eth0") == 312500
    assert value(found, "gpuops_fabric_nic_up", device="eth0") == 1
    assert value(found, "gpuops_fabric_nic_mtu_bytes", device="eno\\udcff\"x") == 1500
    assert not [k for k in found["gpuops_fabric_nic_up"] if ("device", "eno\\udcff\"x") in k]


@pytest.mark.parametrize("junk", [None, "16", True, float("nan"), float("inf"), -1, 10 ** 30, [], {"a": 1}])
def test_facts_of_the_wrong_type_or_bounds_are_left_out(inputs, junk):
    facts = copy.deepcopy(inputs["healthy"]["facts"])
    facts["gpus"][0]["link"]["current"]["width"] = junk
    facts["gpus"][0]["index"] = junk
    facts["gpus"][1]["link"] = junk
    facts["nics"][2]["mtu"] = junk
    facts["nics"][2]["speed_mbps"] = junk
    facts["nics"][3] = junk
    facts["gpus"].append(junk)
    rows = link_rows({"n": facts, "m": junk})
    text = render_prometheus({"links": rows, "hosts": [], "findings": [], "summary": {}})
    found = samples(text)
    assert all(not isinstance(v, float) or math.isfinite(v) for s in found.values() for v in s.values())
    first = facts["gpus"][0]["address"]
    width = [v for k, v in found["gpuops_fabric_pcie_link_width"].items() if ("address", first) in k]
    assert width == []  # none of them is a width
    assert value(found, "gpuops_fabric_pcie_link_max_width", host="n", address=first) == 16
    nic = facts["nics"][2]["name"]
    assert not [k for k in found.get("gpuops_fabric_nic_mtu_bytes", {}) if ("interface", nic) in k]
