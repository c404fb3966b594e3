"""The bandwidth model of NCCL's collectives (plugins/plugin_utils/_planning/collective.py) against published
measurements: tests/fixtures/realdata/nccl-tests-results, each case a table or figure as posted (PROVENANCE.md), the
poster's verdict (expected.json) and the node as the post describes it, written by hand (shape.json).

Prints predicted / measured for every case, then the median and the worst ratio over the cases the poster calls
healthy, and whether each case the poster calls bad falls below the model (measured under 75% of it). Asserts
nothing: the goal (healthy within +-25%, the median within +-10%) is read off the output, not tuned case by case.
With --markdown it prints the validation table of docs/nccl.md instead
(tests/unit/plugins/plugin_utils/_planning/test_validation_table.py holds the docs to it)."""

import json
import os
import re
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


def _source(name):
    """The first address in a case's PROVENANCE.md: where the measurement was posted."""
    with open(os.path.join(CORPUS, name, "PROVENANCE.md")) as handle:
        found = re.search(r"https?://[^\s)>\]]+", handle.read())
    return found.group(0).rstrip(".,;") if found else "a stored public GitHub file, address not resolved (PROVENANCE.md)"


def _hardware(expected):
    parts = ["%sx %s" % (expected.get("gpus_per_node") or "?", expected.get("gpu") or "GPU")]
    if expected.get("intra"):
        parts.append(str(expected["intra"]))
    if expected.get("nodes", 1) != 1 or expected.get("transport"):
        parts.append("%s over %s" % (expected.get("transport") or "?", expected.get("nic") or "?"))
    return ", ".join(parts)


def summary(rows):
    """The closing lines: healthy cases' median and worst ratio, bad cases flagged."""
    healthy = sorted(f["ratio"] for _n, v, f in rows if v == "healthy")
    lines = []
    if healthy:
        middle = len(healthy) // 2
        median = healthy[middle] if len(healthy) % 2 else (healthy[middle - 1] + healthy[middle]) / 2
        worst = max(healthy, key=lambda r: abs(r - 1))
        within = sum(1 for r in healthy if 0.75 <= r <= 1.25)
        lines.append("healthy cases: %d; predicted / measured median %.3f, worst %.3f; within +-25%%: %d of %d" % (
            len(healthy), median, worst, within, len(healthy)))
    bad = [(n, f) for n, v, f in rows if v == "bad"]
    flagged = [n for n, f in bad if f["measured"] < BELOW * f["predicted"]]
    lines.append("bad cases: %d; measured below %d%% of the model: %d; not below: %s" % (
        len(bad), BELOW * 100, len(flagged), ", ".join(n for n, f in bad if n not in flagged) or "none"))
    return lines


def markdown():
    """The validation table of docs/nccl.md: every stored case, the model beside the measurement, with its source."""
    lines = ["| case | hardware as posted | nodes | poster | model GB/s | measured GB/s | model / measured | "
             "limited by (model) | source |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for name, expected, document in cases():
        verdict = expected.get("poster_verdict")
        found = compare(expected, document)
        cells = [name, _hardware(dict(expected, nodes=document.get("nodes", 1))), str(document.get("nodes") or "-"),
                 str(verdict)]
        if found is None:
            cells += ["-", "%s" % expected.get("peak_busbw_GBps") if expected.get("peak_busbw_GBps") else "-", "-",
                      "not modelled: %s" % document.get("not_modelled")]
        else:
            rows.append((name, verdict, found))
            cells += ["%.2f" % found["predicted"], "%.2f" % found["measured"], "%.2f" % found["ratio"],
                      "%s (%s)" % (found["limited_by"], found["algorithm"])]
        cells.append(_source(name))
        lines.append("| %s |" % " | ".join(c.replace("|", "\\|") for c in cells))
    return lines + [""] + ["- %s" % line for line in summary(rows)]


def main():
    if "--markdown" in sys.argv[1:]:
        print("\n".join(markdown()))
        return
    rows = []
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
    print("")
    for line in summary(rows):
        print(line)


if __name__ == "__main__":
    main()
