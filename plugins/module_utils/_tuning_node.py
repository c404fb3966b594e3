# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""host_tuning's node side: reads and writes confined below the root (a symbolic link out of it refuses the key
before anything is written), the node's interfaces and their ports, and what the plans of socket buffers and interrupt
affinity need read from the node. The plans themselves, the arithmetic and the file formats are _tuning.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import errno
import os
import re
import stat

from ansible_collections.gpuops.fabric.plugins.module_utils._files import inside
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.files import SysfsFiles
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import UNKNOWN_SPEEDS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import parse_cpulist
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning import BUFFER_SYSCTLS, NUMA_NODE

_WRITE_FLAGS = (os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
MAX_IRQS = 4096  # MSI-X allows 2048 vectors per function
MAX_DEPTH = 4  # VLAN on bond on ...: deeper stacks are not ours to guess
_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z")


def root_problem(value):
    """Why ``value`` is not a root this module reads and writes below, or None."""
    if not isinstance(value, str) or not os.path.isabs(value) or any(c in value for c in "\0\n\r"):
        return "is not an absolute path"
    if not os.path.isdir(value):
        return "is not a directory"
    return None


# ---- writes confined to the root ----------------------------------------------------------------------------
# A captured tree or an image root can hold symlinks that point out of it (etc -> /etc, proc/irq/120 -> /tmp/x):
# every path this module writes is resolved first (the folder and the file, os.path.realpath) and refused when it
# leaves the root; the open itself never follows a symlink in the last component (O_NOFOLLOW), and what was opened
# is checked again through /proc/self/fd before a byte is written, so a link swapped in between is caught too.
class OutsideRoot(Exception):
    """A path this module would write that leads out of its root: ``key`` (the option, sysctl or interrupt it is
    for) and ``detail`` (the path, where it leads); the message names both."""

    def __init__(self, key, detail):
        super(OutsideRoot, self).__init__("%s: %s" % (key, detail))
        self.key, self.detail = key, detail


def confined_path(root, relative, key):
    """``root``/``relative`` when neither its folder nor itself resolves to a place outside ``root`` (through a
    symlink below the root); else raises OutsideRoot naming ``key`` and the path."""
    parts = relative.strip("/").split("/")
    if "\0" in relative or any(p in ("", ".", "..") for p in parts):
        raise OutsideRoot(key, "%r is not a path below the root %s; refused, nothing written" % (relative, root))
    real_root = os.path.realpath(root)
    path = os.path.join(root, *parts)
    for resolved in (os.path.realpath(os.path.dirname(path)), os.path.realpath(path)):
        if not inside(resolved, real_root):
            raise OutsideRoot(key, "%s leads out of the root %s (a symbolic link takes it to %s); refused, nothing "
                              "written" % (path, root, resolved))
    return path


def _opened_outside(fd, real_root):
    """Where ``fd`` really is, when that is outside ``real_root`` (Linux names it in /proc/self/fd); else None."""
    try:
        where = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return None  # no procfs: the realpath checks before the open stand alone
    return None if inside(where, real_root) or not where.startswith("/") else where


def write_value(root, relative, key, text):
    """Write one /proc/sys or /proc/irq value below ``root``: the file must exist and be a regular file, no symlink
    is followed out of the root. The error as text naming the path (the caller files it under ``key``), or None."""
    try:
        path = confined_path(root, relative, key)
    except OutsideRoot as exc:
        return exc.detail
    try:
        fd = os.open(path, _WRITE_FLAGS)
    except (IOError, OSError) as exc:
        if exc.errno == errno.ELOOP:
            return "%s is a symbolic link; not followed, nothing written" % path
        return errno_text(exc)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "%s is not a regular file; nothing written" % path
        outside = _opened_outside(fd, os.path.realpath(root))
        if outside:
            return "%s leads out of the root %s (to %s); refused, nothing written" % (path, root, outside)
        if info.st_size:  # a file of a captured tree (procfs files have no size): the old value goes
            os.ftruncate(fd, 0)
        data = (text + "\n").encode("utf-8")
        if os.write(fd, data) != len(data):
            return "short write"
        return None
    except (IOError, OSError) as exc:
        return errno_text(exc)
    finally:
        os.close(fd)


def write_file(root, relative, key, text, mode=0o644):
    """Replace the file ``root``/``relative`` atomically (a temporary file in its folder, flushed, renamed over it)
    without leaving the root: the folder is resolved and refused when outside (OutsideRoot), created when missing,
    and then used through its own descriptor, so the temporary file and the rename land where it was checked. A
    symlink in the last component is replaced, never followed."""
    path = confined_path(root, relative, key)
    real_root = os.path.realpath(root)
    directory, name = os.path.split(path)
    os.makedirs(directory, 0o755, exist_ok=True)
    dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    tmp = None
    try:
        outside = _opened_outside(dir_fd, real_root)
        if outside:
            raise OutsideRoot(key, "%s leads out of the root %s (to %s); refused, nothing written"
                              % (directory, root, outside))
        tmp = ".gpuops.%s.tmp" % binascii.hexlify(os.urandom(6)).decode("ascii")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dir_fd)
        with os.fdopen(fd, "w") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
        os.close(dir_fd)
    return path


class Node(object):
    """The node's files below ``root``, read through the facts' own bounded reader (SysfsFiles: never opens a FIFO
    or a device node, at most 64 KiB a file); what it could not read is in ``warnings``. Each path the module will
    write is checked with ``confine`` before it is read: one that leads out of the root is named in ``refused``."""

    def __init__(self, root):
        self.root = root
        self.files = SysfsFiles(root)
        self.refused = []

    def confine(self, relative, key):
        """The path of ``relative`` below the root, or None (the refusal, naming ``key``, kept in ``refused``)."""
        try:
            return confined_path(self.root, relative, key)
        except OutsideRoot as exc:
            if str(exc) not in self.refused:
                self.refused.append(str(exc))
            return None

    @property
    def warnings(self):
        return list(self.files.topo.warnings)

    def path(self, *parts):
        return self.files.path(*parts)

    def read(self, *parts):
        """A file's text, stripped; None when missing or not readable."""
        return self.files.read(self.path(*parts), quiet=True)

    def read_exact(self, *parts):
        """A whole file as it is (the sysctl file, compared byte for byte with what it should hold), or None."""
        data = self.files.read_bytes(self.path(*parts), quiet=True)
        return None if data is None else data.decode("utf-8", "replace")

    def listdir(self, *parts):
        return self.files.listdir(self.path(*parts))

    def exists(self, iface):
        return os.path.isdir(self.path("sys/class/net", iface))

    def ports(self, iface, depth=0):
        """The physical ports under ``iface``: a bond's members, a VLAN's parent, down to devices without either."""
        if depth > MAX_DEPTH:
            return []
        slaves = self.read("sys/class/net", iface, "bonding/slaves")
        if slaves is not None:
            return sorted(set(p for m in slaves.split() if ifname_problem(m) is None and self.exists(m)
                              for p in self.ports(m, depth + 1)))
        lower = [n[len("lower_"):] for n in self.listdir("sys/class/net", iface) if n.startswith("lower_")]
        lower = [n for n in lower if ifname_problem(n) is None and self.exists(n)]
        if lower:
            return sorted(set(p for n in lower for p in self.ports(n, depth + 1)))
        return [iface]

    def speed(self, port):
        text = self.read("sys/class/net", port, "speed") or ""
        speed = int(text) if re.match(r"^[0-9]{1,7}\Z", text) else None
        return speed if speed and speed not in UNKNOWN_SPEEDS else None

    def pci_dir(self, port):
        """The port's PCI function: its device, or the nearest one above it (virtio: .../0000:00:03.0/virtio2)."""
        link = self.path("sys/class/net", port, "device")
        if not os.path.exists(link):
            return None
        target = os.path.realpath(link)
        for _level in range(3):
            if _PCI_ADDRESS.match(os.path.basename(target)) and os.path.isfile(os.path.join(target, "numa_node")):
                return target
            target = os.path.dirname(target)
        return None


def sysctl_path(name):
    return "proc/sys/" + name.replace(".", "/")


def read_buffers(node, file_path):
    """What the buffer plan needs from the node (``plan_buffers`` in _tuning.py decides): ({sysctl name: {"text":
    its value as read or None, "writable": whether this process may set it} or None where its path leads out of the
    root}, the sysctl file ``file_path`` as it is or None)."""
    node.confine(file_path, "sysctl_file")
    readings = {}
    for name in BUFFER_SYSCTLS:
        if node.confine(sysctl_path(name), name) is None:
            readings[name] = None  # refused: the module fails before it writes anything
            continue
        text = node.read(sysctl_path(name))
        # inside a network namespace or container the net.core maxima are the host's, read-only
        readings[name] = {"text": text, "writable": text is not None and os.access(node.path(sysctl_path(name)),
                                                                                   os.W_OK)}
    return readings, (node.read_exact(file_path) if not node.refused else None)


def read_irqs(node, ports):
    """What the interrupt plan needs from the node (``plan_irqs`` in _tuning.py decides), a dict per port in the
    order given: "port"; "pci" (whether it has a PCI function); "numa" (its numa_node as read, "" where missing);
    "cpulist" (that NUMA node's CPUs as read, None where the node number is not one); "affinity" ({irq: its
    smp_affinity_list as read or None} for each MSI interrupt, those whose file leads out of the root left out;
    empty where the NUMA node lists no CPUs, whose interrupts the plan leaves alone)."""
    readings = []
    for port in ports:
        reading = {"port": port, "pci": False, "numa": "", "cpulist": None, "affinity": {}}
        readings.append(reading)
        device = node.pci_dir(port)
        if device is None:
            continue
        reading["pci"] = True
        reading["numa"] = node.files.read(os.path.join(device, "numa_node"), quiet=True) or ""
        if NUMA_NODE.match(reading["numa"]):  # a path component only when it is a number
            reading["cpulist"] = node.read("sys/devices/system/node/node%s/cpulist" % reading["numa"])
        if not parse_cpulist(reading["cpulist"]):
            continue  # plan_irqs leaves the port alone: its interrupts are neither read nor their paths checked
        try:
            irqs = sorted(int(n) for n in os.listdir(os.path.join(device, "msi_irqs"))[:MAX_IRQS]
                          if re.match(r"^[0-9]{1,7}\Z", n))
        except OSError:
            irqs = []
        for irq in irqs:
            if node.confine("proc/irq/%d/smp_affinity_list" % irq, "irq %d (%s)" % (irq, port)) is None:
                continue  # leads out of the root: the module fails before it writes anything
            reading["affinity"][irq] = node.read("proc/irq/%d/smp_affinity_list" % irq)
    return readings


def irqbalance_runs(node):
    for pid in node.listdir("proc"):
        if pid.isdigit() and node.read("proc", pid, "comm") == "irqbalance":
            return True
    return False


def errno_text(exc):
    """A failed write of a /proc value, in words."""
    if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
        return "read-only here (a network namespace or container shares the host's value)"
    if exc.errno == errno.EIO:  # an interrupt whose affinity the kernel manages
        return "the kernel manages this interrupt's affinity"
    return exc.strerror or str(exc)
