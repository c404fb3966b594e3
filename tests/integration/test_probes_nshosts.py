"""Probes over real SSH between namespace hosts (tests/utils/nshosts.py): four hosts on a 9000-byte training network, one
of them at MTU 1500, links shaped with tc tbf to 1 Gbit/s and one to 300 Mbit/s on a network declared 1GbE.

The audit with probes must name the 1500 host in every failing jumbo pair, judge the 1 Gbit/s links against the
1GbE expectation (pass) and report the 300 Mbit/s one, leave no iperf3 behind (also when interrupted), and change
nothing (it runs in --check here)."""

import contextlib
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import REPO, recap
from testbed import net as slot_net
from nshosts import NamespaceHosts, iperf3_processes

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (CI runs as root)")

PREFIX = "gfpt"
MGMT, TRAIN = 10, 11


def ours():
    """iperf3 processes of this test bed (the machine may run others)."""
    return [p for p in iperf3_processes() if slot_net(TRAIN) + "." in p[1]]


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    bed = NamespaceHosts(str(tmp_path_factory.mktemp("nshosts")), 4, prefix=PREFIX, mgmt_octet=MGMT, train_octet=TRAIN)
    bed.up()
    bed.set_mtu(3, 1500)          # a host left at 1500 on a 9000 network
    bed.shape(1, "1gbit")
    bed.shape(2, "1gbit")
    bed.shape(4, "300mbit")       # a "1GbE" link giving 300 Mbit/s
    yield bed
    bed.down()


def inventory(bed, tmp_path, **extra):
    group = {
        "fabric_networks": {"training": {"role": "training", "subnet": bed.train_subnet(), "mtu": 9000,
                                         "speed_mbps": 1000}},
        "fabric_attachments": {"training": "eth1"},
        "fabric_audit_fail_on": "never",
        "fabric_report_dir": str(tmp_path / "report"),
        "fabric_probe_duration": 2,
    }
    group.update(extra)
    return bed.write_inventory(tmp_path / "inventory.yml", group)


def audit_argv(inv, *args):
    return ["ansible-playbook", "-i", inv, os.path.join(REPO, "playbooks", "audit.yml")] + list(args)


def audit(env, inv, *args):
    return subprocess.run(audit_argv(inv, *args), env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"),
                          capture_output=True, text=True, timeout=600, check=False)


def test_probes_find_the_mtu_and_the_slow_link(ansible_env, testbed, tmp_path):
    inv = inventory(testbed, tmp_path)
    done = audit(ansible_env, inv, "--check", "--tags", "probes")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    for name in testbed.names:
        assert recap(done.stdout, name)["changed"] == "0"
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    findings = report["findings"]
    bad_host = testbed.names[2]
    slow_host = testbed.names[3]

    jumbo = [f for f in findings if f["id"] == "PROBE-001"]
    assert len(jumbo) == 3, [f["message"] for f in jumbo]  # the three pairs with the 1500 host, no other
    for f in jumbo:
        assert bad_host in (f["host"], f["evidence"]["peer"])
        assert "%s fails with every peer" % bad_host in f["message"]
        assert "8972-byte" in f["message"]
    assert any("%s's eth1 has MTU 1500" % bad_host in f["message"] for f in jumbo)

    slow = [f for f in findings if f["id"] == "PROBE-003"]
    assert slow and all(slow_host in (f["host"], f["evidence"]["peer"]) for f in slow), [f["message"] for f in slow]
    for f in slow:
        assert 0.2 < f["evidence"]["gbps"] < 0.35 and f["evidence"]["expected_gbps"] == 0.99

    measured = [m for m in report["measurements"] if m["kind"] == "throughput"]
    assert len(measured) == 6  # all pairs of 4 hosts, each measured once
    between = [m for m in measured if {m["host"], m["peer"]} == set(testbed.names[:2])]
    assert len(between) == 1 and 0.85 < between[0]["gbps"] <= 1.0  # tbf 1gbit, judged against 1GbE: passes
    assert not [f for f in findings if f["id"] in ("PROBE-002", "PROBE-004")]
    assert ours() == []  # no server or client left behind
    assert "Measured throughput" in (tmp_path / "report" / "report.md").read_text()


def test_latency_under_load_finds_a_deep_queue(ansible_env, testbed, tmp_path):
    """A real queue, not a model of one: the bridge's ports towards hosts 1 and 2 (the switch) shaped to 300 Mbit/s
    with tc tbf holding 100 ms of traffic, the hosts' own links left fast (a sender's own qdisc is kept short by TCP
    small queues). Four iperf3 streams fill what they can of it in 5 s (here 15 to 25 ms; their congestion control
    backs off before the 3.75 MB are full), and the pings between the two climb from under a tenth of a millisecond
    to that: STAB-005 against an 8 ms budget (fabric_probe_queue_delay_ms; the derived budget, 1 MB at the goodput,
    is 28 ms here and judged in the unit tests). The same pair behind a queue of 1 ms and a 64 kB burst (about 3 ms
    in all) passes, and pays for it in drops: the four streams overflow 11 jumbo frames of queue and retransmit
    (here a third of their segments; STAB-006). The module's shaping (1 Gbit/s, 50 ms, both ends) is put back afterwards."""
    pair = testbed.names[:2]
    seen = {}
    try:
        for queue, burst in (("100ms", "256kb"), ("1ms", "64kb")):
            for index in (1, 2):
                testbed.shape(index, "300mbit", latency=queue, burst=burst, host_side=False)  # a switch port's queue
            group = {
                "fabric_networks": {"training": {"role": "training", "subnet": testbed.train_subnet(), "mtu": 9000,
                                                 "speed_mbps": 1000}},
                "fabric_attachments": {"training": "eth1"}, "fabric_audit_fail_on": "never",
                "fabric_report_dir": str(tmp_path / queue), "fabric_probe_duration": 5, "fabric_probe_streams": 4,
                "fabric_probes": ["throughput", "latency"], "fabric_probe_queue_delay_ms": 8,
            }
            inv = testbed.write_inventory(tmp_path / ("inventory-%s.json" % queue), group, hosts=pair)
            done = audit(ansible_env, inv, "--check", "--tags", "probes")
            assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
            seen[queue] = json.loads((tmp_path / queue / "report.json").read_text())
    finally:
        for index in (1, 2):
            testbed.shape(index, "1gbit")
    deep, shallow = seen["100ms"], seen["1ms"]
    [measured] = [m for m in deep["measurements"] if m["kind"] == "throughput"]
    assert measured["idle_p50_ms"] < 1 and measured["loaded_p99_ms"] > 12, measured
    [found] = [f for f in deep["findings"] if f["id"] == "STAB-005"]
    assert found["host"] == measured["host"] and found["evidence"]["queue_delay_ms"] > 8
    assert "ms of queue (about" in found["message"] and "budget 8 ms (fabric_probe_queue_delay_ms)" in found["message"]
    [measured] = [m for m in shallow["measurements"] if m["kind"] == "throughput"]
    assert measured["loaded_p99_ms"] is not None and measured["loaded_p99_ms"] < 8, measured
    assert [f for f in shallow["findings"] if f["id"] == "STAB-005"] == []
    assert shallow["outcomes"][measured["host"]]["STAB-005"]["status"] == "pass"
    [dropped] = [f for f in shallow["findings"] if f["id"] == "STAB-006"]
    assert dropped["evidence"]["retransmit_percent"] > 1 and "retransmits of" in dropped["message"]
    assert "latency under load" in (tmp_path / "1ms" / "report.md").read_text()
    assert ours() == []


def test_repeated_runs_find_goodput_that_swings(ansible_env, testbed, tmp_path):
    """fabric_probe_repeat: 2 measures every pair twice, a pass of the plan apart. When host 1 has ended its first
    pass (its first iperf3 of the second pass appears, on the second pass's first port), its link is shaped down from
    1 Gbit/s to 400 Mbit/s: the pairs with host 1 swing between their runs (STAB-008), except the one already held to
    300 Mbit/s by host 4; tbf-shaped links otherwise repeat within the 10% budget."""
    import threading
    inv = inventory(testbed, tmp_path, fabric_probes=["throughput"], fabric_probe_repeat=2)
    second_pass = " -p %d" % (5201 + 3)  # 4 hosts, all pairs: 3 rounds a pass
    host1 = testbed.train_address(1)
    reshaped, stop = [], threading.Event()

    def reshape():
        while not stop.is_set():
            if any(second_pass in argv and "-B %s" % host1 in argv for _pid, argv in ours()):
                testbed.shape(1, "400mbit")
                reshaped.append(time.time())
                return
            time.sleep(0.02)
    watcher = threading.Thread(target=reshape)
    watcher.start()
    try:
        done = audit(ansible_env, inv, "--tags", "probes")
    finally:
        stop.set()
        watcher.join()
        testbed.shape(1, "1gbit")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert reshaped, "host 1 never started its second pass"
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    measured = [m for m in report["measurements"] if m["kind"] == "throughput"]
    assert sorted((m["run"], m["runs"]) for m in measured) == [(1, 2)] * 6 + [(2, 2)] * 6
    names = testbed.names
    swung = [f for f in report["findings"] if f["id"] == "STAB-008"]
    pairs = sorted(tuple(sorted((f["host"], f["evidence"]["peer"]))) for f in swung)
    assert pairs == [(names[0], names[1]), (names[0], names[2])], [f["message"] for f in swung]
    for f in swung:
        first, second = f["evidence"]["runs"]
        assert 0.85 < first <= 1.0 and 0.3 < second < 0.42 and f["evidence"]["slowest_run"] == 2, f["evidence"]
        assert "over 2 runs" in f["message"]
    for host in names:
        assert report["outcomes"][host]["STAB-008"]["status"] in ("pass", "findings")
    assert ours() == []
    assert "(run 2 of 2)" in (tmp_path / "report" / "report.md").read_text()


def test_a_first_host_outside_the_plan_and_one_without_iperf3(ansible_env, testbed, tmp_path):
    """The first host of the play has no training attachment (a head node listed first): the start time the play
    agrees on once still reaches the others, which measure their 3 pairs. A node whose PATH has no iperf3 cannot
    start its rounds: that is PROBE-004 on it alone, its full-size pings still run (their own task), and its peers
    go on."""
    # slots of 6 s: a peer that never comes costs its slot
    inv = inventory(testbed, tmp_path, fabric_probes=["jumbo", "throughput"], fabric_probe_server_lifetime=6)
    with open(inv) as handle:
        data = json.load(handle)
    names = testbed.names
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("ping", "timeout", "setsid", "sh"):
        os.symlink(subprocess.run(["sh", "-c", "command -v %s" % tool], capture_output=True, text=True,
                                  check=True).stdout.strip(), str(bindir / tool))
    # the module looks for iperf3 on PATH and in the sbin folders; this host's PATH is the folder above
    interpreter = bindir / "python3"
    interpreter.write_text('#!/bin/sh\nPATH=%s exec /usr/bin/python3 "$@"\n' % bindir)
    interpreter.chmod(0o755)
    data["all"]["hosts"][names[3]]["ansible_python_interpreter"] = str(interpreter)
    with open(inv, "w") as handle:
        json.dump(data, handle)
    first = ["ip", "-n", names[0], "addr", "%s", testbed.train_address(1) + "/24", "dev", "eth1"]
    subprocess.run([a.replace("%s", "del") for a in first], check=True)  # host 1: no training address
    try:
        done = audit(ansible_env, inv, "--tags", "probes")
    finally:
        subprocess.run([a.replace("%s", "add") for a in first], check=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    measured = sorted(tuple(sorted((m["host"], m["peer"]))) for m in report["measurements"]
                      if m["kind"] == "throughput" and m.get("gbps"))
    assert measured == [(names[1], names[2])], measured  # the pairs with host 4 lost: it could not start
    failed = [f for f in report["findings"] if f["id"] == "PROBE-004" and f["host"] != names[0]]
    assert failed and all(f["host"] == names[3] or f["evidence"].get("peer") == names[3] for f in failed), [
        (f["host"], f["message"]) for f in failed]
    assert any("iperf3" in f["message"] for f in failed if f["host"] == names[3]), [f["message"] for f in failed]
    assert not any("full-size pings did not run" in f["message"] for f in failed)
    pinged = [m for m in report["measurements"] if m["kind"] == "jumbo" and m["host"] == names[3]]
    assert pinged, "host 4's full-size pings did not run"
    assert ours() == []


def test_probes_are_opt_in(ansible_env, testbed, tmp_path):
    done = audit(ansible_env, inventory(testbed, tmp_path))
    assert done.returncode == 0, done.stdout[-3000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["measurements"] == []
    for host in testbed.names:
        assert report["outcomes"][host]["PROBE-003"]["status"] == "not_applicable"
    # the probe play ends once, for every host, before its role is even included
    assert "one-off iperf3 server" not in done.stdout and "Probe with full-size pings" not in done.stdout
    assert "TASK [End this play when the probes are off]" in done.stdout


def test_a_server_nobody_stops_ends_on_its_own(ansible_env, testbed, tmp_path):
    """What an interrupted controller leaves: a started server whose client never came and no stop step."""
    inv = inventory(testbed, tmp_path)
    started = subprocess.run(
        ["ansible", "-i", inv, testbed.names[1], "-m", "gpuops.fabric.throughput_probe",
         "-a", "mode=server bind=%s lifetime=3" % testbed.train_address(2)],
        env=ansible_env, capture_output=True, text=True, timeout=120, check=False)
    assert started.returncode == 0, started.stdout + started.stderr
    assert len(ours()) == 1
    deadline = time.time() + 10
    while ours() and time.time() < deadline:
        time.sleep(0.2)
    assert ours() == []


def runners():
    """The rounds runs of throughput_probe on this machine (every namespace host shares its process table): a detached
    run by the name it gives itself, one under Ansible's async wrapper by its command line."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    argv = handle.read()
                with open("/proc/%s/comm" % pid, "rb") as handle:
                    comm = handle.read().strip()
            except OSError:
                continue
            if (b"throughput_probe" in argv or comm == b"gpuops-rounds") and int(pid) != os.getpid():
                found.append(int(pid))
    return found


@contextlib.contextmanager
def interrupted_audit(env, inv):
    """An audit with throughput probes, Ctrl-C'd once an iperf3 runs; yields when the interrupt was sent."""
    proc = subprocess.Popen(audit_argv(inv, "-e", "fabric_probes_enabled=true"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not ours() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        if not ours():
            if proc.poll() is None:
                proc.kill()
            said = proc.communicate(timeout=60)[0]
            raise AssertionError("no iperf3 ever started (the audit ended with %s):\n%s" % (proc.returncode, said[-6000:]))
        interrupted = time.time()
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends to the foreground group
        proc.wait(timeout=60)
        yield interrupted
    finally:
        if proc.poll() is None:
            proc.kill()


def payloads():
    """The folders AnsiballZ unpacks this collection's modules into on a node (every namespace host shares /tmp); the
    wrapper removes its own when the module ends, unless the module is killed outright."""
    import glob
    return set(glob.glob("/tmp/ansible_gpuops.fabric.*_payload_*"))


def payloads_left(before, wait=10):
    """The payload folders made since ``before`` that are still there after up to ``wait`` seconds."""
    deadline = time.time() + wait
    while payloads() - before and time.time() < deadline:
        time.sleep(0.2)
    return sorted(payloads() - before)


def test_interrupted_play_leaves_nothing_past_its_bound(ansible_env, testbed, tmp_path):
    """Ctrl-C during the rounds: each node's run goes on without the controller, but never past its bound (the
    rounds' slots, each fabric_probe_server_lifetime long, plus 30 s: Ansible's async limit)."""
    inv = inventory(testbed, tmp_path, fabric_probe_duration=3, fabric_probe_server_lifetime=6,
                    fabric_probes=["throughput"])
    before = payloads()
    with interrupted_audit(ansible_env, inv) as started:
        assert runners(), "the rounds ended with the controller: nothing to test"
        # the plan of 4 hosts: 3 rounds of 6 s; the async limit is 3 x 6 + 30 s
        while (ours() or runners()) and time.time() < started + 3 * 6 + 30 + 10:
            time.sleep(0.5)
        assert ours() == [] and runners() == [], "left running past the bound: %s %s" % (ours(), runners())
    assert payloads_left(before) == []


def test_stop_ends_every_round_at_once(ansible_env, testbed, tmp_path):
    """mode=stop, run by hand after Ctrl-C, ends every node's run and server at once."""
    inv = inventory(testbed, tmp_path, fabric_probe_duration=10, fabric_probes=["throughput"])
    before = payloads()
    with interrupted_audit(ansible_env, inv):
        stopped = subprocess.run(["ansible", "-i", inv, "all", "-m", "gpuops.fabric.throughput_probe", "-a", "mode=stop"],
                                 env=ansible_env, capture_output=True, text=True, timeout=120, check=False)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        deadline = time.time() + 10
        while (ours() or runners()) and time.time() < deadline:
            time.sleep(0.2)
        assert ours() == [] and runners() == [], (ours(), runners())
    # the collects the Ctrl-C cut off (each waits up to 30 s on its node) end through their hangup: the wrapper's
    # payload folder goes with them (Python's default for SIGHUP left one per node in /tmp)
    assert payloads_left(before) == []


def test_a_taken_port_is_named(ansible_env, testbed, tmp_path):
    """Another program on the probe port of the test address: the server start fails and says why."""
    host, address = testbed.names[1], testbed.train_address(2)
    squatter = subprocess.Popen(["ip", "netns", "exec", host, "python3", "-c",
                                 "import socket, time; s = socket.socket(); "
                                 "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('%s', 5201)); s.listen(1); "
                                 "time.sleep(60)" % address])
    try:
        time.sleep(0.5)
        done = subprocess.run(
            ["ansible", "-i", inventory(testbed, tmp_path), host, "-m", "gpuops.fabric.throughput_probe",
             "-a", "mode=server bind=%s lifetime=5" % address],
            env=ansible_env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode != 0
        assert "did not start" in done.stdout and "Address already in use" in done.stdout, done.stdout
        assert ours() == []
    finally:
        squatter.kill()
        squatter.wait()
