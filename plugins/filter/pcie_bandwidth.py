# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: pcie_bandwidth
short_description: Usable one-direction bandwidth of a PCIe link in GB/s
version_added: 0.1.0
author:
  - gpuops.fabric maintainers (@gpuops)
description:
  - Returns the usable bandwidth of a PCIe link in one direction, in GB/s (10^9 bytes per second), after line coding.
  - Gen1 and Gen2 use 8b/10b, Gen3 to Gen5 128b/130b; Gen6 and Gen7 run in FLIT mode, where 242 of every 256 bytes
    carry TLPs and DLLPs.
  - The same arithmetic the facts, checks and planner use.
options:
  _input:
    description: The PCIe generation, 1 to 7.
    type: int
    required: true
  width:
    description: Number of lanes.
    type: int
    required: true
  digits:
    description: Round the result to this many decimal places; no rounding when omitted.
    type: int
notes:
  - Unknown generations or widths return C(none) rather than fail, so the filter can be mapped over facts that
    contain unknown links.
"""

EXAMPLES = r"""
- name: Gen4 x16 (31.508 GB/s)
  ansible.builtin.debug:
    msg: "{{ 4 | gpuops.fabric.pcie_bandwidth(16) }}"

- name: Each GPU's current link bandwidth, rounded
  ansible.builtin.debug:
    msg: "{{ item.link.current.generation | gpuops.fabric.pcie_bandwidth(item.link.current.width, digits=1) }}"
  loop: "{{ ansible_facts.gpuops_fabric.gpus }}"
"""

RETURN = r"""
_value:
  description: Usable bandwidth in GB/s, or C(none) when the generation or width is unknown.
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import pcie_bandwidth as _pcie_bandwidth


def pcie_bandwidth(generation, width, digits=None):
    if generation is None or width is None:
        return None
    for name, value in (("generation", generation), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise AnsibleFilterError("pcie_bandwidth: %s must be a number, got %r" % (name, value))
    result = _pcie_bandwidth(generation, width)
    if result is None:
        return None
    return round(result, int(digits)) if digits is not None else result


class FilterModule(object):
    def filters(self):
        return {"pcie_bandwidth": pcie_bandwidth}
