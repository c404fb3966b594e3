"""fabric_probe_repeat: each pair measured several times. STAB-008 judges the spread between a pair's runs; PROBE-003,
PROBE-004, STAB-005 and STAB-006 judge each pair once. The entries are hand-written in the shape throughput_probe's
rounds leave (the parsers are tested on real iperf3 and ping captures in _probing)."""


from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.markdown_report import render_markdown
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import build_report
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.measurements import measurements as measurements_of
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import by_pair, median

from test_stab_load import IDLE, judge, loaded, probes


def run_of(run, runs, gbps, peer="n2", retransmits=0, latency=None, error=None, sent=1000000000):
    share = round(100.0 * retransmits * 8948 / sent, 4)
    return {"role": "client", "peer": peer, "network": "training", "gbps": None if error else gbps,
            "speed_mbps": 1000, "expected_gbps": 0.99, "min_fraction": 0.8, "basis": "link speed",
            "retransmits": None if error else retransmits, "bytes": sent, "mss": 8948,
            "retransmit_percent": None if error else share, "latency": latency, "error": error, "run": run,
            "runs": runs}


def runs(*rates, **kwargs):
    return [run_of(i + 1, len(rates), gbps, **kwargs) for i, gbps in enumerate(rates)]


def test_helpers():
    assert median([3]) == 3 and median([5, 1, 3]) == 3 and median([4, 1, 3, 2]) == 2.5
    entries = runs(0.9, 0.8) + runs(0.7, peer="n3") + ["not a dict"]
    assert [[(e["peer"], e["run"]) for e in group] for group in by_pair(entries)] == [
        [("n2", 1), ("n2", 2)], [("n3", 1)]]


def test_goodput_that_swings_between_runs(healthy):
    """0.94, 0.93 and 0.61 Gbit/s: 35% of the median 0.93, above the 10% budget; the slowest run is named."""
    [found], outcome = judge(healthy, probes(*runs(0.94, 0.93, 0.61)), "STAB-008")
    assert outcome[0] == "findings" and found["severity"] == "warn" and found["subject"] == "n1 -> n2 (training)"
    assert found["message"] == ("n1 -> n2 on training: goodput from 0.61 to 0.94 Gbit/s over 3 runs, a spread of "
                                "35.5% of the median 0.93 Gbit/s, budget 10%")
    evidence = found["evidence"]
    assert evidence["runs"] == [0.94, 0.93, 0.61] and evidence["slowest_run"] == 3
    assert evidence["spread_percent"] == 35.48 and evidence["budget_percent"] == 10


def test_steady_goodput_and_the_budget(healthy):
    found, outcome = judge(healthy, probes(*runs(0.941, 0.938, 0.940)), "STAB-008")
    assert found == [] and outcome[0] == "pass"
    found, outcome = judge(healthy, probes(*runs(0.94, 0.93, 0.61), max_goodput_spread_percent=50), "STAB-008")
    assert found == [] and outcome[0] == "pass"
    for odd in (0, -5, "10", True, float("nan"), 10 ** 400):  # not a budget: the default
        found, _outcome = judge(healthy, probes(*runs(0.94, 0.93, 0.61), max_goodput_spread_percent=odd), "STAB-008")
        assert [f["evidence"]["budget_percent"] for f in found] == [10], odd


def test_spread_is_not_judged_on_one_run_per_pair(healthy):
    found, outcome = judge(healthy, probes(*(runs(0.94) + runs(0.5, peer="n3"))), "STAB-008")
    assert found == [] and outcome[0] == "not_applicable" and "fabric_probe_repeat" in outcome[1]
    # a failed run and corrupt figures leave one usable run: still not judged, never a traceback
    odd = runs(0.94, 0.9, 0.9, 0.9, error=None)
    odd[1].update(gbps="fast")
    odd[2].update(gbps=float("nan"))
    odd[3].update(gbps=None, error="connection refused")
    found, outcome = judge(healthy, probes(*odd), "STAB-008")
    assert found == [] and outcome[0] == "not_applicable"


def test_goodput_is_judged_on_the_median(healthy):
    """One slow run of three is STAB-008's; PROBE-003 (below 80% of 0.99) judges the pair's typical goodput."""
    found, outcome = judge(healthy, probes(*runs(0.94, 0.93, 0.40)), "PROBE-003")
    assert found == [] and outcome[0] == "pass"
    [found], _outcome = judge(healthy, probes(*runs(0.40, 0.45, 0.93, retransmits=7)), "PROBE-003")
    assert found["message"] == ("n1 -> n2 on training: 0.45 Gbit/s (the median of 3 runs), 45% of the 0.99 Gbit/s "
                                "expected (link speed); below 80%, 21 retransmits")
    assert found["evidence"]["runs"] == [0.40, 0.45, 0.93] and found["evidence"]["gbps"] == 0.45


def test_a_failed_run_is_one_finding_per_pair(healthy):
    entries = runs(0.94, 0.93, 0.92)
    entries[1].update(gbps=None, error="unable to connect to server: Connection refused")
    [found], _outcome = judge(healthy, probes(*entries), "PROBE-004")
    assert found["message"] == ("iperf3 from n1 to n2 on training failed in 1 of 3 runs: unable to connect to server: "
                                "Connection refused")
    assert found["evidence"]["runs"] == [2]
    found, _outcome = judge(healthy, probes(*entries), "PROBE-003")
    assert found == []  # the two that ran: 0.935 Gbit/s


def test_a_server_that_failed_in_every_run_is_one_finding(healthy):
    """The server of a pair fails in 2 of 3 runs (the port was taken twice): one finding for the pair with both
    ports, not one a run; a server of another peer is its own finding."""
    def failed(run, port, peer="n2", error="bind failed: Address already in use"):
        return {"role": "server", "bind": "198.18.1.1", "port": port, "peer": peer, "network": "training",
                "run": run, "runs": 3, "round": run, "error": error}
    servers = [failed(1, 5201), failed(3, 5207, error="did not listen within 5 s"), failed(2, 5204, peer="n3")]
    found, _outcome = judge(healthy, probes(server_errors=servers), "PROBE-004")
    assert len(found) == 2
    pair = [f for f in found if f["subject"] == "iperf3 server 198.18.1.1 for n2"][0]
    assert pair["message"] == ("iperf3 server for n2 on training did not start in 2 of 3 runs: bind failed: Address "
                               "already in use; did not listen within 5 s")
    assert pair["evidence"]["ports"] == ["5201", "5207"] and pair["evidence"]["runs"] == [1, 3]
    other = [f for f in found if f["subject"] == "iperf3 server 198.18.1.1:5204"][0]
    assert other["message"] == "iperf3 server for n3 on training did not start in 1 of 3 runs: bind failed: Address " \
        "already in use"


def test_latency_and_retransmits_per_pair(healthy):
    deep = {"interval": 0.2, "idle": IDLE, "loaded": loaded(20.1, 44.9, 47.0, 48.3), "error": None}
    deeper = {"interval": 0.2, "idle": IDLE, "loaded": loaded(30.0, 60.0, 61.0, 70.2), "error": None}
    shallow = {"interval": 0.2, "idle": IDLE, "loaded": loaded(0.3, 0.4, 0.5, 0.6), "error": None}
    entries = [run_of(1, 3, 0.94, latency=deep), run_of(2, 3, 0.94, latency=shallow),
               run_of(3, 3, 0.94, latency=deeper)]
    [found], _outcome = judge(healthy, probes(*entries), "STAB-005")
    assert found["message"].startswith("n1 -> n2 on training: ping p99 70.2 ms while iperf3 loads the path")
    assert found["message"].endswith(" in 2 of 3 runs (the worst shown)")
    assert found["evidence"]["run"] == 3 and found["evidence"]["runs_found"] == 2
    # retransmits: 0, 0 and 600 of 111756 segments each (1 GB at MSS 8948): 0.179% of all, over the 0.1% budget
    entries = runs(0.94, 0.94) + [run_of(3, 3, 0.9, retransmits=600)]
    [found], _outcome = judge(healthy, probes(*entries), "STAB-006")
    assert found["message"] == ("n1 -> n2 on training: 600 retransmits of 335268 segments over 3 runs (0.179%), "
                                "budget 0.1%")
    assert found["evidence"]["runs"] == 3
    found, outcome = judge(healthy, probes(*(runs(0.94, 0.94) + [run_of(3, 3, 0.9, retransmits=200)])), "STAB-006")
    assert found == [] and outcome[0] == "pass"  # 0.06% of all, though the third run alone is 0.18%


def test_reports_name_the_runs():
    expects = {"n1": probes(*runs(0.94, 0.61))}
    rows = measurements_of(expects)
    assert [(r["peer"], r["run"], r["runs"], r["gbps"]) for r in rows] == [("n2", 1, 2, 0.94), ("n2", 2, 2, 0.61)]
    report = build_report({"n1": {"status": "audited"}}, [], {"n1": {}}, "2027-01-01T00:00:00+00:00",
                          measurements=rows)
    text = render_markdown(report)
    assert "| n1 | n2 (run 1 of 2) | training | 0.94 |" in text and "| n1 | n2 (run 2 of 2) | training | 0.61 |" in text


def test_what_a_review_found(healthy):
    """One run with its counts missing reads as before repeats existed; one run measured of three says so; a run
    label only for sane run numbers; the bounded plan's repeat of a pair with 3 hosts is gone (test_pairing)."""
    one = dict(run_of(1, 1, 0.9), retransmits=None, retransmit_percent=0.5, run=None, runs=None)
    [found], _outcome = judge(healthy, probes(one), "STAB-006")
    assert found["message"] == "n1 -> n2 on training: some retransmits of 111756 segments (0.5%), budget 0.1%"
    assert found["evidence"]["bytes"] == 1000000000 and "runs" not in found["evidence"]
    entries = runs(0.40, 0.9, 0.9)
    for entry in entries[1:]:
        entry.update(gbps=None, error="connection refused")
    [found], _outcome = judge(healthy, probes(*entries), "PROBE-003")
    assert "0.4 Gbit/s (1 of 3 runs measured)" in found["message"]
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import peer_label
    assert [peer_label({"peer": "n2", "run": run, "runs": 2}) for run in (1, 0, 3, True, "1")] == [
        "n2 (run 1 of 2)", "n2", "n2", "n2", "n2"]
    # several runs, one without its counts: the worst run's share, said so
    entries = runs(0.9, 0.9) + [dict(run_of(3, 3, 0.9), retransmits=None, retransmit_percent=0.4)]
    [found], _outcome = judge(healthy, probes(*entries), "STAB-006")
    assert found["message"] == "n1 -> n2 on training: some retransmits in the worst of 3 runs (0.4%), budget 0.1%"
