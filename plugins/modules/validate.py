#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: validate
short_description: Check every host's topology against the deployment checklist and write audit reports
version_added: 0.1.0
description:
  - Runs once, on the controller, over the C(gpuops_fabric) facts of all hosts (from M(gpuops.fabric.topology_facts)).
    Per-host rules and cross-inventory rules come from one catalog; each finding has a rule id, severity
    (C(fail), C(warn), C(info)), host, subject, message, evidence and remediation.
  - Expectations (C(fabric_expectations)) and waivers (C(fabric_waivers)) are read from each host's variables
    and validated first; a malformed one fails the task with the key path and value, before anything is evaluated.
    Run with O(validate_only=true) in a play before any host is contacted.
  - A waiver names a rule id, a host pattern, optionally a subject pattern, a reason and an expiry date. An
    expired waiver stops hiding its finding and the finding says so.
  - Writes C(report.json), C(report.md), C(junit.xml), C(report.html) and C(metrics.prom) to O(report_dir) on the
    controller (atomically). Nothing is changed on any host; reports are written in check mode too.
  - C(metrics.prom) is the audit in Prometheus' text format, as node_exporter's textfile collector reads it (findings
    per host, rule and severity; hosts by status; each GPU's and NIC's PCIe link generation, width and bandwidth;
    each interface's speed, MTU and state; the stability counters' growth and rates). With
    O(prometheus_textfile_dir) it is also written there as C(gpuops_fabric.prom), atomically.
  - Hosts whose facts step was unreachable or failed (register it as C(fabric_audit_gather) with
    C(ignore_unreachable)/C(ignore_errors)) are listed with that status; the others are still audited.
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
      - Hosts are never changed; the reports on the controller are written in check mode as well.
options:
  hosts:
    description:
      - The hosts to audit. Defaults to all hosts of the play (C(ansible_play_hosts_all)). From a play on
        C(localhost), pass the inventory hosts, for example C("{{ query('inventory_hostnames', 'all') }}").
    type: list
    elements: str
  report_dir:
    description:
      - Directory on the controller for the reports; created when missing.
      - Defaults to the C(fabric_report_dir) variable, else C(fabric-report) in the current directory.
    type: path
  prometheus_textfile_dir:
    description:
      - node_exporter's textfile collector directory (its C(--collector.textfile.directory)) on the controller;
        the metrics are also written there as C(gpuops_fabric.prom), atomically (a temporary name outside C(*.prom),
        then a rename), so that the collector never reads half a file.
      - Defaults to the C(fabric_prometheus_textfile_dir) variable; unset, nothing is written there.
      - An absolute path to an existing directory this user can write; anything else fails the task (with
        O(validate_only) too, before any host is contacted).
      - Not written in check mode, nor by a drift run (O(drift)), whose findings are not the audit's.
    type: str
  formats:
    description: Which reports to write.
    type: list
    elements: str
    choices: [json, md, junit, html, prom]
    default: [json, md, junit, html, prom]
  fail_on:
    description:
      - Fail the task when findings of this severity remain (not waived). C(fail) fails on fail findings,
        C(warn) on fail or warn findings, C(never) only reports.
      - Defaults to the C(fabric_audit_fail_on) variable, else C(fail).
    type: str
    choices: [fail, warn, never]
  fail_task:
    description:
      - With V(false) the task does not fail when O(fail_on) is met; it returns RV(audit_failed) and RV(fail_msg),
        so that a play can print RV(lines) first and then fail in a task of its own. The C(gpuops.fabric.audit) and
        C(gpuops.fabric.drift) playbooks do this.
    type: bool
    default: true
  drift:
    description:
      - Read what the network and nccl roles would change (their check-mode results, C(network_result) and
        C(nccl_conf), from an earlier play of the same run) as drift findings (DRIFT-001, NCCL-001).
        M(gpuops.fabric.drift) sets it; without it those rules are not applicable, so results of a real run are
        never taken for drift.
    type: bool
    default: false
  validate_only:
    description:
      - The pre-flight of every playbook that changes or audits something; evaluate nothing, write nothing.
      - Every C(fabric_*) variable of each of O(hosts) is checked against its one declaration (kind, range or
        choices, per host or per run; docs/validation.md lists them); a run-wide setting given differently on two
        hosts is an error; unknown C(fabric_*) names are named (an error where one is a near miss of a variable
        that shapes the network files).
      - Then expectations and waivers, the Prometheus textfile folder and, with C(fabric_slurm_drain) true on any
        host, the Slurm settings (C(fabric_slurm_node_name) of each host, C(fabric_slurm_host),
        C(fabric_slurm_drain_max_percent), C(fabric_slurm_conf)).
    type: bool
    default: false
  planned_interfaces:
    description:
      - With O(validate_only), the interfaces the network role will create on each host (host name to a list of
        names, or to the host's plan as M(gpuops.fabric.network_intent) returns it), so that
        C(fabric_tuning_interfaces) naming a bond or VLAN still to be made is not refused. Hosts whose topology
        facts were gathered before have each tuning interface checked against them and this list.
    type: dict
  today:
    description: The date waivers are judged against (YYYY-MM-DD); defaults to today. For tests and replays.
    type: str
notes:
  - "Expectations: C(fabric_expectations.gpu.width) and C(.generation) override the GPUs' own maxima (some
    cards are x8 by design); C(fabric_expectations.nics) is a list of C(name) (a shell pattern), C(speed_mbps)
    and C(mtu); C(fabric_expectations.rdma) says RDMA/GPUDirect is intended."
  - The rule catalog, with why each rule matters and how to fix it, is in every report and in docs/validation.md.
seealso:
  - module: gpuops.fabric.topology_facts
"""

EXAMPLES = r"""
- name: Validate the policy before contacting hosts
  gpuops.fabric.validate:
    hosts: "{{ query('inventory_hostnames', 'gpu_nodes') }}"
    validate_only: true
  run_once: true
  delegate_to: localhost

- name: Evaluate and write the reports
  gpuops.fabric.validate:
    report_dir: /srv/audit/{{ ansible_date_time.date | default('latest') }}
    fail_on: fail
  run_once: true

- name: Evaluate, print every finding, then fail (what gpuops.fabric.audit does)
  gpuops.fabric.validate:
    hosts: "{{ query('inventory_hostnames', 'gpu_nodes') }}"
    fail_task: false
  register: audit
  run_once: true
  delegate_to: localhost
- name: Show the findings
  ansible.builtin.debug:
    msg: "{{ [audit.msg] + audit.lines }}"
  run_once: true
- name: Fail when findings remain
  ansible.builtin.fail:
    msg: "{{ audit.fail_msg }}"
  when: audit.audit_failed
  run_once: true
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
"""
