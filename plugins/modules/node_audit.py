#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_audit
short_description: Judge the node this runs on and keep its result
version_added: 0.1.0
description:
  - The node-local audit (the C(gpuops.fabric.node_audit) playbook) runs on the node itself (connection local),
    after M(gpuops.fabric.topology_facts), and judges that one node with every host rule, its own policy (its
    C(fabric_expectations), C(fabric_waivers) and the rest of its variables) and its last result as the baseline of
    the stability rules (a reboot in between is told by the boot id, as with C(fabric_audit_baseline)).
  - Writes, atomically, C(report.json) (the node result in its C(nodes)) and C(metrics.prom) (O(formats)) to
    O(state_dir), the Prometheus textfile to C(fabric_prometheus_textfile_dir) when set, and the node result alone as
    C(HOST.json) to O(results_dir) when set (a shared folder, which M(gpuops.fabric.aggregate) merges).
  - The node's inventory name names its file, so it may hold letters, digits, C(.), C(_) and C(-) only; anything else is
    refused.
  - In check mode nothing is written (the state folder holds the next run's baseline); the findings are returned.
  - Runs where the play runs with C(ansible_connection=local) (the node itself, where the action's controller side
    is the node); refused otherwise, and when the play has more than one host.
  - This is an action plugin; the module file only carries its documentation.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.controller_action
  - gpuops.fabric.attributes.actiongroup
attributes:
  check_mode:
    support: full
    details:
      - Nothing is written in check mode.
options:
  state_dir:
    description:
      - The node's own folder for its reports and last result. Defaults to the C(fabric_node_state_dir) variable,
        else C(/var/lib/gpuops-fabric); created when missing. An absolute path, not a link.
    type: str
  results_dir:
    description:
      - A shared folder (mounted on every node) where the node result is written as C(HOST.json) for the aggregate.
        Defaults to the C(fabric_node_results_dir) variable; unset, nothing is shared. It must exist (it is not
        created) and not be a link.
    type: str
  profile:
    description:
      - C(passive) reads once and never waits (it fits the 60 s Slurm gives a HealthCheckProgram); C(full) honours
        C(fabric_audit_window) (the playbook reads the counters again after it). Defaults to the
        C(fabric_node_profile) variable, else C(passive). The result's C(producer) names it.
    type: str
    choices: [passive, full]
  formats:
    description: Which reports to write to O(state_dir).
    type: list
    elements: str
    choices: [json, md, junit, html, prom]
    default: [json, prom]
  prometheus_textfile_dir:
    description:
      - As in M(gpuops.fabric.validate); defaults to the C(fabric_prometheus_textfile_dir) variable.
    type: str
  fail_on:
    description: As in M(gpuops.fabric.validate); defaults to C(fabric_audit_fail_on), else C(fail).
    type: str
    choices: [fail, warn, never]
  fail_task:
    description:
      - With V(false) the task does not fail when O(fail_on) is met; it returns RV(audit_failed) and RV(fail_msg).
    type: bool
    default: true
  validate_only:
    description:
      - Check the settings only (one host in the play, the local connection, the host's name, the folders, the
        Prometheus folder, the Slurm settings) and read or write nothing; the playbook's first step after the
        pre-flight, before the facts are read.
    type: bool
    default: false
  hosts:
    description: Not used (the node judged is the host the task runs for); kept for the shared argument set.
    type: list
    elements: str
  report_dir:
    description: Not used (O(state_dir) is where the reports go); kept for the shared argument set.
    type: path
  today:
    description: The date waivers are judged against (YYYY-MM-DD); defaults to today. For tests and replays.
    type: str
notes:
  - With C(fabric_slurm_drain) true the playbook drains this node in Slurm when fail findings remain (scontrol on
    C(fabric_slurm_host), by default the node itself), and resumes it once they pass, as after an audit.
seealso:
  - module: gpuops.fabric.aggregate
  - module: gpuops.fabric.validate
"""

EXAMPLES = r"""
- name: Judge this node, share its result
  gpuops.fabric.node_audit:
    results_dir: /shared/fabric-results
    fail_task: false
  register: fabric_audit_result
"""

RETURN = r"""
summary:
  description: Host and finding counts.
  returned: when evaluated
  type: dict
  sample: {hosts: 13, audited: 13, unreachable: 0, failed: 0, findings: {fail: 12, warn: 9, info: 10}, waived: 1}
findings:
  description: Findings not waived, each with C(id), C(title), C(severity), C(host), C(subject), C(message),
    C(evidence), C(remediation), C(waived).
  returned: when evaluated
  type: list
  elements: dict
lines:
  description: One line per finding not waived, most severe first, for a console summary. Each is on one line and
    at most 280 characters (longer ones end in an ellipsis; the reports have the full text).
  returned: when evaluated
  type: list
  elements: str
  sample: ["[fail] node017 PCIE-001 0000:19:00.0: GPU 0000:19:00.0 runs at x8, expected x16"]
report_files:
  description: Paths of the reports written.
  returned: when evaluated
  type: list
  elements: str
  sample: [/work/fabric-report/report.json, /work/fabric-report/report.md]
textfile_skipped:
  description:
    - Why the Prometheus textfile in O(prometheus_textfile_dir) was not written (check mode, or a drift run, whose
      findings are not the audit's); null when it was written or none is set.
  returned: when evaluated
  type: str
  sample: "check mode: /var/lib/prometheus/node-exporter/gpuops_fabric.prom not written"
audit_failed:
  description: Whether findings at or above O(fail_on) remain (the task fails on it unless O(fail_task=false)).
  returned: when evaluated
  type: bool
fail_msg:
  description: When RV(audit_failed), one line saying what remains and where the reports are; else null.
  returned: when evaluated
  type: str
  sample: "audit failed (fail_on=fail): 7 fail, 1 warn finding(s) on 1 host(s) (GDR-002, PCIE-001); reports:
    /work/fabric-report/report.html, report.md, report.json, junit.xml"
slurm:
  description:
    - With C(fabric_slurm_drain) true (not in drift runs), what the audit playbook hands to
      M(gpuops.fabric.slurm_drain), in Slurm node names (C(fabric_slurm_node_name), else the inventory name);
      null otherwise.
    - C(drain) maps each node with fail findings (not waived) to their rule ids; C(resume) maps each node audited
      without one to the rule ids that passed on it; C(unjudged) lists the nodes that could not be audited
      (unreachable, failed), which are neither drained nor resumed; C(max_drain_percent) is
      C(fabric_slurm_drain_max_percent) (default 10); C(conf) is C(fabric_slurm_conf).
  returned: when evaluated
  type: dict
  sample: {drain: {gpu017: [NET-004, PCIE-001]}, resume: {gpu018: [NET-003, NET-004, PCIE-001]}, unjudged: [],
    max_drain_percent: 10, conf: null}
node_result:
  description: The path of the node result written to O(results_dir); null when none is set, or in check mode.
  returned: when evaluated
  type: str
  sample: /shared/fabric-results/gpu017.json
state_dir:
  description: The node's state folder.
  returned: when evaluated
  type: str
profile:
  description: The profile judged with (C(passive) or C(full)).
  returned: when evaluated
  type: str
"""
