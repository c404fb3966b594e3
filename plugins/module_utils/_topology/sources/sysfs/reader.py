# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The sysfs reader: PCI devices and links, NUMA nodes, network interfaces, RDMA ports, bonds and VLANs of a
live node or a captured tree, one subsystem per mixin (numa, pci, net, rdma, bonds) over the bounded I/O of
files. Files only, each bounded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.bonds import BondVlanMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.counters import CountersMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.files import (
    file_type, MAX_WARNINGS, SysfsFiles,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.kernel import KernelMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.kernel_log import KernelLogMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.net import NetMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.numa import NumaMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import PciMixin
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.rdma import RdmaMixin


class SysfsReader(NumaMixin, PciMixin, NetMixin, RdmaMixin, KernelMixin, KernelLogMixin, BondVlanMixin, CountersMixin,
                  SysfsFiles):
    """Reads one machine's topology below ``root`` ("/" for the live machine)."""

    def __init__(self, root="/"):
        super().__init__(root)
        self._pci_dirs = {}
        self._listings = {}
        self._iommu_types = {}

    def read_all(self, parts=("pci", "numa", "net", "rdma", "bond", "vlan")):
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            try:
                kind = file_type(os.stat(self.root).st_mode)
            except OSError:
                kind = "unknown type"
            raise TopologyError("root: %s is not a sysfs tree: it is not a directory (%s)" % (self.root, kind))
        if not os.path.isdir(self.path("sys")):
            raise TopologyError(
                "%s is not a sysfs tree: %s does not exist or is not a directory"
                % (self.root, self.path("sys"))
            )
        if "numa" in parts or "pci" in parts:
            # PCI locality falls back on NUMA CPU lists when numa_node is missing.
            self.read_numa()
        if "pci" in parts:
            self.read_pci()
            self.read_kernel_log()
        if "net" in parts or "bond" in parts or "vlan" in parts:
            self.read_netdevs()
        if "rdma" in parts:
            self.read_rdma()
            self.read_kernel_modules()
            self.read_kernel()
        if "bond" in parts:
            self.read_bonds()
        if "vlan" in parts:
            self.read_vlans()
        if "counters" in parts:
            self.read_counters()
        if self._suppressed:
            self.topo.warn("%d more warnings not listed (at most %d are kept)" % (self._suppressed, MAX_WARNINGS))
        return self.topo
