"""Benchmark: the node-local audit's passive profile (playbooks/node_audit.yml, connection local), as Slurm's
HealthCheckProgram would run it, on each real capture and on this machine's own sysfs, beside the 60 s Slurm gives
a HealthCheckProgram before it kills it.

Prints the median wall time of each (the whole ansible-playbook run: start-up, pre-flight, facts, rules, reports)
and its share of the budget; asserts nothing. The second and later runs have the first run's result as their
baseline, as a node's periodic runs do.

Run: .venv/bin/python benchmarks/node_audit_bench.py [--runs R]
"""

import argparse
import os
import shutil
import statistics
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

BUDGET_S = 60  # Slurm's HealthCheckProgram is killed after 60 s (slurm.conf HealthCheckInterval, slurmd)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    roots = fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))
    targets = sorted(roots.items()) + [("this machine (live sysfs)", "/")]
    work = tempfile.mkdtemp(prefix="node-audit-bench-")
    try:
        _tarball, collections = conftest.install_collection(work)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_LOCALHOST_WARNING="0")
        playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
        print("%-32s %10s %10s" % ("node", "median s", "of 60 s"))
        for name, root in targets:
            state = os.path.join(work, "state-%d" % len(os.listdir(work)))
            inventory = os.path.join(work, "inventory.yml")
            with open(inventory, "w") as handle:
                yaml.safe_dump({"all": {"hosts": {"node": {
                    "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "fabric_facts_root": root, "fabric_node_state_dir": state, "fabric_audit_fail_on": "never"}}}},
                    handle)
            samples = []
            for _run in range(args.runs):
                start = time.perf_counter()
                done = subprocess.run([playbook, "-i", inventory, "gpuops.fabric.node_audit"], env=env,
                                      capture_output=True, text=True, check=False)
                samples.append(time.perf_counter() - start)
                if done.returncode != 0:
                    print("%s: exit %d\n%s" % (name, done.returncode, done.stdout[-1500:]))
            median = statistics.median(samples)
            print("%-32s %10.2f %9.0f%%" % (name, median, 100.0 * median / BUDGET_S))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
