# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import ControllerAction, target_hosts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import host_input
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import (
    FILENAMES, FORMATS, REPORT_RENDERERS as RENDERERS, TEXTFILE_NAME,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import clip, finding_lines
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import (
    textfile_dir_problem,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import slurm
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import is_true
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import preflight
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import (
    exceeds_policy, failure_message, policy_warnings, run_audit, validate_inputs,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str"),
    report_dir=dict(type="path"),
    prometheus_textfile_dir=dict(type="str"),
    formats=dict(type="list", elements="str", choices=list(FORMATS), default=list(FORMATS)),
    fail_on=dict(type="str", choices=["fail", "warn", "never"]),
    fail_task=dict(type="bool", default=True),
    validate_only=dict(type="bool", default=False),
    drift=dict(type="bool", default=False),
    today=dict(type="str"),
    planned_interfaces=dict(type="dict"),
)


class ActionModule(ControllerAction):
    """Evaluate the rule catalog over every host's facts, once, on the controller."""

    NAME = "validate"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        hosts, hostvars = target_hosts("validate", args["hosts"], task_vars)
        try:
            today = (datetime.datetime.strptime(args["today"], "%Y-%m-%d").date() if args["today"]
                     else datetime.date.today())
        except ValueError:
            raise AnsibleActionFail("validate: today (fabric_audit_today in the playbooks): %r is not a date "
                                    "(YYYY-MM-DD)" % args["today"])

        if args["validate_only"]:
            return self._preflight(result, args, task_vars, hosts, hostvars, today)

        inputs = dict((host, host_input(hostvars[host], args["drift"])) for host in hosts)

        textfile_dir, textfile_error = self._textfile_dir(args, task_vars)
        slurm_config, slurm_errors = (None, []) if args["drift"] else slurm.settings(
            self._slurm_vars(task_vars), hosts, hostvars)
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
        report, errors = run_audit(inputs, today, now, self._collection_version())
        errors = list(errors) + slurm_errors
        if errors:
            raise AnsibleActionFail("fabric policy is invalid:\n" + "\n".join(errors))

        for warning in report.get("policy_warnings") or []:
            self._display.warning(warning)
        for host in report["hosts"]:
            if host.get("facts_warnings"):
                self._display.warning(clip("%s: %d warning(s) reading its facts (all in report.json), first: %s"
                                           % (host["name"], len(host["facts_warnings"]), host["facts_warnings"][0])))
        report_dir = args["report_dir"] or task_vars.get("fabric_report_dir") or "fabric-report"
        report_dir = os.path.abspath(os.path.expanduser(report_dir))
        files = self._write(report, report_dir, args["formats"])
        written = list(files)
        if textfile_error:  # the folder went away since the policy was checked: the reports stand
            raise AnsibleActionFail(textfile_error)
        textfile_skipped = None
        if textfile_dir and args["drift"]:
            # the drift run's findings are not the audit's: node_exporter keeps serving the last audit
            textfile_skipped = "drift runs leave the Prometheus textfile to the audit"
        elif textfile_dir and self._play_context.check_mode:
            textfile_skipped = "check mode: %s not written" % os.path.join(textfile_dir, TEXTFILE_NAME)
        elif textfile_dir:
            path = os.path.join(textfile_dir, TEXTFILE_NAME)
            try:
                # atomically (a temporary name outside *.prom, then a rename): the collector never reads half a file
                write_atomic(path, RENDERERS["prom"](report), "0644")
            except (IOError, OSError) as exc:
                raise AnsibleActionFail("fabric_prometheus_textfile_dir: cannot write %s: %s (the reports are in %s)"
                                        % (path, exc.strerror or exc, report_dir))
            written.append(path)
        fail_on = args["fail_on"] or task_vars.get("fabric_audit_fail_on") or "fail"
        summary = report["summary"]
        result.update(
            changed=False,
            summary=summary,
            report_files=written,
            textfile_skipped=textfile_skipped,
            findings=[f for f in report["findings"] if not f.get("waived")],
            lines=finding_lines(report),
            msg="%d host(s) audited, %d unreachable, %d failed: %d fail, %d warn, %d info finding(s), %d waived; "
                "reports in %s" % (summary["audited"], summary["unreachable"], summary["failed"],
                                   summary["findings"]["fail"], summary["findings"]["warn"],
                                   summary["findings"]["info"], summary["waived"], report_dir),
            audit_failed=exceeds_policy(report, fail_on),
            fail_msg=None,
            slurm=slurm.drain_plan(report, slurm_config) if slurm_config else None,
        )
        if result["audit_failed"]:
            result["fail_msg"] = failure_message(report, fail_on, report_dir, files)
            if args["fail_task"]:
                result["failed"] = True
                result["msg"] = "audit failed (fail_on=%s): %s" % (fail_on, result["msg"])
        return result

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

    def _slurm_vars(self, task_vars):
        """The run's fabric_slurm_* settings, templated as the playbook's delegate_to will see them (an action
        plugin's task_vars hold them as written: "{{ groups.slurm[0] }}"), and the inventory's hosts."""
        found = {"groups": task_vars.get("groups") or {}}
        for key in slurm.RUN_SETTINGS:
            if key in task_vars:
                try:
                    found[key] = self._templar.template(task_vars[key])
                except Exception as exc:  # pylint: disable=broad-except  # templating errors share no base class
                    raise AnsibleActionFail("%s: %r cannot be templated: %s" % (
                        key, task_vars[key], (str(exc).splitlines() or [""])[0][:300]))
        return found

    @staticmethod
    def _textfile_dir(args, task_vars):
        """(folder, None) of O(prometheus_textfile_dir) or fabric_prometheus_textfile_dir, (None, None) when unset,
        (None, error) when it is not an existing folder given as an absolute path."""
        value = args["prometheus_textfile_dir"]
        key = "prometheus_textfile_dir"
        if value is None:
            value, key = task_vars.get("fabric_prometheus_textfile_dir"), "fabric_prometheus_textfile_dir"
        if value is None or value == "":
            return None, None
        if not isinstance(value, str) or "\0" in value or not os.path.isabs(value):
            return None, "%s: %r is not an absolute path (node_exporter's --collector.textfile.directory)" % (
                key, value)
        path = os.path.normpath(value)
        if not os.path.isdir(path):
            return None, "%s: %r is not a directory (node_exporter's --collector.textfile.directory; it is not " \
                         "created)" % (key, value)
        problem = textfile_dir_problem(path)
        if problem:  # a link to /etc would have the audit replace a file there
            return None, "%s: %s" % (key, problem)
        if not os.access(path, os.W_OK | os.X_OK):
            return None, "%s: %r is not writable by this user (node_exporter's textfile folder is often root's)" % (
                key, value)
        target = os.path.join(path, TEXTFILE_NAME)
        if os.path.isdir(target) and not os.path.islink(target):  # a rename cannot replace a folder
            return None, "%s: %r holds a directory named %s" % (key, value, TEXTFILE_NAME)
        return path, None

    def _collection_version(self):
        try:
            import ansible_collections.gpuops.fabric as package
            manifest = os.path.join(os.path.dirname(package.__file__ or ""), "MANIFEST.json")
            if os.path.isfile(manifest):
                import json
                with open(manifest) as handle:
                    return json.load(handle)["collection_info"]["version"]
        except (ImportError, OSError, ValueError, KeyError, TypeError):
            pass
        return None

    @staticmethod
    def _write(report, report_dir, formats):
        written = []
        for fmt in formats:
            path = os.path.join(report_dir, FILENAMES[fmt])
            write_atomic(path, RENDERERS[fmt](report), "0644")
            written.append(path)
        return written


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
