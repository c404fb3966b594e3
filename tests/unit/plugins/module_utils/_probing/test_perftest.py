"""perftest's reports (ib_write_bw, ib_write_lat) parsed as users posted them (tests/fixtures/realdata/perftest-public,
see PROVENANCE.md there: Soft-RoCE, RoCE on ConnectX-5, InfiniBand HDR and NDR, mlx4 QDR, old and new releases,
failures) and as the test VMs' Soft-RoCE printed them (tests/fixtures/realdata/soft-roce-vm/perftest); bad input of
every shape costs bounded time and never raises."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import socket
import time

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.perftest import (
    BW_KEYS, LAT_KEYS, LAT_MIN_S, MAX_ROWS, MIB_GBITS, SETUP_S, parse_perftest, part_problem, perftest_argv,
    route_problem, run_client, run_server,
)

from conftest import REALDATA

PUBLIC = os.path.join(REALDATA, "perftest-public")
VMS = os.path.join(REALDATA, "soft-roce-vm", "perftest")


def read(name, folder=PUBLIC):
    with open(os.path.join(folder, name), "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def reports():
    return sorted(n for n in os.listdir(PUBLIC) if n.endswith(".txt"))


# A table row as a reader sees it: a line of numbers only, at least four of them (perftest's rows; the GID and
# address lines hold letters or colons).
ROW = re.compile(r"^\s*\d+(?:\s+[\d.]+){3,}\s*$")


@pytest.mark.parametrize("name", reports())
def test_every_posted_report_parses_and_keeps_each_row(name):
    text = read(name)
    parsed = parse_perftest(text)
    assert len(parsed["rows"]) == len([line for line in text.splitlines() if ROW.match(line)]), parsed
    keys = LAT_KEYS if "Latency" in (parsed["test"] or "") else BW_KEYS
    for row in parsed["rows"]:
        assert set(row) <= set(keys) and isinstance(row["bytes"], int) and row["iterations"] > 0, row
    if "Test" in text:
        assert parsed["test"].startswith("RDMA_Write") and parsed["settings"]["device"], parsed
    else:  # a failure, or a server that was never reached (its banner only)
        assert parsed["rows"] == [] and (parsed["errors"] or "Waiting for client" in text), parsed


def test_soft_roce_report_as_posted():
    """A Soft-RoCE pair on Ubuntu VMs (--report_gbits, -n 5 -s 3000): settings and the one row as printed."""
    client = parse_perftest(read("ib_write_bw-softroce-rxe-gbits-n5-client.txt"))
    assert client["test"] == "RDMA_Write BW Test"
    assert client["settings"] == {"device": "rxe0", "qps": 1, "transport": "IB", "connection": "RC", "mtu": "1024[B]",
                                  "link_type": "Ethernet", "gid_index": 1, "exchange": "Ethernet"}
    assert client["rows"] == [{"bytes": 3000, "iterations": 5, "bw_peak_gbps": 0.0844, "bw_average_gbps": 0.0844,
                               "msg_rate_mpps": 0.003516}]
    assert client["errors"] == [] and client["warnings"] == []


def test_the_test_vms_soft_roce_as_printed():
    """The test bed's own pair (perftest 4.5+0.17, Soft-RoCE over the bond under TCG): -D 5 prints a peak of 0.00
    (not measured: None), the average as printed; the latency table's percentiles; both sides name the device and
    the training VLAN's GID index."""
    bw = parse_perftest(read("ib_write_bw-client.txt", VMS))
    assert bw["settings"] == {"device": "rxe0", "qps": 1, "transport": "IB", "connection": "RC", "mtu": "4096[B]",
                              "link_type": "Ethernet", "gid_index": 1, "exchange": "Ethernet"}
    assert bw["rows"] == [{"bytes": 65536, "iterations": 779, "bw_peak_gbps": None, "bw_average_gbps": 0.14,
                           "msg_rate_mpps": 0.000258}]
    assert parse_perftest(read("ib_write_bw-server.txt", VMS))["rows"] == bw["rows"]
    lat = parse_perftest(read("ib_write_lat-client.txt", VMS))
    assert lat["rows"] == [{"bytes": 2, "iterations": 200, "t_min_us": 200.83, "t_max_us": 22361.24,
                            "t_typical_us": 280.09, "t_avg_us": 430.88, "t_stdev_us": 514.04, "p99_us": 5266.85,
                            "p999_us": 22361.24}]
    assert lat["errors"] == bw["errors"] == [] and lat["settings"]["gid_index"] == 1
    # a -D run elsewhere: the peak not measured there either, the average kept
    posted = parse_perftest(read("ib_write_bw-roce-rdmacm-duration-D300-mofed4.4-client.txt"))
    assert posted["rows"][0]["bw_peak_gbps"] is None and posted["rows"][0]["bw_average_gbps"] > 80


def test_a_figure_perftest_could_not_compute_leaves_the_rest_of_the_row():
    """The VMs' ib_write_lat on a busy machine (one write of 445 ms): perftest printed t_stdev as -nan, on both ends.
    The row stands, that figure is None (not measured); a field that is neither a number nor nan/inf still makes the
    line no row, and a count that is not one (bytes, iterations) is never None."""
    for side in ("client", "server"):
        lat = parse_perftest(read("ib_write_lat-stdev-nan-loaded-host-%s.txt" % side, VMS))
        assert len(lat["rows"]) == 1 and lat["errors"] == [], lat
        row = lat["rows"][0]
        assert row["t_stdev_us"] is None and row["iterations"] == 1000 and row["bytes"] == 2
        assert row["t_max_us"] > 440000 and 0 < row["t_typical_us"] < row["p99_us"] < row["p999_us"], row
    assert parse_perftest(read("ib_write_lat-stdev-nan-loaded-host-client.txt", VMS))["rows"][0]["p99_us"] == 6849.22
    head = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   " \
           "99% percentile[usec]   99.9% percentile[usec]\n"
    for cell, kept in (("inf", True), ("-INF", True), ("nan", True), ("n/a", False), ("12abc", False)):
        rows = parse_perftest(head + " 2 1000 1.0 9.0 2.0 2.5 %s 8.0 9.0\n" % cell)["rows"]
        assert bool(rows) is kept and (not rows or rows[0]["t_stdev_us"] is None), (cell, rows)
    assert parse_perftest(head + " 2 nan 1.0 9.0 2.0 2.5 0.1 8.0 9.0\n")["rows"] == []
    bw_head = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    assert parse_perftest(bw_head + " 65536 779 -nan 0.14 0.000258\n")["rows"] == [
        {"bytes": 65536, "iterations": 779, "bw_peak_gbps": None, "bw_average_gbps": 0.14, "msg_rate_mpps": 0.000258}]
    # an average that is not a figure: the row says so, and the client takes it as no measurement, with its cause
    assert parse_perftest(bw_head + " 65536 5000 1.0 inf 0.1\n")["rows"][0]["bw_average_gbps"] is None
    run, _calls = answers((0, bw_head + " 65536 5000 1.0 inf 0.1\n", None))
    result = run_client(Module(), PART, "198.18.4.2", 5, time.time() + 60, run=run)
    assert result["gbps"] is None and result["error"] == "ib_write_bw: perftest printed no average bandwidth", result


def test_mib_per_second_is_converted_to_gbits():
    """OFED 24.07 prints MiB/sec, older releases MB/sec: both are 2^20 bytes (4020.54 MiB/s is 33.73 Gbit/s)."""
    parsed = parse_perftest(read("ib_write_bw-ib-loopback-run_perftest_loopback-ofed24.07-interleaved.txt"))
    assert parsed["rows"][0]["bw_average_gbps"] == round(4020.54 * MIB_GBITS, 4) == 33.7267
    old = parse_perftest(read("ib_write_bw-roce-rdmacm-mofed4.4-cx5-client.txt"))
    assert " #bytes     #iterations    BW peak[MB/sec]" in read("ib_write_bw-roce-rdmacm-mofed4.4-cx5-client.txt")
    assert 90 < old["rows"][0]["bw_average_gbps"] < 100  # a 100G ConnectX-5 over RoCE
    ndr = parse_perftest(read("ib_write_bw-ib-ndr-cx7-doca3.3-gbits-client.txt"))
    assert ndr["rows"][0]["bw_average_gbps"] == 392.34  # Gb/sec: as printed


def test_latency_columns_old_and_new():
    rxe = parse_perftest(read("ib_write_lat-softroce-rxe-n5-client.txt"))
    assert rxe["test"] == "RDMA_Write Latency Test"
    assert rxe["rows"] == [{"bytes": 64, "iterations": 5, "t_min_us": 175.75, "t_max_us": 210.59,
                            "t_typical_us": 191.96, "t_avg_us": 191.96, "t_stdev_us": 16.0, "p99_us": 210.59,
                            "p999_us": 210.59}]
    # -D: four columns, no percentiles; the CPU frequency lines between header and row are warnings
    duration = parse_perftest(read("ib_write_lat-roce-rdmacm-duration-D300-mofed4.4-client.txt"))
    assert duration["rows"] == [{"bytes": 2, "iterations": 58732912, "t_avg_us": 1.28, "tps_average": 391518.7}]
    assert len(duration["warnings"]) == 2 and duration["errors"] == []
    sizes = parse_perftest(read("ib_write_lat-ib-hdr-cx6-all-sizes-cpufreq-warnings-client.txt"))
    assert [r["bytes"] for r in sizes["rows"]] == [2 ** k for k in range(1, 24)]


def test_failures_are_errors_with_no_rows():
    refused = parse_perftest(read("ib_write_bw-couldnt-connect-18515-client.txt"))
    assert refused["rows"] == [] and refused["errors"][0] == "Couldn't connect to 192.168.125.211:18515"
    rtr = parse_perftest(read("ib_write_bw-roce-gid0-zero-gid-failed-modify-qp-rtr-client.txt"))
    assert rtr["settings"]["gid_index"] == 0 and rtr["rows"] == []
    assert rtr["errors"] == ["Failed to modify QP 218 to RTR", "Unable to Connect the HCA's through the link"]
    keys = parse_perftest(read("ib_write_bw-rdmacm-R-x722-ethernet_read_keys-server.txt"))
    assert keys["errors"][0] == "ethernet_read_keys: Couldn't read remote address"
    waiting = parse_perftest(read("ib_write_bw-roce-gid0-zero-gid-server-waiting-banner-only.txt"))
    assert waiting["rows"] == [] and waiting["errors"] == [] and waiting["test"] is None


def test_library_warnings_are_not_errors():
    parsed = parse_perftest(read("ib_write_bw-roce-libibverbs-warnings-server-excerpt-truncated.txt"))
    assert parsed["errors"] == [] and all(w.startswith("libibverbs: Warning") for w in parsed["warnings"])


HEADER = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"


@pytest.mark.parametrize("text", [
    "", None, b"\xff\xfe\x00", 42, "#bytes\n1 2 3\n", HEADER, HEADER + " 65536 5000 1.0 1.0\n", HEADER + " -5 5000 1.0 1.0 0.1\n",
    HEADER.replace("Gb/sec", "KB/sec") + " 65536 5000 1.0 1.0 0.1\n", " GID index : x\n Mtu : \n : \n",
    "\x00" * 5000, "Device : " + "a" * 100000,
])
def test_bad_reports_give_no_figures(text):
    parsed = parse_perftest(text)
    assert parsed["rows"] == [] and set(parsed) == {"test", "settings", "rows", "errors", "warnings"}
    assert all(len(v) <= 1000 for v in parsed["settings"].values() if isinstance(v, str))


def test_output_without_end_is_bounded():
    """Ten megabytes with no line end, a million rows, a million error lines: bounded in time, rows and lines kept."""
    for text in ("9" * (10 << 20), HEADER + " 65536 5000 1.0 1.0 0.1\n" * 1000000,
                 "Couldn't connect to x\n" * 1000000):
        began = time.monotonic()
        parsed = parse_perftest(text)
        assert time.monotonic() - began < 5
        assert len(parsed["rows"]) <= MAX_ROWS and len(parsed["errors"]) <= 20


@pytest.mark.parametrize("name", reports())
def test_truncated_anywhere_never_raises(name):
    text = read(name)
    for cut in range(0, len(text), max(1, len(text) // 60)):
        parsed = parse_perftest(text[:cut])
        assert all(set(row) >= {"bytes", "iterations"} for row in parsed["rows"])


# ---- running a pair: perftest needs an RDMA device, which this machine has not; the run boundary (run_capped) is
# replaced by one that answers with the real outputs above, the VMs run the real thing (tests/vm)

class Module(object):
    def __init__(self, missing=()):
        self.missing = missing

    def get_bin_path(self, name, required=False):
        return None if name in self.missing else "/usr/bin/" + name


def answers(*outputs):
    """A run_capped that answers each call with the next output, recording the argv and limit."""
    calls = []

    def run(argv, limit, max_bytes):
        calls.append((argv, limit))
        code, out, why = outputs[min(len(calls), len(outputs)) - 1]
        return code, out, "", why
    return run, calls


PART = {"device": "rxe0", "port": 1, "gid_index": 1, "tcp_port": 18515, "link_layer": "Ethernet"}


def test_argv_is_a_list_of_checked_values():
    assert perftest_argv("/usr/bin/ib_write_bw", PART, ["-D", "5"], "198.18.4.2") == [
        "/usr/bin/ib_write_bw", "-d", "rxe0", "-i", "1", "-p", "18515", "-F", "-x", "1", "-D", "5", "198.18.4.2"]
    assert "-x" not in perftest_argv("ib_write_lat", dict(PART, gid_index=None), [])  # InfiniBand: no index
    assert part_problem(PART) is None and part_problem({"skip": "no RDMA port"}) is None
    for bad in (dict(PART, device="-x"), dict(PART, device="../rxe0"), dict(PART, device="rxe0;reboot"),
                dict(PART, device=None), dict(PART, port=0), dict(PART, port=True), dict(PART, gid_index="1"),
                dict(PART, tcp_port=70000), dict(PART, tcp_port=65535), dict(PART, lat_iterations=0),
                dict(PART, lat_iterations="200"), dict(PART, lat_iterations=10 ** 6), "rxe0"):
        assert part_problem(bad), bad


def test_client_tries_again_until_the_server_is_up_then_measures():
    refused = read("ib_write_bw-couldnt-connect-18515-client.txt")
    run, calls = answers((1, refused, None), (0, read("ib_write_bw-client.txt", VMS), None),
                         (0, read("ib_write_lat-client.txt", VMS), None))
    result = run_client(Module(), PART, "198.18.4.2", 5, time.time() + 60, run=run)
    assert [c[0][0] for c in calls] == ["/usr/bin/ib_write_bw"] * 2 + ["/usr/bin/ib_write_lat"]
    assert calls[0][0][-3:] == ["5", "--report_gbits", "198.18.4.2"] and calls[2][0][-3:] == ["-n", "1000",
                                                                                              "198.18.4.2"]
    # ib_write_lat on the next TCP port: the bandwidth server's socket may still be open when the client is done
    ports = [c[0][c[0].index("-p") + 1] for c in calls]
    assert ports == ["18515", "18515", "18516"]
    assert result["error"] is None and result["gbps"] == 0.14 and result["latency"]["p99_us"] == 5266.85
    assert result["bandwidth"]["iterations"] == 779


def test_latency_runs_until_the_slot_ends_and_is_started_only_with_time_for_it():
    """ib_write_lat is a ping-pong: its client may take the rest of the round's slot (under emulation on a busy
    machine it took 8 s and more, and the server waits for the slot's end anyway); ib_write_bw keeps its own bound.
    A latency server not up yet is tried again only while LAT_MIN_S of the slot is left."""
    until = time.time() + 60
    bandwidth, latency = read("ib_write_bw-client.txt", VMS), read("ib_write_lat-client.txt", VMS)
    run, calls = answers((0, bandwidth, None), (0, latency, None))
    assert run_client(Module(), PART, "198.18.4.2", 5, until, run=run)["error"] is None
    assert calls[0][1] == 5 + SETUP_S and 58 < calls[1][1] <= 60, calls
    refused = read("ib_write_bw-couldnt-connect-18515-client.txt").replace("18515", "18516")
    run, calls = answers((0, read("ib_write_bw-client.txt", VMS), None), (1, refused, None))
    result = run_client(Module(), PART, "198.18.4.2", 5, time.time() + LAT_MIN_S + 1.5, run=run)
    assert 2 <= len(calls) <= 6 and result["latency"] is None and result["gbps"] == 0.14
    assert result["error"].startswith("ib_write_lat: no TCP connection to the peer's perftest"), result


def test_client_names_what_it_can_see():
    rtr = read("ib_write_bw-roce-gid0-zero-gid-failed-modify-qp-rtr-client.txt")
    run, _calls = answers((1, rtr, None))
    result = run_client(Module(), PART, "198.18.4.2", 5, time.time() + 60, run=run)
    assert result["gbps"] is None and result["error"].startswith(
        "ib_write_bw: the queue pair did not connect (the GID index or its type, the path MTU, or no route between "
        "the two GIDs): Failed to modify QP 218 to RTR")
    # refused until the slot is over: the connection is named, not retried past it
    run, calls = answers((1, read("ib_write_bw-couldnt-connect-18515-client.txt"), None))
    result = run_client(Module(), PART, "198.18.4.2", 5, time.time() + 16, run=run)
    assert len(calls) < 5 and result["error"].startswith("ib_write_bw: no TCP connection to the peer's perftest")
    run, _calls = answers((None, "", "ib_write_bw: no end within 15 s"))
    assert run_client(Module(), PART, "x", 5, time.time() + 60, run=run)["error"] == (
        "ib_write_bw: ib_write_bw: no end within 15 s, having printed nothing: no answer from the peer's perftest (its "
        "TCP port dropped by a firewall, or the path down)")
    assert run_client(Module(missing=("ib_write_lat",)), PART, "x", 5, time.time() + 60, run=answers(
        (0, read("ib_write_bw-client.txt", VMS), None))[0])["error"] == "perftest is not installed (ib_write_lat)"
    assert run_client(Module(), PART, "x", 5, time.time(), run=run)["error"] == (
        "ib_write_bw: no time left in the round's slot")


def test_a_peer_it_cannot_reach_is_explained_by_the_route_it_sees():
    """Refused until the slot is over, or silent until killed: the kernel's route to the peer is looked up (nothing
    sent) and named when it explains it; a route that is this end's own adds nothing. The lookup itself, on this
    machine's loopback: the route is the bind address's, or leaves from another address."""
    refused = read("ib_write_bw-couldnt-connect-18515-client.txt")
    asked = []

    def route(server, bind):
        asked.append((server, bind))
        return "no route to %s (Invalid argument)" % server
    run, _calls = answers((1, refused, None))
    result = run_client(Module(), PART, "198.18.5.1", 5, time.time() + 16, run=run, bind="198.18.5.2", route=route)
    assert asked == [("198.18.5.1", "198.18.5.2")] and result["error"].startswith(
        "ib_write_bw: no TCP connection to the peer's perftest") and result["error"].endswith(
        "; no route to 198.18.5.1 (Invalid argument)"), result
    # silent until its time was up: no answer from the peer, and the route asked about too
    run, _calls = answers((None, "", "/usr/bin/ib_write_bw: no end within 15 s"))
    result = run_client(Module(), PART, "198.18.5.1", 5, time.time() + 60, run=run, bind="198.18.5.2",
                        route=lambda server, bind: None)
    assert result["error"] == ("ib_write_bw: /usr/bin/ib_write_bw: no end within 15 s, having printed nothing: no "
                               "answer from the peer's perftest (its TCP port dropped by a firewall, or the path "
                               "down)"), result
    # a queue pair that did not connect is not a routing question
    asked[:] = []
    run, _calls = answers((1, read("ib_write_bw-roce-gid0-zero-gid-failed-modify-qp-rtr-client.txt"), None))
    run_client(Module(), PART, "198.18.5.1", 5, time.time() + 60, run=run, bind="198.18.5.2", route=route)
    assert asked == []
    assert route_problem("127.0.0.1", "127.0.0.1") is None and route_problem("127.0.0.1") is None
    assert route_problem("localhost") is None and route_problem("") is None  # names are never resolved
    if socket.has_ipv6 and os.path.exists("/proc/net/if_inet6"):  # one address, spelt two ways, is the same
        assert route_problem("::1", "0:0:0::1") is None, route_problem("::1", "0:0:0::1")
        assert route_problem("::1", "fd00::1").startswith("the kernel routes ::1 from ::1, not from")
    assert route_problem("127.0.0.1", "198.18.5.2") == (
        "the kernel routes 127.0.0.1 from 127.0.0.1, not from this end's address 198.18.5.2")


def test_server_waits_until_the_deadline_and_says_so():
    run, calls = answers((0, read("ib_write_bw-server.txt", VMS), None),
                         (0, read("ib_write_lat-server.txt", VMS), None))
    assert run_server(Module(), PART, 5, time.time() + 30, run=run) == []
    assert calls[0][0][-3:] == ["-D", "5", "--report_gbits"] and calls[1][0][-2:] == ["-n", "1000"]
    # the plan's count, where it gave one (both ends alike)
    run, calls = answers((0, read("ib_write_bw-server.txt", VMS), None), (0, read("ib_write_lat-server.txt", VMS),
                                                                          None))
    assert run_server(Module(), dict(PART, lat_iterations=200), 5, time.time() + 30, run=run) == []
    assert calls[1][0][-2:] == ["-n", "200"]
    assert [c[0][c[0].index("-p") + 1] for c in calls] == ["18515", "18516"]
    assert "198.18.4.2" not in calls[0][0] and 0 < calls[0][1] <= 30
    run, _calls = answers((None, read("ib_write_bw-roce-gid0-zero-gid-server-waiting-banner-only.txt"),
                           "ib_write_bw: no end within 29 s"))
    assert run_server(Module(), PART, 5, time.time() + 30, run=run) == [
        "ib_write_bw: did not end within the slot: no client came, or the run stalled (ib_write_bw: no end within "
        "29 s)"]
