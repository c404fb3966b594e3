# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: probe_results
short_description: One host's probe results as the audit reads them
version_added: 0.1.0
author:
  - gpuops.fabric maintainers (@gpuops)
description:
  - Builds C(fabric_probe_results), which M(gpuops.fabric.validate) turns into the PROBE, STAB-005, STAB-006,
    STAB-008 and NCCLRUN findings, from what the role P(gpuops.fabric.probes#role) registered. The role's last task
    calls it; a play that runs the same modules itself can call it the same way.
  - The result has the keys C(jumbo), C(jumbo_error), C(throughput), C(server_errors), C(throughput_error),
    C(missing), C(nccl), C(nccl_scope) and the settings given in O(settings).
  - A result that is not a mapping (a task that did not run on this host) counts as empty.
options:
  _input:
    description: The result of M(gpuops.fabric.probe_plan).
    type: dict
    required: true
  host:
    description: The host the results are for (C(inventory_hostname)).
    type: str
    required: true
  first_host:
    description: The play's first host, which holds the result of nccl-tests run through a launcher.
    type: str
    required: true
  probes:
    description: The probes asked for (C(fabric_probes)).
    type: list
    elements: str
    required: true
  in_rounds:
    description: Whether this host ran iperf3 rounds (M(gpuops.fabric.throughput_probe) with C(mode=rounds)).
    type: bool
    required: true
  rounds_job:
    description: The result of starting the rounds (C(mode=rounds)).
    type: dict
  rounds:
    description: The result of collecting the rounds (C(mode=collect)).
    type: dict
  jumbo:
    description: The result of M(gpuops.fabric.path_probe), where the pings did not run with the rounds.
    type: dict
  nccl_node:
    description: The result of M(gpuops.fabric.nccl_tests_probe) run on this node.
    type: dict
  nccl_launched:
    description: The result of M(gpuops.fabric.nccl_tests_probe) run once through the site's launcher.
    type: dict
  launcher:
    description: Whether nccl-tests ran through a launcher (C(fabric_nccl_tests_launcher) is not empty).
    type: bool
    default: false
  settings:
    description:
      - The budgets the audit judges this host's results by, with the keys C(min_fraction), C(queue_delay_ms),
        C(max_retransmit_percent), C(max_goodput_spread_percent) and C(nccl_expected_busbw).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Keep the results for the audit
  ansible.builtin.set_fact:
    fabric_probe_results: "{{ probes_plan | gpuops.fabric.probe_results(host=inventory_hostname,
      first_host=ansible_play_hosts[0], probes=['jumbo'], in_rounds=false, jumbo=probes_jumbo) }}"
"""

RETURN = r"""
_value:
  description: The host's probe results, C(fabric_probe_results).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.probe_results import (
    probe_results as _probe_results,
)


def probe_results(plan, host, first_host, probes, in_rounds, rounds_job=None, rounds=None, jumbo=None,
                  nccl_node=None, nccl_launched=None, launcher=False, settings=None):
    try:
        return _probe_results(plan, host, first_host, probes, in_rounds, rounds_job, rounds, jumbo, nccl_node,
                              nccl_launched, launcher, settings)
    except ValueError as exc:
        raise AnsibleFilterError("probe_results: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"probe_results": probe_results}
