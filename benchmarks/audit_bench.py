"""Benchmark: the rule catalog over 10,000 synthetic hosts, and a whole audit of 64 hosts beside
`ansible -m setup` on the same 64 hosts.

Prints times and ratios; asserts nothing. Rule evaluation and report rendering are printed as ratios to a JSON
round trip of the same inputs, so a figure from a loaded machine compares with one from an idle machine. Targets
from the issues: rules over 10,000 hosts under 2 s on a 2-core machine; the 64-host audit at most 1.5x the setup
run, with at most 3 module round trips per host.

Run: .venv/bin/python benchmarks/audit_bench.py [--hosts N] [--audit-hosts M] [--runs R]
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)
import fixtures  # noqa: E402
from gather_bench import median_seconds  # noqa: E402

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import (  # noqa: E402
    REPORT_RENDERERS as RENDERERS,
)

assert conftest.COLLECTIONS_ROOT in sys.path
EXPECT = {"gpu": {"width": 16, "generation": 5},
          "nics": [{"name": "ens*np0", "speed_mbps": 400000, "mtu": 9000}, {"name": "bond0*", "mtu": 9000}],
          "rdma": True}


def bench_rules(roots, count, runs):
    """Rule evaluation and report rendering for ``count`` hosts, each as a ratio to a JSON round trip (dumps +
    loads) of the same inputs: the floor any controller-side pass over hostvars pays."""
    templates = [gather(root=roots["dgx8"]), gather(root=roots["dgx8-broken"])]
    inputs = {}
    for index in range(count):
        # Every 50th host is the broken twin; facts are shared objects (hostvars would be distinct dicts).
        facts = templates[1] if index % 50 == 0 else templates[0]
        inputs["node%05d" % index] = {"facts": facts, "expectations": EXPECT}
    # The round trip of all inputs is timed per host and summed: json serializes a shared object once per host
    # anyway, and one 1.7 GB string for 10,000 hosts would measure the machine's memory, not the floor.
    # one round trip takes milliseconds: its median over many samples, or the ratio follows the machine's noise
    per_template = [median_seconds(lambda t=t: json.loads(json.dumps({"facts": t, "expectations": EXPECT})),
                                   max(runs, 50)) for t in templates]
    round_trip = sum(per_template[1 if index % 50 == 0 else 0] for index in range(count))
    outcome = {}

    def evaluate():
        outcome["report"], errors = run_audit(inputs, datetime.date.today(), "now")
        assert not errors

    evaluated = median_seconds(evaluate, runs)
    report = outcome["report"]

    def render():
        for render_one in RENDERERS.values():
            render_one(report)

    rendered = median_seconds(render, runs)
    print("%d hosts (%d findings), median of %d: JSON round trip %.2f s; evaluate %.2f s (%.2fx); "
          "render all four reports %.2f s (%.2fx)"
          % (count, len(report["findings"]), runs, round_trip, evaluated, evaluated / round_trip, rendered,
             rendered / round_trip))


def bench_audit(roots, count):
    work = tempfile.mkdtemp()
    bindir = os.path.dirname(sys.executable)
    try:
        _tarball, collections = conftest.install_collection(work)
        names = ["dgx8", "dgx8-broken", "hwloc-xeonphi-mlx4-2numa", "hwloc-westmere-qib-4numa"]
        hosts = dict(("node%02d" % i, {"fabric_facts_root": roots[names[i % len(names)]]}) for i in range(count))
        inventory = os.path.join(work, "inventory.yml")
        with open(inventory, "w") as handle:
            yaml.safe_dump({"all": {"vars": {"ansible_connection": "local", "fabric_expectations": EXPECT,
                                             "fabric_audit_fail_on": "never",
                                             "ansible_python_interpreter": sys.executable},
                                    "hosts": hosts}}, handle)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_FORKS="8", ANSIBLE_LOCALHOST_WARNING="0")

        def timed(command):
            start = time.perf_counter()
            result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            return time.perf_counter() - start, result

        setup_s, setup = timed([os.path.join(bindir, "ansible"), "all", "-i", inventory, "-m", "setup"])
        audit_s, audit = timed([os.path.join(bindir, "ansible-playbook"), "-i", inventory, "gpuops.fabric.audit",
                                "-e", "fabric_report_dir=" + os.path.join(work, "report")])
        for name, result in (("setup", setup), ("audit", audit)):
            if result.returncode != 0:
                print("%s failed (%d):\n%s\n%s" % (name, result.returncode, result.stdout[-2000:], result.stderr[-2000:]))
        per_host_tasks = audit.stdout.count("ok: [node00]")
        print("%d hosts, forks 8: ansible -m setup %.1f s; audit playbook %.1f s; ratio %.2f; "
              "module round trips per host: %d" % (count, setup_s, audit_s, audit_s / setup_s, per_host_tasks))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10000)
    parser.add_argument("--audit-hosts", type=int, default=64, help="0 skips the playbook run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    roots = fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))
    bench_rules(roots, args.hosts, args.runs)
    if args.audit_hosts:
        bench_audit(roots, args.audit_hosts)


if __name__ == "__main__":
    main()
