"""Benchmark: our topology gather against hwloc's lstopo, and the module against Ansible's setup/ping.

Prints medians and ratios; asserts nothing (performance is not a pass/fail test here).
Targets from the issues: gather <= 0.5 x lstopo on the same tree; module cost above the ping floor
<= 1/3 of setup's cost above it; the counters subset adds < 10% to the in-process gather.

Run: .venv/bin/python benchmarks/gather_bench.py [--runs N] [--module-runs M]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)
import fixtures  # noqa: E402

assert conftest.COLLECTIONS_ROOT in sys.path

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather  # noqa: E402

TREES = ["hwloc-xeonphi-mlx4-2numa", "hwloc-westmere-qib-4numa", "hwloc-power9-v100-gpunuma",
         "prometheus-procfs-pci-fragments", "dgx8", "dgx8-broken"]


def median_seconds(func, runs):
    samples = []
    for _run in range(runs):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_gather(roots, runs):
    lstopo = shutil.which("lstopo")
    print("%-34s %12s %12s %8s" % ("sysfs tree", "gather ms", "lstopo ms", "ratio"))
    for name in TREES:
        root = os.path.realpath(roots[name])
        ours = median_seconds(lambda: gather(root=root), runs)
        env = dict(os.environ, HWLOC_FSROOT=root)

        def run_lstopo():
            subprocess.run([lstopo, "--of", "xml", "--whole-io", "-"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        theirs = median_seconds(run_lstopo, runs) if lstopo else float("nan")
        print("%-34s %12.2f %12.2f %8.2f" % (name, ours * 1000, theirs * 1000, ours / theirs))


def bench_counters(roots, runs):
    """What the counters subset (link flaps, error and drop counters, AER, RDMA and TCP counters; issue 16) adds to
    the in-process gather on the captures and on this machine's own sysfs (live: ethtool -S too). Target: < 10%."""
    print("%-34s %14s %14s %8s" % ("tree", "without ms", "with ms", "ratio"))
    for name in TREES + ["live /"]:
        root = "/" if name == "live /" else os.path.realpath(roots[name])
        # interleaved, so that the machine's own drift falls on both alike
        samples = {False: [], True: []}
        for _run in range(runs):
            for counted in (False, True):
                subset = None if counted else ["all", "!counters"]
                start = time.perf_counter()
                gather(root=root, gather_subset=subset, nvml="no")
                samples[counted].append(time.perf_counter() - start)
        without, with_counters = statistics.median(samples[False]), statistics.median(samples[True])
        print("%-34s %14.2f %14.2f %8.2f" % (name, without * 1000, with_counters * 1000, with_counters / without))


def bench_module(roots, runs):
    bindir = os.path.dirname(sys.executable)
    work = tempfile.mkdtemp()
    try:
        _tarball, collections = conftest.install_collection(work)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_LOCALHOST_WARNING="0")
        base = [os.path.join(bindir, "ansible"), "localhost", "-c", "local", "-e",
                "ansible_python_interpreter=" + sys.executable, "-o"]

        def ansible(*args):
            return lambda: subprocess.run(base + list(args), env=env, capture_output=True, check=True)
        results = {
            "ping": median_seconds(ansible("-m", "ping"), runs),
            "setup": median_seconds(ansible("-m", "setup"), runs),
            "topology_facts (live /)": median_seconds(ansible("-m", "gpuops.fabric.topology_facts"), runs),
            "topology_facts (dgx8 tree)": median_seconds(
                ansible("-m", "gpuops.fabric.topology_facts", "-a", "root=" + roots["dgx8"]), runs),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    floor = results["ping"]
    setup_cost = results["setup"] - floor
    print("%-30s %10s %14s %18s" % ("ansible localhost -m", "median s", "above ping s", "share of setup's"))
    for name, value in results.items():
        above = value - floor
        print("%-30s %10.3f %14.3f %18s" % (name, value, above,
                                            "" if name in ("ping", "setup") else "%.2f" % (above / setup_cost)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="runs per measurement of gather and lstopo")
    parser.add_argument("--module-runs", type=int, default=5, help="runs per ansible command")
    args = parser.parse_args()
    roots = fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))
    bench_gather(roots, args.runs)
    print()
    bench_counters(roots, args.runs)
    print()
    bench_module(roots, args.module_runs)


if __name__ == "__main__":
    main()
