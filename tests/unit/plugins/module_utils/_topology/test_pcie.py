"""PCIe link arithmetic: the table in DESIGN.md and both sysfs speed spellings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology import pcie
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    generation_from_gts, link_dict, parse_link_speed, parse_link_width, pcie_bandwidth,
)


@pytest.mark.parametrize("gen,width,expected", [
    (3, 16, 15.75),   # DESIGN.md: 8 GT/s x 16 x 128/130 / 8
    (4, 16, 31.5),
    (5, 16, 63.0),
    (3, 8, 15.75 / 2),  # "same card forced to x8: half"
    (4, 8, 31.5 / 2),
    (5, 8, 63.0 / 2),
    (1, 1, 0.25),     # 2.5 GT/s, 8b/10b
    (2, 16, 8.0),     # 5 GT/s, 8b/10b
    (6, 16, 121.0),   # 64 GT/s, FLIT 242/256
])
def test_design_table(gen, width, expected):
    assert pcie_bandwidth(gen, width) == pytest.approx(expected, rel=0.002)


def test_exact_gen3_x16():
    assert pcie_bandwidth(3, 16) == pytest.approx(8 * 16 * 128 / 130 / 8)


@pytest.mark.parametrize("gen,width", [(None, 16), (4, None), (0, 16), (8, 16), (4, 0), ("x", 4)])
def test_unknown_gives_none(gen, width):
    assert pcie_bandwidth(gen, width) is None


@pytest.mark.parametrize("text,expected", [
    ("8 GT/s", 8.0),            # older kernels (hwloc captures)
    ("2.5 GT/s", 2.5),
    ("8.0 GT/s PCIe", 8.0),     # 5.x kernels and later
    ("16.0 GT/s PCIe", 16.0),
    ("32.0 GT/s PCIe\n", 32.0),
    ("Unknown", None),
    ("Unknown speed", None),
    ("", None),
    ("GT/s", None),
    ("0 GT/s", None),
    (None, None),
])
def test_parse_link_speed(text, expected):
    assert parse_link_speed(text) == expected


@pytest.mark.parametrize("text,expected", [("16", 16), ("8\n", 8), ("x4", 4), ("0", None), ("255", None),
                                           ("3", None), ("", None), ("wide", None)])
def test_parse_link_width(text, expected):
    assert parse_link_width(text) == expected


def test_generation_mapping():
    assert [generation_from_gts(v) for v in (2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 7.0)] == [1, 2, 3, 4, 5, 6, None]


def test_link_dict_shape():
    assert link_dict(16.0, 16) == {"speed_gts": 16.0, "generation": 4, "width": 16, "gbytes_per_s": 31.508}
    assert link_dict(None, 16)["gbytes_per_s"] is None


# A second definition of "near" (issue 31): a literal pair of the two nearest path types, or an index of PXB, outside
# pcie.py. Lists of every path type (parsers, NCCL's own level words) are not definitions of near.
_SECOND_NEAR = re.compile(r"""[(\[{]\s*["']PIX["']\s*,\s*["']PXB["']\s*,?\s*[)\]}]|index\(\s*["']PXB["']\s*\)""")


def _second_definitions(text):
    return _SECOND_NEAR.findall(text)


def test_near_is_defined_once():
    from conftest import REPO
    assert pcie.NEAR == ("PIX", "PXB") and pcie.is_near("PXB") and not pcie.is_near("PHB") and not pcie.is_near(None)
    # the check can fail: the shapes the collection had before
    assert len(_second_definitions('NEAR = ("PIX", "PXB")\nif t not in ("PIX", "PXB"):\nPATH_ORDER.index("PXB")')) == 3
    found = []
    for folder, _dirs, files in os.walk(os.path.join(REPO, "plugins")):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and not path.endswith(os.path.join("_topology", "pcie.py")):
                with open(path) as handle:
                    found += ["%s: %s" % (os.path.relpath(path, REPO), m) for m in _second_definitions(handle.read())]
    assert found == []


class _Float(float):
    """A float subclass (a YAML or JSON library may hand one out): read by the general path."""


@pytest.mark.parametrize("value, generation, width, gbytes", [
    (5, 5, 5, 5),
    (17, None, 17, 17),               # past Gen 16, a plausible width and rate
    (5.0, None, None, 5.0),           # a float is never a generation or a width
    (float("nan"), None, None, None),
    (float("inf"), None, None, None),
    (float("-inf"), None, None, None),
    (-0.5, None, None, None),
    (10000.0, None, None, 10000.0),
    (10000.5, None, None, None),
    (_Float(31.5), None, None, 31.5),
    (True, None, None, None),         # never a bool
    ("5", None, None, None),
    (None, None, None, None),
    (10 ** 400, None, None, None),
])
def test_a_link_field_is_a_number_in_its_range_or_none(value, generation, width, gbytes):
    """link_sides reads every field through one check; its quick paths for int and float agree with finite()."""
    sides = pcie.link_sides({"current": {"generation": value, "width": value, "gbytes_per_s": value}})
    assert sides["current"] == {"generation": generation, "width": width, "gbytes_per_s": gbytes}
    assert sides["max"] == {"generation": None, "width": None, "gbytes_per_s": None}
