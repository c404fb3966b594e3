"""Benchmark: the audit over real SSH on 16 / 64 / 128 namespace hosts (tests/utils/nshosts.py), beside
`ansible -m setup` on the same hosts in the same run, and the audit with probes (full-size pings + iperf3).

Prints wall times, ratios and module round trips per host; for the probes, the time spent measuring (rounds x
(duration + idle pings)) beside the orchestration around it (the rest, beyond the audit without probes), with and
without the latency-under-load pings; asserts nothing. Target from issue 6: audit at most
1.5x setup. Needs root (network namespaces). Every host runs its own sshd; all share this machine's CPUs, so the
figures are the controller's and sshd's cost, not a network's.

With --site, instead: site.yml on the same kind of hosts, each reading the hand-written 8-GPU node's tree as its
facts (fabric_facts_root) and writing its network files and nccl.conf below a folder of its own, as a new cluster
(the first run) and again unchanged (the repeat run): wall times and how often each task read a node's facts. With
--source DIR, the collection is built from another checkout (an older commit: git worktree add DIR COMMIT) to
compare with.

The controller's own CPU seconds are printed beside each wall time: on this bed the hosts' module runs share the
CPUs with the controller, on a cluster each node has its own, and the controller's CPU is what grows with the fleet.
The hosts' CPU seconds too (each host's sshd and everything below it: the session, the shell, the module run), which
on this bed come out of the same two CPUs and on a cluster out of each node's own.
With --facts dgx8, the module and the audit read the hand-written 8-GPU node's tree on every host (facts of about
130 KB each, 190 KB before facts schema 2; a namespace host's own are about 6 KB).

Run: .venv/bin/python benchmarks/audit_ssh_bench.py [--hosts 16 64 128] [--forks 16] [--no-probes] [--profile]
     [--latency-only] [--site] [--source DIR] [--runs R] [--facts dgx8]
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, os.path.join(REPO, "tests", "utils"))

import conftest  # noqa: E402
import fixtures  # noqa: E402  (scripts/fixtures.py)
from nshosts import NamespaceHosts, iperf3_processes  # noqa: E402


DURATION = 2  # seconds of each iperf3 measurement
IDLE_PINGS, PING_INTERVAL = 10, 0.2  # the role's defaults: the idle pings before each measurement


def _tree_cpu(roots):
    """CPU seconds of the processes ``roots`` and all their descendants that are alive, each with what its reaped
    children used (so a module run that ended under a live sshd counts once, through its parent)."""
    parents, times = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(pid)] = int(fields[1])  # after the name: state, ppid, ...; utime is field 14 of stat(5)
        times[int(pid)] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    children = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0, [r for r in roots if r in times]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total / float(os.sysconf("SC_CLK_TCK"))


def host_cpu(bed):
    """CPU seconds so far of every host of ``bed``: its sshd, the connections, sessions and modules below it."""
    roots = []
    for name in bed.names:
        try:
            with open(os.path.join(bed.work, "sshd_%s.pid" % name)) as handle:
                roots.append(int(handle.read().strip()))
        except (OSError, ValueError):
            continue
    return _tree_cpu(roots)


def timed(command, env, cpu=None, hosts=None, bed=None):
    """Wall seconds and the result of one run; with ``cpu`` (a list), the CPU seconds of the controller's side (the
    ansible process, its workers and the ssh clients they wait for: this process's waited-for children) are appended
    to it. Not in them: the ssh ControlPersist masters (they detach and outlive the run) and the hosts' sshd and
    module runs (on this bed they share the CPUs, on a cluster each node has its own)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    hosts_before = host_cpu(bed) if hosts is not None else 0
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if hosts is not None:
        hosts.append(host_cpu(bed) - hosts_before)
    if result.returncode != 0:
        said = [line for line in result.stdout.splitlines() if line.startswith(("fatal:", "ERROR", "[ERROR"))]
        print("  %s failed (%d):\n%s\n%s" % (
            command[0], result.returncode, "\n".join(said[:5])[:3000], result.stderr[-1500:]))
    return elapsed, result


def task_times(output, top=8):
    """The slowest tasks of a run with the task_times callback (--profile), as text lines."""
    line = [x for x in output.splitlines() if x.startswith("TASK_TIMES ")]
    if not line:
        return ""
    times = json.loads(line[-1][len("TASK_TIMES "):])
    total = sum(t for _n, t in times) or 1.0
    return "".join("\n        %6.1f s %4.0f%%  %s" % (t, 100.0 * t / total, n)
                   for n, t in sorted(times, key=lambda x: -x[1])[:top])


def ssh_env(collections, forks, profile=False):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_FORKS=str(forks),
               ANSIBLE_PIPELINING="1", ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_STDOUT_CALLBACK="default")
    if profile:
        env.update(ANSIBLE_CALLBACK_PLUGINS=os.path.join(REPO, "benchmarks", "callback_plugins"),
                   ANSIBLE_CALLBACKS_ENABLED="task_times")
    return env


def bench_site(count, forks, collections, work, roots, profile=False):
    bed = NamespaceHosts(os.path.join(work, "site%d" % count), count, prefix="gfss", mgmt_octet=22, train_octet=23)
    start = time.perf_counter()
    bed.up()
    up_s = time.perf_counter() - start
    try:
        hosts = {}
        for index, name in enumerate(bed.names, 1):
            own = os.path.join(work, "site%d-roots" % count, name)
            os.makedirs(os.path.join(own, "etc", "netplan"))
            hosts[name] = {"fabric_facts_root": roots["dgx8"], "fabric_network_root": own, "fabric_nccl_root": own,
                           "fabric_host_index": index}
        group = {"fabric_network_backend": "netplan",
                 "fabric_networks": {"training": {"role": "training", "subnet": "198.18.64.0/20", "vlan": 300,
                                                  "mtu": 9000}},
                 "fabric_bonds": {"bond1": {"members": ["ens1np0", "ens2np0"], "mode": "802.3ad"}},
                 "fabric_attachments": {"training": "bond1"}, "fabric_nccl_mode": "tcp",
                 "fabric_audit_fail_on": "never", "fabric_report_dir": os.path.join(work, "site-report%d" % count)}
        inventory = bed.write_inventory(os.path.join(work, "site%d.yml" % count), group, host_vars=hosts)
        env = ssh_env(collections, forks, profile)
        playbook = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i", inventory,
                    "gpuops.fabric.site"]
        first_s, first = timed(playbook, env)
        again_s, again = timed(playbook, env)
        reads_first, reads_again = [sum(sum(conftest.fact_reads(run.stdout, name)) for name in bed.names)
                                    for run in (first, again)]
        profile_text = ""
        if profile:
            profile_text = ("\n    new cluster:" + task_times(first.stdout, 12)
                            + "\n    repeat run:" + task_times(again.stdout, 12))
        print("%4d hosts, forks %d, pipelining: test bed up %.1f s; site.yml on a new cluster %.1f s (%d fact "
              "reads, %.1f per host); repeat run %.1f s (%d fact reads, %.1f per host; changed: %d)%s" % (
                  count, forks, up_s, first_s, reads_first, reads_first / float(count), again_s, reads_again,
                  reads_again / float(count), len(re.findall(r"changed=[1-9]", again.stdout)), profile_text),
              flush=True)
    finally:
        bed.down()


def bench(count, forks, probes, collections, work, profile=False, latency_only=False, runs=3, facts_root=None):
    bed = NamespaceHosts(os.path.join(work, "bed%d" % count), count, prefix="gfsb", mgmt_octet=20, train_octet=21)
    start = time.perf_counter()
    bed.up()
    up_s = time.perf_counter() - start
    try:
        group = {"fabric_networks": {"training": {"role": "training", "subnet": bed.train_subnet(), "mtu": 9000}},
                 "fabric_attachments": {"training": "eth1"}, "fabric_audit_fail_on": "never",
                 "fabric_report_dir": os.path.join(work, "report%d" % count), "fabric_probe_duration": DURATION}
        if facts_root:  # each host reads a captured node's tree: facts of a real size (an 8-GPU node's: ~130 KB)
            group["fabric_facts_root"] = facts_root
        inventory = bed.write_inventory(os.path.join(work, "inventory%d.yml" % count), group)
        bindir = os.path.dirname(sys.executable)
        env = ssh_env(collections, forks, profile)
        ansible = os.path.join(bindir, "ansible")
        commands = (("ping", [ansible, "all", "-i", inventory, "-m", "ping"]),
                    ("setup", [ansible, "all", "-i", inventory, "-m", "setup"]),
                    ("module", [ansible, "all", "-i", inventory, "-m", "gpuops.fabric.topology_facts"]),
                    # as the audit gathers: the facts as one JSON text (as_json) instead of a mapping
                    ("module as_json", [ansible, "all", "-i", inventory, "-m", "gpuops.fabric.topology_facts", "-a",
                                        "as_json=true"]),
                    ("audit", [os.path.join(bindir, "ansible-playbook"), "-i", inventory, "gpuops.fabric.audit"]))
        samples = dict((name, []) for name, _command in commands)
        cpu = dict((name, []) for name, _command in commands)
        on_hosts = dict((name, []) for name, _command in commands)
        audit = None
        for _run in range(runs):  # interleaved: a machine that slows down slows each alike
            for name, command in commands:
                elapsed, result = timed(command, env, cpu[name], on_hosts[name], bed)
                samples[name].append(elapsed)
                audit = result if name == "audit" else audit
        median = dict((name, sorted(times)[len(times) // 2]) for name, times in samples.items())
        cpu_median = dict((name, sorted(times)[len(times) // 2]) for name, times in cpu.items())
        hosts_median = dict((name, sorted(times)[len(times) // 2]) for name, times in on_hosts.items())
        audit_s, setup_s = median["audit"], median["setup"]
        trips = len(re.findall(r"^(?:ok|changed): \[%s\]$" % re.escape(bed.names[0]), audit.stdout, re.M))
        others = [name for name, _command in commands if name != "ping"]
        line = ("%4d hosts, forks %d, pipelining, medians of %d interleaved runs: test bed up %.1f s; %s; audit "
                "playbook: %d module round trip(s) per host. Ratios to ping: %s; audit / setup %.2f" % (
                    count, forks, runs, up_s, "; ".join("%s %.1f s" % (name, median[name]) for name, _c in commands),
                    trips, ", ".join("%s %.2f" % (name, median[name] / median["ping"]) for name in others),
                    audit_s / setup_s))
        # the controller's own CPU (what grows with the fleet where each node has CPUs of its own)
        line += ("\n      controller CPU: %s. Ratios to ping: %s" % (
            ", ".join("%s %.1f s" % (name, cpu_median[name]) for name, _c in commands),
            ", ".join("%s %.2f" % (name, cpu_median[name] / cpu_median["ping"]) for name in others)))
        # the hosts' own (sshd, sessions, module runs): on a cluster spread over the nodes, here the same two CPUs
        line += ("\n      hosts' CPU (all %d together): %s. Ratios to ping: %s" % (
            count, ", ".join("%s %.1f s" % (name, hosts_median[name]) for name, _c in commands),
            ", ".join("%s %.2f" % (name, hosts_median[name] / (hosts_median["ping"] or float("nan")))
                      for name in others)))
        if probes:
            for label, kinds in (("with latency under load", ["jumbo", "throughput", "latency"]),
                                 ("without", ["jumbo", "throughput"]))[:1 if latency_only else 2]:
                probe_s, probed = timed([os.path.join(bindir, "ansible-playbook"), "-i", inventory,
                                         "gpuops.fabric.audit", "-e", "fabric_probes_enabled=true",
                                         "-e", json.dumps({"fabric_probes": kinds})], env)
                plan = re.search(r'"msg": "(training: [^"]*)"', probed.stdout)
                rounds = re.search(r"(\d+) round\(s\)", plan.group(1)) if plan else None
                # what the rounds measure: each round's iperf3 run, and its idle pings before it (2 s by default)
                per_round = DURATION + (IDLE_PINGS * PING_INTERVAL if "latency" in kinds else 0)
                measuring = int(rounds.group(1)) * per_round if rounds else float("nan")
                orchestration = probe_s - audit_s - measuring
                # the orchestration in units of one module run on every host (`ansible -m setup` here): what it
                # costs on a bed whose CPUs the hosts share with the controller, where each such run is slow
                line += ("\n      probes %s: %.1f s (%s): measuring %.1f s, orchestration %.1f s beyond the audit "
                         "(orchestration / measuring %.2f; orchestration / ansible -m setup %.2f)" % (
                             label, probe_s, plan.group(1) if plan else "no plan", measuring, orchestration,
                             orchestration / measuring, orchestration / setup_s)) + (
                                 task_times(probed.stdout) if profile else "")
            left = [p for p in iperf3_processes() if bed.train_net + "." in p[1]]
            line += "; iperf3 left: %d" % len(left)
        print(line, flush=True)
    finally:
        bed.down()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[16, 64, 128])
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--no-probes", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print the slowest tasks of each probe run")
    parser.add_argument("--latency-only", action="store_true", help="only the probe run with latency under load")
    parser.add_argument("--site", action="store_true", help="site.yml, a new cluster and a repeat run")
    parser.add_argument("--source", default=REPO, help="the checkout to build the collection from")
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs of ping, setup, the module and the audit")
    parser.add_argument("--facts", choices=["dgx8"], help="the module and the audit read this capture on every host "
                        "(fabric_facts_root) instead of the host's own sysfs: facts of a real node's size")
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    try:
        _tarball, collections = conftest.install_collection(work, args.source)
        roots = fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))
        for count in args.hosts:
            if args.site:
                bench_site(count, args.forks, collections, work, roots, args.profile)
            else:
                bench(count, args.forks, not args.no_probes, collections, work, args.profile, args.latency_only,
                      args.runs, roots[args.facts] if args.facts else None)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
