# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Read the topology model from sysfs and procfs under a root directory.

Only files are read: no subprocess, nothing that can hang on broken hardware.
Odd values (missing files, "Unknown", -1, garbage) become None plus a warning.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import ipaddress
import os
import re
import stat
import sys

from ansible_collections.gpuops.fabric.plugins.module_utils._cpulist import (
    format_cpulist,
    parse_cpulist,
    parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._model import (
    Bond,
    BondMember,
    GidEntry,
    NetDev,
    NumaNode,
    RELEVANT_MODULES,
    PciDevice,
    RdmaDevice,
    RdmaPort,
    Topology,
    Vlan,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._pcie import (
    parse_link_speed,
    parse_link_width,
)

PCI_ADDRESS_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_HOST_BRIDGE_RE = re.compile(r"^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$")
_MAX_READ = 65536
# The attribute files read per PCI function.
_PCI_FILES = frozenset((
    "config", "uevent", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "numa_node",
    "local_cpulist", "local_cpus", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
))
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)

ARPHRD_INFINIBAND = 32
ARPHRD_LOOPBACK = 772

BOND_MODE_NAMES = {
    "load balancing (round-robin)": "balance-rr",
    "fault-tolerance (active-backup)": "active-backup",
    "load balancing (xor)": "balance-xor",
    "fault-tolerance (broadcast)": "broadcast",
    "ieee 802.3ad dynamic link aggregation": "802.3ad",
    "transmit load balancing": "balance-tlb",
    "adaptive load balancing": "balance-alb",
}

# Bytes of RoCE v2 headers the kernel subtracts from the netdev MTU before picking
# the IB MTU (GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4).
ROCE_HEADER_BYTES = 96
IB_MTUS = (4096, 2048, 1024, 512, 256)


def normalize_pci_address(address):
    """``"00000000:3B:00.0"`` (NVML) or ``"0000:3b:00.0"`` -> ``"0000:3b:00.0"``; junk -> None."""
    if not address:
        return None
    domain, sep, rest = address.strip().lower().partition(":")
    candidate = "%04x:%s" % (int(domain, 16), rest) if sep and _is_hex(domain) else None
    return candidate if candidate and PCI_ADDRESS_RE.match(candidate) else None


def _is_hex(text):
    return bool(text) and all(c in "0123456789abcdef" for c in text)


class SysfsReader:
    """Reads one machine's topology below ``root`` ("/" for the live machine)."""

    def __init__(self, root="/"):
        self.root = root
        self.topo = Topology(source="sysfs")
        self._pci_dirs = {}
        self._listings = {}

    # ---- low-level I/O: the only place files are touched ------------------------------
    def path(self, *parts):
        return os.path.join(self.root, *[p.lstrip("/") for p in parts])

    def read(self, path, quiet=False, regular=False):
        """Text of a sysfs file, stripped; None when missing, unreadable or not text.

        ``regular`` says the caller already knows the path is a regular file (from its directory
        listing), which saves a stat.
        """
        try:
            # O_NONBLOCK: a FIFO in a capture must not block the open; only regular files are read.
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as exc:
            # Missing files are normal (old kernels, captures); other errors are worth a note.
            if not quiet and exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EINVAL):
                self.topo.warn("%s: unreadable (%s)" % (path, exc))
            return None
        try:
            if not regular and not stat.S_ISREG(os.fstat(fd).st_mode):
                if not quiet:
                    self.topo.warn("%s: not a regular file, ignored" % path)
                return None
            data = os.read(fd, _MAX_READ)
        except OSError as exc:
            # Reading some sysfs attributes of a down link fails with EINVAL: that means unknown.
            if not quiet and exc.errno != errno.EINVAL:
                self.topo.warn("%s: unreadable (%s)" % (path, exc))
            return None
        finally:
            os.close(fd)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self.topo.warn("%s: not text, ignored" % path)
            return None
        if "\x00" in text:
            self.topo.warn("%s: not text, ignored" % path)
            return None
        return text.strip()

    def read_int(self, path, base=10, quiet=False, regular=False):
        text = self.read(path, quiet=quiet, regular=regular)
        if text is None or text == "":
            return None
        try:
            return int(text, base)
        except ValueError:
            self.topo.warn("%s: %r is not a number, ignored" % (path, text[:40]))
            return None

    def listdir(self, path):
        try:
            return sorted(os.listdir(path))
        except (IOError, OSError):
            return []

    def resolve(self, path):
        """Where a /sys/class/* link points (sysfs links are one level, relative, to real directories)."""
        try:
            target = os.readlink(path)
        except OSError:
            return path
        return os.path.normpath(os.path.join(os.path.dirname(path), target))

    def link_name(self, path):
        """Basename of a symlink's target (driver links dangle in captures by design)."""
        try:
            return os.path.basename(os.readlink(path))
        except (IOError, OSError):
            return None

    # ---- entry point ------------------------------------------------------------------
    def read_all(self, parts=("pci", "numa", "net", "rdma", "bond", "vlan")):
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
        if "net" in parts or "bond" in parts or "vlan" in parts:
            self.read_netdevs()
        if "rdma" in parts:
            self.read_rdma()
            self.read_kernel_modules()
        if "bond" in parts:
            self.read_bonds()
        if "vlan" in parts:
            self.read_vlans()
        return self.topo

    # ---- NUMA ---------------------------------------------------------------------------
    def read_numa(self):
        base = self.path("sys/devices/system/node")
        ids = []
        for entry in self.listdir(base):
            if entry.startswith("node") and entry[4:].isdecimal():
                ids.append(int(entry[4:]))
        ids.sort()
        for node_id in ids:
            node_dir = os.path.join(base, "node%d" % node_id)
            node = NumaNode(node_id=node_id)
            cpulist = self.read(os.path.join(node_dir, "cpulist"))
            cpus = parse_cpulist(cpulist)
            if cpus is None:
                cpus = parse_cpumask(self.read(os.path.join(node_dir, "cpumap")))
            if cpus is None and cpulist is not None:
                self.topo.warn("%s/cpulist: %r is not a CPU list" % (node_dir, cpulist[:40]))
            node.cpus = format_cpulist(cpus) if cpus is not None else None
            node.memory_bytes = self._node_memory(os.path.join(node_dir, "meminfo"))
            distance = self.read(os.path.join(node_dir, "distance"))
            if distance:
                values = distance.split()
                if len(values) == len(ids) and all(v.isdecimal() for v in values):
                    node.distances = dict(zip(ids, (int(v) for v in values)))
                else:
                    self.topo.warn("%s/distance: %r does not match the %d nodes" % (node_dir, distance[:60], len(ids)))
            self.topo.numa[node_id] = node

    def _node_memory(self, path):
        text = self.read(path)
        if not text:
            return None
        for line in text.splitlines():
            fields = line.split()
            # "Node 0 MemTotal:       16747124 kB"
            if len(fields) >= 4 and fields[2] == "MemTotal:" and fields[3].isdecimal():
                return int(fields[3]) * 1024
        self.topo.warn("%s: no MemTotal line" % path)
        return None

    # ---- PCI ----------------------------------------------------------------------------
    def read_pci(self):
        devices_root = self.path("sys/devices")
        found = {}
        # The device tree under /sys/devices/pciDDDD:BB holds the hierarchy.
        for top in self.listdir(devices_root):
            if _HOST_BRIDGE_RE.match(top):
                self._walk_pci(os.path.join(devices_root, top), top.lower(), None, found)
        # Devices only reachable through /sys/bus/pci/devices (captures without the tree).
        bus = self.path("sys/bus/pci/devices")
        flat = False
        for entry in self.listdir(bus):
            if not PCI_ADDRESS_RE.match(entry) or entry.lower() in found:
                continue
            target = os.path.join(bus, entry)
            if os.path.isdir(target):
                flat = True
                found[entry.lower()] = (os.path.realpath(target), "unknown:" + entry.lower(), None)
        if flat:
            self.topo.warn("%s: PCI hierarchy not captured; parent chains and path types are approximate" % bus)
        for address, (directory, host_bridge, parent) in sorted(found.items()):
            self._pci_dirs[address] = directory
            self.topo.pci[address] = self._read_pci_device(address, directory, host_bridge, parent)

    def _walk_pci(self, directory, host_bridge, parent, found):
        names, files, children = set(), set(), []
        try:
            iterator = os.scandir(directory)
        except OSError:
            iterator = None
        if iterator is not None:
            with iterator:
                for entry in iterator:
                    name = entry.name
                    names.add(name)
                    # Types come from the directory entries: no stat per file.
                    if name in _PCI_FILES:
                        if entry.is_file(follow_symlinks=False):
                            files.add(name)
                    elif ":" in name and PCI_ADDRESS_RE.match(name) and entry.is_dir(follow_symlinks=False):
                        children.append((name, entry.path))
        self._listings[directory] = (names, files)
        for name, path in sorted(children):
            address = name.lower()
            found[address] = (path, host_bridge, parent)
            self._walk_pci(path, host_bridge, address, found)

    def _read_pci_device(self, address, directory, host_bridge, parent):
        listing = self._listings.get(directory)
        if listing is None:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                entries = []
            listing = (set(e.name for e in entries),
                       set(e.name for e in entries if e.name in _PCI_FILES and e.is_file(follow_symlinks=False)))
        names, files = listing
        prefix = directory + "/"

        def text(name):
            # The listing is known: skip files this kernel or capture lacks, and anything not a
            # regular file (a FIFO would block a read).
            if name in files:
                return self.read(prefix + name, regular=True)
            if name in names:
                self.topo.warn("%s%s: not a regular file, ignored" % (prefix, name))
            return None

        def hex_value(name):
            value = text(name)
            try:
                return int(value, 16) if value else None
            except ValueError:
                self.topo.warn("%s%s: %r is not a number, ignored" % (prefix, name, value[:40]))
                return None

        dev = PciDevice(address=address, host_bridge=host_bridge, parent=parent)
        # One read of uevent gives class, ids and driver; the single-value files are the fallback.
        event = parse_uevent(text("uevent"))
        dev.class_code = _hex_field(event.get("PCI_CLASS"))
        dev.vendor_id, dev.device_id = _hex_pair(event.get("PCI_ID"))
        dev.subsystem_vendor_id, dev.subsystem_device_id = _hex_pair(event.get("PCI_SUBSYS_ID"))
        if dev.class_code is None or dev.vendor_id is None:
            dev.class_code = hex_value("class")
            dev.vendor_id = hex_value("vendor")
            dev.device_id = hex_value("device")
            dev.subsystem_vendor_id = hex_value("subsystem_vendor")
            dev.subsystem_device_id = hex_value("subsystem_device")
        dev.driver = event.get("DRIVER") or (self.link_name(prefix + "driver") if "driver" in names else None)
        numa = text("numa_node")
        if numa is not None:
            try:
                value = int(numa)
                dev.numa_node = value if value >= 0 else None
            except ValueError:
                self.topo.warn("%snuma_node: %r is not a number, ignored" % (prefix, numa[:40]))
        cpus = parse_cpulist(text("local_cpulist"))
        if cpus is None:
            cpus = parse_cpumask(text("local_cpus"))
        dev.local_cpus = format_cpulist(cpus) if cpus else None
        if numa is None and cpus and "numa_node" not in names:
            # No numa_node file at all (partial captures): the node whose CPUs hold the
            # device's local CPUs, as hwloc does. A numa_node of -1 stays unknown.
            dev.numa_node = self._node_of_cpus(set(cpus))
            if dev.numa_node is not None:
                self.topo.warn("%snuma_node missing; NUMA node %d inferred from local_cpus"
                               % (prefix, dev.numa_node))
        for which in ("current", "max"):
            speed_text = text(which + "_link_speed")
            speed = parse_link_speed(speed_text)
            if speed_text is not None and speed is None and not speed_text.lower().startswith("unknown"):
                self.topo.warn("%s%s_link_speed: %r not understood" % (prefix, which, speed_text[:40]))
            setattr(dev, which + "_gts", speed)
            setattr(dev, which + "_width", parse_link_width(text(which + "_link_width")))
        dev.has_rdma = "infiniband" in names
        if dev.class_code is not None and dev.class_code >> 8 == 0x0604 and "config" in files:
            dev.acs_readable, dev.acs_control = self._acs(prefix + "config")
        return dev

    def _acs(self, path):
        """(readable, ACS Control) from a bridge's config space; extended space needs root on a live system."""
        try:
            fd = os.open(path, _OPEN_FLAGS)
            try:
                data = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            return False, None
        return parse_acs_control(data)

    def _node_of_cpus(self, cpus):
        matches = [node.node_id for node in self.topo.numa.values()
                   if node.cpus and cpus <= set(parse_cpulist(node.cpus) or ())]
        return matches[0] if len(matches) == 1 else None

    # ---- network interfaces -----------------------------------------------------------
    def read_netdevs(self):
        class_net = self.path("sys/class/net")
        for name in self.listdir(class_net):
            entry = os.path.join(class_net, name)
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
        loopback = [n.name for n in self.topo.netdevs.values() if n.kind == "loopback"] or ["lo"]
        for dev in self.topo.netdevs.values():
            dev.ipv4, dev.ipv6 = [], list((ipv6 or {}).get(dev.name, []))
        for address in local:
            iface, prefix = _route_for(address, routes)
            if iface is None and address.startswith("127."):
                iface, prefix = loopback[0], 8
            if iface in self.topo.netdevs:
                self.topo.netdevs[iface].ipv4.append("%s/%d" % (address, prefix))
            elif iface is None:
                self.topo.warn("/proc/net/fib_trie: local address %s matches no connected route" % address)

    def _read_netdev(self, name, entry):
        join = os.path.join
        dev = NetDev(name=name)
        target = self.resolve(entry)
        exists = os.path.isdir(target)
        parts = target.split(os.sep)
        pci_index = _pci_component(parts[:-2]) if len(parts) >= 3 and parts[-2] == "net" else None
        if pci_index is not None:
            # The PCI function is the netdev's parent, or further up (virtio: .../0000:00:04.0/virtio1/net/X).
            dev.pci_address = parts[pci_index].lower()
            dev.driver = self.link_name(join(os.path.dirname(os.path.dirname(target)), "driver"))
        virtual = "virtual" in parts
        if exists:
            dev.mtu = self.read_int(join(target, "mtu"))
            dev.operstate = self.read(join(target, "operstate"))
            # carrier, speed and duplex fail with EINVAL while the interface is down.
            carrier = self.read(join(target, "carrier"), quiet=True)
            dev.carrier = {"1": True, "0": False}.get(carrier)
            speed = self.read_int(join(target, "speed"), quiet=True)
            dev.speed_mbps = speed if speed is not None and speed > 0 else None
            duplex = self.read(join(target, "duplex"), quiet=True)
            dev.duplex = duplex if duplex in ("full", "half") else None
            mac = self.read(join(target, "address"))
            dev.mac = mac or None
            dev.dev_port = self.read_int(join(target, "dev_port"), quiet=True)
            link_type = self.read_int(join(target, "type"))
            uevent = self.read(join(target, "uevent")) or ""
            devtype = ""
            for line in uevent.splitlines():
                if line.startswith("DEVTYPE="):
                    devtype = line.split("=", 1)[1]
            if os.path.isdir(join(target, "bonding")) or devtype == "bond":
                dev.kind = "bond"
            elif os.path.isdir(join(target, "bridge")) or devtype == "bridge":
                dev.kind = "bridge"
            elif devtype == "vlan":
                dev.kind = "vlan"
            elif link_type == ARPHRD_LOOPBACK:
                dev.kind = "loopback"
            elif link_type == ARPHRD_INFINIBAND:
                dev.kind = "ipoib"
            elif virtual or dev.pci_address is None:
                dev.kind = "virtual"
        else:
            # A link into a part of sysfs that was not captured: all we know is the name.
            dev.kind = "loopback" if name == "lo" else "virtual"
            if virtual or dev.pci_address is None:
                self.topo.warn("%s: interface details not available (link target not captured)" % entry)
        return dev

    # ---- RDMA -----------------------------------------------------------------------------
    def read_rdma(self):
        class_ib = self.path("sys/class/infiniband")
        for name in self.listdir(class_ib):
            target = self.resolve(os.path.join(class_ib, name))
            rdma = RdmaDevice(name=name)
            parts = target.split(os.sep)
            pci_index = _pci_component(parts[:-2]) if len(parts) >= 3 and parts[-2] == "infiniband" else None
            if pci_index is not None:
                rdma.pci_address = parts[pci_index].lower()
                for netdev in self.topo.netdevs.values():
                    if netdev.pci_address == rdma.pci_address:
                        rdma.netdevs.append(netdev.name)
            ports_dir = os.path.join(target, "ports")
            for port_name in self.listdir(ports_dir):
                if port_name.isdecimal():
                    rdma.ports.append(self._read_rdma_port(rdma, int(port_name), os.path.join(ports_dir, port_name)))
            if not os.path.isdir(target):
                self.topo.warn("%s: RDMA device details not available (link target not captured)"
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
            try:
                port.rate_gbps = float(head)
            except ValueError:
                self.topo.warn("%s/rate: %r not understood" % (directory, rate[:40]))
        port.link_layer = self.read(join(directory, "link_layer"))
        # The GID table matters for RoCE (which index carries the IPv4 address); an InfiniBand
        # port's table is its subnet prefix and GUID, and can run to hundreds of files.
        gid_names = self.listdir(join(directory, "gids")) if port.link_layer != "InfiniBand" else []
        for index_name in gid_names:
            if not index_name.isdecimal():
                continue
            gid = self.read(join(directory, "gids", index_name), quiet=True)
            # Unused table entries are all zeros (RoCE) or the subnet prefix with a zero
            # interface id (InfiniBand).
            if not gid or gid.split(":")[4:] == ["0000"] * 4:
                continue
            entry = GidEntry(index=int(index_name), gid=gid)
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
        if port.link_layer == "Ethernet" and port.netdev in self.topo.netdevs:
            port.active_mtu = roce_active_mtu(self.topo.netdevs[port.netdev].mtu)
        return port

    def read_kernel_modules(self):
        module_dir = self.path("sys/module")
        if not os.path.isdir(module_dir):
            return  # a capture without /sys/module: unknown, not "not loaded"
        self.topo.kernel_modules = dict(
            (name, os.path.isdir(os.path.join(module_dir, name))) for name in RELEVANT_MODULES)

    # ---- bonds and VLANs ----------------------------------------------------------------
    def read_bonds(self):
        names = set(n for n, d in self.topo.netdevs.items() if d.kind == "bond")
        names.update(self.listdir(self.path("proc/net/bonding")))
        for name in sorted(names):
            text = self.read(self.path("proc/net/bonding", name))
            bond = parse_proc_bonding(name, text) if text else Bond(name=name)
            self._bond_sysfs(bond)
            self.topo.bonds[name] = bond
            if name in self.topo.netdevs:
                self.topo.netdevs[name].kind = "bond"

    def _bond_sysfs(self, bond):
        base = self.path("sys/class/net", bond.name, "bonding")
        if not os.path.isdir(base):
            return
        bond.mode = bond.mode or _first_word(self.read(os.path.join(base, "mode")))
        bond.xmit_hash_policy = bond.xmit_hash_policy or _first_word(self.read(os.path.join(base, "xmit_hash_policy")))
        bond.lacp_rate = bond.lacp_rate or _first_word(self.read(os.path.join(base, "lacp_rate")))
        if bond.miimon is None:
            bond.miimon = self.read_int(os.path.join(base, "miimon"))
        if not bond.members:
            for member in (self.read(os.path.join(base, "slaves")) or "").split():
                bond.members.append(BondMember(name=member))

    def read_vlans(self):
        text = self.read(self.path("proc/net/vlan/config"), quiet=True)
        if text:
            for line in text.splitlines():
                fields = [f.strip() for f in line.split("|")]
                if len(fields) == 3 and fields[1].isdecimal():
                    self.topo.vlans[fields[0]] = Vlan(name=fields[0], vlan_id=int(fields[1]), parent=fields[2])
        for name, dev in self.topo.netdevs.items():
            if name in self.topo.vlans:
                dev.kind = "vlan"
                continue
            parent, dot, vid = name.rpartition(".")
            if dev.kind in ("virtual", "vlan") and dot and vid.isdecimal() and parent in self.topo.netdevs:
                self.topo.vlans[name] = Vlan(name=name, vlan_id=int(vid), parent=parent, source="name")
                dev.kind = "vlan"
                self.topo.warn("%s: VLAN id and parent inferred from the name (no /proc/net/vlan/config entry)" % name)


def _pci_component(parts):
    """Index of the last PCI address among path components, or None (virtual devices)."""
    for index in range(len(parts) - 1, -1, -1):
        if PCI_ADDRESS_RE.match(parts[index]):
            return index
        if parts[index] == "devices":
            break
    return None


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


def roce_active_mtu(netdev_mtu):
    """IB MTU a RoCE port runs at for a netdev MTU (the kernel's iboe_get_mtu)."""
    if netdev_mtu is None:
        return None
    payload = netdev_mtu - ROCE_HEADER_BYTES
    for mtu in IB_MTUS:
        if payload >= mtu:
            return mtu
    return None


def parse_proc_bonding(name, text):
    """Parse /proc/net/bonding/<bond> (the bonding driver's status page)."""
    bond = Bond(name=name)
    member = None
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Slave Interface":
            member = BondMember(name=value)
            bond.members.append(member)
            section = "member"
            continue
        if line.startswith("details partner lacp pdu"):
            section = "partner"
            continue
        if line.startswith("details actor lacp pdu"):
            section = "actor"
            continue
        if line.startswith("Active Aggregator Info"):
            section = "active"
            continue
        if not sep:
            continue
        if member is None:
            if key == "Bonding Mode":
                bond.mode = BOND_MODE_NAMES.get(value.lower(), value)
            elif key == "Transmit Hash Policy":
                bond.xmit_hash_policy = value.split()[0] if value else None
            elif key == "MII Status":
                bond.mii_status = value
            elif key == "MII Polling Interval (ms)":
                bond.miimon = _int_or_none(value)
            elif key == "LACP rate":
                bond.lacp_rate = value
            elif section == "active" and key == "Aggregator ID":
                bond.active_aggregator_id = _int_or_none(value)
            elif section == "active" and key == "Partner Mac Address":
                bond.partner_mac = value.lower()
            continue
        if section == "partner":
            if key == "system mac address":
                member.partner_mac = value.lower()
            continue
        if section == "actor":
            continue
        if key == "MII Status":
            member.mii_status = value
        elif key == "Speed":
            speed = _int_or_none(value.split()[0]) if value else None
            member.speed_mbps = speed if speed and speed > 0 else None
        elif key == "Duplex":
            member.duplex = value if value in ("full", "half") else None
        elif key == "Aggregator ID":
            member.aggregator_id = _int_or_none(value)
        elif key == "Link Failure Count":
            member.link_failure_count = _int_or_none(value)
    return bond


def _int_or_none(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def parse_if_inet6(text):
    """/proc/net/if_inet6 -> {interface: ["addr/prefix", ...]}; None when there is no file."""
    if text is None:
        return None
    result = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 6 or len(fields[0]) != 32:
            continue
        try:
            address = ipaddress.IPv6Address(int(fields[0], 16))
            prefix = int(fields[2], 16)
        except ValueError:
            continue
        result.setdefault(fields[5], []).append("%s/%d" % (address, prefix))
    return result


def parse_fib_trie_local(text):
    """The local IPv4 addresses (leaves marked "/32 host LOCAL") of /proc/net/fib_trie, in order."""
    addresses, last = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|-- "):
            last = stripped[4:].strip()
        elif stripped.startswith("/32 host LOCAL") and last and last not in addresses:
            addresses.append(last)
    return addresses


def parse_proc_route(text):
    """/proc/net/route -> [(interface, network int, mask int)] for connected (non-gateway) routes."""
    routes = []
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        try:
            destination, gateway, mask = (int(fields[i], 16) for i in (1, 2, 7))
        except ValueError:
            continue
        if gateway == 0 and mask != 0:
            # The kernel prints these little-endian words in host order on x86: swap to network order.
            routes.append((fields[0], _swap32(destination), _swap32(mask)))
    return routes


def _swap32(value):
    """/proc/net/route prints network-order words as host-order integers."""
    return int.from_bytes(value.to_bytes(4, sys.byteorder), "big")


def _route_for(address, routes):
    parts = address.split(".")
    if len(parts) != 4 or not all(p.isdecimal() and int(p) < 256 for p in parts):
        return None, None
    value = int.from_bytes(bytes(int(p) for p in parts), "big")
    best = None
    for iface, network, mask in routes:
        if value & mask == network and (best is None or mask > best[1]):
            best = (iface, mask)
    if best is None:
        return None, None
    return best[0], bin(best[1]).count("1")


PCI_EXT_CAP_ACS = 0x000D


def parse_acs_control(config):
    """Walk the PCIe extended capabilities (from offset 0x100) for ACS; return (readable, control).

    ``readable`` is False when the config space stops at 256 bytes (not root, or a capture of the
    standard header only); ``control`` is None when the device has no ACS capability.
    """
    if len(config) < 0x104:
        return False, None
    offset, seen = 0x100, set()
    while offset and offset not in seen and offset + 8 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            break
        if header & 0xFFFF == PCI_EXT_CAP_ACS:
            return True, int.from_bytes(config[offset + 6:offset + 8], "little")
        offset = (header >> 20) & 0xFFC
    return True, None


def parse_uevent(text):
    """``KEY=value`` lines of a sysfs uevent file -> dict (empty for None or junk)."""
    event = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key:
            event[key.strip()] = value.strip()
    return event


def _hex_field(text):
    if not text:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def _hex_pair(text):
    """``"15B3:1003"`` -> (0x15b3, 0x1003); anything else -> (None, None)."""
    first, sep, second = (text or "").partition(":")
    if not sep:
        return None, None
    a, b = _hex_field(first), _hex_field(second)
    return (a, b) if a is not None and b is not None else (None, None)


def _first_word(text):
    """``"802.3ad 4"`` -> ``"802.3ad"`` (sysfs bonding files append the numeric value)."""
    return text.split()[0] if text else None
