"""The topology_summary filter's lines (plugin_utils/_summary.py) on a real capture, and on links it used to crash on:
a GPU link with a generation and width but no bandwidth (a TypeError before the links were read through
pcie.link_sides), and values of the wrong type (HAND-WRITTEN edits of the capture's facts)."""

import copy

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._summary import summarize


@pytest.fixture(scope="module")
def facts(healthy):
    return healthy


def gpu_lines(lines):
    return [line for line in lines if line.startswith("GPU ")]


def test_a_capture_is_summarized(facts):
    lines = summarize(facts)
    assert gpu_lines(lines) and all("Gen" in line and "GB/s" in line for line in gpu_lines(lines))


@pytest.mark.parametrize("current, shown", [
    ({"generation": 4, "width": 16, "gbytes_per_s": None}, "Gen4 x16,"),
    ({"generation": 4, "width": 16, "gbytes_per_s": float("nan")}, "Gen4 x16,"),
    ({"generation": "4", "width": True, "gbytes_per_s": 31.5}, "31.5 GB/s"),
    ({"generation": None, "width": None, "gbytes_per_s": None}, "max Gen"),
])
def test_a_link_the_facts_only_half_know(facts, current, shown):
    edited = copy.deepcopy(facts)
    edited["gpus"][0]["link"]["current"] = current
    line = gpu_lines(summarize(edited))[0]
    assert shown in line, line
