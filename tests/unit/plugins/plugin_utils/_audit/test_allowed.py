"""What the hardware allows NCCL's all_reduce in the audit (issue 33): the report's `allowed` section from one audit
of the hand-written nodes and a real capture, its table in report.md and report.html, its metric, and the figure a
host with a training interface in its intent gets."""

import copy
import datetime

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.allowed import allowed, host_row
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import (
    render_prometheus,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit


def _audit(inputs):
    report, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00", "0.1.0")
    assert errors == []
    return report


def test_the_section_its_tables_and_its_metric(healthy, realdata):
    sl390 = gather(source="hwloc_xml", path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))
    report = _audit({"a": {"facts": healthy}, "b": {"facts": healthy}, "sl390": {"facts": sl390},
                     "gone": {"facts": None, "status": "unreachable", "reason": "ssh"}})
    section = report["allowed"]
    assert [r["host"] for r in section["hosts"]] == ["a", "b", "sl390"]  # hosts with GPUs, audited
    a = section["hosts"][0]
    assert (a["gpus"], a["nodes"], a["node"]["busbw_gbytes_per_s"]) == (8, 3, 10.0)
    assert a["node"]["limited_by"] == "socket interconnect (intel-skylake)"
    assert a["across"]["busbw_gbytes_per_s"] == 10.0 and a["rails"][0] == "mlx5_0 (400 Gbit/s, roce)"
    sl = section["hosts"][2]
    assert sl["node"]["busbw_gbytes_per_s"] is None and sl["problem"].startswith("across 3 nodes: rails:")
    cluster = section["cluster"]
    assert (cluster["busbw_gbytes_per_s"], cluster["slowest_host"], cluster["complete"]) == (10.0, "a", False)
    assert cluster["limited_by"].endswith("; at most this: not known for sl390")
    markdown = render_markdown(report)
    assert "## What the hardware allows NCCL's all_reduce (bus bandwidth, large messages)" in markdown
    assert "| a | 8 | mlx5_0 (400 Gbit/s, roce)" in markdown
    assert "| all audited hosts (slowest: a) | - | - | - | - | 3 | 10 |" in markdown
    html = render_html(report)
    assert '<table id="allowed">' in html and "<td>all audited hosts (slowest: a)</td>" in html
    samples = dict(((s.labels["host"], s.labels["scope"]), s.value)
                   for family in text_string_to_metric_families(render_prometheus(report))
                   if family.name == "gpuops_fabric_nccl_allreduce_allowed_bytes_per_second" for s in family.samples)
    assert samples == {("a", "node"): 1e10, ("a", "nodes"): 1e10, ("b", "node"): 1e10, ("b", "nodes"): 1e10,
                       ("", "cluster"): 1e10}


def test_a_training_interface_in_the_intent_is_the_tcp_rail(healthy):
    expect = {"nccl_mode": "tcp", "networks": {"training": {"role": "training", "vlan": 100}},
              "attachments": {"training": "bond0"}}
    row = host_row("a", healthy, expect, 2)
    assert row["rails"] == ["bond0.100 (20 Gbit/s, socket)"]  # the bond's two 10G legs, the VLAN's MTU
    assert "bond0.100: 2 ports under it, their speeds added (NCCL's flows hash over them)" in row["notes"]
    assert "tcp over bond0.100, the training interface of the intent" in row["notes"]
    # two nodes: the bond's TCP goodput at MTU 9000, sent once per node by the Tree (x 2 x 15 / 16)
    assert row["across"]["limited_by"] == "network: 1 rail (TCP goodput (20 Gbit/s at MTU 9000)), Tree on two nodes"
    assert abs(row["across"]["busbw_gbytes_per_s"] - 20 * 8948 / 9038 / 8 * 30 / 16) < 0.001


def test_hosts_without_gpus_or_with_odd_facts_give_rows_that_say_why(healthy):
    nogpu = dict(copy.deepcopy(healthy), gpus=[])
    odd = dict(copy.deepcopy(healthy), gpus=[{"address": "0000:15:00.0", "vendor": "amd"}])
    section = allowed({"x": (nogpu, {}), "y": (odd, {}), "z": (healthy, None)})
    assert [r["host"] for r in section["hosts"]] == ["y", "z"]
    assert "the model holds NCCL's figures for NVIDIA GPUs" in section["hosts"][0]["problem"]
    assert section["cluster"]["slowest_host"] == "z"
    assert allowed({}) == {"hosts": [], "cluster": None}


def test_a_shape_the_model_refuses_is_a_row_problem_not_an_audit_error(healthy):
    """Found by review: facts the adapter reads into a shape the model then refuses (a 200 Tbit/s port rate)."""
    facts = copy.deepcopy(healthy)
    for device in facts["rdma"]:
        for port in device["ports"]:
            port["rate_gbps"] = 200000.0
    report = _audit({"a": {"facts": facts}})
    [row] = report["allowed"]["hosts"]
    assert row["node"] is None and "rails[0].gbits: 200000.0 is outside 0.001..100000" in row["problem"]
