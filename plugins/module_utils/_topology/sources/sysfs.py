# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The sysfs reader: PCI devices and links, NUMA nodes, network interfaces, RDMA ports, bonds and VLANs of a live node or a captured tree. Files only, each bounded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import stat
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import (
    MAX_CPUS, format_cpulist, parse_cpulist, parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    Bond, BondMember, GidEntry, NetDev, NumaNode, RELEVANT_MODULES, PciDevice, RdmaDevice, RdmaPort, Topology,
    Vlan,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    MAX_GTS, VALID_WIDTHS, parse_link_speed, parse_link_width,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import PCI_ADDRESS_RE
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import RouteIndex, address_key, parse_fib_trie_local, parse_if_inet6, parse_proc_bonding, parse_proc_route
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    HEX_RE, LIMITS, RATE_RE, UNKNOWN_SPEEDS, first_word, hex_field, hex_pair, in_limits, parse_decimal, short_text,
)

_HOST_BRIDGE_RE = re.compile(r"^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$")


SYSFS_MAX_BYTES = 65536


PROCFS_MAX_BYTES = 8 << 20


MAX_WARNINGS = 500


# The attribute files read per PCI function.
_PCI_FILES = frozenset((
    "config", "uevent", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "numa_node",
    "local_cpulist", "local_cpus", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
))


_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NOCTTY", 0))


# Errors that mean "this kernel or driver does not know" (a down link's speed, an unused GID entry), not
# "something is wrong here": None without a warning. Every other error is named in a warning.
_QUIET_ERRNOS = frozenset((errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.ENODEV, errno.EOPNOTSUPP,
                           getattr(errno, "ENOTSUP", errno.EOPNOTSUPP), errno.ENXIO, errno.EAGAIN))


_FILE_TYPES = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


ARPHRD_INFINIBAND = 32


ARPHRD_LOOPBACK = 772


# Bytes of RoCE v2 headers the kernel subtracts from the netdev MTU before picking
# the IB MTU (GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4).
ROCE_HEADER_BYTES = 96


IB_MTUS = (4096, 2048, 1024, 512, 256)


def _file_type(mode):
    for check, name in _FILE_TYPES:
        if check(mode):
            return name
    return "unknown type"


class SysfsReader:
    """Reads one machine's topology below ``root`` ("/" for the live machine)."""

    def __init__(self, root="/"):
        self.root = root
        self.topo = Topology(source="sysfs")
        self._pci_dirs = {}
        self._listings = {}
        self._proc = os.path.join(root, "proc") + os.sep
        self._suppressed = 0

    # ---- low-level I/O: the only place files are touched ------------------------------
    def path(self, *parts):
        return os.path.join(self.root, *[p.lstrip("/") for p in parts])

    def warn(self, message):
        """A note in the topology's warnings; past MAX_WARNINGS they are only counted."""
        if len(self.topo.warnings) < MAX_WARNINGS:
            self.topo.warn(message)
        else:
            self._suppressed += 1

    def _io_error(self, path, exc, quiet=False):
        # Missing files are normal (old kernels, captures) and EINVAL is how a down link says "unknown";
        # permission denied, EIO and the like are worth a note, quiet or not.
        if exc.errno not in _QUIET_ERRNOS and exc.errno != errno.EISDIR:
            self.warn("%s: unreadable (%s)" % (path, exc.strerror or exc))

    def limit_for(self, path):
        return PROCFS_MAX_BYTES if path.startswith(self._proc) else SYSFS_MAX_BYTES

    def read_bytes(self, path, quiet=False, regular=False, limit=None):
        """Bytes of one file, at most ``limit``; None when missing, unreadable, too large or not a regular file.

        ``regular`` says the caller already knows the path is a regular file (from its directory
        listing), which saves a stat. Anything else is refused before it is opened: opening a FIFO
        blocks and opening a device node can have effects.
        """
        limit = self.limit_for(path) if limit is None else limit
        if not regular:
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                self._io_error(path, exc, quiet)
                return None
            if not stat.S_ISREG(mode):
                if not quiet or not stat.S_ISDIR(mode):
                    self.warn("%s: not a regular file (%s), ignored" % (path, _file_type(mode)))
                return None
        try:
            # O_NONBLOCK as well: should the path change between the stat and the open, a FIFO still
            # does not block the open, and the fstat below refuses it.
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as exc:
            self._io_error(path, exc, quiet)
            return None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                self.warn("%s: not a regular file (%s), ignored" % (path, _file_type(mode)))
                return None
            # A sysfs attribute (and a file of a capture) comes whole in one read: a short read is the end.
            # procfs files come a record at a time: read them to the end (or past the bound).
            whole = limit != PROCFS_MAX_BYTES
            chunks, size = [], 0
            while size <= limit:
                asked = limit + 1 - size
                chunk = os.read(fd, asked)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if whole and len(chunk) < asked:
                    break
        except OSError as exc:
            # Reading some sysfs attributes of a down link fails with EINVAL: that means unknown.
            self._io_error(path, exc, quiet)
            return None
        finally:
            os.close(fd)
        if size > limit:
            self.warn("%s: larger than %d bytes (the bound for one %s file), ignored"
                      % (path, limit, "procfs" if limit == PROCFS_MAX_BYTES else "sysfs"))
            return None
        return b"".join(chunks)

    def read(self, path, quiet=False, regular=False):
        """Text of a sysfs file, stripped; None when missing, unreadable or not text.

        Trailing NULs are accepted (some ARM firmware and drivers end an attribute with "\\n\\0").
        """
        data = self.read_bytes(path, quiet=quiet, regular=regular)
        if data is None:
            return None
        data = data.rstrip(b"\0\t\n\r ")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self.warn("%s: not text, ignored" % path)
            return None
        if "\x00" in text:
            self.warn("%s: not text, ignored" % path)
            return None
        return text.strip()

    def read_int(self, path, base=10, quiet=False, regular=False, what=None, unknown=()):
        """An integer file; None when missing, not a number, or outside ``LIMITS[what]``.

        Values in ``unknown`` (the kernel's spelling of "unknown", such as -1) give None quietly.
        """
        text = self.read(path, quiet=quiet, regular=regular)
        if text is None or text == "":
            return None
        value = parse_decimal(text) if base == 10 else (int(text, 16) if HEX_RE.match(text) else None)
        if value is None:
            self.warn("%s: %r is not a number, ignored" % (path, text[:40]))
            return None
        if value in unknown:
            return None
        if what is not None and not in_limits(value, what):
            self.warn("%s: %s is outside %d..%d, ignored" % ((path, short_text(text)) + LIMITS[what]))
            return None
        return value

    def listdir(self, path):
        try:
            return sorted(os.listdir(path))
        except (IOError, OSError) as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                self.warn("%s: directory unreadable (%s)" % (path, exc.strerror or exc))
            return []

    def resolve(self, path):
        """Where a /sys/class/* link points (sysfs links are one level, relative, to real directories).

        An absolute link in a capture is taken below the root, never on the machine running the reader.
        """
        try:
            target = os.readlink(path)
        except OSError:
            return path
        if os.path.isabs(target) and self.root not in ("/", ""):
            return os.path.normpath(self.path(target))
        return os.path.normpath(os.path.join(os.path.dirname(path), target))

    def link_name(self, path):
        """Basename of a symlink's target (driver links dangle in captures by design)."""
        try:
            return os.path.basename(os.readlink(path))
        except (IOError, OSError):
            return None

    # ---- entry point ------------------------------------------------------------------
    def read_all(self, parts=("pci", "numa", "net", "rdma", "bond", "vlan")):
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            try:
                kind = _file_type(os.stat(self.root).st_mode)
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
        if "net" in parts or "bond" in parts or "vlan" in parts:
            self.read_netdevs()
        if "rdma" in parts:
            self.read_rdma()
            self.read_kernel_modules()
        if "bond" in parts:
            self.read_bonds()
        if "vlan" in parts:
            self.read_vlans()
        if self._suppressed:
            self.topo.warn("%d more warnings not listed (at most %d are kept)" % (self._suppressed, MAX_WARNINGS))
        return self.topo

    # ---- NUMA ---------------------------------------------------------------------------
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

    # ---- PCI ----------------------------------------------------------------------------
    def read_pci(self):
        devices_root = self.path("sys/devices")
        copies = {}
        # The device tree under /sys/devices/pciDDDD:BB holds the hierarchy.
        for top in self.listdir(devices_root):
            if _HOST_BRIDGE_RE.match(top):
                self._walk_pci(os.path.join(devices_root, top), top.lower(), copies)
        bus = self.path("sys/bus/pci/devices")
        bus_entries = dict((entry.lower(), entry) for entry in self.listdir(bus) if PCI_ADDRESS_RE.match(entry))
        found = {}
        for address, candidates in copies.items():
            found[address] = self._pick_copy(address, candidates, bus, bus_entries.get(address))
        # Devices only reachable through /sys/bus/pci/devices (captures without the tree).
        flat = False
        for address, entry in sorted(bus_entries.items()):
            if address in found:
                continue
            target = os.path.join(bus, entry)
            if os.path.isdir(target):
                flat = True
                found[address] = (self.resolve(target), "unknown:" + address, None)
        if flat:
            self.warn("%s: PCI hierarchy not captured; parent chains and path types are approximate" % bus)
        for address, (directory, host_bridge, parent) in sorted(found.items()):
            self._pci_dirs[address] = directory
            self.topo.pci[address] = self._read_pci_device(address, directory, host_bridge, parent)

    def _pick_copy(self, address, candidates, bus, entry):
        """One device directory per address: the one /sys/bus/pci/devices/<address> links to.

        A device can show up twice under /sys/devices (a capture merged from two trees, a firmware or
        kernel bug); the bus link names the one the kernel uses.
        """
        if len(candidates) == 1:
            return candidates[0]
        candidates = sorted(candidates)
        target = os.path.normpath(self.resolve(os.path.join(bus, entry))) if entry else None
        chosen = next((c for c in candidates if os.path.normpath(c[0]) == target), None)
        where = ", ".join(c[0] for c in candidates)
        if chosen is None:
            chosen = candidates[0]
            self.warn("%s: found %d times under /sys/devices (%s) and %s does not link to one of them; read %s"
                      % (address, len(candidates), where, os.path.join(bus, entry or address), chosen[0]))
        else:
            self.warn("%s: found %d times under /sys/devices (%s); read %s, the one %s links to"
                      % (address, len(candidates), where, chosen[0], os.path.join(bus, entry)))
        return chosen

    def _walk_pci(self, top, host_bridge, copies):
        # Iterative: a hostile capture nested thousands deep must not exhaust the stack.
        stack = [(top, None)]
        while stack:
            directory, parent = stack.pop()
            names, files, children = set(), set(), []
            try:
                iterator = os.scandir(directory)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    self.warn("%s: directory unreadable (%s)" % (directory, exc.strerror or exc))
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
            for name, path in sorted(children, reverse=True):
                address = name.lower()
                copies.setdefault(address, []).append((path, host_bridge, parent))
                stack.append((path, address))

    def _read_pci_device(self, address, directory, host_bridge, parent):
        listing = self._listings.get(directory)
        if listing is None:
            try:
                entries = list(os.scandir(directory))
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    self.warn("%s: directory unreadable (%s)" % (directory, exc.strerror or exc))
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
                try:
                    kind = _file_type(os.lstat(prefix + name).st_mode)
                except OSError:
                    kind = "gone"
                if kind != "a directory" and os.path.islink(prefix + name):
                    kind = "a symbolic link"
                self.warn("%s%s: not a regular file (%s), ignored" % (prefix, name, kind))
            return None

        def hex_value(name, what):
            value = text(name)
            if not value:
                return None
            number = int(value, 16) if HEX_RE.match(value) else None
            if number is None:
                self.warn("%s%s: %r is not a number, ignored" % (prefix, name, value[:40]))
            elif not in_limits(number, what):
                self.warn("%s%s: %s is outside 0x0..0x%x, ignored" % (prefix, name, short_text(value), LIMITS[what][1]))
                number = None
            return number

        dev = PciDevice(address=address, host_bridge=host_bridge, parent=parent)
        # One read of uevent gives class, ids and driver; the single-value files are the fallback.
        event = parse_uevent(text("uevent"))
        dev.class_code = hex_field(event.get("PCI_CLASS"), LIMITS["class"][1])
        dev.vendor_id, dev.device_id = hex_pair(event.get("PCI_ID"))
        dev.subsystem_vendor_id, dev.subsystem_device_id = hex_pair(event.get("PCI_SUBSYS_ID"))
        if dev.class_code is None or dev.vendor_id is None:
            dev.class_code = hex_value("class", "class")
            dev.vendor_id = hex_value("vendor", "pci_id")
            dev.device_id = hex_value("device", "pci_id")
            dev.subsystem_vendor_id = hex_value("subsystem_vendor", "pci_id")
            dev.subsystem_device_id = hex_value("subsystem_device", "pci_id")
        dev.driver = event.get("DRIVER") or (self.link_name(prefix + "driver") if "driver" in names else None)
        numa = text("numa_node")
        if numa is not None:
            value = parse_decimal(numa)
            if value is None:
                self.warn("%snuma_node: %r is not a number, ignored" % (prefix, numa[:40]))
            elif in_limits(value, "numa_node"):
                dev.numa_node = value
            elif value != -1:  # -1: the firmware gave no locality, documented as unknown
                self.warn("%snuma_node: %s is outside -1..%d, ignored"
                          % (prefix, short_text(numa), LIMITS["numa_node"][1]))
        cpulist = text("local_cpulist")
        cpus = parse_cpulist(cpulist)
        if cpus is None:
            mask = text("local_cpus")
            cpus = parse_cpumask(mask)
            if cpus is None and (cpulist or mask):
                self.warn("%s%s: %r is not a CPU %s (CPU numbers below %d)"
                          % (prefix, "local_cpulist" if cpulist else "local_cpus", (cpulist or mask)[:40],
                             "list" if cpulist else "mask", MAX_CPUS))
        dev.local_cpus = format_cpulist(cpus) if cpus else None
        if numa is None and cpus and "numa_node" not in names:
            # No numa_node file at all (partial captures): the node whose CPUs hold the
            # device's local CPUs, as hwloc does. A numa_node of -1 stays unknown.
            dev.numa_node = self._node_of_cpus(set(cpus))
            if dev.numa_node is not None:
                self.warn("%snuma_node missing; NUMA node %d inferred from local_cpus"
                          % (prefix, dev.numa_node))
        for which in ("current", "max"):
            speed_text = text(which + "_link_speed")
            speed = parse_link_speed(speed_text)
            if speed_text is not None and speed is None and not speed_text.lower().startswith("unknown"):
                self.warn("%s%s_link_speed: %r not understood (a rate of at most %d GT/s)"
                          % (prefix, which, speed_text[:40], MAX_GTS))
            setattr(dev, which + "_gts", speed)
            width_text = text(which + "_link_width")
            width = parse_link_width(width_text)
            # 0 and 255 are how a down or untrained link reads: unknown, not odd.
            if width is None and width_text and width_text.strip().lstrip("x") not in ("0", "255"):
                self.warn("%s%s_link_width: %s is not a PCIe link width (%s)"
                          % (prefix, which, short_text(width_text), ", ".join(str(w) for w in VALID_WIDTHS)))
            setattr(dev, which + "_width", width)
        dev.has_rdma = "infiniband" in names
        if dev.class_code is not None and dev.class_code >> 8 == 0x0604 and "config" in files:
            dev.acs_readable, dev.acs_control = self._acs(prefix + "config")
        return dev

    def _acs(self, path):
        """(readable, ACS Control) from a bridge's config space; extended space needs root on a live system."""
        data = self.read_bytes(path, regular=True, limit=4096)
        if data is None:
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
        loopback = sorted(n.name for n in self.topo.netdevs.values() if n.kind == "loopback") or ["lo"]
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
        pci_index = _pci_component(parts[:-2]) if len(parts) >= 3 and parts[-2] == "net" else None
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
                self.warn("%s: interface details not available (link target not captured)" % entry)
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
                rdma.netdevs = sorted(netdev.name for netdev in self.topo.netdevs.values()
                                      if netdev.pci_address == rdma.pci_address)
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
        if port.link_layer == "Ethernet" and port.netdev in self.topo.netdevs:
            port.active_mtu = roce_active_mtu(self.topo.netdevs[port.netdev].mtu)
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

    # ---- bonds and VLANs ----------------------------------------------------------------
    def read_bonds(self):
        names = set(n for n, d in self.topo.netdevs.items() if d.kind == "bond")
        names.update(self.listdir(self.path("proc/net/bonding")))
        for name in sorted(names):
            path = self.path("proc/net/bonding", name)
            text = self.read(path)
            bond = parse_proc_bonding(name, text, warn=lambda m, p=path: self.warn("%s: %s" % (p, m))) \
                if text else Bond(name=name)
            self._bond_sysfs(bond)
            # The kernel lists members in the order they were enslaved, which means nothing: sort.
            bond.members.sort(key=lambda m: m.name)
            self.topo.bonds[name] = bond
            if name in self.topo.netdevs:
                self.topo.netdevs[name].kind = "bond"

    def _bond_sysfs(self, bond):
        base = self.path("sys/class/net", bond.name, "bonding")
        if not os.path.isdir(base):
            return
        bond.mode = bond.mode or first_word(self.read(os.path.join(base, "mode")))
        bond.xmit_hash_policy = bond.xmit_hash_policy or first_word(self.read(os.path.join(base, "xmit_hash_policy")))
        bond.lacp_rate = bond.lacp_rate or first_word(self.read(os.path.join(base, "lacp_rate")))
        if bond.miimon is None:
            bond.miimon = self.read_int(os.path.join(base, "miimon"), what="miimon")
        if not bond.members:
            for member in (self.read(os.path.join(base, "slaves")) or "").split():
                bond.members.append(BondMember(name=member))

    def read_vlans(self):
        path = self.path("proc/net/vlan/config")
        text = self.read(path, quiet=True)
        if text:
            for line in text.splitlines():
                fields = [f.strip() for f in line.split("|")]
                vid = parse_decimal(fields[1]) if len(fields) == 3 and fields[1][:1] != "-" else None
                if vid is None or not fields[0]:
                    continue
                if in_limits(vid, "vlan_id"):
                    self.topo.vlans[fields[0]] = Vlan(name=fields[0], vlan_id=vid, parent=fields[2])
                else:
                    self.warn("%s: %s: VLAN id %s is outside %d..%d, ignored"
                              % ((path, fields[0][:40], short_text(fields[1])) + LIMITS["vlan_id"]))
        for name, dev in sorted(self.topo.netdevs.items()):
            if name in self.topo.vlans:
                dev.kind = "vlan"
                continue
            parent, dot, vid_text = name.rpartition(".")
            vid = parse_decimal(vid_text) if vid_text[:1] != "-" else None
            if dev.kind in ("virtual", "vlan") and dot and in_limits(vid, "vlan_id") and parent in self.topo.netdevs:
                self.topo.vlans[name] = Vlan(name=name, vlan_id=vid, parent=parent, source="name")
                dev.kind = "vlan"
                self.warn("%s: VLAN id and parent inferred from the name (no /proc/net/vlan/config entry)" % name)


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


