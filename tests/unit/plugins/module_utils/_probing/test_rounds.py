"""throughput_probe's detached rounds (mode=rounds with detach, then mode=collect), run as Ansible runs a module
(arguments on stdin), with real iperf3 on loopback: the start returns before round 1, the run goes on under its own
name and leaves its result for the collect; a node clock far off the controller's is corrected for; a bad job name, a
run that was killed or stopped and a result file that is no file are named, never a traceback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import COLLECTIONS_ROOT, require_tool
from ansible_collections.gpuops.fabric.plugins.module_utils._probing import jobs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the probes keep their files under /run (CI runs as root)")

PORT = 45411


def module(**args):
    done = subprocess.run([sys.executable, "-m", "ansible_collections.gpuops.fabric.plugins.modules.throughput_probe"],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT))
    return json.loads(done.stdout)


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except OSError:
        return None


def test_a_detached_pair_measures_and_is_collected():
    require_tool("iperf3")
    start_at = time.time() + 4
    common = dict(mode="rounds", detach=True, duration=1, round_timeout=8, start_at=start_at, start_skew=2,
                  controller_time=time.time())
    server = module(rounds=[{"role": "server", "bind": "127.0.0.1", "port": PORT}, {"role": "idle"}], **common)
    client = module(rounds=[{"role": "client", "bind": "127.0.0.3", "server": "127.0.0.1", "port": PORT},
                            {"role": "idle"}], ping_targets=[{"peer": "a", "address": "127.0.0.1", "network": "n",
                                                              "mtu": 9000, "source": "127.0.0.3"}], ping_count=2,
                    **common)
    assert not server.get("failed") and not client.get("failed"), (server, client)
    assert time.time() < start_at, "the start waited for round 1"
    assert server["job"] == "rounds-127.0.0.1" and client["job"] == "rounds-127.0.0.3"
    assert comm(server["pid"]) == "gpuops-rounds" and comm(client["pid"]) == "gpuops-rounds"
    # a node clock as the controller's: the shared start, untouched
    assert abs(client["start"] - start_at) < 0.01 and abs(client["clock_offset"]) < 5
    assert server["bound"] == pytest.approx(start_at + 2 + 2 * 8 + 30, abs=0.01)
    served, measured = module(mode="collect", job=server["job"]), module(mode="collect", job=client["job"])
    assert not served.get("failed") and served["measurements"] == [] and served["server_errors"] == [], served
    [path] = measured["probes"]  # pinged while waiting for round 1
    assert path["status"] == "ok" and path["payload"] == 9000 - 28 and path["jumbo"]["received"] == 2, path
    assert measured["probes_error"] is None and "1 of 1 path(s)" in measured["msg"], measured
    assert "probes" not in served
    [one] = measured["measurements"]
    assert one["error"] is None and one["gbps"] > 0 and one["round"] == 1, one
    deadline = time.time() + 5  # the runs end just after they wrote their results
    while (comm(server["pid"]) or comm(client["pid"])) and time.time() < deadline:
        time.sleep(0.05)
    assert comm(server["pid"]) is None and comm(client["pid"]) is None
    again = module(mode="collect", job=client["job"])
    assert again["failed"] and "collected already" in again["msg"], again


def test_a_clock_far_off_is_corrected_and_a_stop_is_said():
    start_at = time.time() + 30
    started = module(mode="rounds", detach=True, rounds=[{"role": "server", "bind": "127.0.0.4", "port": PORT + 1}],
                     duration=1, start_at=start_at, controller_time=time.time() - 100,  # 100 s ahead of the controller
                     ping_targets=[{"peer": "a", "address": "127.0.0.1", "network": "n", "mtu": 1500}], ping_count=1)
    try:
        assert started["clock_offset"] == pytest.approx(100, abs=5)
        assert started["start"] == pytest.approx(start_at + 100, abs=5)
        assert "clock is 100" in str(started["warnings"]), started
        polled = module(mode="collect", job=started["job"], wait=1)  # a poll, not one silent wait
        assert not polled.get("failed") and polled["finished"] is False and "goes on" in polled["msg"], polled
        time.sleep(2)  # its pings are done long before round 1
    finally:
        stopped = module(mode="stop")
    assert started["pid"] in stopped["stopped"], stopped
    collected = module(mode="collect", job=started["job"])
    assert collected["failed"] and "stopped" in collected["msg"] and collected["finished"], collected
    [path] = collected["probes"]  # the pings done before the stop are kept
    assert path["status"] == "ok", path


def test_a_node_idle_in_every_round_runs_nothing():
    started = module(mode="rounds", detach=True, rounds=[{"role": "idle"}, {"role": "idle"}], duration=1)
    assert not started.get("failed") and started["job"] is None and "idles in all 2" in started["msg"], started


def test_a_killed_run_is_named():
    started = module(mode="rounds", detach=True, rounds=[{"role": "server", "bind": "127.0.0.5", "port": PORT + 2}],
                     duration=1, start_at=time.time() + 60)
    os.kill(started["pid"], signal.SIGKILL)
    collected = module(mode="collect", job=started["job"])
    assert collected["failed"] and "ended without a result" in collected["msg"], collected


@pytest.mark.parametrize("job", ["../../etc/passwd", "rounds-a/b", "rounds-", "x" * 200, "rounds-1.2.3.4;id", ""])
def test_a_bad_job_is_named(job):
    collected = module(mode="collect", job=job)
    assert collected["failed"] and "job" in collected["msg"], collected


def test_bad_rounds_settings_are_named_before_anything_starts():
    target = {"peer": "a", "address": "127.0.0.1", "network": "n", "mtu": 9000}
    for bad, said in (({"ping_targets": [dict(target, mtu=20)]}, "ping_targets[0].mtu: 20 is outside"),
                      ({"ping_targets": [dict(target, peer=None)]}, "ping_targets[0].peer: missing"),
                      ({"ping_targets": [dict(target, mtu="9000x")]}, "ping_targets[0].mtu"),
                      ({"ping_count": 0}, "ping_count"), ({"start_at": -1}, "start_at"),
                      ({"start_at": time.time() + 7200}, "more than an hour"),
                      ({"controller_time": 1e12}, "controller_time"),
                      ({"mode": "client", "server": "127.0.0.1"}, "only rounds mode")):
        args = dict({"mode": "rounds", "detach": True, "rounds": [{"role": "idle"}]}, **bad)
        result = module(**args)
        assert result["failed"] and said in result["msg"], (bad, result)


def test_a_result_that_is_no_file_or_too_large_is_refused(tmp_path):
    fifo = str(tmp_path / "fifo.json")
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * (jobs.RESULT_MAX // 2) + "0]")
    odd = tmp_path / "list.json"
    odd.write_text("[1, 2]")
    for path, said in ((fifo, "not a regular file"), (str(big), "larger than"), (str(odd), "no JSON object")):
        with pytest.raises(ValueError, match=said):
            jobs.read_json(path)
    assert jobs.read_json(str(tmp_path / "missing.json")) is None
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_server_being_started_is_found_by_its_address():
    """What a run stopped in the middle of a server's start kills: the server, by its address, not by a group it
    had not learnt yet; another address's server is left alone."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._probing.iperf3 import servers_on
    iperf3 = require_tool("iperf3")
    server = subprocess.Popen(["timeout", "20", iperf3, "-s", "-1", "-B", "127.0.0.6", "-p", str(PORT + 3)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 5
        while not servers_on(["127.0.0.6"]) and time.time() < deadline:
            time.sleep(0.05)
        assert servers_on(["127.0.0.6"]) == [server.pid]
        assert servers_on(["127.0.0.7"]) == []
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # timeout and its iperf3
        server.wait()


def test_a_start_that_arrived_before_a_stop_runs_no_round():
    """A Ctrl-C'd play: a rounds start still on its way when mode=stop ran must not begin its rounds afterwards.
    Here the stop's mark is dated after the start's arrival (a minute ahead), so the start refuses."""
    mark = jobs.STOP_MARK
    os.makedirs(os.path.dirname(mark), exist_ok=True)
    with open(mark, "w") as handle:
        handle.write("later\n")
    ahead = time.time() + 60
    os.utime(mark, (ahead, ahead))
    try:
        started = module(mode="rounds", detach=True, rounds=[{"role": "server", "bind": "127.0.0.8", "port": PORT + 4}],
                         duration=1)
    finally:
        os.unlink(mark)
    assert started["failed"] and "stopped (mode=stop) before it began" in started["msg"], started
