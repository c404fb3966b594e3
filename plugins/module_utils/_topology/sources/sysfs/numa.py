# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""NUMA nodes for the sysfs reader: /sys/devices/system/node/node*/ cpulist (or cpumap), meminfo and distance."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import (
    format_cpulist, MAX_CPUS, parse_cpulist, parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NumaNode
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    in_limits, LIMITS, parse_decimal, short_text,
)


class NumaMixin:
    """Reads /sys/devices/system/node into ``topo.numa``; needs the I/O of SysfsFiles."""

    def read_numa(self):
        base = self.path("sys/devices/system/node")
        ids = []
        for entry in self.listdir(base):
            node_id = parse_decimal(entry[4:]) if entry.startswith("node") and entry[4:5] != "-" else None
            if node_id is None:
                continue
            if in_limits(node_id, "numa_node"):
                ids.append(node_id)
            else:
                self.warn("%s/%s: NUMA node %s is outside %d..%d, ignored"
                          % ((base, short_text(entry), short_text(entry[4:])) + LIMITS["numa_node"]))
        ids.sort()
        for node_id in ids:
            node_dir = os.path.join(base, "node%d" % node_id)
            node = NumaNode(node_id=node_id)
            cpulist = self.read(os.path.join(node_dir, "cpulist"))
            cpus = parse_cpulist(cpulist)
            if cpus is None:
                cpus = parse_cpumask(self.read(os.path.join(node_dir, "cpumap")))
            if cpus is None and cpulist is not None:
                self.warn("%s/cpulist: %r is not a CPU list (CPU numbers below %d)"
                          % (node_dir, cpulist[:40], MAX_CPUS))
            node.cpus = format_cpulist(cpus) if cpus is not None else None
            node.memory_bytes = self._node_memory(os.path.join(node_dir, "meminfo"))
            distance = self.read(os.path.join(node_dir, "distance"))
            if distance:
                values = [parse_decimal(v) for v in distance.split()]
                if len(values) == len(ids) and all(in_limits(v, "distance") for v in values):
                    node.distances = dict(zip(ids, values))
                elif len(values) == len(ids) and all(v is not None for v in values):
                    self.warn("%s/distance: a distance outside %d..%d, ignored" % ((node_dir,) + LIMITS["distance"]))
                else:
                    self.warn("%s/distance: %r does not match the %d nodes" % (node_dir, distance[:60], len(ids)))
            self.topo.numa[node_id] = node

    def _node_memory(self, path):
        text = self.read(path)
        if not text:
            return None
        for line in text.splitlines():
            fields = line.split()
            # "Node 0 MemTotal:       16747124 kB"
            if len(fields) >= 4 and fields[2] == "MemTotal:":
                kb = parse_decimal(fields[3])
                if in_limits(kb, "mem_kb"):
                    return kb * 1024
                self.warn("%s: MemTotal %s kB is not a size (0..%d kB), ignored"
                          % (path, short_text(fields[3]), LIMITS["mem_kb"][1]))
                return None
        self.warn("%s: no MemTotal line" % path)
        return None
