"""The Slurm node table as scontrol prints it (real captures: tests/fixtures/slurm/captured from Debian's 22.05 on this
machine, tests/fixtures/slurm/public from users' posts, Slurm 20.02 to 25.05) and what to drain and resume."""

import glob
import os

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils import _slurm
from ansible_collections.gpuops.fabric.plugins.module_utils._slurm import (
    drain_reason, drained, node_problem, ours, parse_nodes, plan, rule_problem, update_argv,
)

SLURM = os.path.join(REPO, "tests", "fixtures", "slurm")


def capture(name):
    path = glob.glob(os.path.join(SLURM, "*", name))
    assert len(path) == 1, name
    with open(path[0], encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("name, expected", [
    ("slurm-22.05-one-drained.txt", {
        "gfsl1": ("IDLE+DRAIN", True, "gpuops.fabric: fail PCIE-001 NET-003", "root"),
        "gfsl2": ("IDLE", False, None, None)}),
    ("slurm-22.05-one-down-by-admin.txt", {
        "gfsl1": ("IDLE", False, None, None),
        "gfsl2": ("DOWN", False, "cable swap, ticket 4711", "root")}),
    ("bih-cluster-20.02.0-mixed-drain-reason.txt", {
        "med0304": ("MIXED+DRAIN", True, "deep power-off required for PSU", "root")}),
    ("gentoo-blog-20.11.0-idle-drain-reason-comment.txt", {  # Comment=(null) after the reason
        "cu201": ("IDLE+DRAIN", True, "Low RealMemory", "root")}),
    ("dat351-20.11.9-three-nodes-down-star-not-responding.txt", {  # DOWN*: the not-responding mark of 20.x
        "slurmmaster": ("IDLE", False, None, None), "slurmw1": ("IDLE", False, None, None),
        "slurmw2": ("DOWN*", False, "Not responding", "slurm")}),
    ("aws-pcluster-24.05.8-cloud-powered-down-reason-after-blank.txt", {  # a blank line inside a record
        "i8-dy-r6gb64-1": ("IDLE+CLOUD+POWERED_DOWN", False, "Scheduler health check failed", "root"),
        "i8-dy-r7gb64-1": ("IDLE+CLOUD+POWERED_DOWN", False, None, None),
        "i128-dy-c6gb256-1": ("IDLE+CLOUD+POWERED_DOWN", False, None, None)}),
    ("aws-pcluster-down-cloud-powered-down-whitespace-line-before-reason.txt", {
        "gpu-st-ml-1": ("DOWN+CLOUD+POWERED_DOWN", False,
                        "Static node maintenance: unhealthy node is being replaced", "root")}),
    ("cn-blog-25.05.3-four-nodes-idle-drain-utf8-reason.txt", {
        "server2": ("IDLE", False, None, None), "server3": ("IDLE", False, None, None),
        "server4": ("IDLE", False, None, None), "server5": ("IDLE+DRAIN", True, u"\u7ef4\u62a4\u4e2d", "root")}),
    ("slurmcc-test-22.05.8-dynamic-not-responding-powering-up.txt", {  # 21.08 on: flags as words
        "s301-c7-dynamic-7": ("IDLE+DYNAMIC_NORM+POWERED_DOWN", False, None, None),
        "d1": ("IDLE+CLOUD+DYNAMIC_NORM+NOT_RESPONDING+POWERING_UP", False, None, None)}),
    ("nml-23.11.0-two-nodes-idle-resumeaftertime.txt", {
        "nml-slurm-node1": ("IDLE", False, None, None), "nml-slurm-node2": ("IDLE", False, None, None)}),
])
def test_every_node_of_real_captures_is_read_with_its_state_and_reason(name, expected):
    nodes = parse_nodes(capture(name))
    assert sorted(nodes) == sorted(expected)
    for node, (state, is_drained, reason, user) in expected.items():
        got = nodes[node]
        assert (got["state"], drained(got), got["reason"], got["reason_user"]) == (state, is_drained, reason, user)
        if reason:
            assert got["reason_time"][:2] == "20"  # the stamp's time, cut off the reason


def test_junk_and_empty_listings_give_no_nodes_and_no_error():
    assert parse_nodes("") == {}
    assert parse_nodes("Node gfsl9 not found\n") == {}
    junk = parse_nodes("NodeName=x\n   Reason=\n   State=\n\x00\xff NodeName=y\n")
    assert junk == {"x": {"state": None, "flags": [], "reason": None, "reason_user": None, "reason_time": None}}
    # a reason holding what looks like another field: the State line before it counts, the reason is kept whole
    nodes = parse_nodes("NodeName=a Arch=x\n   State=IDLE ThreadsPerCore=1\n   Reason=State=IDLE+DRAIN [x] [root@2026]\n")
    assert nodes["a"]["state"] == "IDLE" and nodes["a"]["reason"] == "State=IDLE+DRAIN [x]"


def test_the_reason_is_the_same_for_the_same_rules_and_is_recognised_as_ours():
    assert drain_reason(["PCIE-001", "NET-004", "PCIE-001"]) == "gpuops.fabric: fail NET-004 PCIE-001"
    many = ["NET-%03d" % i for i in range(1, 12)]
    assert drain_reason(many).endswith("NET-008 +3 more") and drain_reason(list(reversed(many))) == drain_reason(many)
    assert ours(drain_reason(["NET-004"])) and not ours("bad DIMM") and not ours(None)
    assert len(drain_reason(["ABCDEFGHIJKLMNOP-999"] * 3 + ["X-%03d" % i for i in range(999)])) < 200


@pytest.mark.parametrize("name", ["node[1-100]", "a,b", "node 1", "", "-x", "n;reboot", "n\n", "x" * 65, 17, None,
                                  "../x", "n$(id)"])
def test_names_that_could_reach_more_than_one_node_or_a_shell_are_refused(name):
    assert node_problem(name)


@pytest.mark.parametrize("name", ["gpu017", "dgx-a100-01.rack3", "n_1", "x" * 64])
def test_single_node_names_pass(name):
    assert node_problem(name) is None


def test_rule_ids():
    assert rule_problem("PCIE-001") is None and rule_problem("STAB-010") is None
    for bad in ("pcie-001", "PCIE-1", "PCIE-001 x", "", None, "A-0012"):
        assert rule_problem(bad)


def test_plan_drains_failing_nodes_resumes_only_its_own_and_keeps_what_others_set():
    nodes = parse_nodes(capture("slurm-22.05-drained-by-both.txt"))  # gfsl1: ours (NET-004), gfsl2: bad DIMM
    nodes.update(parse_nodes(capture("dat351-20.11.9-three-nodes-down-star-not-responding.txt")))
    actions, kept, errors = plan(nodes, {"gfsl1": ["NET-004"], "gfsl2": ["PCIE-001"], "slurmw1": ["PCIE-001"],
                                         "slurmw2": ["NET-003"]}, ["slurmmaster"])
    assert errors == []
    assert [(a["node"], a["action"]) for a in actions] == [("slurmw1", "drain")]
    assert actions[0]["reason"] == "gpuops.fabric: fail PCIE-001"
    assert kept == {"gfsl1": "drained by this collection for the same rules",
                    "gfsl2": "drained by someone else: bad DIMM",
                    "slurmw2": "down* by someone else: Not responding"}
    # other rules now: only the reason changes; clean: resumed, as it was ours
    actions, kept, errors = plan(nodes, {"gfsl1": ["NET-004", "PCIE-001"]}, ["gfsl2", "slurmw1"])
    assert [(a["node"], a["action"]) for a in actions] == [("gfsl1", "reason")]
    assert kept == {"gfsl2": "clean, but drained by someone else: bad DIMM"}
    actions, kept, errors = plan(nodes, {}, ["gfsl1", "gfsl2", "slurmmaster"])
    assert [(a["node"], a["action"], a["after"]) for a in actions] == [("gfsl1", "resume", "IDLE")]


def test_unknown_nodes_and_too_many_new_drains_change_nothing():
    nodes = parse_nodes(capture("cn-blog-25.05.3-four-nodes-idle-drain-utf8-reason.txt"))
    actions, kept, errors = plan(nodes, {"server2": ["NET-004"]}, ["server9"])
    assert actions == [] and len(errors) == 1 and errors[0].startswith("server9: no such node in Slurm (scontrol show node lists 4 node(s); set")
    actions, kept, errors = plan(nodes, dict((n, ["NET-004"]) for n in ("server2", "server3", "server4")), [], 2)
    assert actions == [] and len(errors) == 1
    assert errors[0].startswith("would drain 3 node(s) (server2, server3, server4), more than the 2 allowed")
    # nodes drained already do not count against the limit
    actions, kept, errors = plan(nodes, {"server2": ["NET-004"], "server5": ["NET-004"]}, [], 1)
    assert [a["node"] for a in actions] == ["server2"] and kept["server5"].startswith("drained by someone else")


def test_each_value_is_one_argument():
    argv = update_argv("/usr/bin/scontrol", {"node": "n1", "action": "drain", "reason": "gpuops.fabric: fail NET-004"})
    assert argv == ["/usr/bin/scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=gpuops.fabric: fail NET-004"]
    assert update_argv("s", {"node": "n1", "action": "resume", "reason": None}) == [
        "s", "update", "NodeName=n1", "State=RESUME"]
    assert _slurm.MAX_LISTING_BYTES > 10 * 1024 * 1024
