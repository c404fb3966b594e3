# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import target_hosts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import slurm
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import HostView, host_input
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.publish import REPORT_ARGS, ReportAction, utc_now
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import policy_warnings, run_audit, validate_inputs
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import is_true
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import preflight

ARGUMENT_SPEC = dict(
    REPORT_ARGS,
    validate_only=dict(type="bool", default=False),
    drift=dict(type="bool", default=False),
    planned_interfaces=dict(type="dict"),
)


class ActionModule(ReportAction):
    """Evaluate the rule catalog over every host's facts, once, on the controller."""

    NAME = "validate"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        hosts, hostvars = target_hosts("validate", args["hosts"], task_vars)
        today = self.today(args)

        if args["validate_only"]:
            return self._preflight(result, args, task_vars, hosts, hostvars, today)

        inputs, own_slurm = {}, {}
        for host in hosts:  # each host's variables merged once, for the inputs and Slurm alike, one host at a time
            view = HostView(hostvars, host)
            inputs[host] = host_input(view, args["drift"])
            own_slurm[host] = slurm.host_settings(view)

        slurm_config, slurm_errors = (None, []) if args["drift"] else slurm.settings(
            self._slurm_vars(task_vars), hosts, own_slurm)
        report, errors = run_audit(inputs, today, utc_now().isoformat(), self._collection_version())
        errors = list(errors) + slurm_errors
        if errors:
            raise AnsibleActionFail("fabric policy is invalid:\n" + "\n".join(errors))

        return self.publish(result, args, task_vars, report, slurm_config, args["drift"])

    def _preflight(self, result, args, task_vars, hosts, hostvars, today):
        """The one pre-flight (validate_only): every host's declared variables first (each read guarded: a template
        that fails is named with its host and key) and the run-wide settings, then the audit policy, the Prometheus
        folder and the Slurm settings; every error of them all in one failure, before any host is touched."""
        errors, variable_warnings = preflight(hosts, lambda host: hostvars[host])
        errors.extend(tuning_interface_errors(hosts, hostvars, args["planned_interfaces"] or {}))
        settings_wrong = bool(errors)
        inputs = {}
        for host in hosts:
            try:
                inputs[host] = host_input(hostvars[host], args["drift"])
            except Exception:  # pylint: disable=broad-except  # its unreadable variable is named above
                if not settings_wrong:
                    raise
        normalized, policy_errors = validate_inputs(inputs)
        errors.extend(policy_errors)
        _folder, textfile_error = self._textfile_dir(args, task_vars)
        if textfile_error:
            errors.append(textfile_error)
        if not args["drift"]:
            try:
                errors.extend(slurm.settings(self._slurm_vars(task_vars), hosts, hostvars)[1])
            except AnsibleActionFail as exc:
                errors.append(str(exc))
            except Exception:  # pylint: disable=broad-except  # a Slurm variable that cannot be read: named above
                if not settings_wrong:
                    raise
        if errors:
            raise AnsibleActionFail("fabric %s invalid (nothing was changed on any host):\n" % (
                "settings are" if settings_wrong else "policy is") + "\n".join(errors))
        for warning in variable_warnings:
            self._display.warning(warning)
        warnings = policy_warnings(normalized, today)
        for warning in warnings:
            self._display.warning(warning)
        result.update(changed=False, msg="policy of %d host(s) is valid" % len(inputs), warnings_list=warnings)
        return result


def tuning_interface_errors(hosts, hostvars, planned):
    """Where the tuning role will run (fabric_tuning_enabled) and fabric_tuning_interfaces names interfaces, each must
    be on the host (its facts, when gathered) or among those the network role will create (``planned``: host ->
    names, from the network intent's plans). Without facts (the audit's pre-flight runs before the gather) nothing
    can be said here; the tuning module refuses a missing interface on the node itself."""
    errors = []
    for host in sorted(hosts):
        own = hostvars[host]
        facts = (own.get("ansible_facts") or {}).get("gpuops_fabric")
        if not facts or not isinstance(facts, dict) or not is_true(own.get("fabric_tuning_enabled", False)):
            continue
        wanted = own.get("fabric_tuning_interfaces") or []
        plan = planned.get(host) or []
        if isinstance(plan, dict):  # network_intent's plan of the host, as site.yml passes it
            plan = [i.get("name") for i in plan.get("interfaces") or [] if isinstance(i, dict)]
        present = set(str(n.get("name")) for key in ("nics", "bonds", "vlans") for n in facts.get(key) or []
                      if isinstance(n, dict)) | set(str(n) for n in plan if isinstance(n, str))
        for name in (wanted if isinstance(wanted, list) else []):
            if isinstance(name, str) and name not in present:
                errors.append("%s: fabric_tuning_interfaces: %r is not an interface of this host (it has %s)" % (
                    host, name, ", ".join(sorted(present)[:20]) or "none"))
    return errors
