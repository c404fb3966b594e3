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
