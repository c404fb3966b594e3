"""fabric_probe_results is built in Python (plugins/plugin_utils/_audit/probe_results.py) from what the probes role
registered. The registered results here are hand-written in the shapes the modules document (their RETURN); the
role's real ones go through the same function in tests/integration/test_probes_nshosts.py and the molecule probes
scenario."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from conftest import REPO
from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.fabric.plugins.filter.probe_results import probe_results as probe_filter
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.probe_results import (
    KEYS, ROUNDS_ENDED_EARLY, SETTINGS, probe_results,
)

PLAN = {"missing": {"n1": [{"peer": "n3", "reason": "no address on training"}]}, "throughput": [["n1", "n2"]]}
PING = {"peer": "n2", "network": "training", "payload": 8972, "status": "ok"}
MEASURED = {"peer": "n2", "network": "training", "gbps": 9.3}
BUDGETS = {"min_fraction": 0.8, "queue_delay_ms": 5, "max_retransmit_percent": 1, "max_goodput_spread_percent": 10,
           "nccl_expected_busbw": None}


def build(**given):
    rounds = {"probes": [PING], "measurements": [MEASURED], "server_errors": [], "finished": True}
    args = dict(plan=PLAN, host="n1", first_host="n1", probes=["jumbo", "throughput"], in_rounds=True,
                rounds_job={"job": "j1", "start": 1, "bound": 2}, rounds=rounds,
                jumbo={"skipped": True}, nccl_node={"skipped": True}, nccl_launched=None, launcher=False,
                settings=BUDGETS)
    args.update(given)
    return probe_results(**args)


def test_a_host_that_ran_its_rounds():
    got = build()
    assert sorted(got) == sorted(KEYS)
    assert got["jumbo"] == [PING] and got["jumbo_error"] is None
    assert got["throughput"] == [MEASURED] and got["throughput_error"] is None and got["server_errors"] == []
    assert got["missing"] == PLAN["missing"]["n1"]
    assert got["nccl"] == {"skipped": True} and got["nccl_scope"] == "node"
    assert dict((k, got[k]) for k in SETTINGS) == BUDGETS


def test_the_rounds_run_that_ended_before_its_pings():
    got = build(rounds={"failed": True, "msg": "the node rebooted"})
    assert got["jumbo"] == [] and got["jumbo_error"] == "the node rebooted"
    assert got["throughput_error"] == "the node rebooted" and got["throughput"] == []
    assert build(rounds={"failed": True})["jumbo_error"] == ROUNDS_ENDED_EARLY


def test_a_run_that_could_not_start_pings_on_its_own():
    got = build(rounds_job={"failed": True, "msg": "iperf3: not found"}, rounds={"skipped": True},
                jumbo={"probes": [PING]})
    assert got["jumbo"] == [PING] and got["jumbo_error"] is None
    assert got["throughput_error"] == "iperf3: not found"
    got = build(rounds_job={"failed": True}, rounds=None, jumbo={"failed": True, "msg": "ping: not found"})
    assert got["jumbo"] == [] and got["jumbo_error"] == "ping: not found" and got["throughput_error"] == "failed"


def test_a_host_outside_the_rounds_and_a_host_the_plan_never_named():
    got = build(host="n9", in_rounds=False, rounds_job={"skipped": True}, rounds={"skipped": True},
                jumbo={"probes": [PING]})
    assert got["jumbo"] == [PING] and got["throughput"] == [] and got["throughput_error"] is None
    assert got["missing"] == []


def test_nccl_tests_through_a_launcher_belong_to_the_first_host():
    launched = {"busbw_gbps": 180.0}
    assert build(launcher=True, nccl_launched=launched)["nccl"] == launched
    other = build(host="n2", launcher=True, nccl_launched=launched)
    assert other["nccl"] is None and other["nccl_scope"] == "launcher"


def test_what_a_core_templated_to_text_and_bad_flags():
    assert build(in_rounds="True", launcher="false")["jumbo"] == [PING]
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="in_rounds"):
            build(in_rounds=bad)
    with pytest.raises(AnsibleFilterError, match="probe_results: launcher"):
        probe_filter(PLAN, "n1", "n1", [], False, launcher="maybe")


@pytest.mark.parametrize("odd", [None, "text", 3, ["a"]])
def test_results_that_are_not_mappings_count_as_empty(odd):
    got = build(plan=odd, rounds_job=odd, rounds=odd, jumbo=odd, probes=odd, settings=odd)
    assert sorted(got) == sorted(KEYS)
    assert got["jumbo"] == [] and got["throughput"] == [] and got["missing"] == []
    assert all(got[k] is None for k in SETTINGS)


def test_the_rules_read_only_the_keys_listed_once():
    """Every key rules read of the probes (probes.get("x"), probes["x"], _probes(ctx, "x")) is one of KEYS, and
    every key of KEYS is read by some rule."""
    read = set()
    rules = os.path.join(REPO, "plugins", "plugin_utils", "_audit")
    pattern = re.compile(r"probes(?:\.get\(|\[)\"(\w+)\"|_probes\(ctx, \"(\w+)\"")
    for top, _dirs, files in os.walk(rules):
        for name in files:
            if name.endswith(".py") and name != "probe_results.py":
                with open(os.path.join(top, name), encoding="utf-8") as handle:
                    read.update(a or b for a, b in pattern.findall(handle.read()))
    assert read == set(KEYS), (sorted(read - set(KEYS)), sorted(set(KEYS) - read))


def test_the_role_builds_them_with_the_filter_and_every_setting():
    with open(os.path.join(REPO, "roles", "probes", "tasks", "main.yml"), encoding="utf-8") as handle:
        text = handle.read()
    assert text.count("fabric_probe_results:") == 1 and "gpuops.fabric.probe_results(" in text
    for key in SETTINGS:
        assert "'%s':" % key in text, key
