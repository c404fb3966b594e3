# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: topology_summary
short_description: A few human-readable lines about a node's gpuops_fabric facts
version_added: 0.1.0
author:
  - gpuops.fabric maintainers (@gpuops)
description:
  - Turns C(ansible_facts.gpuops_fabric) (from M(gpuops.fabric.topology_facts)) into short lines for a console
    summary. NUMA nodes, GPUs with their link and nearest NIC, physical NICs with speed, MTU and NUMA node,
    RDMA ports, bonds and VLANs, and the number of warnings.
options:
  _input:
    description: The C(gpuops_fabric) facts of one host.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpuops_fabric | gpuops.fabric.topology_summary }}"
"""

RETURN = r"""
_value:
  description: Lines of text, one topic each.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.fabric.plugins.plugin_utils._summary import summarize


def topology_summary(facts):
    if not isinstance(facts, dict) or "schema_version" not in facts:
        raise AnsibleFilterError("topology_summary: expects ansible_facts.gpuops_fabric (a dict with schema_version)")
    return summarize(facts)


class FilterModule(object):
    def filters(self):
        return {"topology_summary": topology_summary}
