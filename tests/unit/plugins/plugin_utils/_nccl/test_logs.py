"""fabric_nccl_logs on the controller: the paths checked before any host is touched (each error names the key and
the value), and each file read bounded, whatever it is."""

import os
import threading

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils import _lines as line_reader
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log import parse_nccl_log
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl import logs
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.logs import log_paths, read_log

LOGS = os.path.join(REPO, "tests", "fixtures", "realdata", "nccl-logs")


def test_paths_globs_and_their_errors(tmp_path):
    (tmp_path / "rank0.log").write_text("x")
    (tmp_path / "rank1.log").write_text("x")
    (tmp_path / "sub").mkdir()
    paths, errors = log_paths([str(tmp_path / "rank*.log"), str(tmp_path / "rank0.log")])
    assert errors == [] and paths == [str(tmp_path / "rank0.log"), str(tmp_path / "rank1.log")]
    assert log_paths(str(tmp_path / "rank1.log")) == ([str(tmp_path / "rank1.log")], [])
    assert log_paths(None) == ([], []) and log_paths([]) == ([], [])
    _paths, errors = log_paths({"a": 1})
    assert errors == ["fabric_nccl_logs: expected a list of paths on the controller, got {'a': 1}"]
    _paths, errors = log_paths([str(tmp_path / "nope.log"), str(tmp_path / "*.txt"), str(tmp_path / "sub"), 3, ""])
    assert errors == [
        "fabric_nccl_logs[0]: %r does not exist on the controller" % str(tmp_path / "nope.log"),
        "fabric_nccl_logs[1]: %r matches no file on the controller" % str(tmp_path / "*.txt"),
        "fabric_nccl_logs[2]: %r is not a regular file on the controller" % str(tmp_path / "sub"),
        "fabric_nccl_logs[3]: 3 is not a path", "fabric_nccl_logs[4]: '' is not a path"]


def test_bad_paths_stop_the_audit_before_anything_runs(tmp_path):
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import validate_inputs
    _normalized, errors = validate_inputs({"gpu-a": {"nccl_logs": [str(tmp_path / "missing.log")]},
                                           "gpu-b": {"nccl_logs": [str(tmp_path / "missing.log")]}})
    assert errors == ["fabric_nccl_logs[0]: %r does not exist on the controller (host gpu-a, gpu-b)"
                      % str(tmp_path / "missing.log")]


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = str(tmp_path / "pipe.log")
    os.mkfifo(fifo)
    result = {}
    worker = threading.Thread(target=lambda: result.update(entry=read_log(fifo)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and "not a regular file" in result["entry"]["error"]
    assert log_paths(fifo)[1] == ["fabric_nccl_logs[0]: %r is not a regular file on the controller" % fifo]


def test_a_large_log_is_read_by_its_head_and_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, "HEAD_BYTES", 4096)
    monkeypatch.setattr(logs, "TAIL_BYTES", 4096)
    path = tmp_path / "train.log"
    with open(str(path), "w") as handle:
        handle.write("node:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
        for step in range(20000):
            handle.write("step %d loss 0.1\n" % step)
        handle.write("node:1:2 [0] misc/socket.cc:484 NCCL WARN Net : Connect to 10.0.0.2<4343> failed : Connection "
                     "refused\n")
    entry = read_log(str(path))
    assert entry["truncated"] and entry["error"] is None
    section = entry["parsed"]["sections"]["node"]
    assert section["version"] == "2.21.5" and section["warnings"][0]["kind"] == "net_error"
    assert entry["parsed"]["lines"] < 1000


def test_binary_and_undecodable_files_read_as_no_nccl(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(bytes(range(256)) * 4000)
    entry = read_log(str(path))
    assert entry["error"] is None and entry["parsed"]["nccl_lines"] == 0


def test_dumps_are_told_from_logs():
    entry = read_log(os.path.join(LOGS, "b-topo-h200-baremetal-supermicro-partial", "topo.xml"))
    assert entry["kind"] == "topology_dump" and entry["error"] is None  # a shell prompt before it, cut short after
    assert [g["address"] for g in entry["facts"]["gpus"]] == ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0"]
    assert [n["type"] for g in entry["facts"]["gpus"] for n in g["nearest_nics"]] == ["PIX", "PIX", "PIX"]
    entry = read_log(os.path.join(LOGS, "a-roce-gdr-disabled-peermem-nccl1537", "nccl.log"))
    assert entry["kind"] == "log" and entry["parsed"]["nccl_lines"] > 0


def test_a_broken_dump_is_an_error_not_a_traceback(tmp_path):
    path = tmp_path / "topo.xml"
    path.write_text('<system version="1">\n  <cpu numaid="0"><pci busid="x"></cpu>\n')
    entry = read_log(str(path))
    assert entry["kind"] == "topology_dump" and "malformed XML" in entry["error"]


# ---- the byte bound holds whatever a log holds, so the time bound does too -------------------------------------
# (no timing asserted here: benchmarks/ print times; these count the bytes asked of the file instead)

class _Counted(object):
    """A binary handle that counts the bytes handed out and refuses a read without a size."""

    def __init__(self, raw, seen):
        self.raw, self.seen = raw, seen

    def read(self, size=-1):
        assert size is not None and size >= 0, "a read without a size"
        data = self.raw.read(size)
        self.seen["bytes"] += len(data)
        self.seen["largest"] = max(self.seen["largest"], size)
        return data

    def seek(self, *args):
        return self.raw.seek(*args)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.raw.close()


@pytest.fixture
def counted(monkeypatch):
    seen = {"bytes": 0, "largest": 0}
    opened = logs._open

    def _open(path):
        raw, size = opened(path)
        return _Counted(raw, seen), size
    monkeypatch.setattr(logs, "_open", _open)
    return seen


def _fixture_log(name):
    with open(os.path.join(LOGS, name, "nccl.log"), "rb") as handle:
        return handle.read()


def _within_bound(entry, counted):
    assert entry["error"] is None
    assert counted["bytes"] == entry["bytes_read"] <= logs.HEAD_BYTES + logs.TAIL_BYTES
    assert counted["largest"] <= line_reader.BLOCK


def test_a_sparse_copytruncated_log_is_read_by_its_head_and_tail_only(tmp_path, counted):
    """logrotate's copytruncate leaves a hole of NUL bytes with no newline before what the job writes next: 128 GiB
    here (sparse: no disk), then a real log."""
    name = "b-efa-g5-pcluster-ofi-1.12-gdr-off-2.23"
    text = _fixture_log(name)
    path = str(tmp_path / "nccl.rotated.log")
    with open(path, "wb") as handle:
        handle.truncate(128 << 30)
    with open(path, "ab") as handle:
        handle.write(text)
    try:
        entry = read_log(path)
    finally:
        os.unlink(path)
    _within_bound(entry, counted)
    assert entry["kind"] == "log" and entry["size"] == (128 << 30) + len(text)
    assert entry["truncated"] and entry["skipped_bytes"] == entry["size"] - logs.HEAD_BYTES - logs.TAIL_BYTES
    # the hole ends a line: the log after it reads as the log alone, line numbers included
    alone = parse_nccl_log(text.decode("utf-8").splitlines())
    assert entry["parsed"]["sections"] == alone["sections"] and entry["parsed"]["lines"] == alone["lines"]
    assert entry["parsed"]["sections"]["compute-gpu-st-distributed-ml-1"]["version"] == "2.23.4"


def test_a_small_hole_ends_the_line_before_it(tmp_path, counted):
    path = tmp_path / "nccl.log"
    path.write_bytes(b"h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nh:1:2 [0] NCCL INFO Using net"
                     + b"\0" * (3 << 20) + b"h:1:2 [0] NCCL INFO Using network IB\n")
    entry = read_log(str(path))
    _within_bound(entry, counted)
    section = entry["parsed"]["sections"]["h"]
    assert not entry["truncated"] and entry["bytes_read"] == entry["size"]
    assert section["version"] == "2.21.5" and section["network"] == "IB" and entry["parsed"]["lines"] == 3


def test_200_mib_without_a_newline_reads_the_bound_and_no_more(tmp_path, counted):
    path = str(tmp_path / "x.log")
    with open(path, "wb") as handle:
        for _mib in range(200):
            handle.write(b"x" * (1 << 20))
    try:
        entry = read_log(path)
    finally:
        os.unlink(path)
    _within_bound(entry, counted)
    assert entry["truncated"] and entry["skipped_bytes"] == (200 << 20) - logs.HEAD_BYTES - logs.TAIL_BYTES
    # the head ends inside the one line, the tail starts inside it: no whole line was read
    assert entry["parsed"]["lines"] == 0 and entry["parsed"]["nccl_lines"] == 0


def test_lines_either_side_of_a_200_mib_line_are_found(tmp_path, counted):
    head = _fixture_log("a-roce-2.19.3-dgxh100-2node-nccltests185")
    tail = (b"node-z:7:7 [0] misc/socket.cc:484 NCCL WARN Net : Connect to 10.0.0.2<4343> failed : Connection "
            b"refused\n")
    path = str(tmp_path / "train.log")
    with open(path, "wb") as handle:
        handle.write(head)
        for _mib in range(200):
            handle.write(b"x" * (1 << 20))
        handle.write(b"\n" + tail)
    try:
        entry = read_log(path)
    finally:
        os.unlink(path)
    _within_bound(entry, counted)
    parsed = entry["parsed"]
    alone = parse_nccl_log(head.decode("utf-8").splitlines())
    assert set(alone["hosts"]) < set(parsed["hosts"]) and "node-z" in parsed["hosts"]
    assert all(parsed["sections"][h]["version"] == alone["sections"][h]["version"] for h in alone["hosts"])
    assert parsed["sections"]["node-z"]["warnings"][0]["kind"] == "net_error"
