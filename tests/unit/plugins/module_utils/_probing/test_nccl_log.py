"""NCCL_DEBUG=INFO output parsed: real logs posted publicly (tests/fixtures/realdata/nccl-logs, each with its
PROVENANCE.md and expected.json, what a person reads in it), and what no log may do to the parser."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import io
import json
import os

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._probing import nccl_log
from ansible_collections.gpuops.fabric.plugins.module_utils._lines import read_lines
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log import parse_nccl_log, transport_name
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log_view import host_view, merge_sections

LOGS = os.path.join(REPO, "tests", "fixtures", "realdata", "nccl-logs")
CASES = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(LOGS, "*", "nccl.log")))


def parsed_case(name):
    with open(os.path.join(LOGS, name, "nccl.log"), encoding="utf-8", errors="replace") as handle:
        return parse_nccl_log(read_lines(handle))


def expected(name):
    with open(os.path.join(LOGS, name, "expected.json")) as handle:
        return json.load(handle)


def gdr_reading(view):
    states = set(g["enabled"] for g in view["gdr"])
    if any(t.endswith("/GDRDMA") for t in view["transports"]):
        states.add(True)
    return {(True,): "enabled", (False,): "disabled", (False, True): "mixed"}.get(tuple(sorted(states)))


def test_there_are_real_logs_of_every_kind():
    assert len(CASES) >= 12
    faults = set(f for name in CASES for f in expected(name)["faults"])
    assert {"socket_fallback", "gdr_disabled", "init_error", "no_socket_interface"} <= faults
    assert any(not expected(name)["faults"] for name in CASES)  # healthy ones too
    for name in CASES:
        assert os.path.isfile(os.path.join(LOGS, name, "PROVENANCE.md")), name


@pytest.mark.parametrize("name", CASES)
def test_real_log_reads_as_a_person_reads_it(name):
    want = expected(name)
    parsed = parsed_case(name)
    view = merge_sections(parsed["sections"].values())
    assert parsed["nccl_lines"] > 0
    assert parsed["hosts"] == want["hosts"]
    assert view["version"] == want["version"]
    assert view["cuda_driver"] == want["cuda_driver"]
    assert view["network"] == want["network"]
    # the first "NET/<kind> : Using" line of a host; several hosts may list other devices
    listed = [[d["name"] for d in s["net_devices"]] for s in parsed["sections"].values() if s["net_devices"]]
    assert (want["net_devices"] or []) in (listed or [[]])
    assert sorted(view["transports"]) == want["transports"]
    assert view["nranks"] == want["nranks"]
    assert view["init_complete"] == want["init_complete"]
    assert view["warn_count"] == want["warn_lines"]
    assert gdr_reading(view) == want["gdr"]


@pytest.mark.parametrize("name", CASES)
def test_real_log_faults_show_in_the_parse(name):
    faults = set(expected(name)["faults"])
    view = merge_sections(parsed_case(name)["sections"].values())
    kinds = set(item["kind"] for item in view["warnings"] + view["errors"])
    assert ("no_socket_interface" in kinds) == ("no_socket_interface" in faults)
    if "init_error" in faults:
        assert view["errors"] or view["warnings"]
        assert not view["init_complete"]
    if "gdr_disabled" in faults:
        assert any(not g["enabled"] for g in view["gdr"])
    if "socket_fallback" in faults:
        # NCCL 2.4-2.5 print no "Using network" line: the socket list alone is its choice
        assert view["network"] == "Socket" or "NET/Socket" in view["transports"] or (
            view["network"] is None and list(view["net_lists"]) == ["Socket"])
    if "ib_hca_no_device" in faults:  # NCCL_IB_HCA named devices and NET/IB (or a plugin) found none
        assert view["env"].get("NCCL_IB_HCA") and view["no_device"]
    if "plugin_no_gdrdma" in faults:  # a net plugin's connections without GDRDMA
        assert any(t.startswith("NET/") and t.split("/")[1] not in ("IB", "Socket") and "/GDRDMA" not in t
                   for t in view["transports"]), view["transports"]
    if "init_only" in faults:  # no connection line at all
        assert not view["transports"] and not view["connections"]
    if "socket_virtual_interface" in faults:
        from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.ncclrun.reach import (
            virtual_interface,
        )
        named = [(d.get("name"), d.get("address")) for d in view["net_lists"].get("Socket") or []]
        named += [(e["name"], e.get("address")) for e in (view["bootstrap"], view["oob"]) if e]
        assert any(virtual_interface({}, n, a) for n, a in named), named
    if "p2p_shm_fallback" in faults:
        assert view["p2p_off"] or view["shm"] or view["env"].get("NCCL_P2P_DISABLE") == "1"
    else:
        assert not view["p2p_off"] and not view["shm"]
    if not faults:
        assert not view["errors"]


@pytest.mark.parametrize("lines, network", [
    # NCCL 2.23+: the plugins' init lines; where only one came up, that is the network, "Using network" said or not
    (["Failed to initialize NET plugin IB", "Initialized NET plugin Socket"], "Socket"),
    (["Initialized NET plugin IB", "Initialized NET plugin Socket"], None),  # both up: IB first, but not said
    (["Initialized NET plugin Socket"], None),  # nothing said of the others
    (["Initialized NET plugin IB", "Initialized NET plugin Socket", "Assigned NET plugin IB to comm"], "IB"),
    (["Failed to initialize NET plugin IB", "Initialized NET plugin Socket", "Using network IB"], "IB"),
])
def test_the_network_of_nccl_2_23_from_its_plugins(lines, network):
    parsed = parse_nccl_log(["n:1:2 [0] NCCL INFO %s" % line for line in lines])
    assert parsed["sections"]["n"]["network"] == network


def test_prefixes_of_launchers_and_torch_are_read_through():
    lines = ["[1,0]<stdout>:gpu6:1407:1595 [0] NCCL INFO Using network IB",
             "[rank3]:node-b:77:88 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.2<0>",
             "2024-05-01 10:00:00,123 node-c:1:2 [0] NCCL INFO NCCL version 2.18.3+cuda12.2",
             "node-c:1:2 [0] transport/net_ib.cc:123 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with error 12",
             "node-c:1:2 [0] NCCL INFO Channel 00/0 : 0[1b000] -> 8[1b000] [send] via NET/IB/0(1)/GDRDMA"]
    parsed = parse_nccl_log(lines)
    assert parsed["hosts"] == ["gpu6", "node-b", "node-c"]
    b = parsed["sections"]["node-b"]
    assert [(d["name"], d["port"], d["link"]) for d in b["net_devices"]] == [("mlx5_0", 1, "IB"), ("mlx5_1", 1, "RoCE")]
    assert b["oob"] == {"name": "ib0", "address": "10.0.0.2"}
    c = parsed["sections"]["node-c"]
    assert (c["version"], c["cuda"]) == ("2.18.3", "12.2")
    assert c["warnings"][0]["kind"] == "net_error"
    assert c["connections"] == [{"rank": 0, "gpu": "1b000", "peer": 8, "direction": "send", "nic": 0, "pxn": True,
                                 "transport": "NET/IB/GDRDMA", "pid": 1, "dev": 0}]
    # the receiver prints "peer -> me [receive]": its own GPU is the second
    got = parse_nccl_log(["n:1:2 [0] NCCL INFO Channel 00/0 : 15[b9000] -> 0[15000] [receive] via NET/IB/2/GDRDMA"])
    assert got["sections"]["n"]["connections"] == [{"rank": 0, "gpu": "15000", "peer": 15, "direction": "receive",
                                                    "nic": 2, "pxn": False, "transport": "NET/IB/GDRDMA", "pid": 1,
                                                    "dev": 0}]


def test_transport_names_drop_device_indexes_and_trailers():
    assert transport_name("NET/IB/0/GDRDMA") == "NET/IB/GDRDMA"
    assert transport_name("NET/Socket/1") == "NET/Socket"
    assert transport_name("P2P/IPC/read comm 0x55 nRanks 08") == "P2P/IPC/read"
    assert transport_name("NET/AWS Libfabric/0/GDRDMA") == "NET/AWS Libfabric/GDRDMA"
    assert transport_name("SHM/direct/direct") == "SHM/direct/direct"
    assert transport_name("direct shared memory") == "direct shared memory"  # NCCL 2.8 and before
    assert transport_name("P2P/direct pointer comm 0x1 nRanks 02") == "P2P/direct pointer"


def test_a_log_without_nccl_lines_says_so_and_odd_lines_never_fail():
    assert parse_nccl_log(["hello", "Traceback (most recent call last):", ""])["nccl_lines"] == 0
    junk = ["NCCL INFO", "x:1:2 [0] NCCL INFO Channel 99999999/0 : a -> b via", "NCCL version 9.9",
            "a:1:1 [0] NCCL INFO Pattern x, crossNic", "\x00\xff NCCL WARN \u202e", "NCCL INFO " + "[0]" * 5000,
            "h:1:1 [0] NCCL INFO NET/IB : Using " + "[0]mlx5_0:1/IB " * 1000,
            "h:1:1 [0] NCCL INFO GPU Direct RDMA Enabled for GPU zz / HCA x",
            "h:1:1 [0] NCCL INFO comm 0x1 rank 99999999999 nranks 2"]
    parsed = parse_nccl_log(junk)
    json.dumps(parsed)  # what a report carries
    assert len(parsed["sections"]["h"]["net_devices"]) <= nccl_log.MAX_ITEMS


def test_memory_stays_bounded_on_a_huge_log():
    def lines():
        for i in range(200000):
            yield "host%d:1:2 [0] NCCL INFO Channel 00/0 : %d[1b000] -> %d[3d000] via P2P/IPC" % (i % 1000, i, i + 1)
            yield "host%d:1:2 [0] misc/x.cc:1 NCCL WARN something %d" % (i % 3, i)
    parsed = parse_nccl_log(lines())
    assert parsed["lines"] == 400000
    assert len(parsed["sections"]) <= nccl_log.MAX_SECTIONS + 1
    assert parsed["hosts_dropped"] == 1000 - nccl_log.MAX_SECTIONS
    assert all(len(s["warnings"]) <= nccl_log.MAX_ITEMS for s in parsed["sections"].values())
    assert parsed["sections"]["host0"]["warn_count"] > nccl_log.MAX_ITEMS


def test_overlong_lines_are_clipped_without_holding_them():
    handle = io.StringIO("a" * 10000000 + "\nh:1:2 [0] NCCL INFO Using network Socket\n")
    lines = list(read_lines(handle))
    assert len(lines) == 2 and len(lines[0]) == nccl_log.MAX_LINE
    assert parse_nccl_log(lines)["sections"]["h"]["network"] == "Socket"


def test_host_view_picks_the_host_and_says_when_the_log_is_of_others():
    parsed = parse_nccl_log(["node-a.example:1:2 [0] NCCL INFO Using network IB",
                             "node-b:1:2 [0] NCCL INFO Using network Socket",
                             "NCCL version 2.19.3+cuda12.3"])
    view, why = host_view(parsed, ["node-a"])
    assert why is None and view["network"] == "IB" and view["version"] == "2.19.3"
    assert host_view(parsed, ["node-b"])[0]["network"] == "Socket"
    view, why = host_view(parsed, ["node-c"])
    assert view is None and "node-a.example, node-b" in why
    one = parse_nccl_log(["container-7f9c:1:2 [0] NCCL INFO Using network IB"])
    assert host_view(one, ["gpu-node-17"])[0]["network"] == "IB"  # one host: the container's name is not the node's


def test_formats_of_other_releases():
    # HAND-WRITTEN lines in the formats of NCCL releases the stored logs do not show
    parsed = parse_nccl_log([
        "h:1:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.1.1.1<0>",
        "h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU/0-3 (rank 3) - NET/0-2 (distance 6 > 5)",
        "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0",
        "h:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 1b000 / HCA a (distance 4 <= 4), read 0",
        "h:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 2, bw 1.2.3/4.0, type SYS/PIX, sameChannels 1",
        "h:1:2 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>",
        "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>",
        "h:1:2 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1b000] [send] via NET/IB/0/GDRDMA(PCI)",
    ])
    h = parsed["sections"]["h"]
    assert h["bootstrap"] == {"name": "eth0", "address": "10.1.1.1"}
    assert [(g["enabled"], g["gpu_rank"], g["hca"], g["hca_name"]) for g in h["gdr"]] == [
        (False, 3, 2, None), (True, None, 0, "mlx5_0"), (True, None, 10, None)]
    assert h["graphs"] == []  # a malformed Pattern line is skipped, not raised on
    assert h["net_kind"] == "IB" and [d["name"] for d in h["net_devices"]] == ["mlx5_0"]  # the kind it used


def test_mappings_stay_bounded():
    lines = ["h:1:2 [0] NCCL INFO NCCL_X%d set by environment to 1" % i for i in range(5000)]
    lines += ["h:1:2 [0] NCCL INFO Channel 00/0 : 0[1b000] -> 1[1b000] via NET/IB/0/X%d" % i for i in range(5000)]
    h = parse_nccl_log(lines)["sections"]["h"]
    assert len(h["env"]) <= nccl_log.MAX_ITEMS and len(h["transports"]) <= nccl_log.MAX_ITEMS
    assert len(h["evidence"]) <= 2 * nccl_log.MAX_ITEMS


def test_lines_split_in_blocks_as_universal_newlines_do():
    from ansible_collections.gpuops.fabric.plugins.module_utils._lines import read_blocks, split_lines
    raw = b"a\r\nb\rc\n\nd\xe2\x82\xac\r\ne"
    for block in (1, 2, 3, 5, 1 << 20):
        assert list(split_lines(read_blocks(io.BytesIO(raw), block=block))) == ["a", "b", "c", "", u"d\u20ac", "e"]
    assert list(split_lines([b"a\n", b"b"], keep_last=False)) == ["a"]
    assert list(split_lines([b"tail of a line\nwhole\n"], skip_first=True)) == ["whole"]


def test_nul_runs_end_lines_and_make_none():
    from ansible_collections.gpuops.fabric.plugins.module_utils._lines import read_blocks, split_lines
    raw = b"\0" * 5000 + b"first\n" + b"second" + b"\0" * 3000 + b"third\n"
    for block in (7, 4096, 1 << 20):
        assert list(split_lines(read_blocks(io.BytesIO(raw), block=block))) == ["first", "second", "third"]
    # a read that starts inside a hole starts at the line after it
    assert list(split_lines([b"\0" * 10, b"\0\0line\n"], skip_first=True)) == ["line"]


def test_a_line_without_an_end_is_clipped_and_the_read_bounded():
    tally = [0]
    lines = list(read_lines(io.BytesIO(b"y" * (5 << 20)), max_bytes=3 << 20, tally=tally))
    assert lines == ["y" * nccl_log.MAX_LINE] and tally == [3 << 20]
    handle = io.StringIO("z" * 3000000)
    assert [len(line) for line in read_lines(handle)] == [nccl_log.MAX_LINE]


def _printed(ident):
    """An id as expected.json writes it ("0-68000", "NET/0-c", "5E000") as the parser keys it ("68000", "c")."""
    ident = ident.split("/", 1)[-1]
    return (ident.split("-", 1)[1] if "-" in ident else ident).lower()


@pytest.mark.parametrize("name", [n for n in CASES if expected(n).get("topology_in_log") is not None])
def test_nccls_topology_printed_in_the_log(name):
    want = expected(name)
    topology = merge_sections(parsed_case(name)["sections"].values())["topology"]
    assert topology["seen"] is want["topology_in_log"]
    if not want["topology_in_log"]:
        return
    printed = want["log_topology"]
    assert sorted(topology["gpus"]) == sorted(_printed(g) for g in printed["gpus"])
    assert sorted(topology["cpus"]) == sorted(_printed(c).upper() for c in printed["cpus"])
    # the NICs: by their NET index where the log prints NET nodes, else by their busId
    nics = set(topology["nets"]) | (set(topology["nics"]) if not topology["nets"] else set())
    assert nics == set(_printed(n) for n in printed["nics"])
    assert dict((k, v) for k, v in topology["paths"].items() if k.startswith("GPU/")) == dict(
        ("GPU/%s->%s/%s" % (_printed(k.split("->")[0]), k.split("->")[1].split("/")[0], _printed(k.split("->")[1])),
         v) for k, v in printed["paths"].items())


def test_topology_lines_place_gpus_and_nics_under_their_cpu():
    lines = ["h:1:2 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===",
             "h:1:2 [0] NCCL INFO CPU/0 (1/1/2)",
             "h:1:2 [0] NCCL INFO + PCI[24.0] - PCI/12000 (1000c01010000000)",
             "h:1:2 [0] NCCL INFO               + PCI[24.0] - GPU/15000 (0)",
             "h:1:2 [0] NCCL INFO                             + NVL[40.0] - GPU/19000",  # a peer, not a child
             "h:1:2 [0] NCCL INFO               + PCI[24.0] - NIC/16000",
             "h:1:2 [0] NCCL INFO                             + NET[50.0] - NET/0 (b8e2/1/50.0)",
             "h:1:2 [0] NCCL INFO CPU/FFFFFFFFFFFFFFFF (1/1/2)",
             "h:1:2 [0] NCCL INFO + PCI[24.0] - GPU/95000 (1)",
             "h:1:2 [0] NCCL INFO ==========================================",
             "h:1:2 [0] NCCL INFO GPU/15000 :GPU/15000 (0/5000.0/LOC) NET/0 (2/24.0/PXB) GPU/95000 (3/24.0/SYS)",
             "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>"]  # HAND-WRITTEN
    view = merge_sections(parse_nccl_log(lines)["sections"].values())
    topology = view["topology"]
    assert topology["cpus"] == {"0": 0, "FFFFFFFFFFFFFFFF": None}
    assert topology["gpus"] == {"15000": "0", "95000": "FFFFFFFFFFFFFFFF"}
    assert topology["nics"] == {"16000": "0"} and topology["nets"] == {"0": "16000"}
    assert topology["paths"] == {"GPU/15000->NET/0": "PXB", "GPU/15000->GPU/95000": "SYS"}
    assert [d["name"] for d in view["net_devices"]] == ["mlx5_0"]  # the NET/IB line is not a path line
