"""Benchmark: the sysfs readers on normal real captures against hostile inputs.

Prints the median time per input and its ratio to the normal case; asserts nothing (performance is not a
pass/fail test here). A reader that stays linear keeps the hostile ratios small: the 660 KB cpumask used to
take over a minute (big-integer shifting), a cpulist of repeated huge ranges expanded every repeat.

Normal inputs: the CPU lists and masks of the real captures (tests/fixtures/realdata) and a whole gather of
each capture. Hostile inputs are hand-written here: a 660 KB all-ones mask, a 660 KB mask of leading zero words,
a cpulist of 20000 ranges "0-16383", one of "0-65536" ranges (beyond the bound), and a gather of a copy of the
Xeon Phi capture with a 660 KB cpumap and an oversized cpulist planted.

Run: .venv/bin/python benchmarks/readers_bench.py [--runs N]
"""

import argparse
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)
import fixtures  # noqa: E402

assert conftest.COLLECTIONS_ROOT in sys.path

from gather_bench import median_seconds  # noqa: E402  (one timing helper for every benchmark)

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import (
    MAX_CPUS, parse_cpulist, parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather  # noqa: E402

CAPTURES = ["hwloc-xeonphi-mlx4-2numa", "hwloc-westmere-qib-4numa", "hwloc-power9-v100-gpunuma",
            "prometheus-procfs-pci-fragments"]
MASK_BYTES = 660000


def capture_cpu_files(roots):
    """(cpulists, cpumasks) text of every node and PCI function of the real captures."""
    lists, masks = [], []
    for name in CAPTURES:
        for folder, _dirs, files in os.walk(os.path.realpath(roots[name])):
            for filename, bucket in (("cpulist", lists), ("local_cpulist", lists), ("cpumap", masks),
                                     ("local_cpus", masks)):
                if filename in files:
                    with open(os.path.join(folder, filename), "rb") as handle:
                        bucket.append(handle.read().decode("utf-8", "replace"))
    return lists, masks


def report(title, normal, hostile, runs):
    base = median_seconds(normal[1], runs)
    print("%-58s %12s %10s" % (title, "median ms", "x normal"))
    print("%-58s %12.4f %10.1f" % (normal[0], base * 1000, 1.0))
    for label, func in hostile:
        took = median_seconds(func, runs)
        print("%-58s %12.4f %10.1f" % (label, took * 1000, took / base if base else float("nan")))
    print()


def plant_hostile_tree(roots, work):
    dest = os.path.join(work, "hostile")
    shutil.copytree(os.path.realpath(roots["hwloc-xeonphi-mlx4-2numa"]), dest, symlinks=True)
    node = os.path.join(dest, "sys", "devices", "system", "node", "node0")
    with open(os.path.join(node, "cpumap"), "w") as handle:
        handle.write(",".join(["ffffffff"] * (MASK_BYTES // 9)) + "\n")
    with open(os.path.join(node, "cpulist"), "w") as handle:
        handle.write(",".join(["0-65536"] * (MASK_BYTES // 8)) + "\n")
    return dest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    roots = fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))
    lists, masks = capture_cpu_files(roots)
    print("%d CPU lists and %d CPU masks from %d real captures; CPU bound %d\n"
          % (len(lists), len(masks), len(CAPTURES), MAX_CPUS))

    def all_lists():
        for text in lists:
            parse_cpulist(text)

    def all_masks():
        for text in masks:
            parse_cpumask(text)

    ones = ",".join(["ffffffff"] * (MASK_BYTES // 9))
    zeros = ",".join(["00000000"] * (MASK_BYTES // 9) + ["0000000f"])
    repeated = ",".join(["0-%d" % (MAX_CPUS - 1)] * 20000)
    beyond = ",".join(["0-65536"] * 20000)
    report("cpumask", ("all masks of the real captures (one pass)", all_masks), [
        ("660 KB mask, all ones (beyond the bound: junk)", lambda: parse_cpumask(ones)),
        ("660 KB mask, leading zero words, 4 CPUs", lambda: parse_cpumask(zeros)),
    ], args.runs)
    report("cpulist", ("all cpulists of the real captures (one pass)", all_lists), [
        ("20000 x '0-16383' (%d KB)" % (len(repeated) // 1000), lambda: parse_cpulist(repeated)),
        ("20000 x '0-65536' (beyond the bound: junk)", lambda: parse_cpulist(beyond)),
    ], args.runs)
    work = tempfile.mkdtemp()
    try:
        hostile = plant_hostile_tree(roots, work)
        normal_root = os.path.realpath(roots["hwloc-xeonphi-mlx4-2numa"])
        report("whole gather", ("gather of the Xeon Phi capture", lambda: gather(root=normal_root)), [
            ("same capture, 660 KB cpumap + oversized cpulist", lambda: gather(root=hostile)),
        ] + [("gather of %s (normal)" % name, lambda r=os.path.realpath(roots[name]): gather(root=r))
             for name in CAPTURES[1:]], args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
