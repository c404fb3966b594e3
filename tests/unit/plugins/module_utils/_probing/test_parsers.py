"""Probe output parsers on real captured output (tests/fixtures/probes, see PROVENANCE.md there), the server
bookkeeping on real processes and sockets."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import listening, ours, parse_iperf3, stop
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_tests import parse_nccl_tests
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import (
    judge_ping, parse_ping, payload, ping_argv,
)

from conftest import REPO

PROBES = os.path.join(REPO, "tests", "fixtures", "probes")


def read(*name):
    with open(os.path.join(PROBES, *name)) as handle:
        return handle.read()


def test_payload_is_mtu_minus_headers():
    assert payload(9000, 4) == 8972 and payload(1500, 4) == 1472
    assert payload(9000, 6) == 8952 and payload(1500, 6) == 1452


def test_ping_argv_sets_dont_fragment_and_bounds():
    argv = ping_argv("ping", "fd00::2", 8952, 6, count=2, wait=0.5, source="fd00::1")
    assert argv[:2] == ["ping", "-6"] and argv[argv.index("-M") + 1] == "do"
    assert argv[argv.index("-s") + 1] == "8952" and argv[argv.index("-c") + 1] == "2"
    assert argv[-3:] == ["-I", "fd00::1", "fd00::2"] and "-q" not in argv


@pytest.mark.parametrize("name, sent, received, errors, local", [
    ("ping-jumbo-ok.txt", 3, 3, 0, None),
    ("ping-jumbo-peer-1500.txt", 3, 0, 0, None),
    ("ping-jumbo-local-1500.txt", 3, 0, 3, "message too long, mtu=1500"),
    ("ping-jumbo-local-1500-bound.txt", 3, 0, 3, "message too long, mtu=1500"),
    ("ping-unreachable.txt", 3, 0, 0, None),
])
def test_parse_ping_on_captures(name, sent, received, errors, local):
    assert parse_ping(read(name)) == {"sent": sent, "received": received, "errors": errors, "local_error": local}


def test_judge_ping():
    names = ("ping-jumbo-ok.txt", "ping-jumbo-peer-1500.txt", "ping-jumbo-local-1500.txt", "ping-unreachable.txt")
    ok, peer, local, gone = (parse_ping(read(n)) for n in names)
    assert judge_ping(ok, ok) == "ok"
    assert judge_ping(peer, ok) == "mtu"           # small pings pass, full-size ones vanish
    assert judge_ping(local, ok) == "mtu"          # this host refuses to send them
    assert judge_ping(gone, gone) == "unreachable"
    assert judge_ping(dict(ok, received=2), ok) == "loss"
    assert judge_ping(parse_ping("ping: unknown host"), ok) == "error"


def test_parse_iperf3_on_captures():
    good = parse_iperf3(read("iperf3-client-1gbit.json"))
    assert good["error"] is None and 0.9 < good["gbps"] < 1.0  # tc tbf at 1gbit
    assert isinstance(good["retransmits"], int) and good["seconds"] > 1.5
    refused = parse_iperf3(read("iperf3-client-refused.json"))
    assert refused["gbps"] is None and "Connection refused" in refused["error"]
    assert "printed no JSON" in parse_iperf3("iperf3: error - unable to connect\n")["error"]


@pytest.mark.parametrize("bits", ["1" + "0" * 400, "NaN", "Infinity", "-5", "true", '"9.4e9"'])
def test_parse_iperf3_refuses_a_rate_that_is_no_number(bits):
    # the real capture with its received rate replaced: a 400-digit integer made math.isfinite raise (a traceback)
    data = json.loads(read("iperf3-client-1gbit.json"))
    data["end"]["sum_received"]["bits_per_second"] = "@RATE@"
    result = parse_iperf3(json.dumps(data).replace('"@RATE@"', bits))
    assert result["gbps"] is None and "no end.sum_received" in result["error"]


def test_parse_nccl_tests_new_layout():
    spark = parse_nccl_tests(read("nccl-tests", "gb10-2node.txt"))
    assert [r["bytes"] for r in spark["rows"]] == [8192, 16384, 32768, 65536]
    assert spark["rows"][3] == {"bytes": 65536, "count": 16384, "type": "float", "redop": "sum", "root": -1,
                                "time_us": 67.93, "algbw": 0.96, "busbw": 0.96, "wrong": 0,
                                "in_place": {"time_us": 64.71, "algbw": 1.01, "busbw": 1.01, "wrong": 0}}
    assert spark["max_busbw"] == 0.96 and spark["avg_busbw"] is None  # the post stops before the Avg line
    assert [(r["rank"], r["host"], r["bus"], r["name"]) for r in spark["ranks"]] == [
        (0, "spark-d708", "000f:01:00", "NVIDIA GB10"), (1, "spark-dbf4", "000f:01:00", "NVIDIA GB10")]
    h100 = parse_nccl_tests(read("nccl-tests", "h100-2node-4nic-tree.txt"))
    assert len(h100["rows"]) == 5 and h100["max_busbw"] == 41.31 and h100["rows"][0]["in_place"]["busbw"] == 22.46
    rtx = parse_nccl_tests(read("nccl-tests", "rtx4090-8gpu-tree.txt"))
    assert len(rtx["ranks"]) == 8 and rtx["rows"][0]["busbw"] == 0.0 and "in_place" not in rtx["rows"][0]


def test_parse_nccl_tests_old_layout_and_average():
    text = read("nccl-tests", "v100-2node-10g-header.txt")
    header = parse_nccl_tests(text)
    assert header["rows"] == [] and [r["host"] for r in header["ranks"]] == ["ip-172-31-20-228", "ip-172-31-22-230"]
    # hand-written row in the old layout of that header (no root column), and the summary line nccl-tests prints
    text += ("  1310720000     327680000     float     sum   1134567   1.16    1.16  0e+00   1133210   1.16    1.16  0e+00\n"
             "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.155 \n")
    parsed = parse_nccl_tests(text)
    assert parsed["rows"][0]["root"] is None and parsed["rows"][0]["busbw"] == 1.16 and parsed["rows"][0]["wrong"] == 0
    assert parsed["avg_busbw"] == 1.155


def test_listening_reads_ipv6_addresses():
    sock = socket.socket(socket.AF_INET6)
    try:
        sock.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback in this environment")
    port = sock.getsockname()[1]
    sock.listen(1)
    try:
        assert listening(port, "::1") and not listening(port, "127.0.0.1")
    finally:
        sock.close()


def test_listening_reads_the_socket_table():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    assert not listening(port)
    sock.listen(1)
    try:
        assert listening(port) and listening(port, "127.0.0.1")
        assert not listening(port, "127.0.0.2")  # another address on the same port is not our server
    finally:
        sock.close()


@pytest.mark.skipif(not shutil.which("iperf3"), reason="iperf3 is installed by scripts/setup.sh")
def test_stop_ends_a_server_group_and_only_ours():
    proc = subprocess.Popen(["timeout", "30", "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", "45231"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 5
        while not listening(45231) and time.time() < deadline:
            time.sleep(0.05)
        assert ours(proc.pid)
        assert stop(proc.pid)
        assert proc.wait(timeout=5) is not None and not listening(45231)
        assert not ours(os.getpid())  # the test runner is no probe server: never signalled
        assert not stop(os.getpid())
    finally:
        if proc.poll() is None:
            proc.kill()
