"""PROBE-006: the rdma probe's results judged. The perftest figures are the test VMs' real Soft-RoCE outputs
(tests/fixtures/realdata/soft-roce-vm/perftest) read by the module's own parser; the entries around them are in
the shape throughput_probe's rounds leave, written by hand."""

import os

from conftest import REALDATA
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.perftest import parse_perftest

from test_stab_load import entry, judge, probes

VMS = os.path.join(REALDATA, "soft-roce-vm", "perftest")


def row(name):
    with open(os.path.join(VMS, name)) as handle:
        return parse_perftest(handle.read())["rows"][0]


def rdma(gbps=None, expected=96.0, error=None, skip=None, software=("rxe", "rxe")):
    bandwidth, latency = row("ib_write_bw-client.txt"), row("ib_write_lat-client.txt")
    if skip:
        return {"skip": skip}
    return {"device": "rxe0", "port": 1, "gid_index": 1, "link_layer": "Ethernet", "tcp_port": 18515, "skip": None,
            "peer_device": "rxe0", "peer_port": 1, "peer_gid_index": 1, "expected_gbps": expected,
            "min_fraction": 0.8, "basis": "the slower port's rate, 100 Gbit/s (rxe0:1 and rxe0:1), as NCCL counts a "
            "network line (0.96)", "notes": [], "software": list(software),
            "gbps": None if error else (bandwidth["bw_average_gbps"] if gbps is None else gbps),
            "bandwidth": None if error else bandwidth, "latency": None if error else latency, "error": error,
            "warnings": []}


def test_soft_roce_under_emulation_is_far_below_its_ports_rate(healthy):
    """0.14 Gbit/s over Soft-RoCE where the rxe ports say 100 Gbit/s: 0.15% of 96 expected, named as software RoCE,
    with the latency percentiles ib_write_lat printed."""
    [found], outcome = judge(healthy, probes(dict(entry(), rdma=rdma())), "PROBE-006")
    assert outcome[0] == "findings" and found["severity"] == "fail" and found["subject"] == "n1 -> n2 (training)"
    assert found["message"] == (
        "n1 -> n2 on training: RDMA writes 0.14 Gbit/s, 0.15% of the 96 Gbit/s expected (the slower port's rate, "
        "100 Gbit/s (rxe0:1 and rxe0:1), as NCCL counts a network line (0.96)) (software RoCE: rxe, rxe); below "
        "80%; latency (us) typical 280, p99 5.27e+03, p99.9 2.24e+04")
    evidence = found["evidence"]
    assert evidence["gbps"] == 0.14 and evidence["latency"]["p999_us"] == 22361.24 and evidence["gid_index"] == 1


def test_at_the_ports_rate_it_passes_and_unknown_rates_are_shown(healthy):
    found, outcome = judge(healthy, probes(dict(entry(), rdma=rdma(gbps=93.1))), "PROBE-006")
    assert found == [] and outcome[0] == "pass"
    [found], _outcome = judge(healthy, probes(dict(entry(), rdma=dict(rdma(), expected_gbps=None,
                                                                      basis="a port's rate unknown"))), "PROBE-006")
    assert found["severity"] == "info" and "0.14 Gbit/s; a port's rate unknown, not judged" in found["message"]


def test_a_pair_that_did_not_connect_or_was_not_paired(healthy):
    cause = ("ib_write_bw: the queue pair did not connect (the GID index or its type, the path MTU, or no route "
             "between the two GIDs): Failed to modify QP 218 to RTR")
    [found], _outcome = judge(healthy, probes(dict(entry(), rdma=rdma(error=cause))), "PROBE-006")
    assert found["severity"] == "fail" and found["message"] == (
        "n1 -> n2 on training: RDMA writes (rxe0:1) failed: " + cause)
    noted = dict(rdma(error=cause), notes=["active MTU 4096 on n1, 1024 on n2: the connection uses the smaller"])
    [found], _outcome = judge(healthy, probes(dict(entry(), rdma=noted)), "PROBE-006")
    assert found["message"].endswith(cause + " (the plan noted: active MTU 4096 on n1, 1024 on n2: the connection "
                                             "uses the smaller)")
    [found], _outcome = judge(healthy, probes(dict(entry(), rdma=rdma(skip="n2: no RDMA port under bond0.100 "
                                                                           "(RDMA devices: none)"))), "PROBE-006")
    assert found["severity"] == "warn" and found["message"] == (
        "n1 -> n2 on training: RDMA not measured: n2: no RDMA port under bond0.100 (RDMA devices: none)")


def test_bandwidth_without_latency_says_why(healthy):
    """ib_write_bw measured, ib_write_lat not (what the first run on the VMs showed): the figure and the error."""
    lost = dict(rdma(gbps=93.1), latency=None, error="ib_write_lat: ib_write_lat: no end within 10 s")
    [found], _outcome = judge(healthy, probes(dict(entry(), rdma=lost)), "PROBE-006")
    assert found["severity"] == "warn" and found["message"] == (
        "n1 -> n2 on training: RDMA writes 93.1 Gbit/s; latency not measured: ib_write_lat: ib_write_lat: no end "
        "within 10 s")
    [found], _outcome = judge(healthy, probes(dict(entry(), rdma=dict(lost, gbps=0.14))), "PROBE-006")
    assert found["severity"] == "fail" and found["message"].endswith("below 80%; latency not measured: "
                                                                     "ib_write_lat: ib_write_lat: no end within 10 s")


def test_without_the_rdma_probe_it_is_not_applicable_and_odd_values_do_not_break_it(healthy):
    found, outcome = judge(healthy, probes(entry()), "PROBE-006")
    assert found == [] and outcome[0] == "not_applicable" and "'rdma' in fabric_probes" in outcome[1]
    for odd in ({"gbps": "fast"}, {"gbps": float("nan"), "error": None}, {"latency": "x"}, {"expected_gbps": -1},
                {"min_fraction": 7}, {"software": None}):
        found, outcome = judge(healthy, probes(dict(entry(), rdma=dict(rdma(), **odd))), "PROBE-006")
        assert outcome[0] in ("findings", "pass"), (odd, outcome)


def test_each_rdma_measurement_is_a_report_row(healthy):
    """Measured, failed and not paired: each a row of report.json's measurements and of report.md's table."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.measurements import measurements
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import build_report, rdma_cells
    expects = {"n1": probes(dict(entry(), rdma=rdma()), dict(entry(), network="storage", rdma=rdma(error="refused")),
                            dict(entry(), peer="n3", rdma=rdma(skip="n3: no RDMA port under bond0.100")),
                            dict(entry(), peer="n4"))}
    rows = [r for r in measurements(expects) if r["kind"] == "perftest"]
    assert [(r["peer"], r["network"], r["gbps"], r["p99_us"], r["error"], r["skip"]) for r in rows] == [
        ("n2", "training", 0.14, 5266.85, None, None), ("n2", "storage", None, None, "refused", None),
        ("n3", "training", None, None, None, "n3: no RDMA port under bond0.100")]
    assert rdma_cells(rows[0], "-") == [
        "n1", "n2", "training", "rxe0:1 (1)", "0.14", "96", "280 / 5.27e+03 / 2.24e+04",
        "the slower port's rate, 100 Gbit/s (rxe0:1 and rxe0:1), as NCCL counts a network line (0.96)"]
    assert rdma_cells(rows[1], "-")[4] == "failed: refused" and rdma_cells(rows[2], "-")[3:5] == [
        "-", "not paired: n3: no RDMA port under bond0.100"]
    findings, _outcome = judge(healthy, expects["n1"], "PROBE-006")
    report = build_report({"n1": {"status": "audited", "reason": None}}, findings, {"n1": {}}, "x",
                          measurements=measurements(expects))
    page = render_markdown(report)
    assert "## Measured RDMA writes (perftest)" in page and "| n1 | n3 | training | - | not paired" in page
    # report.html: one table row per measurement, the cells escaped; junit.xml: the host suite's system-out
    from xml.etree import ElementTree
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.junit_report import render_junit
    html = render_html(report)
    table = html[html.index('<table id="rdma">'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 4 and "<td>rxe0:1 (1)</td><td>0.14</td><td>96</td>" in table, table
    assert "<td>not paired: n3: no RDMA port under bond0.100</td>" in table and "failed: refused" in table
    said = [e.text for e in ElementTree.fromstring(render_junit(report)).iter("system-out")]
    rdma_said = [t for t in said if t and "RDMA writes (perftest):" in t]
    assert len(rdma_said) == 1 and "peer n2, network training, port (GID index) rxe0:1 (1), write Gbit/s 0.14, " \
        "expected 96, latency typical / p99 / p99.9 us 280 / 5.27e+03 / 2.24e+04" in rdma_said[0], rdma_said
    # without the rdma probe neither says a word of it
    plain = build_report({"n1": {"status": "audited", "reason": None}}, [], {"n1": {}}, "x", measurements=[])
    assert 'id="rdma"' not in render_html(plain) and "RDMA writes" not in render_junit(plain)
