#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: aggregate
short_description: Merge node results into one audit and write its reports
version_added: 0.1.0
description:
  - Reads node results (one JSON document per node per audit, docs/validation.md "Node results") from files and
    folders on the controller, checks each, and writes the reports of M(gpuops.fabric.validate) (C(report.json),
    C(report.md), C(junit.xml), C(report.html), C(metrics.prom)) for the merged set.
  - A node result comes from the C(nodes) list of an audit's C(report.json) (each slice of an AWX sliced job, each
    C(--limit) run) or from a node-local audit's own file. A folder is read for its C(*.json) files and each
    subfolder's C(report.json).
  - Each host's findings and rule outcomes are those of its node result, as judged where it ran. The inventory-wide
    rules (the same speed and MTU across hosts, overlapping subnets, duplicate addresses, the NCCL choices across
    hosts, full-size frames between hosts) run here over all results together, with each host's waivers.
  - A result is left out, with one line naming its file and why, when it is not JSON or cut short, of another schema
    or schema version, stamped in the future or older than O(max_age_hours), shaped wrong, for a host not among
    O(hosts), or an older duplicate of another host's result; two different results with the same newest time are
    both left out. The rest are still judged. A host of O(hosts) without a usable result is reported as failed.
  - Contacts no host. This is an action plugin; the module file only carries its documentation.
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
      - Hosts are never changed; the reports on the controller are written in check mode as well.
options:
  paths:
    description:
      - Files and folders of node results on the controller. Defaults to the C(fabric_aggregate_paths) variable.
      - Links are not followed (each is named and left out).
    type: list
    elements: str
  max_age_hours:
    description:
      - A node result stamped longer ago than this is stale, named and left out. Defaults to the
        C(fabric_aggregate_max_age_hours) variable, else 24.
    type: raw
  hosts:
    description:
      - The hosts the merged audit is about (the inventory's, or a part of it). Defaults to all hosts of the play
        (C(ansible_play_hosts_all)). A node result for any other host is named and left out.
    type: list
    elements: str
  report_dir:
    description:
      - Directory on the controller for the reports; created when missing.
      - Defaults to the C(fabric_report_dir) variable, else C(fabric-report) in the current directory.
    type: path
  prometheus_textfile_dir:
    description:
      - As in M(gpuops.fabric.validate); defaults to the C(fabric_prometheus_textfile_dir) variable.
    type: str
  formats:
    description: Which reports to write.
    type: list
    elements: str
    choices: [json, md, junit, html, prom]
    default: [json, md, junit, html, prom]
  fail_on:
    description:
      - Fail the task when findings of this severity remain (not waived), as in M(gpuops.fabric.validate).
      - Defaults to the C(fabric_audit_fail_on) variable, else C(fail).
    type: str
    choices: [fail, warn, never]
  fail_task:
    description:
      - With V(false) the task does not fail when O(fail_on) is met; it returns RV(audit_failed) and RV(fail_msg).
        The C(gpuops.fabric.aggregate) playbook does this.
    type: bool
    default: true
  today:
    description: The date waivers are judged against (YYYY-MM-DD); defaults to today. For tests and replays.
    type: str
notes:
  - Every C(fabric_*) variable of O(hosts) is checked against its declaration before anything is read; the Slurm
    settings too (C(fabric_slurm_drain)), so that the playbook's drain step gets the same plan as after an audit.
seealso:
  - module: gpuops.fabric.validate
  - module: gpuops.fabric.topology_facts
"""

EXAMPLES = r"""
- name: Merge the report.json of three sliced audits and judge the inventory
  gpuops.fabric.aggregate:
    paths:
      - /srv/audit/slice-1
      - /srv/audit/slice-2
      - /srv/audit/slice-3
    report_dir: /srv/audit/merged
  run_once: true
  delegate_to: localhost

- name: Merge the node-local results in a shared folder, printing every finding before failing
  gpuops.fabric.aggregate:
    paths: [/shared/fabric-results]
    max_age_hours: 2
    fail_task: false
  register: merged
  run_once: true
  delegate_to: localhost
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
rejected:
  description: One line per node result left out (its file and why), and per host whose result's policy is invalid.
  returned: when evaluated
  type: list
  elements: str
  sample: ["/shared/fabric-results/gpu017.json: stale: generated_at 2026-12-01T00:00:00+00:00 is more than 24 hours
    old"]
read:
  description: How many hosts a usable node result was read for.
  returned: when evaluated
  type: int
missing:
  description: The hosts of O(hosts) without a usable node result (reported as failed).
  returned: when evaluated
  type: list
  elements: str
"""
