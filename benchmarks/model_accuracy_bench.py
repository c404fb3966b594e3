"""The bandwidth model of NCCL's collectives (plugins/plugin_utils/_planning/collective.py) against published
measurements: tests/fixtures/realdata/nccl-tests-results, each case a table or figure as posted (PROVENANCE.md), the
poster's verdict (expected.json) and the node as the post describes it, written by hand (shape.json).

Prints predicted / measured for every case, then the median and the worst ratio over the cases the poster calls
healthy, and whether each case the poster calls bad falls below the model (measured under 75% of it). Asserts
nothing: the goal (healthy within +-25%, the median within +-10%) is read off the output, not tuned case by case."""

import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import predict  # noqa: E402

assert conftest.COLLECTIONS_ROOT in sys.path
CORPUS = os.path.join(REPO, "tests", "fixtures", "realdata", "nccl-tests-results")
BELOW = 0.75


def cases():
    """[(name, expected, shape document)] of every stored case, sorted by name."""
    out = []
    for name in sorted(os.listdir(CORPUS)):
        folder = os.path.join(CORPUS, name)
        if not os.path.isdir(folder):
            continue
        with open(os.path.join(folder, "expected.json")) as handle:
            expected = json.load(handle)
        with open(os.path.join(folder, "shape.json")) as handle:
            shape = json.load(handle)
        out.append((name, expected, shape))
    return out


def compare(expected, document):
    """{"predicted", "measured", "ratio" (predicted / measured), "limited_by", "algorithm"} or None (not modelled)."""
    if not document.get("shape"):
        return None
    collective = expected.get("collective")
    collective = collective if collective in ("all_reduce", "all_gather", "reduce_scatter") else "all_reduce"
    prediction = predict(document["shape"], document["nodes"], collective)
    measured = expected.get("peak_busbw_GBps")
    predicted = prediction["busbw_gbytes_per_s"]
    return {"predicted": predicted, "measured": measured, "limited_by": prediction["limited_by"],
            "algorithm": prediction["algorithm"],
            "ratio": predicted / measured if predicted and measured else None}


def main():
    healthy, rows = [], []
    header = ("case", "verdict", "nodes", "model", "measured", "ratio", "limited by")
    print("%-50s %-9s %5s %9s %9s %6s  %s" % header)
    for name, expected, document in cases():
        verdict = expected.get("poster_verdict")
        found = compare(expected, document)
        if found is None:
            print("%-50s %-9s %5s  not modelled: %s" % (name, verdict, "-", document.get("not_modelled")))
            continue
        rows.append((name, verdict, found))
        print("%-50s %-9s %5d %9.2f %9.2f %6.2f  %s (%s)" % (
            name, verdict, document["nodes"], found["predicted"], found["measured"], found["ratio"],
            found["limited_by"], found["algorithm"]))
        if verdict == "healthy":
            healthy.append(found["ratio"])
    healthy.sort()
    if healthy:
        middle = len(healthy) // 2
        median = healthy[middle] if len(healthy) % 2 else (healthy[middle - 1] + healthy[middle]) / 2
        worst = max(healthy, key=lambda r: abs(r - 1))
        within = sum(1 for r in healthy if 0.75 <= r <= 1.25)
        print("\nhealthy cases: %d; predicted / measured median %.3f, worst %.3f; within +-25%%: %d of %d" % (
            len(healthy), median, worst, within, len(healthy)))
    bad = [(n, f) for n, v, f in rows if v == "bad"]
    flagged = [n for n, f in bad if f["measured"] < BELOW * f["predicted"]]
    print("bad cases: %d; measured below %d%% of the model: %d; not below: %s" % (
        len(bad), BELOW * 100, len(flagged), ", ".join(n for n, f in bad if n not in flagged) or "none"))


if __name__ == "__main__":
    main()
