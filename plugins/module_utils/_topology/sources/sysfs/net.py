# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Network interfaces for the sysfs reader: /sys/class/net (and the net/ of each PCI function), each interface's MTU,
state, speed, MAC and kind; their addresses from /proc/net/if_inet6, fib_trie and route."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    NETDEV_BOND, NETDEV_BRIDGE, NETDEV_IPOIB, NETDEV_LOOPBACK, NETDEV_VIRTUAL, NETDEV_VLAN, NetDev,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import (
    parse_fib_trie_local, parse_if_inet6, parse_proc_route, RouteIndex,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import pci_component
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import UNKNOWN_SPEEDS


ARPHRD_INFINIBAND = 32
ARPHRD_LOOPBACK = 772


class NetMixin:
    """Reads /sys/class/net and the procfs address files into ``topo.netdevs``; needs the I/O of SysfsFiles
    and the PCI directories PciMixin found."""

    def read_netdevs(self):
        class_net = self.path("sys/class/net")
        for name in self.listdir(class_net):
            entry = os.path.join(class_net, name)
            if os.path.isfile(entry) and not os.path.islink(entry):
                continue  # a file of the class, not an interface: bonding_masters (the bonding driver's)
            self.topo.netdevs[name] = self._read_netdev(name, entry)
        # Interfaces under a PCI function but missing from /sys/class/net (partial captures).
        for directory in self._pci_dirs.values():
            net_dir = os.path.join(directory, "net")
            for name in self.listdir(net_dir):
                if name not in self.topo.netdevs:
                    self.topo.netdevs[name] = self._read_netdev(name, os.path.join(net_dir, name))
        self.read_addresses()

    def read_addresses(self):
        """Interface addresses from procfs files (no netlink, no tools).

        IPv6 comes per interface from /proc/net/if_inet6. IPv4 has no such file: the local addresses are
        the "/32 host LOCAL" leaves of /proc/net/fib_trie, each given to the interface of the most specific
        connected route in /proc/net/route that contains it (loopback addresses to the loopback device).
        """
        ipv6 = parse_if_inet6(self.read(self.path("proc/net/if_inet6"), quiet=True))
        fib = self.read(self.path("proc/net/fib_trie"), quiet=True)
        routes = parse_proc_route(self.read(self.path("proc/net/route"), quiet=True))
        if ipv6 is None and fib is None:
            return  # a capture without procfs networking: addresses unknown
        local = parse_fib_trie_local(fib) if fib is not None else []
        loopback = sorted(n.name for n in self.topo.netdevs.values() if n.kind == NETDEV_LOOPBACK) or ["lo"]
        for dev in self.topo.netdevs.values():
            dev.ipv4, dev.ipv6 = [], list((ipv6 or {}).get(dev.name, []))
        index = RouteIndex(routes)
        for address in local:
            iface, prefix = index.lookup(address)
            if iface is None and address.startswith("127."):
                iface, prefix = loopback[0], 8
            if iface in self.topo.netdevs:
                self.topo.netdevs[iface].ipv4.append("%s/%d" % (address, prefix))
            elif iface is None:
                self.warn("/proc/net/fib_trie: local address %s matches no connected route" % address)
        # The files list addresses in the kernel's order (if_inet6: newest first): sort, the order means nothing.
        for dev in self.topo.netdevs.values():
            dev.ipv4.sort(key=address_key)
            dev.ipv6.sort(key=address_key)

    def _read_netdev(self, name, entry):
        join = os.path.join
        dev = NetDev(name=name)
        target = self.resolve(entry)
        exists = os.path.isdir(target)
        parts = target.split(os.sep)
        pci_index = pci_component(parts[:-2]) if len(parts) >= 3 and parts[-2] == "net" else None
        if pci_index is not None:
            # The PCI function is the netdev's parent, or further up (virtio: .../0000:00:04.0/virtio1/net/X).
            dev.pci_address = parts[pci_index].lower()
            dev.driver = self.link_name(join(os.path.dirname(os.path.dirname(target)), "driver"))
        virtual = "virtual" in parts
        if exists:
            dev.mtu = self.read_int(join(target, "mtu"), what="mtu")
            dev.operstate = self.read(join(target, "operstate"))
            # carrier, speed and duplex fail with EINVAL while the interface is down.
            carrier = self.read(join(target, "carrier"), quiet=True)
            dev.carrier = {"1": True, "0": False}.get(carrier)
            speed = self.read_int(join(target, "speed"), quiet=True, what="speed", unknown=UNKNOWN_SPEEDS)
            dev.speed_mbps = speed if speed is not None and speed > 0 else None
            duplex = self.read(join(target, "duplex"), quiet=True)
            dev.duplex = duplex if duplex in ("full", "half") else None
            mac = self.read(join(target, "address"))
            dev.mac = mac or None
            dev.dev_port = self.read_int(join(target, "dev_port"), quiet=True, what="dev_port")
            link_type = self.read_int(join(target, "type"), what="type")
            uevent = self.read(join(target, "uevent")) or ""
            devtype = ""
            for line in uevent.splitlines():
                if line.startswith("DEVTYPE="):
                    devtype = line.split("=", 1)[1]
            if os.path.isdir(join(target, "bonding")) or devtype == "bond":
                dev.kind = NETDEV_BOND
            elif os.path.isdir(join(target, "bridge")) or devtype == "bridge":
                dev.kind = NETDEV_BRIDGE
            elif devtype == "vlan":
                dev.kind = NETDEV_VLAN
            elif link_type == ARPHRD_LOOPBACK:
                dev.kind = NETDEV_LOOPBACK
            elif link_type == ARPHRD_INFINIBAND:
                dev.kind = NETDEV_IPOIB
            elif virtual or dev.pci_address is None:
                dev.kind = NETDEV_VIRTUAL
        else:
            # A link into a part of sysfs that was not captured: all we know is the name.
            dev.kind = NETDEV_LOOPBACK if name == "lo" else NETDEV_VIRTUAL
            if virtual or dev.pci_address is None:
                self.warn("%s: interface details not available (link target not captured)" % entry)
        return dev


def address_key(text):
    """Sort key of "address/prefix" strings: numeric for addresses, text for anything else."""
    try:
        iface = ipaddress.ip_interface(text)
        return (0, iface.version, int(iface.ip), iface.network.prefixlen, "")
    except ValueError:
        return (1, 0, 0, 0, text)
