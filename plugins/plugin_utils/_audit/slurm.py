# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The audit's Slurm step (opt-in, fabric_slurm_drain): its settings checked before any host is contacted, and from
a report, which Slurm nodes to drain (those with fail findings, with the rule ids) and which may be resumed (audited,
no fail finding). The slurm_drain module does it, on fabric_slurm_host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuops.fabric.plugins.module_utils._slurm import node_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite

DEFAULT_MAX_PERCENT = 10
# one value for the run (the pre-flight refuses two); fabric_slurm_drain and fabric_slurm_node_name are each host's own
RUN_SETTINGS = ("fabric_slurm_host", "fabric_slurm_drain_max_percent", "fabric_slurm_conf")
HOST_SETTINGS = ("fabric_slurm_drain", "fabric_slurm_node_name")  # what ``settings`` reads of each host


def host_settings(own):
    """The HOST_SETTINGS a host sets, from its variables (hostvars[host] or a view of it): what ``settings`` needs of
    the host, without keeping the rest (its facts) alive."""
    return dict((key, own[key]) for key in HOST_SETTINGS if key in own)


_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f", "")


def _flag(value, key):
    if value is None or isinstance(value, bool):
        return bool(value), None
    if isinstance(value, int) and value in (0, 1):
        return bool(value), None
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE, None
    return False, "%s: %r is not a boolean (true or false)" % (key, value)


def settings(task_vars, hosts, hostvars):
    """(settings, errors) of the run: None when no host has fabric_slurm_drain on; else {host_node: host -> Slurm
    node, for the hosts whose own fabric_slurm_drain is on, max_percent, conf}. Each error names the key, the value
    and the host. ``task_vars`` holds the run's settings templated (the action templates them: an action plugin's
    task_vars are not), ``hostvars`` each host's."""
    errors, drained = [], []
    for host in sorted(hosts):
        enabled, error = _flag((hostvars.get(host) or {}).get("fabric_slurm_drain"), "fabric_slurm_drain")
        if error:
            errors.append("%s (host %s)" % (error, host))
        elif enabled:
            drained.append(host)
    if errors:
        return None, errors
    if not drained:
        return None, []
    percent = task_vars.get("fabric_slurm_drain_max_percent", DEFAULT_MAX_PERCENT)
    if isinstance(percent, str):
        try:
            percent = float(percent)
        except ValueError:
            pass
    if finite(percent, high=100) is None or percent <= 0:
        errors.append("fabric_slurm_drain_max_percent: %r is not a percentage above 0, at most 100 (of the audited nodes "
                      "one run may drain)" % (percent,))
    conf = task_vars.get("fabric_slurm_conf")
    if conf is not None and (not isinstance(conf, str) or not os.path.isabs(conf) or "\0" in conf):
        errors.append("fabric_slurm_conf: %r is not an absolute path (of slurm.conf on fabric_slurm_host)" % (conf,))
    slurm_host = task_vars.get("fabric_slurm_host", "localhost")
    inventory = set((task_vars.get("groups") or {}).get("all") or ())
    if not isinstance(slurm_host, str) or (slurm_host not in inventory and slurm_host != "localhost"):
        errors.append("fabric_slurm_host: %r is not a host of the inventory (nor localhost): the host whose scontrol "
                      "drains and resumes" % (slurm_host,))
    host_node, seen = {}, {}
    for host in drained:  # a node whose own fabric_slurm_drain is false is neither drained nor resumed
        name = (hostvars.get(host) or {}).get("fabric_slurm_node_name", host)
        if name is False or (isinstance(name, str) and name.lower() == "false"):
            continue  # a host that is no Slurm node (a head node audited with the rest; "false" from an INI inventory)
        problem = node_problem(name)
        if problem:
            errors.append("fabric_slurm_node_name: %r %s (host %s%s)" % (
                name, problem, host, "" if "fabric_slurm_node_name" in (hostvars.get(host) or {}) else
                ", whose inventory name is used when fabric_slurm_node_name is unset"))
            continue
        if name in seen:
            errors.append("fabric_slurm_node_name: %r is the Slurm node of both %s and %s" % (name, seen[name], host))
            continue
        seen[name] = host
        host_node[host] = name
    if errors:
        return None, errors
    return {"host_node": host_node, "max_percent": percent, "conf": conf}, []


def drain_plan(report, config):
    """{drain: node -> rule ids of its fail findings (not waived), resume: node audited without one -> the rule ids
    that passed on it (a drained node is resumed only when the rules it was drained for are among them),
    unjudged: nodes not audited (neither drained nor resumed), max_drain_percent, conf}."""
    failing = {}
    for finding in report.get("findings") or []:
        if finding.get("severity") == "fail" and not finding.get("waived") and finding.get("host") in config[
                "host_node"]:
            failing.setdefault(finding["host"], set()).add(finding["id"])
    outcomes = report.get("outcomes") or {}
    drain, resume, unjudged = {}, {}, []
    for host in report.get("hosts") or []:
        node = config["host_node"].get(host["name"])
        if node is None:
            continue
        if host.get("status") != "audited":
            unjudged.append(node)
        elif host["name"] in failing:
            drain[node] = sorted(failing[host["name"]])
        else:
            resume[node] = sorted(rule for rule, outcome in (outcomes.get(host["name"]) or {}).items()
                                  if isinstance(outcome, dict) and outcome.get("status") == "pass")
    return {"drain": drain, "resume": resume, "unjudged": sorted(unjudged), "max_drain_percent": config["max_percent"],
            "conf": config["conf"]}
