# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the audit reads of each host: the one place that states which registered results (the playbooks' and roles'
``register:`` names) and which host variables the validate action takes in. A playbook that renames a register
must rename it here too; tests/unit/plugins/plugin_utils/_audit/test_inputs.py checks both sides agree."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuops.fabric.plugins.module_utils._network.apply import unified

# registered result -> (where it is registered, what the audit takes from it)
REGISTERED = {
    "fabric_audit_gather": ("playbooks/audit.yml", "whether topology_facts reached the host (unreachable, failed)"),
    "fabric_audit_window_gather": ("playbooks/audit.yml", "whether the second reading of fabric_audit_window worked"),
    "network_result": ("roles/network/tasks/main.yml", "the network role's check-mode result: drift (DRIFT-001)"),
    "nccl_conf": ("roles/nccl/tasks/main.yml", "the nccl role's file task in check mode with diff: NCCL-001"),
}
# host variable -> the audit input it becomes
HOST_VARIABLES = {
    "fabric_expectations": "expectations",
    "fabric_waivers": "waivers",
    "fabric_networks": "networks",
    "fabric_attachments": "attachments",
    "fabric_nccl_mode": "nccl_mode",
    "fabric_probe_results": "probes",
    "fabric_cabling": "cabling",
    "fabric_nccl_logs": "nccl_logs",
    "fabric_audit_waiver_horizon_days": "waiver_horizon_days",
    "fabric_audit_baseline": "baseline",
    "fabric_audit_window": "window",
    "fabric_audit_max_tcp_retransmit_percent": "tcp_retransmit_budget",
}
FACTS_KEY = "gpuops_fabric"  # ansible_facts.gpuops_fabric, set by topology_facts
FACTS_TEXT = "facts_json"  # the same facts as one JSON text: topology_facts' result with as_json (the audit's gathers)
# What modules set: the facts and the registered results. Ansible marks them unsafe (never templated), so they are read
# as they are held; templating them only copies them, node by node (an 8-GPU node's facts are ~20,000 nodes).
RESULT_KEYS = frozenset(("ansible_facts",) + tuple(REGISTERED))


class HostView(object):
    """One host's variables as the audit reads them, merged once for all its readers: Ansible merges a host's
    variables afresh on each ``hostvars[host]`` (its facts wrapped and copied: ~80 ms for an 8-GPU node's on the
    bench's controller) and templates each value read through it. The facts and registered results (RESULT_KEYS) are
    read as merged, the inventory's variables templated as the host's own. The merged variables are those the
    templating view holds (``_vars`` of ansible-core's HostVarsVars, 2.16 through 2.21: the test checks one merge per
    host on both); without them every value is read templated, the same values, slower."""

    def __init__(self, hostvars, host):
        self._templated = hostvars[host]
        held = getattr(self._templated, "_vars", None)
        self._held = held if isinstance(held, dict) else None

    def _source(self, key):
        return self._held if self._held is not None and key in RESULT_KEYS else self._templated

    def get(self, key, default=None):
        return self._source(key).get(key, default)

    def __getitem__(self, key):
        return self._source(key)[key]

    def __contains__(self, key):
        return key in self._source(key)


def held_facts(hostvars):
    """(facts, problem): the facts this run read of a host. The audit's gather returns them as one JSON text
    (topology_facts ``as_json``: Ansible walks a mapping's every value several times on its way into the variables,
    a text is one value), parsed here, once per reader; where fabric_audit_gather holds no text (site.yml's audit keeps
    its pre-flight's facts, ``reused``; a play of the user's gathered them as a mapping) they are
    ``ansible_facts.gpuops_fabric``. A text that is not a JSON object is a problem named, not facts."""
    result = hostvars.get("fabric_audit_gather")
    text = result.get(FACTS_TEXT) if isinstance(result, dict) else None
    if text is None:
        return (hostvars.get("ansible_facts") or {}).get(FACTS_KEY), None
    return parse_facts_text(text)


def parse_facts_text(text):
    """(facts, problem) of one ``facts_json`` text."""
    if not isinstance(text, str):
        return None, "%s is a %s, not a JSON text" % (FACTS_TEXT, type(text).__name__)
    try:
        facts = json.loads(text)
    except ValueError as error:  # json's own errors are ValueErrors, each naming where the text broke
        return None, "%s cannot be read: %s" % (FACTS_TEXT, str(error)[:200])
    except RecursionError:
        return None, "%s cannot be read: nested too deep" % FACTS_TEXT
    if not isinstance(facts, dict):
        kind = ("null" if facts is None else "a boolean" if isinstance(facts, bool) else "an array"
                if isinstance(facts, list) else "a string" if isinstance(facts, str) else "a number")
        return None, "%s holds %s, not a JSON object" % (FACTS_TEXT, kind)
    return facts, None


def _failed(result):
    return isinstance(result, dict) and (result.get("failed") or result.get("unreachable"))


def host_input(hostvars, drift=False):
    """One host's audit input from its hostvars: its facts, its policy variables, its status (audited, unreachable,
    failed), the two readings of fabric_audit_window, and -- for the drift playbook -- what the network and nccl
    roles would change."""
    gathered = hostvars.get("fabric_audit_gather") or {}
    facts, problem = held_facts(hostvars)
    if gathered.get("unreachable"):
        status, reason = "unreachable", gathered.get("msg")
    elif gathered.get("failed"):
        status, reason = "failed", gathered.get("msg")
    elif problem:
        facts, status, reason = None, "failed", "the facts topology_facts returned: %s" % problem
    elif facts:
        status, reason = "audited", None
    else:
        status, reason = "failed", "no gpuops_fabric facts (topology_facts did not run on this host)"
    entry = {"facts": facts, "status": status, "reason": reason,
             "drift": network_drift(hostvars.get("network_result")) if drift else None,
             "nccl_drift": nccl_drift(hostvars.get("nccl_conf")) if drift else None}
    for variable, key in HOST_VARIABLES.items():
        entry[key] = hostvars.get(variable)
    entry["window_counters"], entry["window_error"] = None, None
    second = hostvars.get("fabric_audit_window_gather")
    counters = facts.get("counters") if isinstance(facts, dict) else None
    if status != "audited":
        pass  # no first reading to compare with: the host is reported as it is
    elif _failed(second):  # the first reading stands: no window to judge
        entry["window_error"] = "the second reading failed: %s" % (second.get("msg") or "failed")
    elif isinstance(second, dict) and not second.get("skipped"):
        if second.get(FACTS_TEXT) is None:  # a mapping has replaced the first reading's: nothing to compare with
            entry["window_error"] = "the second reading returned no %s (gather it with as_json)" % FACTS_TEXT
        else:
            again, problem = parse_facts_text(second[FACTS_TEXT])
            if problem:
                entry["window_error"] = "the second reading: %s" % problem
            else:
                entry["facts"], entry["window_counters"] = again, counters
    elif isinstance(second, dict) or (entry["window"] and isinstance(counters, dict)
                                      and "fabric_audit_gather" in hostvars):
        # audit.yml reads the second time in its window play: a host that left the run before it (a probe failed on
        # it) has the first reading only
        entry["window_error"] = "not read a second time (the host left the play before the window's second reading)"
    return entry


def network_drift(result):
    """What the network role would change (its check-mode result), or None when it did not run."""
    if not isinstance(result, dict) or result.get("skipped") or "files" not in result:
        return None
    if result.get("failed"):
        return {"error": result.get("msg")}
    return {"changes": [str(f) for f in result.get("files") or []] if result.get("changed") else [],
            "diff": result.get("diff_text") or "", "backend": result.get("backend")}


def nccl_drift(result):
    """What the nccl role's file task would change (check mode with diff), or None when it did not run."""
    if not isinstance(result, dict) or result.get("skipped") or "changed" not in result:
        return None
    if result.get("failed"):
        return {"error": result.get("msg")}
    entries = result.get("diff") or []
    dest = result.get("dest")
    diff = unified([{"before_header": str(e.get("before_header") or dest or "before"),
                     "after_header": str(e.get("after_header") or dest or "after"),
                     "before": str(e.get("before") or ""), "after": str(e.get("after") or "")}
                    for e in (entries if isinstance(entries, list) else [entries])
                    if isinstance(e, dict) and "after" in e])
    return {"changed": bool(result.get("changed")), "path": result.get("dest"), "diff": diff}
