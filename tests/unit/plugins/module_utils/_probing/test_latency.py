"""Latency under load and retransmits: ping's per-reply lines (a real capture in tests/fixtures/probes and real pings
on this machine's loopback), iperf3's segment counts (real captures), and throughput_probe's client run for real
against an iperf3 server on loopback, with pings idle and under load."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys
import time

from conftest import COLLECTIONS_ROOT, REALDATA, REPO, require_tool
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import listening, parse_iperf3
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import (
    MAX_OUTPUT, latency_argv, parse_rtts, percentile, summarize_latency,
)

PROBES = os.path.join(REPO, "tests", "fixtures", "probes")


def read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


def test_a_real_ping_capture():
    """Three replies, 0.214 / 0.209 / 0.203 ms (tests/fixtures/probes/ping-jumbo-ok.txt)."""
    summary = summarize_latency(read(PROBES, "ping-jumbo-ok.txt"))
    assert summary == {"sent": 3, "received": 3, "loss_percent": 0.0, "samples": 3, "min_ms": 0.203,
                       "p50_ms": 0.209, "p99_ms": 0.214, "max_ms": 0.214}


def test_no_reply_has_no_times():
    summary = summarize_latency(read(PROBES, "ping-unreachable.txt"))
    assert summary["sent"] == 3 and summary["received"] == 0 and summary["loss_percent"] == 100.0
    assert summary["p50_ms"] is None and summary["p99_ms"] is None and summary["samples"] == 0


def test_percentiles_are_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99 and percentile(values, 0) == 1
    assert percentile([5.0], 99) == 5.0 and percentile([], 50) is None
    assert percentile([3, 1, 2], 50) == 2  # unsorted input


def test_odd_ping_output():
    """Duplicates are no sample; busybox's "seq=" lines, "time<1 ms" and a name before the address read; junk is no
    sample; a flood of output is read only up to its bound, and a long line of junk in linear time."""
    text = ("64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=0.100 ms\n"
            "64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=0.300 ms (DUP!)\n"
            "64 bytes from 198.18.0.2: seq=2 ttl=64 time=0.200 ms\n"
            "64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time<1 ms\n"
            "64 bytes from node2 (198.18.0.2): icmp_seq=4 ttl=64 time=0.400 ms\n"
            "64 bytes from 198.18.0.2: icmp_seq=5 ttl=64 time=x ms\n"
            "Request timeout for icmp_seq 6\n")
    assert parse_rtts(text) == [0.1, 0.2, 1.0, 0.4]
    flood = "64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=0.1 ms\n" * (MAX_OUTPUT // 40)
    assert len(parse_rtts(flood)) < MAX_OUTPUT // 40
    assert parse_rtts("1 bytes from " + "icmp_seq=1 " * 300000) == []  # 3.3 MB on one line
    assert summarize_latency("")["sent"] is None and summarize_latency("\0\xff garbage")["p99_ms"] is None


def test_busybox_ping():
    """busybox ping's own layout (hand-written from its source's format strings: "seq=", "packets received")."""
    text = ("PING 198.18.0.2 (198.18.0.2): 56 data bytes\n"
            "64 bytes from 198.18.0.2: seq=0 ttl=64 time=0.080 ms\n"
            "64 bytes from 198.18.0.2: seq=1 ttl=64 time=0.120 ms\n\n"
            "--- 198.18.0.2 ping statistics ---\n"
            "3 packets transmitted, 2 packets received, 33% packet loss\n"
            "round-trip min/avg/max = 0.080/0.100/0.120 ms\n")
    summary = summarize_latency(text)
    assert (summary["sent"], summary["received"], summary["loss_percent"]) == (3, 2, 33.33)
    assert (summary["p50_ms"], summary["max_ms"]) == (0.08, 0.12)


def test_real_pings_on_loopback():
    ping = require_tool("ping")
    argv = latency_argv(ping, "127.0.0.1", 4, 5, interval=0.2, wait=1, source="127.0.0.1")
    assert argv[:2] == [ping, "-n"] and argv[-1] == "127.0.0.1" and "-M" not in argv
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    summary = summarize_latency(done.stdout)
    assert summary["sent"] == 5 and summary["received"] == 5 and summary["samples"] == 5
    assert 0 < summary["min_ms"] <= summary["p50_ms"] <= summary["p99_ms"] <= summary["max_ms"] < 50
    assert latency_argv("ping", "fd00::2", 6, 3)[:2] == ["ping", "-6"]


def test_retransmits_as_a_share_of_the_segments_sent():
    """A real GCP-to-IBM run: 1664 retransmits, 2093219840 bytes at MSS 1408 (1486661 segments) -> 0.1119%. The
    capture's CRLF line endings (stored as LF, PROVENANCE.md) read the same."""
    text = read(REALDATA, "ping-iperf3-under-load", "iperf3-J-tcp-gcp-syd-to-ibm-syd01-retr1664.json")
    for variant in (text, text.replace("\n", "\r\n")):
        result = parse_iperf3(variant)
        assert (result["retransmits"], result["bytes"], result["mss"]) == (1664, 2093219840, 1408)
        assert result["retransmit_percent"] == 0.1119 and result["gbps"] == 1.675
    local = parse_iperf3(read(PROBES, "iperf3-client-1gbit.json"))
    assert local["error"] is None and local["mss"] and local["retransmit_percent"] is not None


def test_iperf3_json_of_the_wrong_shape():
    for text in ("[]", "1", '{"end": []}', '{"end": {"sum_received": {"bits_per_second": "fast"}}}',
                 '{"end": {"sum_received": {"bits_per_second": NaN}}}'):
        result = parse_iperf3(text)
        assert result["gbps"] is None and result["error"], text
    odd = parse_iperf3(json.dumps({"start": {"tcp_mss_default": True},
                                   "end": {"sum_received": {"bits_per_second": 1e9, "seconds": "x"},
                                           "sum_sent": {"retransmits": -1, "bytes": 10}}}))
    assert odd["gbps"] == 1.0 and odd["retransmits"] is None and odd["retransmit_percent"] is None


def test_the_client_measures_latency_idle_and_under_load():
    """throughput_probe as Ansible runs it (module arguments on stdin), against a real one-off iperf3 server."""
    iperf3 = require_tool("iperf3")
    port = 45311
    server = subprocess.Popen(["timeout", "40", iperf3, "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not listening(port, "127.0.0.1") and time.time() < deadline:
            time.sleep(0.05)
        args = {"ANSIBLE_MODULE_ARGS": {"mode": "client", "bind": "127.0.0.1", "server": "127.0.0.1", "port": port,
                                        "duration": 2, "latency": True, "latency_idle_count": 4}}
        done = subprocess.run([sys.executable, "-m", "ansible_collections.gpuops.fabric.plugins.modules.throughput_probe"],
                              input=json.dumps(args), capture_output=True, text=True, timeout=60, check=False,
                              env=dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT))
        result = json.loads(done.stdout)
    finally:
        server.kill()
        server.wait()
    assert result["error"] is None and result["gbps"] > 0, result
    assert result["mss"] > 0 and result["retransmit_percent"] >= 0
    latency = result["latency"]
    assert latency["error"] is None and latency["interval"] == 0.2
    assert latency["idle"]["sent"] == 4 and latency["idle"]["received"] == 4
    # 2 s run: pings from 0.5 s in, every 0.2 s, ending before iperf3 stops
    assert latency["loaded"]["sent"] == 6 and latency["loaded"]["received"] >= 1
    assert "ms under load" in result["msg"]


def test_the_client_refuses_bad_latency_settings():
    for bad, said in (({"latency_interval": 0.0001}, "latency_interval"), ({"latency_idle_count": 0}, "latency_idle_count"),
                      ({"bind": "::1"}, "same IP version"), ({"bind": "eth0"}, "bind: 'eth0' is not an IP address")):
        args = {"ANSIBLE_MODULE_ARGS": dict({"mode": "client", "server": "127.0.0.1", "latency": True}, **bad)}
        done = subprocess.run([sys.executable, "-m", "ansible_collections.gpuops.fabric.plugins.modules.throughput_probe"],
                              input=json.dumps(args), capture_output=True, text=True, timeout=60, check=False,
                              env=dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT))
        result = json.loads(done.stdout)
        assert result["failed"] and said in result["msg"], result
