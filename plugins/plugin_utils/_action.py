# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the controller-side actions share: their arguments and the hosts they run over."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase


def validated_args(name, spec, args):
    """The task's arguments checked against ``spec``; errors fail the task, prefixed with the action name."""
    validation = ArgumentSpecValidator(spec).validate(args)
    if validation.error_messages:
        raise AnsibleActionFail("%s: %s" % (name, "; ".join(validation.error_messages)))
    return validation.validated_parameters


def target_hosts(name, hosts, task_vars):
    """``hosts`` (default: all hosts of the play) as plain strings, each checked to be in the inventory."""
    hostvars = task_vars.get("hostvars", {})
    hosts = [str(h) for h in (hosts if hosts is not None else task_vars.get("ansible_play_hosts_all", []))]
    for host in hosts:
        if host not in hostvars:
            raise AnsibleActionFail("%s: hosts: %r is not in the inventory" % (name, host))
    return hosts, hostvars


class ControllerAction(ActionBase):
    """An action that computes on the controller only (no connection to the host, no files sent). Subclasses set
    NAME and ARGUMENT_SPEC and implement ``compute(result, args, task_vars)``, which gets the validated arguments."""

    TRANSFERS_FILES = False
    _requires_connection = False
    NAME = None
    ARGUMENT_SPEC = {}

    def run(self, tmp=None, task_vars=None):
        result = super(ControllerAction, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = validated_args(self.NAME, self.ARGUMENT_SPEC, self._task.args)
        return self.compute(result, args, task_vars)

    def compute(self, result, args, task_vars):
        raise NotImplementedError
