"""docs/nccl.md's validation table is the model's output on the stored corpus, as it is now: a change of the model,
the corpus or a case's shape that moves a figure fails here until the table is printed again
(python benchmarks/model_accuracy_bench.py --markdown) and the text around it still says what the table shows."""

import importlib.util
import os

from conftest import REPO

BEGIN, END = "<!-- validation-table:begin -->", "<!-- validation-table:end -->"


def _bench():
    spec = importlib.util.spec_from_file_location(
        "model_accuracy_bench", os.path.join(REPO, "benchmarks", "model_accuracy_bench.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_is_the_models_output():
    with open(os.path.join(REPO, "docs", "nccl.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n").splitlines()
    assert shown == _bench().markdown()


def test_every_case_is_in_the_table_with_its_source():
    bench = _bench()
    lines = bench.markdown()
    names = [name for name, _expected, _shape in bench.cases()]
    assert len(names) >= 20
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| case ")]
    assert [row.split(" | ")[0][2:] for row in rows] == names
    # each row ends with where the measurement was posted (or says the stored file's address was not resolved)
    assert all(row.rstrip(" |").rsplit(" | ", 1)[1].startswith(("https://", "http://", "a stored public GitHub file"))
               for row in rows), rows
