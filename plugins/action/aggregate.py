# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import target_hosts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import node_result, slurm
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.publish import REPORT_ARGS, ReportAction, utc_now
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import combine
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import DECLARED, normal, value_problem
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import preflight

ARGUMENT_SPEC = dict(
    REPORT_ARGS,
    paths=dict(type="list", elements="str"),
    max_age_hours=dict(type="raw"),
)
PATHS_KEY = "fabric_aggregate_paths"
AGE_KEY = "fabric_aggregate_max_age_hours"


class ActionModule(ReportAction):
    """Merge node results (report.json files of audits, node-local results) and write one audit's reports."""

    NAME = "aggregate"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        hosts, hostvars = target_hosts(self.NAME, args["hosts"], task_vars)
        errors, _warnings = preflight(hosts, lambda host: hostvars[host])
        paths, path_errors = self._paths(args, task_vars)
        max_age_s, age_errors = self._max_age(args, task_vars)
        errors += path_errors + age_errors
        _folder, textfile_error = self._textfile_dir(args, task_vars)
        if textfile_error:
            errors.append(textfile_error)
        slurm_config, slurm_errors = slurm.settings(self._slurm_vars(task_vars), hosts, hostvars)
        errors += slurm_errors
        if errors:
            raise AnsibleActionFail("aggregate: settings are invalid (nothing was read or written):\n"
                                    + "\n".join(errors))
        today = self.today(args)
        now = utc_now()
        docs, sources, lines = node_result.collect(paths, hosts, now, max_age_s)
        missing = dict((h, "no usable node result in %s" % ", ".join(paths)) for h in hosts if h not in docs)
        report, policy_lines = combine(docs, today, now.isoformat(), self._collection_version(), missing)
        # report["policy_warnings"] already holds combine's own lines
        report["policy_warnings"] = ["node result left out: %s" % line for line in lines] + report["policy_warnings"]
        report["sources"] = [{"host": h, "source": sources[h]} for h in sorted(sources)]
        result = self.publish(result, args, task_vars, report, slurm_config)
        result.update(rejected=lines + policy_lines, read=len(docs), missing=sorted(missing))
        return result

    @staticmethod
    def _paths(args, task_vars):
        value = args["paths"] if args["paths"] is not None else task_vars.get(PATHS_KEY)
        key = "paths" if args["paths"] is not None else PATHS_KEY
        if isinstance(value, str):
            value = [value]
        if not value or not isinstance(value, list):
            return [], ["%s: %r: name the node results to merge (files, or folders of them)" % (key, value)]
        paths, errors = [], []
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip() or "\0" in item:
                errors.append("%s[%d]: %r is not a path" % (key, index, item))
                continue
            path = os.path.abspath(os.path.expanduser(item))
            if not os.path.lexists(path):
                errors.append("%s[%d]: %r does not exist on the controller" % (key, index, item))
            paths.append(path)
        return paths, errors

    @staticmethod
    def _max_age(args, task_vars):
        """Seconds: O(max_age_hours), else fabric_aggregate_max_age_hours (the pre-flight names a bad one), else 24
        hours; either is judged by the variable's one declaration."""
        var = DECLARED[AGE_KEY]
        from_task = args["max_age_hours"] is not None
        value = args["max_age_hours"] if from_task else task_vars.get(AGE_KEY)
        problem = value_problem(var, value) if value is not None else None  # unset: the declared default
        if problem:
            return None, ["max_age_hours: %r %s" % (value, problem)] if from_task else []
        return float(normal(var, value)) * 3600, []
