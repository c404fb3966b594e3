#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: slurm_drain
short_description: Drain the Slurm nodes an audit failed, and resume the clean ones this collection drained
version_added: 0.2.0
description:
  - "Reads every node's state and reason with C(scontrol show node), then drains each node of O(drain) with the reason
    C(gpuops.fabric: fail RULE-ID ...) (its failing rule ids, sorted), and resumes each node of O(resume) that is
    drained with a reason this collection wrote. A node drained for any other reason (by an administrator, by Slurm's
    own health check) is never resumed and its reason is never overwritten."
  - A node already drained by this collection for the same rules is left as it is; for other rules only its reason
    changes. So a second run with the same audit changes nothing.
  - Every name must be one Slurm node (no hostlist expressions such as C(node[1-4])) that C(scontrol show node) lists;
    otherwise nothing is changed. When more nodes would be drained than O(max_drain), nothing is changed either.
  - Each change is one C(scontrol update) with its values as separate arguments, never through a shell. When one
    fails, the changes this run made are undone (a node it drained is resumed, a node it resumed is drained again
    with its old reason) and the module fails naming the node and scontrol's message.
  - The audit playbook (C(playbooks/audit.yml)) runs this module once, delegated to C(fabric_slurm_host), when
    C(fabric_slurm_drain) is true; its O(drain) and O(resume) come from the audit (RV(gpuops.fabric.validate#module:slurm)).
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.actiongroup
attributes:
  check_mode:
    support: full
    details:
      - Reads the node table and reports what it would drain and resume; runs no C(scontrol update).
  diff_mode:
    support: full
    details:
      - One line per node that changes, its state and reason before and after.
  idempotent:
    description: Running the module again with the same input changes nothing.
    support: full
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
options:
  drain:
    description:
      - Node name to the rule ids of the fail findings on it. Each such node is drained.
    type: dict
    default: {}
  resume:
    description:
      - Nodes audited clean (no fail finding). Each that this collection drained is resumed; the others are left.
    type: list
    elements: str
    default: []
  max_drain:
    description:
      - The most nodes one run may newly drain (nodes already drained do not count). More, and nothing is drained or
        resumed, and the module fails listing them. A fault that many nodes share at once is more likely a wrong
        policy or a fabric-wide problem than many broken nodes, and draining them would empty the cluster.
      - Unset, there is no limit.
    type: int
  slurm_conf:
    description:
      - Path of the C(slurm.conf) scontrol reads (it sets C(SLURM_CONF)); unset, scontrol's own default
        (C(/etc/slurm/slurm.conf), or C(SLURM_CONF) of the connection's environment).
    type: path
notes:
  - Runs where C(scontrol) can reach C(slurmctld) as a user allowed to update nodes (root or SlurmUser, with munge).
  - Nodes that could not be audited (unreachable, or their facts failed) are in neither list, so they are neither
    drained nor resumed by the audit playbook.
seealso:
  - module: gpuops.fabric.validate
"""

EXAMPLES = r"""
- name: Drain a node with a PCIe fault, resume a node this collection drained earlier
  gpuops.fabric.slurm_drain:
    drain:
      gpu017: [PCIE-001, NET-004]
    resume: [gpu018]
    max_drain: 4
  delegate_to: slurm-head
  register: slurm
"""

RETURN = r"""
drained:
  description: Nodes drained (in check mode, that would be drained), sorted.
  returned: success
  type: list
  elements: str
  sample: [gpu017]
reasons:
  description: Nodes already drained by this collection whose reason changed (other rules fail now), sorted.
  returned: success
  type: list
  elements: str
resumed:
  description: Nodes resumed (in check mode, that would be resumed), sorted.
  returned: success
  type: list
  elements: str
  sample: [gpu018]
kept:
  description: Nodes of O(drain) or O(resume) left as they are, and why (drained by someone else; already drained
    for the same rules).
  returned: success
  type: dict
  sample: {gpu019: "drained by someone else: bad DIMM"}
msg:
  description: One line saying what was (in check mode, would be) drained, resumed and left, and why.
  returned: success
  type: str
  sample: "did: drain gpu017; resume gpu018; leave gpu019 (drained by someone else: bad DIMM)"
undone:
  description: When an update failed, the changes of this run that were undone (one line each).
  returned: failure
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._slurm import (
    MAX_LISTING_BYTES, node_problem, parse_nodes, plan, rule_problem, update_argv,
)


def _check_input(module):
    errors = []
    drain = module.params["drain"]
    for name in sorted(drain, key=str):
        problem = node_problem(name)
        if problem:
            errors.append("drain: %r %s" % (name, problem))
        rules = drain[name]
        if not isinstance(rules, list) or not rules:
            errors.append("drain.%s: %r is not a non-empty list of rule ids" % (name, rules))
            continue
        for index, rule in enumerate(rules):
            problem = rule_problem(rule)
            if problem:
                errors.append("drain.%s[%d]: %r %s" % (name, index, rule, problem))
    for index, name in enumerate(module.params["resume"]):
        problem = node_problem(name)
        if problem:
            errors.append("resume[%d]: %r %s" % (index, name, problem))
    if module.params["max_drain"] is not None and module.params["max_drain"] < 0:
        errors.append("max_drain: %r is below 0" % module.params["max_drain"])
    if errors:
        module.fail_json(msg="slurm_drain: " + "; ".join(errors))


def _run(module, argv, environ):
    rc, out, err = module.run_command(argv, environ_update=environ)
    return rc, out, (err or out or "").strip()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            drain=dict(type="dict", default={}),
            resume=dict(type="list", elements="str", default=[]),
            max_drain=dict(type="int"),
            slurm_conf=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    _check_input(module)
    environ = {}
    if module.params["slurm_conf"]:
        if not os.path.isfile(module.params["slurm_conf"]):
            module.fail_json(msg="slurm_drain: slurm_conf: %r is not a file" % module.params["slurm_conf"])
        environ["SLURM_CONF"] = module.params["slurm_conf"]
    scontrol = module.get_bin_path("scontrol")
    if not scontrol:
        module.fail_json(msg="slurm_drain: scontrol not found here; run it where Slurm's commands are installed "
                             "(fabric_slurm_host)")

    rc, out, err = _run(module, [scontrol, "show", "node"], environ)
    if rc != 0:
        module.fail_json(msg="slurm_drain: scontrol show node failed (rc %d): %s" % (rc, err[-2000:]))
    if len(out) > MAX_LISTING_BYTES:
        module.fail_json(msg="slurm_drain: scontrol show node printed over %d MiB; not read" % (
            MAX_LISTING_BYTES // (1024 * 1024)))
    nodes = parse_nodes(out)
    drain = dict((name, list(rules)) for name, rules in module.params["drain"].items())
    actions, kept, errors = plan(nodes, drain, module.params["resume"], module.params["max_drain"])
    if errors:
        module.fail_json(msg="slurm_drain: " + "; ".join(errors), kept=kept)

    result = dict(
        changed=bool(actions),
        drained=[a["node"] for a in actions if a["action"] == "drain"],
        reasons=[a["node"] for a in actions if a["action"] == "reason"],
        resumed=[a["node"] for a in actions if a["action"] == "resume"],
        kept=kept,
    )
    result["msg"] = "%s: %s" % ("would" if module.check_mode else "did", _summary(result))
    if module._diff and actions:
        result["diff"] = dict(
            before="".join("%s: %s\n" % (a["node"], a["before"]) for a in actions),
            after="".join("%s: %s\n" % (a["node"], a["after"]) for a in actions))
    if module.check_mode:
        module.exit_json(**result)

    done = []
    for action in actions:
        rc, out, err = _run(module, update_argv(scontrol, action), environ)
        if rc != 0:
            undone = _undo(module, scontrol, environ, done, nodes)
            module.fail_json(msg="slurm_drain: %s of %s failed (rc %d): %s; %d earlier change(s) of this run undone" % (
                action["action"], action["node"], rc, err[-1000:], len(done)), undone=undone, kept=kept)
        done.append(action)
    module.exit_json(**result)


def _summary(result):
    parts = []
    for key, word in (("drained", "drain"), ("reasons", "update the reason of"), ("resumed", "resume")):
        if result[key]:
            parts.append("%s %s" % (word, ", ".join(result[key])))
    text = "; ".join(parts) or "change nothing"
    if result["kept"]:
        text += "; leave %s" % "; ".join("%s (%s)" % (n, why) for n, why in sorted(result["kept"].items()))
    return text


def _undo(module, scontrol, environ, done, nodes):
    """Undo ``done`` (newest first): resume what this run drained, drain again what it resumed (with the reason it
    had), put back the reason it replaced. One line per node, saying whether the undo worked."""
    lines = []
    for action in reversed(done):
        node = nodes[action["node"]]
        if action["action"] == "drain":
            back = dict(action, action="resume")
        else:
            back = dict(action, action="drain", reason=node["reason"] or "gpuops.fabric: restored")
        rc, out, err = _run(module, update_argv(scontrol, back), environ)
        lines.append("%s: %s %s" % (action["node"], back["action"], "undone" if rc == 0 else "NOT undone: " + err[-300:]))
    return lines


if __name__ == "__main__":
    main()
