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
    drained with a reason of exactly that form, once every rule the reason names passed on it this run."
  - A node drained, downed or failed for any other reason (by an administrator, a health check) is never resumed and
    its reason is never overwritten; only Slurm's own C(Not responding) gives way to a drain. A node this collection
    drained that is also down, failing, rebooting or not responding is left to Slurm and its administrators.
  - A node already drained by this collection for the same rules is left as it is; for other rules only its reason
    changes. So a second run with the same audit changes nothing.
  - Every name must be one Slurm node (no hostlist expressions such as C(node[1-4]), not C(ALL)) that C(scontrol show
    node) lists exactly once; otherwise nothing is changed. When more nodes would be drained by this collection than
    O(max_drain_percent) allows, nothing is changed either.
  - Each change is one C(scontrol update) with its values as separate arguments, never through a shell, after the
    node is read again (C(scontrol show node NAME)); a node whose state or reason changed since the first reading is
    left, and said so. A failed update does not stop the others (each node stands alone, and a drain done is the safe
    side); the module then fails naming each node that failed and scontrol's message.
  - The audit playbook (C(playbooks/audit.yml)) runs this module once, delegated to C(fabric_slurm_host), when
    C(fabric_slurm_drain) is true; its O(drain), O(resume) and O(max_drain_percent) come from the audit
    (RV(gpuops.fabric.validate#module:slurm)).
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
      - Each node audited without a fail finding, to the rule ids that passed on it. A node this collection drained
        is resumed only when every rule its reason names is among them (a rule that could not be judged this run, for
        example with the GPU driver not loaded, keeps it drained).
    type: dict
    default: {}
  max_drain_percent:
    description:
      - The most nodes that may be drained by this collection after the run (those drained already and the new
        ones), as a share of the nodes C(scontrol show node) lists; at least one. More, and nothing is drained or
        resumed, and the module fails listing them. A fault that many nodes share at once is more likely a wrong
        policy or a fabric-wide problem than many broken nodes, and draining them would empty the cluster; counting
        the nodes drained before keeps repeated or C(--limit) runs from draining a little more each time.
      - Unset, there is no limit.
    type: float
  slurm_conf:
    description:
      - Path of the C(slurm.conf) scontrol reads (it sets C(SLURM_CONF)); unset, scontrol's own default
        (C(/etc/slurm/slurm.conf), or C(SLURM_CONF) of the connection's environment).
    type: path
notes:
  - Runs where C(scontrol) can reach C(slurmctld) as a user allowed to update nodes (root or SlurmUser, with munge).
  - Nodes that could not be audited (unreachable, or their facts failed) are in neither option, so they are neither
    drained nor resumed by the audit playbook.
seealso:
  - module: gpuops.fabric.validate
"""

EXAMPLES = r"""
- name: Drain a node with a PCIe fault, resume a node this collection drained for NET-004 earlier
  gpuops.fabric.slurm_drain:
    drain:
      gpu017: [PCIE-001, NET-004]
    resume:
      gpu018: [NET-003, NET-004, PCIE-001]
    max_drain_percent: 10
  delegate_to: slurm-head
  register: slurm
"""

RETURN = r"""
drained:
  description: Nodes drained (in check mode, that would be drained), sorted.
  returned: always
  type: list
  elements: str
  sample: [gpu017]
reasons:
  description: Nodes already drained by this collection whose reason changed (other rules fail now), sorted.
  returned: always
  type: list
  elements: str
resumed:
  description: Nodes resumed (in check mode, that would be resumed), sorted.
  returned: always
  type: list
  elements: str
  sample: [gpu018]
kept:
  description: Nodes of O(drain) or O(resume) left as they are, and why (someone else's reason; already drained for
    the same rules; not re-verified; a state Slurm owns; changed since it was read).
  returned: always
  type: dict
  sample: {gpu019: "drained by someone else: bad DIMM"}
failed_nodes:
  description: Each node whose update failed, with scontrol's message (the module then fails).
  returned: always
  type: dict
msg:
  description: One line saying what was (in check mode, would be) drained, resumed and left, and why.
  returned: always
  type: str
  sample: "did: drain gpu017; resume gpu018; leave gpu019 (drained by someone else: bad DIMM)"
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._slurm import (
    MAX_LISTING_BYTES, SlurmListingError, node_problem, parse_nodes, plan, rule_problem, still_as_read, update_argv,
)


def _check_input(module):
    errors = []
    for option in ("drain", "resume"):
        given = module.params[option]
        for name in sorted(given, key=str):
            problem = node_problem(name)
            if problem:
                errors.append("%s: %r %s" % (option, name, problem))
            rules = given[name]
            if not isinstance(rules, list) or (option == "drain" and not rules):
                errors.append("%s.%s: %r is not a%s list of rule ids" % (
                    option, name, rules, " non-empty" if option == "drain" else ""))
                continue
            for index, rule in enumerate(rules):
                problem = rule_problem(rule)
                if problem:
                    errors.append("%s.%s[%d]: %r %s" % (option, name, index, rule, problem))
    percent = module.params["max_drain_percent"]
    if percent is not None and not 0 < percent <= 100:
        errors.append("max_drain_percent: %r is not above 0 and at most 100" % percent)
    if errors:
        module.fail_json(msg="slurm_drain: " + "; ".join(errors))


def _run(module, argv, environ):
    # values as read from Slurm never go through $VAR or ~ expansion
    rc, out, err = module.run_command(argv, environ_update=environ, expand_user_and_vars=False)
    return rc, out, (err or out or "").strip()


def _listing(module, argv, environ):
    rc, out, err = _run(module, argv, environ)
    if rc != 0:
        return None, "%s failed (rc %d): %s" % (" ".join(argv[1:]), rc, err[-2000:])
    if len(out) > MAX_LISTING_BYTES:
        return None, "%s printed over %d MiB; not read" % (" ".join(argv[1:]), MAX_LISTING_BYTES // (1024 * 1024))
    try:
        return parse_nodes(out), None
    except SlurmListingError as exc:
        return None, "%s; nothing changed" % exc


def main():
    module = AnsibleModule(
        argument_spec=dict(
            drain=dict(type="dict", default={}),
            resume=dict(type="dict", default={}),
            max_drain_percent=dict(type="float"),
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

    nodes, error = _listing(module, [scontrol, "show", "node"], environ)
    if error:
        module.fail_json(msg="slurm_drain: " + error)
    drain = dict((name, list(rules)) for name, rules in module.params["drain"].items())
    resume = dict((name, list(rules)) for name, rules in module.params["resume"].items())
    actions, kept, errors = plan(nodes, drain, resume, module.params["max_drain_percent"])
    if errors:
        module.fail_json(msg="slurm_drain: " + "; ".join(errors), kept=kept)
    failing_kept = sorted(n for n in kept if n in drain and not kept[n].startswith("drained by this collection"))
    if failing_kept:
        module.warn("fail findings on %s, left as Slurm has them (%s)" % (
            ", ".join(failing_kept), "; ".join("%s: %s" % (n, kept[n]) for n in failing_kept)))

    done, failed = [], {}
    for action in actions:
        if module.check_mode:
            done.append(action)
            continue
        # read again just before: a node an administrator changed meanwhile is theirs
        again, error = _listing(module, [scontrol, "show", "node", action["node"]], environ)
        node = (again or {}).get(action["node"]) if not error and len(again or {}) == 1 else None
        if not still_as_read(action, node):
            kept[action["node"]] = "changed since it was read (%s): left" % (
                error or ("now %s" % ("%s (%s)" % (node["state"], node["reason"]) if node and node["reason"] else
                                      node["state"] if node else "not listed")))
            continue
        rc, out, err = _run(module, update_argv(scontrol, action), environ)
        if rc != 0:
            failed[action["node"]] = "%s failed (rc %d): %s" % (action["action"], rc, err[-1000:])
            continue
        done.append(action)

    result = dict(
        changed=bool(done),
        drained=[a["node"] for a in done if a["action"] == "drain"],
        reasons=[a["node"] for a in done if a["action"] == "reason"],
        resumed=[a["node"] for a in done if a["action"] == "resume"],
        kept=kept,
        failed_nodes=failed,
    )
    result["msg"] = "%s: %s" % ("would" if module.check_mode else "did", _summary(result))
    if module._diff and done:
        result["diff"] = dict(
            before="".join("%s: %s\n" % (a["node"], a["before"]) for a in done),
            after="".join("%s: %s\n" % (a["node"], a["after"]) for a in done))
    if failed:
        result["msg"] = "slurm_drain: %s; the other changes stand (%s)" % (
            "; ".join("%s: %s" % (n, failed[n]) for n in sorted(failed)), result["msg"])
        module.fail_json(**result)
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


if __name__ == "__main__":
    main()
