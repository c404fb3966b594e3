# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology_facts with the inventory's facts settings: an option the task does not give is taken from the host's
fabric_facts_* variable (declared in plugins/plugin_utils/_intent/declared.py and checked by each playbook's
pre-flight), so every play and role gathers the same way from one statement of those settings (issue 31: the task
was written out nine times, with nvml in two of them and lldp_socket in three). The module runs on the node as
before."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

# Only the subsets' names: Ansible imports this plugin once per run in its main process and compiles whatever it
# imports from source (the readers, _topology.facts: ~40 ms), and the workers forked for each host inherit it; what
# run() imports (the declared variables, ~15 ms, only where the host has a fabric_facts_* variable to check) each
# worker imports again unless the main process had it (tests/unit/plugins/action/test_action_imports.py).
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.subsets import resolve_subsets

# option -> the variable that gives it when the task does not
SETTINGS = (("source", "fabric_facts_source"), ("root", "fabric_facts_root"), ("path", "fabric_facts_path"),
            ("nvml", "fabric_facts_nvml"), ("lldp_socket", "fabric_facts_lldp_socket"))
# Where the facts come from is one setting in three options: a task that names any of them names the source itself
# (a capture's path from the inventory does not join a task's own source: sysfs)
SOURCE = ("source", "root", "path")
FACTS_KEY = "gpuops_fabric"


def reusable(facts, args):
    """Whether the facts a run already holds answer this task: they hold every subset it asks for and were read from
    the same place. A task whose gather_subset is bad is not answered here: the module names the problem."""
    if not isinstance(facts, dict) or not isinstance(facts.get("gather_subset"), list):
        return False
    try:
        wanted = resolve_subsets(args.get("gather_subset", ["all"]))
    except (TypeError, ValueError):
        return False
    if not set(wanted) <= set(facts["gather_subset"]):
        return False
    source = args.get("source", "sysfs")
    if source == "sysfs":  # the module keeps the root of a sysfs tree and the path of an XML file
        return facts.get("source") == source and facts.get("root") == args.get("root", "/")
    return facts.get("source") == source and facts.get("path") == args.get("path")


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        given = set(args) | (set(SOURCE) if set(SOURCE) & set(args) else set())
        for option, variable in SETTINGS:
            if option in given or variable not in task_vars:
                continue
            from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import (
                DECLARED, check_values, normal,
            )
            try:
                value = self._templar.template(task_vars[variable])
            except Exception as error:  # pylint: disable=broad-except  # a template that fails: named, no traceback
                result.update(failed=True, msg="topology_facts: %s: cannot be read: %s" % (
                    variable, (str(error).splitlines() or [""])[0][:300]))
                return result
            errors = []
            check_values({variable: value}, errors)  # as the pre-flight words it (it says so first, in a playbook)
            if errors:
                result.update(failed=True, msg="topology_facts: %s" % "; ".join(errors))
                return result
            value = normal(DECLARED[variable], value)  # unset is the default; YAML's yes for nvml is "yes"
            if value is not None:
                args[option] = value
        try:
            reuse = boolean(args.pop("reuse", False), strict=True)
        except TypeError:
            result.update(failed=True, msg="topology_facts: reuse: %r is not a boolean" % (self._task.args["reuse"],))
            return result
        if reuse and reusable((task_vars.get("ansible_facts") or {}).get(FACTS_KEY), args):
            result.update(changed=False, reused=True, msg="the facts this run gathered are kept: they hold every "
                          "subset asked for, from the same source, and nothing changed on the host since")
            return result
        result.update(self._execute_module(module_name="gpuops.fabric.topology_facts", module_args=args,
                                           task_vars=task_vars))
        return result
