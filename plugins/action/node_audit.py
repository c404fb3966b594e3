# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import node_result, slurm
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import HostView, host_input
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.publish import REPORT_ARGS, ReportAction, utc_now
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import default

ARGUMENT_SPEC = dict(
    REPORT_ARGS,
    formats=dict(REPORT_ARGS["formats"], default=["json", "prom"]),
    state_dir=dict(type="str"),
    results_dir=dict(type="str"),
    profile=dict(type="str", choices=["passive", "full"]),
    validate_only=dict(type="bool", default=False),
)
STATE_KEY = "fabric_node_state_dir"
RESULTS_KEY = "fabric_node_results_dir"
PROFILE_KEY = "fabric_node_profile"


class ActionModule(ReportAction):
    """Judge the node this runs on (connection local): its node result and reports in its state folder, its last
    result the baseline, a copy of the result in a shared folder for the aggregate."""

    NAME = "node_audit"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        host = str(task_vars.get("inventory_hostname"))
        hostvars = task_vars.get("hostvars") or {}
        errors = []
        problem = node_result.file_name_problem(host)
        if problem:
            errors.append("inventory_hostname: %s (it names the node's result file)" % problem)
        play_hosts = task_vars.get("ansible_play_hosts_all") or [host]
        if len(play_hosts) != 1:
            errors.append("the node-local audit judges the node it runs on: %d hosts in the play (%s); limit the "
                          "run to this node (--limit NAME)" % (len(play_hosts), ", ".join(sorted(play_hosts)[:3])))
        connection = task_vars.get("ansible_connection") or self._play_context.connection
        if connection != "local":
            errors.append("ansible_connection is %r: the node-local audit reads and writes on the machine it runs on "
                          "(-c local, or ansible-pull)" % (connection,))
        state_dir = self._folder(args["state_dir"], task_vars, STATE_KEY, default(STATE_KEY), errors, exists=False)
        results_dir = self._folder(args["results_dir"], task_vars, RESULTS_KEY, None, errors, exists=True)
        profile = args["profile"] or task_vars.get(PROFILE_KEY) or default(PROFILE_KEY)
        _textfile, textfile_error = self._textfile_dir(args, task_vars)
        if textfile_error:
            errors.append(textfile_error)
        view = HostView(hostvars, host)  # the node's variables merged once, for Slurm and the inputs alike (as validate)
        slurm_config, slurm_errors = slurm.settings(self._slurm_vars(task_vars), [host],
                                                    {host: slurm.host_settings(view)})
        errors += slurm_errors
        if errors:
            raise AnsibleActionFail("node_audit: settings are invalid (nothing was read or written):\n"
                                    + "\n".join(errors))
        today = self.today(args)
        if args["validate_only"]:
            result.update(changed=False, msg="node_audit settings of %s are valid" % host)
            return result
        now = utc_now()
        item = host_input(view)
        if profile == "passive":  # one reading, no waiting: Slurm's HealthCheckProgram has 60 s
            item.update(window=None, window_counters=None)
        item["previous"] = node_result.previous_reading(os.path.join(state_dir, "report.json"), host, now)
        report, policy_errors = run_audit({host: item}, today, now.isoformat(), self._collection_version(),
                                          producer={"mode": "node-local", "profile": profile})
        if policy_errors:
            raise AnsibleActionFail("fabric policy is invalid (nothing was written):\n" + "\n".join(policy_errors))
        check_mode = self._play_context.check_mode
        # check mode writes nothing on the node: the state folder holds the next run's baseline
        publish_args = dict(args, report_dir=state_dir, formats=[] if check_mode else args["formats"])
        result = self.publish(result, publish_args, task_vars, report, slurm_config)
        result.update(node_result=None, state_dir=state_dir, profile=profile)
        if results_dir and not check_mode:
            path = os.path.join(results_dir, host + ".json")
            try:
                write_atomic(path, json.dumps(report["nodes"][0], default=str, separators=(",", ":")) + "\n",
                             "0644", root=results_dir)
            except (IOError, OSError, ValueError) as exc:
                raise AnsibleActionFail("%s: cannot write %s: %s (the reports are in %s)" % (
                    RESULTS_KEY, path, getattr(exc, "strerror", None) or exc, state_dir))
            result["node_result"] = path
        return result

    @staticmethod
    def _folder(value, task_vars, key, fallback, errors, exists):
        """An absolute folder from the task's argument or ``key``; ``exists``: it must be there already (a shared
        folder is not made by a node); else it may be made, but not where a file or a link stands."""
        value = value if value is not None else task_vars.get(key, fallback)
        if value is None or value == "":
            return None
        if not isinstance(value, str) or "\0" in value or not os.path.isabs(value):
            errors.append("%s: %r is not an absolute path" % (key, value))
            return None
        path = os.path.normpath(value)
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            errors.append("%s: %r is a link or not a folder" % (key, value))
        elif exists and not os.path.isdir(path):
            errors.append("%s: %r is not a folder on this node (it is not created: a shared folder is mounted)"
                          % (key, value))
        return path
