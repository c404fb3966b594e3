"""Benchmark: the aggregate over N node results (default 10,000) in one folder: reading and checking them, then the
inventory rules and the report (run.combine), beside a JSON round trip (read and parse) of the same files, and the
peak memory of a process that does only the aggregate.

Prints times, ratios and memory; asserts nothing. The node results are real captures' facts judged once (the 8-GPU
sysfs trees, a POWER9, a Westmere and a Xeon Phi node), each copied under N host names: every 50th is the 8-GPU
node with faults, one in five the healthy 8-GPU node, the rest the smaller captures.

Run: .venv/bin/python benchmarks/aggregate_bench.py [--results N] [--runs R]
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)
import fixtures  # noqa: E402

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import node_result  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import combine, run_audit  # noqa: E402

assert conftest.COLLECTIONS_ROOT in sys.path
TODAY = datetime.date(2027, 1, 1)
EXPECT = {"nics": [{"name": "*"}]}
TEMPLATES = ("dgx8-broken", "dgx8", "hwloc-power9-v100-gpunuma", "hwloc-westmere-qib-4numa", "hwloc-xeonphi-mlx4-2numa")


def template_of(index):
    if index % 50 == 0:
        return 0
    if index % 5 == 0:
        return 1
    return 2 + index % 3


def write_results(folder, count, now):
    roots = fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))
    inputs = dict((name, {"facts": gather(root=roots[name]), "expectations": EXPECT}) for name in TEMPLATES)
    report, errors = run_audit(inputs, TODAY, now)
    assert not errors
    docs = dict((doc["host"], doc) for doc in report["nodes"])
    total = 0
    for index in range(count):
        host = "node%05d" % index
        doc = docs[TEMPLATES[template_of(index)]]
        text = json.dumps(dict(doc, host=host, findings=[dict(f, host=host) for f in doc["findings"]]))
        total += len(text)
        with open(os.path.join(folder, host + ".json"), "w") as handle:
            handle.write(text)
    return total


def aggregate(folder, count, now):
    hosts = ["node%05d" % i for i in range(count)]
    when = node_result.parse_time(now)
    docs, _sources, lines = node_result.collect([folder], hosts, when, 86400)
    assert not lines, lines[:3]
    report, _lines = combine(docs, TODAY, now)
    return report


def child(folder, count, now):
    """The aggregate alone, in a fresh process: its peak resident memory."""
    start = time.perf_counter()
    report = aggregate(folder, count, now)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"seconds": seconds, "peak_mib": peak, "findings": len(report["findings"])}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--now", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.results, args.now)
        return
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    folder = tempfile.mkdtemp(prefix="aggregate-bench-")
    try:
        total = write_results(folder, args.results, now)
        samples_json, samples_aggregate, peaks = [], [], []
        for _run in range(args.runs):  # interleaved: a loaded machine slows both alike
            start = time.perf_counter()
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name)) as handle:
                    json.loads(handle.read())
            samples_json.append(time.perf_counter() - start)
            out = subprocess.run([sys.executable, __file__, "--results", str(args.results), "--child", folder,
                                  "--now", now], capture_output=True, text=True, check=True).stdout
            measured = json.loads(out.strip().splitlines()[-1])
            samples_aggregate.append(measured["seconds"])
            peaks.append(measured["peak_mib"])
        samples_json.sort()
        samples_aggregate.sort()
        middle = len(samples_json) // 2
        print("%d node results, %.0f MiB of JSON, median of %d: read and parse %.2f s; aggregate (read, check, "
              "inventory rules, report) %.2f s (%.2fx); peak memory of the aggregate's process %.0f MiB (%.1fx the "
              "JSON's size)" % (args.results, total / 1048576.0, args.runs, samples_json[middle],
                                samples_aggregate[middle], samples_aggregate[middle] / samples_json[middle],
                                max(peaks), max(peaks) / (total / 1048576.0)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
