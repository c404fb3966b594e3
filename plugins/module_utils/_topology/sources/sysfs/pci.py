# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""PCI devices for the sysfs reader: the device tree under /sys/devices/pciDDDD:BB (or /sys/bus/pci/devices alone),
each function's ids, driver, NUMA node, local CPUs and link speed and width, and a bridge's ACS control from its
config space; the uevent and ACS parsers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import (
    format_cpulist, MAX_CPUS, parse_cpulist, parse_cpumask,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import PciDevice
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    MAX_GTS, parse_link_speed, parse_link_width, PCI_ADDRESS_RE, VALID_WIDTHS,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.files import file_type
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    hex_field, hex_pair, HEX_RE, in_limits, LIMITS, parse_decimal, short_text,
)

_HOST_BRIDGE_RE = re.compile(r"^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$")


# The attribute files read per PCI function.
# The PCIe AER counters (read by counters.py): their types come from this walk's listing too, so that reading them
# needs no directory listing of its own
AER_FILE_NAMES = ("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal", "aer_rootport_total_err_cor",
                  "aer_rootport_total_err_nonfatal", "aer_rootport_total_err_fatal")
_PCI_FILES = frozenset((
    "config", "uevent", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "numa_node",
    "local_cpulist", "local_cpus", "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
) + AER_FILE_NAMES)


class PciMixin:
    """Reads /sys/devices and /sys/bus/pci/devices into ``topo.pci``; needs the I/O of SysfsFiles."""

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
                    kind = file_type(os.lstat(prefix + name).st_mode)
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
        bridge = dev.class_code is not None and dev.class_code >> 8 == 0x0604
        if "config" in files and (bridge or (dev.class_code or 0) >> 16 in CONTROL_CLASSES):
            # extended space (ACS) needs root on a live system, the capability list past 64 bytes too
            data = self.read_bytes(prefix + "config", regular=True, limit=4096 if bridge else 256)
            if bridge:
                dev.acs_readable, dev.acs_control = parse_acs_control(data) if data is not None else (False, None)
            dev.pcie_control = parse_pcie_control(data) if data is not None else None
        if "iommu_group" in names:
            dev.iommu_group, dev.iommu_type = self._iommu(prefix + "iommu_group")
        return dev

    def _iommu(self, link):
        """(group, default domain type) of a device's iommu_group link."""
        name = self.link_name(link)
        if not name or not re.match(r"^[0-9]{1,6}$", name):
            if name is not None:
                self.warn("%s: links to %r, not an IOMMU group number" % (link, short_text(name)))
            return None, None
        group = int(name)
        if group not in self._iommu_types:
            kind = self.read(self.path("sys/kernel/iommu_groups/%d/type" % group), quiet=True)
            if kind is not None and kind not in IOMMU_TYPES:
                self.warn("sys/kernel/iommu_groups/%d/type: %r is not a domain type (%s)"
                          % (group, short_text(kind), ", ".join(IOMMU_TYPES)))
                kind = None
            self._iommu_types[group] = kind
        return group, self._iommu_types[group]

    def _node_of_cpus(self, cpus):
        matches = [node.node_id for node in self.topo.numa.values()
                   if node.cpus and cpus <= set(parse_cpulist(node.cpus) or ())]
        return matches[0] if len(matches) == 1 else None


def pci_component(parts):
    """Index of the last PCI address among path components, or None (virtual devices)."""
    for index in range(len(parts) - 1, -1, -1):
        if PCI_ADDRESS_RE.match(parts[index]):
            return index
        if parts[index] == "devices":
            break
    return None


PCI_EXT_CAP_ACS = 0x000D
PCI_CAP_EXP = 0x10
# Classes whose PCI Express control is read: network (0x02), display (0x03: GPUs), processing accelerators (0x12).
CONTROL_CLASSES = (0x02, 0x03, 0x12)
# The default domain types the kernel writes to /sys/kernel/iommu_groups/N/type.
# "unknown": a group without a default domain (POWER, s390, platform domains); "auto" is only ever written.
IOMMU_TYPES = ("identity", "DMA", "DMA-FQ", "unmanaged", "blocked", "unknown")


def parse_pcie_control(config):
    """The PCI Express capability's payload and read request sizes and relaxed ordering, from config space bytes.

    Returns None when the device has no capability list or no PCI Express capability, {"readable": False, ...}
    when the bytes stop before the capability (the 64 bytes a non-root reader gets), else {"readable": True,
    "mps_supported", "mps", "mrrs" (bytes), "relaxed_ordering", "no_snoop"}."""
    unread = {"readable": False, "mps_supported": None, "mps": None, "mrrs": None, "relaxed_ordering": None,
              "no_snoop": None}
    if len(config) < 0x40:
        return unread
    if not int.from_bytes(config[6:8], "little") & 0x10:  # Status: no capability list
        return None
    offset, seen = config[0x34] & 0xFC, set()
    while offset >= 0x40 and offset not in seen:
        if offset + 2 > len(config):
            return unread
        seen.add(offset)
        if config[offset] == PCI_CAP_EXP:
            if offset + 0x0C > len(config):
                return unread
            devcap = int.from_bytes(config[offset + 4:offset + 8], "little")
            devctl = int.from_bytes(config[offset + 8:offset + 10], "little")
            sizes = [devcap & 0x7, (devctl >> 5) & 0x7, (devctl >> 12) & 0x7]
            mps_supported, mps, mrrs = [128 << v if v <= 5 else None for v in sizes]  # 6, 7: reserved
            return {"readable": True, "mps_supported": mps_supported, "mps": mps, "mrrs": mrrs,
                    "relaxed_ordering": bool(devctl & 0x0010), "no_snoop": bool(devctl & 0x0800)}
        offset = config[offset + 1] & 0xFC
    return None


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
