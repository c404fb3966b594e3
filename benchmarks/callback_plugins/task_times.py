# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A benchmark's own callback: the wall time of every task of a play, as one JSON line at the end
(``TASK_TIMES {...}``), for benchmarks/audit_ssh_bench.py --profile. Not part of the collection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: task_times
type: aggregate
short_description: Wall time per task, printed as JSON at the end of the run
description:
  - Used by benchmarks/audit_ssh_bench.py --profile only.
requirements:
  - enabled in the configuration (ANSIBLE_CALLBACKS_ENABLED=task_times)
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.times, self.current, self.started = [], None, None

    def _close(self):
        if self.current is not None:
            self.times.append([self.current, round(time.time() - self.started, 2)])
        self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self.current, self.started = task.get_name(), time.time()

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
        self._display.display("TASK_TIMES " + json.dumps(self.times))
