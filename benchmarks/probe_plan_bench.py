"""Probe planning at scale: the jumbo and iperf3 plans for 1,000 and 10,000 hosts (target: under 1 s each),
with the rounds and the pairs per round (bounded by hosts / 2), and the all-pairs plan of small inventories.
Prints figures; asserts nothing about time (DEVELOPERS.md: performance goes in a benchmark)."""

import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.pairing import coverage, plan  # noqa: E402

assert conftest.COLLECTIONS_ROOT in sys.path


def main():
    print("%8s %10s %7s %9s %14s %10s  %s" % ("hosts", "plan", "rounds", "pairs", "max per round", "seconds",
                                              "coverage"))
    for n, switches in ((16, 2), (32, 2), (64, 4), (1000, 32), (10000, 320)):
        hosts = ["node%05d" % i for i in range(n)]
        switch_of = dict((h, "leaf%03d" % (i * switches // n)) for i, h in enumerate(hosts))
        best = None
        for _try in range(3):
            start = time.perf_counter()
            result = plan(hosts, switch_of)
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        covered = coverage(result["rounds"], hosts, switch_of)
        ok = "every host, server and switch" if not any(covered.values()) else covered
        print("%8d %10s %7d %9d %14d %10.4f  %s" % (n, result["kind"], len(result["rounds"]), result["pairs"],
                                                    result["max_pairs_per_round"], best, ok))


if __name__ == "__main__":
    main()
