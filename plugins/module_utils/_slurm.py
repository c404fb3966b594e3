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

import re

# A single node name: letters, digits, _ . -. No hostlist syntax ([ ] , ^ and spaces): "node[1-100]" or "a,b" would
# make one inventory name drain many nodes, so they are refused, never expanded.
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
NODE_RULE = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit; one node, no hostlist ([ ] ,)"
_RULE_ID = re.compile(r"^[A-Z][A-Z0-9]{0,15}-[0-9]{3}\Z")

# Every reason this collection writes starts so, and only a drain whose reason starts so is resumed by it.
REASON_PREFIX = "gpuops.fabric:"
REASON_RULES_SHOWN = 8

# The last line of a reason as scontrol prints it: "<text> [<user>@<time>]".
_REASON_STAMP = re.compile(r"^(?P<text>.*?)\s*\[(?P<user>[^\[\]@]*)@(?P<time>[^\[\]]*)\]\Z")
_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_NODENAME = re.compile(r"^NodeName=(\S+)")
# scontrol's node table: well under 4 KiB a node; this bounds what one listing may hold (about 60,000 nodes)
MAX_LISTING_BYTES = 256 * 1024 * 1024


def node_problem(name):
    """Why ``name`` is not one Slurm node name this collection hands to scontrol, or None."""
    if not isinstance(name, str) or isinstance(name, bool):
        return "is not a node name (a %s, not a string)" % type(name).__name__
    if not _NODE.match(name):
        return "is not one Slurm node name (%s)" % NODE_RULE
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


def ours(reason):
    """Whether a node's drain reason is one this collection wrote."""
    return isinstance(reason, str) and reason.startswith(REASON_PREFIX)


def parse_nodes(text):
    """Each node of ``scontrol show node`` (the multi-line form; several nodes separated by blank lines): name ->
    {state, flags, reason, reason_user, reason_time}. ``state`` is scontrol's word (IDLE+DRAIN, DOWN*+DRAIN ...);
    ``flags`` its parts without the "*" (not responding) mark; ``reason`` the text without the "[user@time]" stamp,
    None when there is none. Lines that are not a node's are ignored; a record without a state has state None."""
    nodes = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        match = _NODENAME.match(line)
        if match:
            current = {"state": None, "flags": [], "reason": None, "reason_user": None, "reason_time": None}
            nodes[match.group(1)] = current
            line = line[match.end():]
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
            current["flags"] = sorted(set(part.rstrip("*~#!%$@^-") for part in state.group(1).split("+")
                                          if part.rstrip("*~#!%$@^-")))
    return nodes


def drained(node):
    """Whether the node is drained or draining (scontrol's DRAIN flag)."""
    return "DRAIN" in node["flags"] or "DRAINED" in node["flags"] or "DRAINING" in node["flags"]


def plan(nodes, drain, resume, max_drain=None):
    """What to do: ``drain`` maps node -> rule ids failing on it, ``resume`` lists nodes audited clean.

    Returns (actions, kept, errors). ``actions``: [{node, action (drain | reason | resume), before, after,
    reason}], sorted by node; ``kept``: node -> why it is left as it is (drained by someone else, already drained by
    this collection for the same rules, not drained); ``errors``: messages for nodes Slurm does not know, and when the
    new drains exceed ``max_drain`` (then no action at all)."""
    errors = []
    for name in sorted(set(drain) | set(resume)):
        if name not in nodes:
            errors.append("%s: no such node in Slurm (scontrol show node lists %d node(s); set the host's "
                          "fabric_slurm_node_name to its Slurm name, or to false for a host that is no Slurm node)"
                          % (name, len(nodes)))
    if errors:
        return [], {}, errors
    actions, kept = [], {}
    for name in sorted(drain):
        node = nodes[name]
        reason = drain_reason(drain[name])
        if node["reason"] and not ours(node["reason"]):
            # drained, down or failed by an administrator or Slurm itself: their reason stays
            kept[name] = "%s by someone else: %s" % ("drained" if drained(node) else (
                node["state"] or "set").lower(), node["reason"])
        elif drained(node) and not ours(node["reason"]):
            kept[name] = "drained by someone else: no reason"
        elif drained(node) and node["reason"] == reason:
            kept[name] = "drained by this collection for the same rules"
        elif drained(node):
            actions.append({"node": name, "action": "reason", "before": _shown(node), "after": "%s (%s)" % (
                node["state"], reason), "reason": reason})
        else:
            actions.append({"node": name, "action": "drain", "before": _shown(node), "after": "%s+DRAIN (%s)" % (
                node["state"], reason), "reason": reason})
    for name in sorted(set(resume) - set(drain)):
        node = nodes[name]
        if not drained(node):
            continue
        if not ours(node["reason"]):
            kept[name] = "clean, but drained by someone else: %s" % (node["reason"] or "no reason")
            continue
        actions.append({"node": name, "action": "resume", "before": _shown(node),
                        "after": "%s" % "+".join(f for f in node["state"].split("+") if f.rstrip("*~#!%$@^-") not in (
                            "DRAIN", "DRAINED", "DRAINING")) or "IDLE", "reason": None})
    actions.sort(key=lambda a: a["node"])
    new = [a["node"] for a in actions if a["action"] == "drain"]
    if max_drain is not None and len(new) > max_drain:
        return [], kept, ["would drain %d node(s) (%s), more than the %d allowed at once (fabric_slurm_drain_max_"
                          "percent); nothing drained or resumed: a fault that many nodes share is more likely the "
                          "policy's or the fabric's than the nodes'" % (len(new), _names(new), max_drain)]
    return actions, kept, []


def _shown(node):
    return "%s (%s)" % (node["state"], node["reason"]) if node["reason"] else "%s" % node["state"]


def _names(names, most=10):
    return ", ".join(names[:most]) + (" and %d more" % (len(names) - most) if len(names) > most else "")


def update_argv(scontrol, action):
    """scontrol's arguments for one action (a list: each value one argument, never a shell string)."""
    argv = [scontrol, "update", "NodeName=" + action["node"]]
    if action["action"] == "resume":
        return argv + ["State=RESUME"]
    return argv + ["State=DRAIN", "Reason=" + action["reason"]]
