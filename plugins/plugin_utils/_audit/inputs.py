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
    # set by playbooks/audit.yml: the counters of the first gather, when fabric_audit_window asks for a second one
    "fabric_audit_window_counters": "window_counters",
    "fabric_audit_max_tcp_retransmit_percent": "tcp_retransmit_budget",
}
FACTS_KEY = "gpuops_fabric"  # ansible_facts.gpuops_fabric, set by topology_facts
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


def host_input(hostvars, drift=False):
    """One host's audit input from its hostvars: its facts, its policy variables, its status (audited, unreachable,
    failed), and -- for the drift playbook -- what the network and nccl roles would change."""
    gathered = hostvars.get("fabric_audit_gather") or {}
    facts = (hostvars.get("ansible_facts") or {}).get(FACTS_KEY)
    if gathered.get("unreachable"):
        status, reason = "unreachable", gathered.get("msg")
    elif gathered.get("failed"):
        status, reason = "failed", gathered.get("msg")
    elif facts:
        status, reason = "audited", None
    else:
        status, reason = "failed", "no gpuops_fabric facts (topology_facts did not run on this host)"
    entry = {"facts": facts, "status": status, "reason": reason,
             "drift": network_drift(hostvars.get("network_result")) if drift else None,
             "nccl_drift": nccl_drift(hostvars.get("nccl_conf")) if drift else None}
    for variable, key in HOST_VARIABLES.items():
        entry[key] = hostvars.get(variable)
    second = hostvars.get("fabric_audit_window_gather")
    entry["window_error"] = None
    if entry["window_counters"] is not None:
        # the facts are the first reading's wherever the second is missing: no window to judge
        if isinstance(second, dict) and (second.get("failed") or second.get("unreachable")):
            entry["window_counters"], entry["window_error"] = None, "the second reading failed: %s" % (
                second.get("msg") or "failed")
        elif not isinstance(second, dict) or second.get("skipped"):
            entry["window_counters"], entry["window_error"] = None, (
                "not read a second time (the host left the play before the second gather)")
    elif (entry["window"] and "fabric_audit_gather" in hostvars and isinstance(facts, dict)
          and isinstance(facts.get("counters"), dict) and second is None):
        # audit.yml keeps the first reading's counters in its window play: a host that left the run before it (a probe
        # failed on it) has its counters in the facts but not kept
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
