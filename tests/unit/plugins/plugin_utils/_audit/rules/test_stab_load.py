"""STAB-005 (latency under load) and STAB-006 (retransmits) on measurements in the shape the probes role leaves.
The idle pings are a real capture (tests/fixtures/probes/ping-jumbo-ok.txt) read by the module's own summarizer; the
loaded ones and the entries around them are hand-written (the parsers are tested on captures in _probing)."""

import copy
import os


from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import summarize_latency
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import evaluate_host
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import build_report
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.measurements import latency_row, measurements as measurements_of
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.stab.load import queue_budget

NO_EXPECT = {"gpu": {"width": None, "generation": None}, "nics": [], "rdma": False}
with open(os.path.join(REPO, "tests", "fixtures", "probes", "ping-jumbo-ok.txt")) as _handle:
    IDLE = dict(summarize_latency(_handle.read()), error=None)  # p50 0.209 ms


def loaded(*rtts, sent=None):
    lines = ["64 bytes from 198.18.1.2: icmp_seq=%d ttl=64 time=%s ms" % (i + 1, t) for i, t in enumerate(rtts)]
    sent = len(rtts) if sent is None else sent
    lines.append("%d packets transmitted, %d received, %d%% packet loss, time 3000ms" % (
        sent, len(rtts), 100 * (sent - len(rtts)) // sent))
    return dict(summarize_latency("\n".join(lines)), error=None)


def entry(gbps=0.94, latency=None, retransmits=3, sent=1000000000, mss=8948, speed=1000):
    share = round(100.0 * retransmits * mss / sent, 4) if retransmits is not None else None
    return {"role": "client", "peer": "n2", "network": "training", "gbps": gbps, "speed_mbps": speed,
            "expected_gbps": 0.99, "retransmits": retransmits, "bytes": sent, "mss": mss,
            "retransmit_percent": share, "latency": latency, "error": None}


def probes(*entries, **budgets):
    return dict(NO_EXPECT, probes=dict({"jumbo": [], "throughput": list(entries), "missing": [], "server_errors": [],
                                        "nccl": None}, **budgets))


def judge(facts, expect, rule):
    findings, outcomes = evaluate_host("n1", facts, expect)
    return [f for f in findings if f["id"] == rule], outcomes[rule]


def test_a_deep_queue_is_found(healthy):
    """1 Gbit/s measured: the budget is 1 MB at that rate, 8.51 ms; 48 ms of queue is about 5.6 MB."""
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(20.1, 44.9, 47.0, 48.3), "error": None}
    [found], outcome = judge(healthy, probes(entry(latency=latency)), "STAB-005")
    assert found["severity"] == "warn" and found["subject"] == "n1 -> n2 (training)"
    assert found["message"] == ("n1 -> n2 on training: ping p99 48.3 ms while iperf3 loads the path, p50 0.209 ms "
                                "idle: 48.1 ms of queue (about 5.65 MB at 0.94 Gbit/s), budget 8.51 ms "
                                "(1 MB of queue at 0.94 Gbit/s)")
    assert found["evidence"]["queue_bytes"] == 5650692 and found["evidence"]["jitter_ms"] == 3.4
    assert outcome[0] == "findings"


def test_a_shallow_queue_passes(healthy):
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(0.4, 0.9, 1.6, 2.2), "error": None}
    found, outcome = judge(healthy, probes(entry(latency=latency)), "STAB-005")
    assert found == [] and outcome[0] == "pass"


def test_the_budget(healthy):
    assert queue_budget({}, {"gbps": 0.94}) == (8.51, "1 MB of queue at 0.94 Gbit/s")
    assert queue_budget({}, {"gbps": 94.0}) == (1.0, "at least 1 ms")  # 0.085 ms would be scheduling noise
    assert queue_budget({}, {"gbps": None, "speed_mbps": 10000}) == (1.0, "at least 1 ms")
    assert queue_budget({}, {"gbps": None, "speed_mbps": 100}) == (80.0, "1 MB of queue at 0.1 Gbit/s")
    assert queue_budget({}, {}) == (1.0, "no rate known: 1 ms")
    assert queue_budget({"queue_delay_ms": 60}, {"gbps": 0.94}) == (60, "fabric_probe_queue_delay_ms")
    for junk in ("60", True, -1, float("nan"), None):  # not a usable budget: the derived one
        assert queue_budget({"queue_delay_ms": junk}, {"gbps": 0.94})[0] == 8.51
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(20.1, 44.9, 47.0, 48.3), "error": None}
    found, _outcome = judge(healthy, probes(entry(latency=latency), queue_delay_ms=60), "STAB-005")
    assert found == []


def test_no_reply_under_load(healthy):
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(sent=18), "error": None}
    [found], _outcome = judge(healthy, probes(entry(latency=latency)), "STAB-005")
    assert "none of 18 pings got a reply while iperf3 loaded the path (idle p50 0.209 ms)" in found["message"]


def test_not_judged_without_latency(healthy):
    _found, outcome = judge(healthy, NO_EXPECT, "STAB-005")
    assert outcome[0] == "not_applicable" and "opt in" in outcome[1]
    for latency in (None, {"idle": None, "loaded": None, "error": "ping is not installed (iputils-ping)"},
                    {"idle": "x", "loaded": [1]}, {"idle": {"p50_ms": "0.2"}, "loaded": {"p99_ms": float("nan")}}):
        _found, outcome = judge(healthy, probes(entry(latency=latency)), "STAB-005")
        assert outcome[0] == "not_applicable" and "no latency under load" in outcome[1], latency


def test_retransmits(healthy):
    """3 of 111757 segments pass; 1664 of 1486661 (the real GCP run's figures) are 0.112% > 0.1%."""
    found, outcome = judge(healthy, probes(entry()), "STAB-006")
    assert found == [] and outcome[0] == "pass"
    [found], _outcome = judge(healthy, probes(entry(retransmits=1664, sent=2093219840, mss=1408)), "STAB-006")
    assert found["message"] == ("n1 -> n2 on training: 1664 retransmits of 1486661 segments (0.112%), budget 0.1%")
    lenient = probes(entry(retransmits=1664, sent=2093219840, mss=1408), max_retransmit_percent=0.5)
    found, _outcome = judge(healthy, lenient, "STAB-006")
    assert found == []
    for odd in (entry(retransmits=None), dict(entry(), retransmit_percent="1"), dict(entry(), retransmit_percent=-2)):
        _found, outcome = judge(healthy, probes(odd), "STAB-006")
        assert outcome[0] == "not_applicable"


def test_reports_show_latency_beside_goodput():
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(20.1, 44.9, 47.0, 48.3), "error": None}
    row = dict({"host": "n1", "kind": "throughput", "peer": "n2", "network": "training", "gbps": 0.94,
                "expected_gbps": 0.99, "basis": "link speed", "retransmits": 3, "retransmit_percent": 0.0027,
                "error": None}, **latency_row(latency))
    assert row["idle_p50_ms"] == 0.209 and row["loaded_p99_ms"] == 48.3 and row["loaded_loss_percent"] == 0.0
    assert latency_row(None)["loaded_p99_ms"] is None and latency_row({"idle": {"p50_ms": True}})["idle_p50_ms"] is None
    rows = [row, dict(row, peer="n3", idle_p50_ms=None, loaded_p50_ms=None, loaded_p99_ms=None, loaded_max_ms=None)]
    report = build_report({"n1": {"status": "audited", "reason": None}}, [], {"n1": {}}, "2026-12-02T00:00:00Z",
                          measurements=rows)
    markdown = render_markdown(copy.deepcopy(report))
    assert "| n1 | n2 | training | 0.94 | 0.99 | 0.0027% | 0.209 | 44.9 / 48.3 / 48.3 | 0% | link speed |" in markdown
    assert "| n1 | n3 | training | 0.94 | 0.99 | 0.0027% | - | - | 0% | link speed |" in markdown
    html = render_html(copy.deepcopy(report))
    assert '<svg class="latency"' in html and "<title>48.3 ms</title>" in html and "n1 -&gt; n2 (training)" in html


def test_failed_or_odd_measurements_are_not_judged(healthy):
    """A measurement that failed loaded nothing; its pings say nothing about a queue. Odd values never crash."""
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(20.1, 44.9, 47.0, 48.3), "error": None}
    for odd in (dict(entry(latency=latency), gbps=None, error="refused"), dict(entry(latency=latency), gbps=-5),
                dict(entry(latency=latency), gbps=10 ** 400), dict(entry(latency=latency), error="x")):
        _found, outcome = judge(healthy, probes(odd), "STAB-005")
        assert outcome[0] == "not_applicable", odd
    _found, outcome = judge(healthy, probes(entry(latency=dict(latency, idle=dict(IDLE, p50_ms=10 ** 400)))),
                            "STAB-005")
    assert outcome[0] == "not_applicable"
    rows = measurements_of({"n1": dict(NO_EXPECT, probes={"throughput": ["abc", None, 3, dict(entry(), gbps=10 ** 400,
                                                                                              latency={"idle": {"p50_ms": 10 ** 400}})],
                                                          "jumbo": "x"})})
    assert len(rows) == 1 and rows[0]["idle_p50_ms"] is None
    report = build_report({"n1": {"status": "audited", "reason": None}}, [], {"n1": {}}, "x", measurements=rows)
    assert "| n1 | n2 | training | ? | 0.99 |" in render_markdown(report)  # not a figure: shown as unknown
    render_html(report)


def test_pings_lost_under_load(healthy):
    """3 of 18 pings lost while loaded (none idle): small messages wait for a retransmission timeout."""
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(*([0.5] * 15), sent=18), "error": None}
    [found], _outcome = judge(healthy, probes(entry(latency=latency)), "STAB-005")
    assert "3 of 18 pings lost while iperf3 loads the path (16.7%; idle 0%)" in found["message"]
    latency = {"interval": 0.2, "idle": IDLE, "loaded": loaded(*([0.5] * 17), sent=18), "error": None}
    assert judge(healthy, probes(entry(latency=latency)), "STAB-005")[0] == []  # one ping is noise


def test_a_zero_retransmit_budget_means_none(healthy):
    [found], _outcome = judge(healthy, probes(entry(), max_retransmit_percent=0), "STAB-006")
    assert "budget 0%" in found["message"]
    [found], _outcome = judge(healthy, probes(dict(entry(retransmits=None), retransmit_percent=0.5)), "STAB-006")
    assert "some retransmits" in found["message"]


def test_latency_that_did_not_run_is_named(healthy):
    latency = {"interval": 0.2, "idle": None, "loaded": None, "error": "ping is not installed (iputils-ping)"}
    findings, _outcomes = evaluate_host("n1", healthy, probes(entry(latency=latency)))
    [found] = [f for f in findings if f["id"] == "PROBE-004"]
    assert found["message"] == ("latency under load from n1 to n2 on training not measured: ping is not installed "
                                "(iputils-ping)")
