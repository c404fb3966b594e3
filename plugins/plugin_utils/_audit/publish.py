# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the actions that end an audit share (gpuops.fabric.validate, gpuops.fabric.aggregate): the day waivers are
judged against, the reports written, the Prometheus textfile, the Slurm settings and the result the playbooks print
and fail on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic
from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import ControllerAction
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import slurm
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import (
    FILENAMES, FORMATS, REPORT_RENDERERS as RENDERERS, TEXTFILE_NAME,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import clip, finding_lines
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import (
    textfile_dir_problem,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import exceeds_policy, failure_message

# the arguments of the report-writing actions, the same in each
REPORT_ARGS = dict(
    hosts=dict(type="list", elements="str"),
    report_dir=dict(type="path"),
    prometheus_textfile_dir=dict(type="str"),
    formats=dict(type="list", elements="str", choices=list(FORMATS), default=list(FORMATS)),
    fail_on=dict(type="str", choices=["fail", "warn", "never"]),
    fail_task=dict(type="bool", default=True),
    today=dict(type="str"),
)

SHOWN_WARNINGS = 20  # printed; report.json's policy_warnings holds them all


def utc_now():
    """Now, to the second, in UTC: the time a report and each node result bear."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


class ReportAction(ControllerAction):
    """A controller action that writes the audit's reports from a report (run.run_audit, run.combine)."""

    def today(self, args):
        """The day waivers are judged against: O(today), else today."""
        try:
            return (datetime.datetime.strptime(args["today"], "%Y-%m-%d").date() if args["today"]
                    else datetime.date.today())
        except ValueError:
            raise AnsibleActionFail("%s: today (fabric_audit_today in the playbooks): %r is not a date (YYYY-MM-DD)"
                                    % (self.NAME, args["today"]))

    def publish(self, result, args, task_vars, report, slurm_config, drift=False):
        """Print the report's warnings, write its files (and the Prometheus textfile) and fill ``result``."""
        textfile_dir, textfile_error = self._textfile_dir(args, task_vars)
        warnings = report.get("policy_warnings") or []
        for warning in warnings[:SHOWN_WARNINGS]:
            self._display.warning(warning)
        if len(warnings) > SHOWN_WARNINGS:
            self._display.warning("%d more warnings: report.json's policy_warnings holds them all" % (
                len(warnings) - SHOWN_WARNINGS))
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
        if textfile_dir and drift:
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
            try:
                write_atomic(path, RENDERERS[fmt](report), "0644")
            except (IOError, OSError) as exc:
                raise AnsibleActionFail("cannot write the reports to %s: %s%s" % (
                    report_dir, getattr(exc, "strerror", None) or exc, " (written: %s)" % ", ".join(
                        os.path.basename(w) for w in written) if written else ""))
            written.append(path)
        return written
