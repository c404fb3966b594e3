# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.module_utils._names import UnsafeValue
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import training_interface
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.settings import MODES, nccl_settings, render_conf
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.topology_file import topology_xml
from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import ControllerAction

ARGUMENT_SPEC = dict(
    mode=dict(type="str", choices=list(MODES), default="tcp"),
    interface=dict(type="str"),
    env=dict(type="dict", default={}),
    facts=dict(type="dict"),
    topo_file=dict(type="path"),
    planned_interfaces=dict(type="list", elements="str", default=[]),
)


class ActionModule(ControllerAction):
    """Derive this host's NCCL environment from its facts and network intent, on the controller."""

    NAME = "nccl_env"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        host = str(task_vars.get("inventory_hostname", "node"))
        facts = args["facts"]
        if facts is None:
            facts = (task_vars.get("ansible_facts") or {}).get("gpuops_fabric")
        if not facts:
            raise AnsibleActionFail("nccl_env: %s has no gpuops_fabric facts; run gpuops.fabric.topology_facts "
                                    "first" % host)
        interface, errors = (args["interface"], []) if args["interface"] else training_interface(task_vars)
        env = dict(args["env"])
        topology = None
        if args["topo_file"]:
            topology = topology_xml(facts)
            env.setdefault("NCCL_TOPO_FILE", args["topo_file"])
        settings, notes, warnings, more = nccl_settings(facts, interface, args["mode"], env, host=host,
                                                        planned=args["planned_interfaces"])
        errors = ["%s: %s" % (host, e) if not e.startswith(host + ":") else e for e in errors + more]
        if errors:
            raise AnsibleActionFail("NCCL environment of %s cannot be derived:\n%s" % (host, "\n".join(errors)))
        for warning in warnings:
            self._display.warning("%s: %s" % (host, warning))
        try:
            content = render_conf(settings, notes)
        except UnsafeValue as exc:
            raise AnsibleActionFail("NCCL environment of %s cannot be written: %s" % (host, exc))
        result.update(changed=False, interface=interface, mode=args["mode"], settings=dict(settings),
                      content=content, notes=notes, warnings_list=warnings, topology=topology)
        return result
