"""values.finite: the one test of "a usable number" for what arrives decoded (JSON, YAML, host variables), and a scan
that fails when a second version of it appears under plugins/ (issue 31: there were eight)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite


@pytest.mark.parametrize("value, low, high, expected", [
    (0, None, None, 0), (1.5, None, None, 1.5), (-3, None, None, -3), (10 ** 300, None, None, 10 ** 300),
    (True, None, None, None), (False, None, None, None), ("1", None, None, None), (None, None, None, None),
    ([1], None, None, None), ({"a": 1}, None, None, None),
    (float("nan"), None, None, None), (float("inf"), None, None, None), (float("-inf"), None, None, None),
    (10 ** 400, None, None, None), (-(10 ** 400), None, None, None),  # past a float's range: math.isfinite raises
    (10 ** 400, 0, None, None), (-1, 0, None, None), (0, 0, None, 0), (100, 0, 100, 100), (100.5, 0, 100, None),
    (5, 10, None, None), (5, None, 4, None),
])
def test_finite(value, low, high, expected):
    assert finite(value, low, high) == expected


def test_what_json_decodes_is_judged_without_an_exception():
    # Python's json reads NaN, Infinity and integers of any length from a file nobody here wrote
    for text in ("NaN", "Infinity", "-Infinity", "1" * 400, "-" + "9" * 400, "1e400", "true", "null", '"5"'):
        assert finite(json.loads(text)) is None, text
    assert finite(json.loads("1e308")) == 1e308


# Where a test of finiteness or of "int or float" may stay, and why: each is not a consumer's guard of a decoded
# value but something else (rendering one, parsing text, the pre-flight's own messages).
ALLOWED = {
    "plugins/module_utils/_topology/values.py": "the guard itself",
    "plugins/plugin_utils/_intent/declared.py":
        "the pre-flight names why a variable is refused (a template, a whole float for an int, NaN) and converts",
    "plugins/plugin_utils/_audit/baseline.py": "shown(): writes NaN and Infinity out in a message",
    "plugins/plugin_utils/_audit/reports/prometheus_report.py": "writes NaN as Prometheus spells it",
    "plugins/plugin_utils/_audit/rules/stab/load.py": "a spread it computed itself (infinite over a median of 0)",
    "plugins/module_utils/_topology/sources/hwloc.py": "parses an attribute's text with float()",
    "plugins/module_utils/_topology/sources/ncclxml.py": "parses an attribute's text with float()",
    "plugins/module_utils/_names.py": "quotes a value by its type for a file format",
}
SECOND_GUARD = re.compile(r"math\.is(?:finite|nan|inf)\(|isinstance\([^()]*,\s*\((?:int, float|float, int)\)\)")


def second_guards(text):
    return [line.strip() for line in text.splitlines() if SECOND_GUARD.search(line)]


def test_the_scan_finds_a_second_guard():
    planted = ("def _ms(value):\n    if isinstance(value, bool) or not isinstance(value, (int, float)):\n"
               "        return None\n    return value if math.isfinite(value) else None\n")
    assert len(second_guards(planted)) == 2
    assert second_guards("value = finite(part.get(key), low=0)\n") == []


def test_no_second_finite_number_guard_under_plugins():
    found = []
    for top, _dirs, files in os.walk(os.path.join(REPO, "plugins")):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.relpath(os.path.join(top, name), REPO)
            if path in ALLOWED:
                continue
            with open(os.path.join(top, name), encoding="utf-8") as handle:
                found += ["%s: %s" % (path, line) for line in second_guards(handle.read())]
    assert not found, "use values.finite instead:\n" + "\n".join(found)
    for path in ALLOWED:  # an allowance for a file that is gone, or no longer needs one, is dropped
        with open(os.path.join(REPO, path), encoding="utf-8") as handle:
            assert second_guards(handle.read()), path
