# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: path_bottleneck
short_description: The slowest segment of a data path
version_added: 0.1.0
author:
  - gpuops.fabric maintainers (@gpuops)
description:
  - Given the segments of a path (GPU link, upstream links, NIC slot, NIC line rate, socket crossing), each with its
    usable one-direction bandwidth in GB/s, returns the slowest.
  - Segments whose bandwidth is unknown (C(none)) are skipped and listed, so a path read from incomplete facts is not
    silently called fast.
options:
  _input:
    description: The segments, each a mapping with C(name) and C(gbytes_per_s).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: A Gen4 x16 GPU behind a Gen3 x16 switch uplink (15.75 GB/s, the bottleneck) and a 200GbE NIC (24.75 GB/s)
  ansible.builtin.debug:
    msg: >-
      {{ [{'name': 'gpu', 'gbytes_per_s': 4 | gpuops.fabric.pcie_bandwidth(16)},
          {'name': 'uplink', 'gbytes_per_s': 3 | gpuops.fabric.pcie_bandwidth(16)},
          {'name': 'nic line rate', 'gbytes_per_s': (200000 | gpuops.fabric.ethernet_goodput(mtu=9000)) / 8}]
         | gpuops.fabric.path_bottleneck }}
"""

RETURN = r"""
_value:
  description: C(name) and C(gbytes_per_s) of the slowest segment, with C(known) and C(unknown) (names of the segments
    with and without a bandwidth); C(none) when no segment has one.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import (
    ModelError, path_bottleneck as _path_bottleneck,
)


def path_bottleneck(segments):
    try:
        return _path_bottleneck(segments)
    except ModelError as exc:
        raise AnsibleFilterError("path_bottleneck: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"path_bottleneck": path_bottleneck}
