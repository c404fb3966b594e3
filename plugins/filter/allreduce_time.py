# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: allreduce_time
short_description: Seconds a ring allreduce takes at a given bus bandwidth
version_added: 0.1.0
author:
  - gpuops.fabric maintainers (@gpuops)
description:
  - In a ring allreduce each rank sends and receives 2(n-1)/n of the buffer; the time is that amount of data over the
    bus bandwidth of the slowest link on the ring (latency not included).
  - Bandwidth in GB/s (10^9 bytes per second), as NCCL reports bus bandwidth.
options:
  _input:
    description: The buffer size in bytes (for data parallel training, the gradient bytes per step).
    type: int
    required: true
  ranks:
    description: Number of ranks in the ring (nodes, when one rank per node carries the inter-node traffic).
    type: int
    required: true
  bus_bandwidth:
    description: Bus bandwidth of the slowest link in GB/s.
    type: float
    required: true
"""

EXAMPLES = r"""
- name: 1 GB of gradients over 4 nodes at 10GbE TCP goodput (1.18 GB/s) is about 1.27 s per step
  ansible.builtin.debug:
    msg: "{{ 1000000000 | gpuops.fabric.allreduce_time(4, (10000 | gpuops.fabric.ethernet_goodput(mtu=1500)) / 8) }}"
"""

RETURN = r"""
_value:
  description: Seconds.
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import (
    allreduce_time as _allreduce_time, ModelError,
)


def allreduce_time(size_bytes, ranks, bus_bandwidth):
    try:
        return _allreduce_time(size_bytes, ranks, bus_bandwidth)
    except ModelError as exc:
        raise AnsibleFilterError("allreduce_time: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"allreduce_time": allreduce_time}
