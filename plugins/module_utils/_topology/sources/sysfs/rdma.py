# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""RDMA devices for the sysfs reader: /sys/class/infiniband, each port's state, rate, link layer, GID table and
netdev, the RoCE active MTU; and the loaded state of the kernel modules that matter (/sys/module)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    GidEntry, RdmaDevice, RdmaPort, RELEVANT_MODULES,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import pci_component
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    in_limits, LIMITS, parse_decimal, RATE_RE, short_text,
)


# Bytes of RoCE v2 headers the kernel subtracts from the netdev MTU before picking
# the IB MTU (GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4).
ROCE_HEADER_BYTES = 96
# Soft-RoCE's own (drivers/infiniband/sw/rxe/rxe_param.h RXE_MAX_HDR_LENGTH), and the MTU it falls back to when the
# netdev's leaves less than 256 bytes (rxe_net.c rxe_set_mtu)
RXE_HEADER_BYTES = 80
RXE_MIN_MTU = 256
IB_MTUS = (4096, 2048, 1024, 512, 256)
# A device under /sys/devices/virtual/infiniband is a driver over a netdev; its node_type tells which: a channel
# adapter is Soft-RoCE (rdma_rxe), an RDMA NIC is soft iWARP (siw)
SOFTWARE_NODE_TYPES = {"1": "rxe", "4": "siw"}


class RdmaMixin:
    """Reads /sys/class/infiniband into ``topo.rdma`` and /sys/module into ``topo.kernel_modules``; needs
    the I/O of SysfsFiles and the interfaces NetMixin read."""

    def read_rdma(self):
        class_ib = self.path("sys/class/infiniband")
        for name in self.listdir(class_ib):
            target = self.resolve(os.path.join(class_ib, name))
            rdma = RdmaDevice(name=name)
            parts = target.split(os.sep)
            pci_index = pci_component(parts[:-2]) if len(parts) >= 3 and parts[-2] == "infiniband" else None
            if pci_index is not None:
                rdma.pci_address = parts[pci_index].lower()
                rdma.netdevs = sorted(netdev.name for netdev in self.topo.netdevs.values()
                                      if netdev.pci_address == rdma.pci_address)
            elif len(parts) >= 3 and parts[-2] == "infiniband" and parts[-3] == "virtual":
                # no PCI function: the netdev is the one the driver names in its own attribute, parent
                node_type = (self.read(os.path.join(target, "node_type"), quiet=True) or "").split(":")[0].strip()
                rdma.software = SOFTWARE_NODE_TYPES.get(node_type, "unknown")
                parent = self.read(os.path.join(target, "parent"), quiet=True)
                rdma.netdevs = [parent] if parent in self.topo.netdevs else []
            ports_dir = os.path.join(target, "ports")
            for number, port_name in self._numbered(ports_dir, "port"):
                rdma.ports.append(self._read_rdma_port(rdma, number, os.path.join(ports_dir, port_name)))
            if not os.path.isdir(target):
                self.warn("%s: RDMA device details not available (link target not captured)"
                          % os.path.join(class_ib, name))
            self.topo.rdma[name] = rdma

    def _read_rdma_port(self, rdma, number, directory):
        join = os.path.join
        port = RdmaPort(port=number)
        state = self.read(join(directory, "state"))
        if state:
            port.state = state.split(":", 1)[-1].strip() or None
        rate = self.read(join(directory, "rate"))
        port.rate = rate
        if rate:
            head = rate.split()[0]
            value = float(head) if RATE_RE.match(head) else None
            if value is None:
                self.warn("%s/rate: %r not understood" % (directory, rate[:40]))
            elif not LIMITS["rate_gbps"][0] < value <= LIMITS["rate_gbps"][1]:
                self.warn("%s/rate: %s Gb/s is outside 0..%d, ignored"
                          % (directory, short_text(head), LIMITS["rate_gbps"][1]))
            else:
                port.rate_gbps = value
        port.link_layer = self.read(join(directory, "link_layer"))
        # The GID table matters for RoCE (which index carries the IPv4 address); an InfiniBand
        # port's table is its subnet prefix and GUID, and can run to hundreds of files.
        gid_names = self.listdir(join(directory, "gids")) if port.link_layer != "InfiniBand" else []
        for gid_index, index_name in self._numbered(join(directory, "gids"), "gid_index", gid_names):
            gid = self.read(join(directory, "gids", index_name), quiet=True)
            # Unused table entries are all zeros (RoCE) or the subnet prefix with a zero
            # interface id (InfiniBand).
            if not gid or gid.split(":")[4:] == ["0000"] * 4:
                continue
            entry = GidEntry(index=gid_index, gid=gid)
            entry.gid_type = self.read(join(directory, "gid_attrs", "types", index_name), quiet=True)
            entry.netdev = self.read(join(directory, "gid_attrs", "ndevs", index_name), quiet=True)
            entry.ipv4 = ipv4_from_gid(gid)
            port.gids.append(entry)
        port.netdev = next((g.netdev for g in port.gids if g.netdev), None)
        if port.netdev is None:
            candidates = [self.topo.netdevs[n] for n in rdma.netdevs if n in self.topo.netdevs]
            by_port = [n for n in candidates if n.dev_port is not None and n.dev_port == number - 1]
            if by_port:
                port.netdev = by_port[0].name
            elif len(candidates) == 1:
                port.netdev = candidates[0].name
        if port.link_layer == "Ethernet" and port.netdev in self.topo.netdevs and rdma.software in (None, "rxe"):
            port.active_mtu = roce_active_mtu(self.topo.netdevs[port.netdev].mtu, soft=rdma.software == "rxe")
        return port

    def _numbered(self, directory, what, names=None):
        """[(number, name)] of the entries of ``directory`` named by a number (ports, GID indexes), in
        numeric order; numbers outside ``LIMITS[what]`` are left out with a warning."""
        numbered = []
        for name in self.listdir(directory) if names is None else names:
            number = parse_decimal(name) if name[:1] != "-" else None
            if number is None:
                continue
            if in_limits(number, what):
                numbered.append((number, name))
            else:
                self.warn("%s/%s: %s %s is outside %d..%d, ignored"
                          % ((directory, short_text(name), what.replace("_", " "), short_text(name)) + LIMITS[what]))
        return sorted(numbered)

    def read_kernel_modules(self):
        module_dir = self.path("sys/module")
        if not os.path.isdir(module_dir):
            return  # a capture without /sys/module: unknown, not "not loaded"
        self.topo.kernel_modules = dict(
            (name, os.path.isdir(os.path.join(module_dir, name))) for name in RELEVANT_MODULES)


def ipv4_from_gid(gid):
    """The IPv4 address in an IPv4-mapped GID (``::ffff:a.b.c.d``), else None."""
    groups = gid.strip().lower().split(":")
    if len(groups) != 8 or any(len(g) != 4 for g in groups):
        return None
    if groups[:5] != ["0000"] * 5 or groups[5] != "ffff":
        return None
    try:
        high, low = int(groups[6], 16), int(groups[7], 16)
    except ValueError:
        return None
    return "%d.%d.%d.%d" % (high >> 8, high & 0xFF, low >> 8, low & 0xFF)


def roce_active_mtu(netdev_mtu, soft=False):
    """IB MTU a RoCE port runs at for a netdev MTU: the kernel's iboe_get_mtu for a RoCE NIC, rxe_set_mtu for
    Soft-RoCE (``soft``: fewer header bytes, and 256 where the netdev's MTU leaves less)."""
    if netdev_mtu is None:
        return None
    payload = netdev_mtu - (RXE_HEADER_BYTES if soft else ROCE_HEADER_BYTES)
    for mtu in IB_MTUS:
        if payload >= mtu:
            return mtu
    return RXE_MIN_MTU if soft else None
