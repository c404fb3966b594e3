# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Slurm node health: the node names and rule ids that may reach scontrol, the drain reason this collection writes
and recognises, the node table of ``scontrol show node`` read, and what to drain and resume decided from it.

Runs where scontrol runs (the slurm_drain module) and on the controller (the validate action checks the names
before any host is touched). Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

# A single node name: letters, digits, _ . -. No hostlist syntax ([ ] , ^ and spaces): "node[1-100]" or "a,b" would
# make one inventory name drain many nodes, so they are refused, never expanded; nor "ALL", which scontrol and
# slurm.conf read as every node.
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
NODE_RULE = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit; one node, no hostlist ([ ] ,)"
_RULE_ID_TEXT = r"[A-Z][A-Z0-9]{0,15}-[0-9]{3}"
_RULE_ID = re.compile(r"^%s\Z" % _RULE_ID_TEXT)

# Every reason this collection writes is exactly "gpuops.fabric: fail <rule id> <rule id> ..." (sorted, then "+N
# more" past REASON_RULES_SHOWN): only a reason of exactly that form is its own. A reason an operator wrote after
# the prefix ("gpuops.fabric: fail PCIE-001, RMA opened") is theirs.
REASON_PREFIX = "gpuops.fabric:"
REASON_RULES_SHOWN = 24
_OURS = re.compile(r"^gpuops\.fabric: fail (?P<rules>%s(?: %s)*)(?P<more> \+[0-9]+ more)?\Z" % (
    _RULE_ID_TEXT, _RULE_ID_TEXT))
# What Slurm itself writes when slurmd stops answering; a drain may replace it (Slurm replaces it too)
SLURM_NOT_RESPONDING = "Not responding"

# A reason as scontrol prints it: "<text> [<user>@<time>]".
_REASON_STAMP = re.compile(r"^(?P<text>.*?)\s*\[(?P<user>[^\[\]@]*)@(?P<time>[^\[\]]*)\]\Z")
_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_NODENAME = re.compile(r"^NodeName=(\S+)")
# scontrol's node table: well under 4 KiB a node; this bounds what one listing may hold (about 60,000 nodes)
MAX_LISTING_BYTES = 256 * 1024 * 1024
# Marks scontrol (20.x) appends to a state: * not responding, @ reboot requested, ^ rebooting, ~ # % ! power saving,
# $ maintenance reservation, - planned
_MARKS = {"*": "NOT_RESPONDING", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "~": "POWERED_DOWN",
          "#": "POWERING_UP", "%": "POWERING_DOWN", "!": "POWER_DOWN", "$": "MAINTENANCE", "-": "PLANNED"}
_MARK_CHARS = "".join(_MARKS)
# A node this collection drained is resumed only from one of these base states, with no flag but these: a node
# that is also down, failing, rebooting or not responding is Slurm's and its administrators' to bring back.
RESUMABLE_BASE = ("IDLE", "MIXED", "ALLOCATED", "COMPLETING")
RESUMABLE_FLAGS = ("DRAIN", "DRAINED", "DRAINING", "COMPLETING", "CLOUD", "POWERED_DOWN", "POWERING_UP",
                   "POWERING_DOWN", "POWER_DOWN", "DYNAMIC_NORM", "RESERVED", "PLANNED", "MAINTENANCE")


class SlurmListingError(Exception):
    """A node table that cannot be trusted (the same node twice)."""


def node_problem(name):
    """Why ``name`` is not one Slurm node name this collection hands to scontrol, or None."""
    if not isinstance(name, str) or isinstance(name, bool):
        return "is not a node name (a %s, not a string)" % type(name).__name__
    if not _NODE.match(name):
        return "is not one Slurm node name (%s)" % NODE_RULE
    if name.lower() == "all":
        return "is not one Slurm node name (scontrol reads ALL as every node)"
    return None


def rule_problem(rule):
    if not isinstance(rule, str) or not _RULE_ID.match(rule):
        return "is not a rule id (such as PCIE-001)"
    return None


def drain_reason(rules):
    """The reason written for a node failing ``rules``: the prefix, then the rule ids, sorted (at most
    REASON_RULES_SHOWN, then how many more). The same rules give the same text, so a second run changes nothing."""
    rules = sorted(set(rules))
    shown = rules[:REASON_RULES_SHOWN]
    text = "%s fail %s" % (REASON_PREFIX, " ".join(shown))
    if len(rules) > len(shown):
        text += " +%d more" % (len(rules) - len(shown))
    return text


def reason_rules(reason):
    """(rule ids, complete) of a reason this collection wrote; None for any other reason."""
    match = _OURS.match(reason) if isinstance(reason, str) else None
    if not match:
        return None
    return match.group("rules").split(" "), not match.group("more")


def ours(reason):
    """Whether a node's reason is exactly one this collection writes."""
    return reason_rules(reason) is not None


def parse_nodes(text):
    """Each node of ``scontrol show node`` (the multi-line form; several nodes separated by blank lines): name ->
    {state, flags, reason, reason_user, reason_time}. ``state`` is scontrol's word (IDLE+DRAIN, DOWN*+DRAIN ...);
    ``flags`` its parts, each mark (* @ ^ ...) as the flag it stands for; ``reason`` the text without the
    "[user@time]" stamp, None when there is none. A record starts only at a line beginning "NodeName=" in its first
    column (scontrol indents a record's other lines); a node listed twice raises SlurmListingError (a reason or
    comment holding a line of its own could otherwise pose as another node)."""
    nodes = {}
    current = None
    for raw in text.splitlines():
        match = _NODENAME.match(raw)
        line = raw.strip()
        if match:
            if match.group(1) in nodes:
                raise SlurmListingError("node %s is listed twice by scontrol show node" % match.group(1))
            current = {"state": None, "flags": [], "reason": None, "reason_user": None, "reason_time": None}
            nodes[match.group(1)] = current
            line = raw[match.end():].strip()
        if current is None:
            continue
        if line.startswith("Reason=") and current["reason"] is None:
            reason = line[len("Reason="):]
            stamp = _REASON_STAMP.match(reason)
            if stamp:
                reason = stamp.group("text")
                current["reason_user"] = stamp.group("user") or None
                current["reason_time"] = stamp.group("time") or None
            current["reason"] = reason if reason and reason != "(null)" else None
            continue
        state = _STATE.search(line)
        if state and current["state"] is None:
            current["state"] = state.group(1)
            current["flags"] = state_flags(state.group(1))
    return nodes


def state_flags(state):
    """The parts of a state word, each trailing mark as the flag it stands for: DOWN*+DRAIN -> [DOWN, DRAIN,
    NOT_RESPONDING]."""
    flags = set()
    for part in state.split("+"):
        word = part.rstrip(_MARK_CHARS)
        for mark in part[len(word):]:
            flags.add(_MARKS[mark])
        if word:
            flags.add(word)
    return sorted(flags)


def drained(node):
    """Whether the node is drained or draining (scontrol's DRAIN flag)."""
    return bool(set(node["flags"]) & set(("DRAIN", "DRAINED", "DRAINING")))


def _resumable(node):
    """Why a node this collection drained is not to be resumed by it (down, failing, rebooting ...), or None."""
    base = (node["state"] or "").split("+")[0].rstrip(_MARK_CHARS)
    others = [f for f in node["flags"] if f != base and f not in RESUMABLE_FLAGS]
    if base not in RESUMABLE_BASE or others:
        return "drained by this collection, but also %s: left to Slurm and its administrators" % (
            "+".join([base] + others) if base not in RESUMABLE_BASE else "+".join(others))
    return None


def plan(nodes, drain, resume, max_drain_percent=None):
    """What to do: ``drain`` maps node -> rule ids failing on it, ``resume`` maps each node audited without a fail
    finding -> the rule ids that passed on it.

    Returns (actions, kept, errors). ``actions``: [{node, action (drain | reason | resume), before, after, reason,
    state, old_reason}], sorted by node; ``kept``: node -> why it is left as it is (someone else's reason; drained for
    the same rules; the rules it was drained for not all passed; a state Slurm owns); ``errors``: messages for nodes
    Slurm does not know, and when the nodes drained by this collection after the run would exceed
    ``max_drain_percent`` of the nodes Slurm lists (then no action at all)."""
    errors = []
    for name in sorted(set(drain) | set(resume)):
        if name not in nodes:
            errors.append("%s: no such node in Slurm (scontrol show node lists %d node(s); set the host's "
                          "fabric_slurm_node_name to its Slurm name, or to false for a host that is no Slurm node)"
                          % (name, len(nodes)))
    if errors:
        return [], {}, errors
    actions, kept = [], {}

    def act(name, action, after, reason):
        node = nodes[name]
        actions.append({"node": name, "action": action, "before": _shown(node), "after": after, "reason": reason,
                        "state": node["state"], "old_reason": node["reason"]})

    for name in sorted(drain):
        node = nodes[name]
        reason = drain_reason(drain[name])
        if node["reason"] and not ours(node["reason"]) and node["reason"] != SLURM_NOT_RESPONDING:
            # drained, down or failed by an administrator or a health check: their reason stays
            kept[name] = "%s by someone else: %s" % ("drained" if drained(node) else (
                node["state"] or "set").lower(), node["reason"])
        elif drained(node) and not node["reason"]:
            kept[name] = "drained by someone else: no reason"
        elif drained(node) and node["reason"] == reason:
            kept[name] = "drained by this collection for the same rules"
        elif drained(node):
            act(name, "reason", "%s (%s)" % (node["state"], reason), reason)
        else:
            act(name, "drain", "%s+DRAIN (%s)" % (node["state"], reason), reason)
    for name in sorted(set(resume) - set(drain)):
        node = nodes[name]
        if not drained(node):
            continue
        found = reason_rules(node["reason"])
        if found is None:
            kept[name] = "clean, but drained by someone else: %s" % (node["reason"] or "no reason")
            continue
        rules, complete = found
        unverified = sorted(set(rules) - set(resume[name] or ()))
        if not complete or unverified:
            kept[name] = "drained by this collection; %s: resume it by hand once checked" % (
                "its reason names only part of the rules" if not complete else
                "not re-verified (no pass this run for %s)" % " ".join(unverified))
            continue
        held = _resumable(node)
        if held:
            kept[name] = held
            continue
        act(name, "resume", "+".join(f for f in node["state"].split("+") if f.rstrip(_MARK_CHARS) not in (
            "DRAIN", "DRAINED", "DRAINING")) or "IDLE", None)
    actions.sort(key=lambda a: a["node"])
    new = [a["node"] for a in actions if a["action"] == "drain"]
    if max_drain_percent is not None and new:
        limit = max(1, int(math.floor(len(nodes) * max_drain_percent / 100.0 + 1e-9)))
        resumed = set(a["node"] for a in actions if a["action"] == "resume")
        ours_after = sorted(set(n for n, node in nodes.items() if drained(node) and ours(node["reason"])
                                and n not in resumed) | set(new))
        if len(ours_after) > limit:
            return [], kept, ["would drain %d node(s) (%s), and %d would then be drained by this collection, more "
                              "than %s%% of the %d nodes Slurm lists (%d; fabric_slurm_drain_max_percent); nothing "
                              "drained or resumed: a fault that many nodes share is more likely the policy's or the "
                              "fabric's than the nodes'" % (len(new), _names(new), len(ours_after),
                                                            _number(max_drain_percent), len(nodes), limit)]
    return actions, kept, []


def _number(value):
    return ("%d" % value) if float(value).is_integer() else ("%g" % value)


def _shown(node):
    return "%s (%s)" % (node["state"], node["reason"]) if node["reason"] else "%s" % node["state"]


def _names(names, most=10):
    return ", ".join(names[:most]) + (" and %d more" % (len(names) - most) if len(names) > most else "")


def still_as_read(action, node):
    """Whether a node read again just before its update is as the plan saw it (same state and reason)."""
    return node is not None and node["state"] == action["state"] and node["reason"] == action["old_reason"]


def update_argv(scontrol, action):
    """scontrol's arguments for one action (a list: each value one argument, never a shell string)."""
    argv = [scontrol, "update", "NodeName=" + action["node"]]
    if action["action"] == "resume":
        return argv + ["State=RESUME"]
    return argv + ["State=DRAIN", "Reason=" + action["reason"]]
