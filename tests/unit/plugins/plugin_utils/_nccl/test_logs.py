"""fabric_nccl_logs on the controller: the paths checked before any host is touched (each error names the key and
the value), and each file read bounded, whatever it is."""

import os
import threading

from conftest import REPO
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
