"""The Slurm node table as scontrol prints it (real captures: tests/fixtures/slurm/captured from Debian's 22.05 on this
machine, tests/fixtures/slurm/public from users' posts, Slurm 20.02 to 25.05) and what to drain and resume."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils import _slurm
from ansible_collections.gpuops.fabric.plugins.module_utils._slurm import (
    SlurmListingError, drain_reason, drained, node_problem, ours, parse_nodes, plan, reason_rules, rule_problem,
    state_flags, still_as_read, update_argv,
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


def test_the_reason_is_the_same_for_the_same_rules_and_only_exactly_it_is_ours():
    assert drain_reason(["PCIE-001", "NET-004", "PCIE-001"]) == "gpuops.fabric: fail NET-004 PCIE-001"
    many = ["NET-%03d" % i for i in range(1, 31)]
    assert drain_reason(many).endswith("NET-024 +6 more") and drain_reason(list(reversed(many))) == drain_reason(many)
    assert ours(drain_reason(["NET-004"])) and ours(drain_reason(many))
    assert reason_rules(drain_reason(many)) == (many[:24], False)
    assert reason_rules("gpuops.fabric: fail NET-004 PCIE-001") == (["NET-004", "PCIE-001"], True)
    # an operator's words after the prefix make the reason theirs, as does any other text
    for theirs in ("gpuops.fabric: fail PCIE-001, RMA opened, keep drained", "gpuops.fabric: fail PCIE-001 ",
                   "gpuops.fabric:", "gpuops.fabric: fail", "bad DIMM", None, "gpuops.fabric: fail pcie-001"):
        assert not ours(theirs), theirs
    assert len(drain_reason(["ABCDEFGHIJKLMNOP-999"] * 3 + ["X-%03d" % i for i in range(999)])) < 300


def test_a_line_posing_as_a_node_is_not_one_and_a_node_listed_twice_stops_the_reading():
    listing = capture("slurm-22.05-drained-by-both.txt")  # gfsl2: drained by an administrator, "bad DIMM"
    # a reason that holds a line break (scontrol prints it as it is): an indented line is no record
    posing = listing.replace("   Reason=gpuops.fabric: fail NET-004", "   Reason=x\n   NodeName=gfsl2 State=IDLE+DRAIN\n"
                             "   Reason=gpuops.fabric: fail NET-004")
    nodes = parse_nodes(posing)
    assert sorted(nodes) == ["gfsl1", "gfsl2"] and nodes["gfsl2"]["reason"] == "bad DIMM"
    assert nodes["gfsl1"]["state"] == "IDLE+DRAIN" and nodes["gfsl1"]["reason"] == "x"
    # at the first column it is a record: the same node twice, and nothing is trusted
    twice = listing.replace("   Reason=gpuops.fabric: fail NET-004", "   Reason=x\nNodeName=gfsl2 State=IDLE+DRAIN")
    with pytest.raises(SlurmListingError, match="node gfsl2 is listed twice"):
        parse_nodes(twice)
    assert node_problem("all") and node_problem("ALL") and node_problem("All")


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


PASSED = ["NET-003", "NET-004", "PCIE-001"]


def test_plan_drains_failing_nodes_resumes_only_its_own_and_keeps_what_others_set():
    nodes = parse_nodes(capture("slurm-22.05-drained-by-both.txt"))  # gfsl1: ours (NET-004), gfsl2: bad DIMM
    nodes.update(parse_nodes(capture("dat351-20.11.9-three-nodes-down-star-not-responding.txt")))
    nodes.update(parse_nodes(capture("slurm-22.05-one-down-by-admin.txt").replace("gfsl", "adm")))
    actions, kept, errors = plan(nodes, {"gfsl1": ["NET-004"], "gfsl2": ["PCIE-001"], "slurmw1": ["PCIE-001"],
                                         "slurmw2": ["NET-003"], "adm2": ["NET-003"]}, {"slurmmaster": PASSED})
    assert errors == []
    # slurmw2 is down with Slurm's own "Not responding": a drain replaces it (so the node stays out once back)
    assert [(a["node"], a["action"]) for a in actions] == [("slurmw1", "drain"), ("slurmw2", "drain")]
    assert actions[0]["reason"] == "gpuops.fabric: fail PCIE-001"
    assert kept == {"gfsl1": "drained by this collection for the same rules",
                    "gfsl2": "drained by someone else: bad DIMM",
                    "adm2": "down by someone else: cable swap, ticket 4711"}
    # other rules now: only the reason changes; clean and re-verified: resumed, as it was ours
    actions, kept, errors = plan(nodes, {"gfsl1": ["NET-004", "PCIE-001"]}, {"gfsl2": PASSED, "slurmw1": PASSED})
    assert [(a["node"], a["action"]) for a in actions] == [("gfsl1", "reason")]
    assert kept == {"gfsl2": "clean, but drained by someone else: bad DIMM"}
    actions, kept, errors = plan(nodes, {}, {"gfsl1": PASSED, "gfsl2": PASSED, "slurmmaster": PASSED})
    assert [(a["node"], a["action"], a["after"]) for a in actions] == [("gfsl1", "resume", "IDLE")]


def test_a_node_is_resumed_only_when_the_rules_it_was_drained_for_pass_again():
    nodes = parse_nodes(capture("slurm-22.05-one-drained.txt"))  # gfsl1: gpuops.fabric: fail PCIE-001 NET-003
    nodes["gfsl1"]["reason"] = "gpuops.fabric: fail NET-003 PCIE-001"
    # no fail finding, but PCIE-001 was not judged this run (no GPU facts: driver not loaded): kept
    actions, kept, errors = plan(nodes, {}, {"gfsl1": ["NET-003", "NET-004"]})
    assert actions == [] and kept["gfsl1"].endswith("not re-verified (no pass this run for PCIE-001): resume it by "
                                                    "hand once checked")
    nodes["gfsl1"]["reason"] = drain_reason(["NET-%03d" % i for i in range(1, 31)])
    actions, kept, errors = plan(nodes, {}, {"gfsl1": ["NET-%03d" % i for i in range(1, 31)]})
    assert actions == [] and "names only part of the rules" in kept["gfsl1"]


@pytest.mark.parametrize("state, resumed", [
    ("IDLE+DRAIN", True), ("MIXED+DRAIN", True), ("ALLOCATED+DRAIN", True), ("IDLE+CLOUD+DRAIN+POWERED_DOWN", True),
    ("IDLE~+DRAIN", True), ("DOWN+DRAIN", False), ("DOWN*+DRAIN", False), ("IDLE+DRAIN+NOT_RESPONDING", False),
    ("IDLE+DRAIN+REBOOT_REQUESTED", False), ("IDLE@+DRAIN", False), ("FAIL+DRAIN", False), ("IDLE+DRAIN+FAIL", False),
    ("DOWN+DRAIN+NOT_RESPONDING", False), ("UNKNOWN+DRAIN", False), ("FUTURE+DRAIN", False),
])
def test_a_node_drained_by_us_and_also_down_failing_or_rebooting_is_left_to_slurm(state, resumed):
    nodes = {"n1": {"state": state, "flags": state_flags(state), "reason": "gpuops.fabric: fail NET-004",
                    "reason_user": "root", "reason_time": None}}
    actions, kept, errors = plan(nodes, {}, {"n1": PASSED})
    assert errors == [] and bool(actions) == resumed, (actions, kept)
    if not resumed:
        assert kept["n1"].startswith("drained by this collection, but also ")


def test_state_marks_are_flags():
    assert state_flags("DOWN*+DRAIN") == ["DOWN", "DRAIN", "NOT_RESPONDING"]
    assert state_flags("IDLE~") == ["IDLE", "POWERED_DOWN"] and state_flags("MIXED#") == ["MIXED", "POWERING_UP"]


def test_unknown_nodes_and_too_many_drains_change_nothing():
    nodes = parse_nodes(capture("cn-blog-25.05.3-four-nodes-idle-drain-utf8-reason.txt"))  # server5: someone's
    actions, kept, errors = plan(nodes, {"server2": ["NET-004"]}, {"server9": PASSED})
    assert actions == [] and len(errors) == 1
    assert errors[0].startswith("server9: no such node in Slurm (scontrol show node lists 4 node(s); set")
    actions, kept, errors = plan(nodes, dict((n, ["NET-004"]) for n in ("server2", "server3", "server4")), {}, 50)
    assert actions == [] and len(errors) == 1
    assert errors[0].startswith("would drain 3 node(s) (server2, server3, server4), and 3 would then be drained by "
                                "this collection, more than 50% of the 4 nodes Slurm lists (2;")
    # the nodes this collection drained before count: one more at 25% of 4 is one too many
    nodes["server4"].update(state="IDLE+DRAIN", flags=["DRAIN", "IDLE"], reason="gpuops.fabric: fail NET-004")
    actions, kept, errors = plan(nodes, {"server2": ["NET-004"]}, {}, 25)
    assert actions == [] and "and 2 would then be drained by this collection" in errors[0]
    # ... unless it is resumed in the same run
    actions, kept, errors = plan(nodes, {"server2": ["NET-004"]}, {"server4": PASSED}, 25)
    assert errors == [] and [(a["node"], a["action"]) for a in actions] == [("server2", "drain"), ("server4", "resume")]
    # someone else's drain does not count, and a node already drained does not need room
    actions, kept, errors = plan(nodes, {"server5": ["NET-004"]}, {}, 25)
    assert actions == [] and errors == [] and kept["server5"].startswith("drained by someone else")


def test_a_node_changed_since_it_was_read_is_not_acted_on():
    nodes = parse_nodes(capture("slurm-22.05-one-drained.txt"))
    actions, _kept, _errors = plan(nodes, {"gfsl2": ["NET-004"]}, {})
    again = parse_nodes(capture("slurm-22.05-one-down-by-admin.txt"))  # gfsl2 downed by an administrator meanwhile
    assert still_as_read(actions[0], nodes["gfsl2"]) and not still_as_read(actions[0], again["gfsl2"])
    assert not still_as_read(actions[0], None)


def test_each_value_is_one_argument():
    argv = update_argv("/usr/bin/scontrol", {"node": "n1", "action": "drain", "reason": "gpuops.fabric: fail NET-004"})
    assert argv == ["/usr/bin/scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=gpuops.fabric: fail NET-004"]
    assert update_argv("s", {"node": "n1", "action": "resume", "reason": None}) == [
        "s", "update", "NodeName=n1", "State=RESUME"]
    assert _slurm.MAX_LISTING_BYTES > 10 * 1024 * 1024
