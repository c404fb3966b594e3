#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: host_tuning
short_description: Tune a GPU node's TCP path - socket buffers for the link's bandwidth-delay product, NIC rings, IRQs on the NIC's NUMA node
version_added: 0.1.0
description:
  - For the interfaces given (the training and storage attachments; a bond stands for its members, a VLAN for its
    parent) works out the physical ports and tunes three things, each only upwards or towards the NIC's own socket,
    never lowering what an operator set higher.
  - B(Socket buffers.) The maxima of C(net.core.rmem_max), C(net.core.wmem_max) and the third field of
    C(net.ipv4.tcp_rmem) and C(net.ipv4.tcp_wmem) are raised to twice the bandwidth-delay product of one flow (the
    fastest port's speed, or O(speed_mbps), times O(rtt_ms)), as a power of two from 4 MiB to 1 GiB. Kept across
    reboots in O(sysctl_file) and applied at once through C(/proc/sys). A value the node cannot change (the
    C(net.core) ones are read-only inside a network namespace or container) is reported, not an error.
  - B(Rings) (O(rings=max)). RX and TX rings below the NIC's maximum (C(ethtool -g)) are set to it, at most 8192
    entries (C(ethtool -G)); more ring entries absorb bursts the driver would otherwise drop (STAB-002's NIC
    discards), and past 8192 they only cost memory (some NICs allow a million).
    Many drivers reset the link to resize rings, so a port carrying this connection from the controller is left
    alone unless O(allow_management). Live nodes only (O(root=/)); not kept across reboots or driver reloads.
  - B(IRQ affinity) (O(irq_affinity)). Each MSI/MSI-X interrupt of a port's PCI function whose affinity reaches CPUs
    outside the function's NUMA node is given that node's CPUs (C(/proc/irq/N/smp_affinity_list)). IRQs already on
    the right node, spread across its CPUs, are left as they are. Interrupts whose affinity the kernel manages
    itself are reported and left. Not kept across reboots; a running C(irqbalance) may move them again (warned).
  - Reads and writes files below O(root); a root other than C(/) is a captured tree, where commands do not run.
    No write leaves the root. Every path it would write (the sysctl file, each C(/proc/sys) value, each IRQ's
    C(smp_affinity_list)) is resolved before anything is read or written; when a symbolic link below the root takes
    one out of it, the module fails naming the key and the path, and writes nothing at all (in check mode too).
    Values are opened without following a symbolic link in their last component.
  - A buffer value read from the node that the kernel would refuse (outside C(0..2147483647), C(tcp_rmem) or
    C(tcp_wmem) not three integers from 1 with min <= default <= max, or no number at all) is a warning naming the
    key and the value; that key is neither changed nor written to O(sysctl_file), the others are still tuned.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.actiongroup
attributes:
  check_mode:
    support: full
    details:
      - Reads everything and reports what would change; writes nothing and runs no C(ethtool -G).
  diff_mode:
    support: full
    details:
      - The sysctl file's text before and after, and one line per live value, ring and IRQ that changes.
  idempotent:
    description: Running the module again with the same input changes nothing.
    support: full
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
options:
  interfaces:
    description:
      - The interfaces to tune for (names as the node has them). A bond counts as its members and a VLAN as its
        parent. Each must exist on the node; a name outside the kernel's rules is refused before anything is read.
    type: list
    elements: str
    required: true
  speed_mbps:
    description:
      - The speed of one flow's link in Mb/s when the ports report none (a port that is down, a virtual NIC). The
        fastest port's own speed comes first.
    type: int
  rtt_ms:
    description:
      - Round-trip time the buffers are sized for, in milliseconds (0.01 to 1000). 1 ms covers a data-centre fabric
        with queueing under load; raise it for paths between sites.
    type: float
    default: 1.0
  buffers:
    description: Size the socket buffers.
    type: bool
    default: true
  rings:
    description: C(max) raises RX and TX rings to the NIC's maximum; C(keep) leaves them.
    type: str
    choices: [max, keep]
    default: max
  irq_affinity:
    description: Keep each port's interrupts on its NUMA node.
    type: bool
    default: true
  allow_management:
    description: Also resize the rings of a port that carries this connection from the controller.
    type: bool
    default: false
  root:
    description:
      - Read and write below this directory (a captured tree); C(/) on a live node. An absolute path to a directory.
        Symbolic links inside it are followed only while they stay below it.
    type: path
    default: /
  sysctl_file:
    description:
      - The file in C(/etc/sysctl.d) (below O(root)) that keeps the buffer sizes across reboots; only its name may
        change. A plain file name directly in C(/etc/sysctl.d), 1 to 64 characters of C(A-Z a-z 0-9 _ -) with single
        dots between them, ending in C(.conf); anything else (C(/etc/passwd), a subfolder, C(..)) is refused.
    type: str
    default: /etc/sysctl.d/60-gpuops-fabric.conf
notes:
  - The role C(gpuops.fabric.tuning) runs this module with the training and storage attachments of the network
    intent; docs/tuning.md explains the sizes.
"""

EXAMPLES = r"""
- name: Tune the training NICs of a node
  gpuops.fabric.host_tuning:
    interfaces: [bond0.100]
    rtt_ms: 1
  register: tuned
"""

RETURN = r"""
ports:
  description: The physical ports the interfaces stand for, sorted.
  returned: always
  type: list
  elements: str
  sample: [ens1f0np0, ens1f1np1]
speed_mbps:
  description: The speed the buffers are sized for (the fastest port's, else O(speed_mbps)); null when unknown.
  returned: always
  type: int
buffer_bytes:
  description: The buffer size a flow gets (2 x the bandwidth-delay product, a power of two); null when not sized.
  returned: always
  type: int
  sample: 33554432
sysctls:
  description: Per sysctl, C(before) and C(after) (text as C(/proc/sys) prints it) and C(error) where it could not be set.
  returned: always
  type: dict
  sample: {net.core.rmem_max: {before: "212992", after: "33554432", error: null}}
rings:
  description: Per port whose rings are (or would be) resized, C(port), C(before), C(after), C(error).
  returned: always
  type: list
  elements: dict
irqs:
  description: Per interrupt moved (or to move), C(port), C(irq), C(before), C(after), C(error).
  returned: always
  type: list
  elements: dict
notes:
  description: What was not tuned, and why (a port without a PCI function, a NUMA node the kernel does not know).
  returned: always
  type: list
  elements: str
"""

import binascii
import errno
import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._files import inside
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import connection_interface
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import format_cpulist, parse_cpulist
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.files import SysfsFiles
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import UNKNOWN_SPEEDS
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning import (
    BUFFER_SYSCTLS, buffer_size, parse_rings, read_buffer_sysctl, ring_changes, sysctl_file, sysctl_file_problem,
    wanted_buffers,
)

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
        return _errno_text(exc)
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
        return _errno_text(exc)
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


def plan_buffers(node, speed, rtt_ms, file_path):
    """(live changes {name: (before text, after text)}, file before, file after, size, bdp, notes, warnings).

    A value read from the node that the kernel would refuse (out of range, two fields where it takes three, junk) is
    a warning naming the key and the value, and that key is left out: not set live and not in the file for the next
    boot. Not our own default instead: such a value comes from a damaged capture or a hand-edited image, not from a
    running kernel, so what the node really runs with is unknown; writing a size over it could lower what an operator
    meant to set (this module never lowers), and writing the kernel's default min/default fields would invent
    values nobody chose. The operator who reads the warning fixes the one line; the other keys are still tuned."""
    size, bdp = buffer_size(speed, rtt_ms)
    current, notes, warnings = {}, [], []
    node.confine(file_path, "sysctl_file")
    for name in BUFFER_SYSCTLS:
        if node.confine(sysctl_path(name), name) is None:
            current[name] = None  # refused: the module fails before it writes anything
            continue
        text = node.read(sysctl_path(name))
        current[name], problem = read_buffer_sysctl(name, text)
        if problem:
            warnings.append(problem)
        elif text is not None and not os.access(node.path(sysctl_path(name)), os.W_OK):
            # inside a network namespace or container the net.core maxima are the host's, read-only
            notes.append("%s: read-only here (%s; a network namespace or container has the host's): set it on "
                         "the host" % (name, text.strip()))
            current[name] = None
    wanted = wanted_buffers(current, size)
    basis = "socket buffers for %d Mb/s at %g ms round trip (2 x BDP of %d bytes)" % (speed, rtt_ms, bdp)
    after_file = sysctl_file(wanted, basis)
    before_file = node.read_exact(file_path) if not node.refused else None
    live = dict((name, (" ".join(str(v) for v in current[name]), " ".join(str(v) for v in value)))
                for name, value in wanted.items() if current[name] != value)
    return live, before_file, after_file, size, bdp, notes, warnings


def plan_irqs(node, ports):
    """([(port, irq, before, after)], skipped): the interrupts of each port whose affinity leaves its NUMA node."""
    moves, skipped = [], []
    for port in ports:
        device = node.pci_dir(port)
        if device is None:
            skipped.append("%s: no PCI function (a virtual interface): IRQs not judged" % port)
            continue
        numa = node.files.read(os.path.join(device, "numa_node"), quiet=True) or ""
        if not re.match(r"^[0-9]{1,4}\Z", numa):
            skipped.append("%s: the kernel knows no NUMA node for it (numa_node %s): IRQs left alone" % (
                port, numa or "missing"))
            continue
        cpus = parse_cpulist(node.read("sys/devices/system/node/node%s/cpulist" % numa))
        if not cpus:
            skipped.append("%s: NUMA node %s lists no CPUs: IRQs left alone" % (port, numa))
            continue
        try:
            irqs = sorted(int(n) for n in os.listdir(os.path.join(device, "msi_irqs"))[:MAX_IRQS]
                          if re.match(r"^[0-9]{1,7}\Z", n))
        except OSError:
            irqs = []
        if not irqs:
            skipped.append("%s: no MSI interrupts listed: IRQs not judged" % port)
            continue
        node_cpus, wanted = set(cpus), format_cpulist(cpus)
        for irq in irqs:
            if node.confine("proc/irq/%d/smp_affinity_list" % irq, "irq %d (%s)" % (irq, port)) is None:
                continue  # leads out of the root: the module fails before it writes anything
            text = node.read("proc/irq/%d/smp_affinity_list" % irq)
            current = parse_cpulist(text)
            if current is None:
                continue  # gone, or not readable: nothing to judge
            if set(current) - node_cpus:
                moves.append((port, irq, text, wanted))
    return moves, skipped


def irqbalance_runs(node):
    for pid in node.listdir("proc"):
        if pid.isdigit() and node.read("proc", pid, "comm") == "irqbalance":
            return True
    return False


def _errno_text(exc):
    """A failed write of a /proc value, in words."""
    if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
        return "read-only here (a network namespace or container shares the host's value)"
    if exc.errno == errno.EIO:  # an interrupt whose affinity the kernel manages
        return "the kernel manages this interrupt's affinity"
    return exc.strerror or str(exc)


def option_problems(params):
    """Each option that is not what this module takes, as "key: value why"; empty when all are."""
    problems = []
    if not params["interfaces"]:
        problems.append("interfaces: empty; name the training interfaces to tune for")
    for index, name in enumerate(params["interfaces"] or []):
        problem = ifname_problem(name)
        if problem:
            problems.append("interfaces[%d]: %r %s" % (index, name, problem))
    if not 0.01 <= params["rtt_ms"] <= 1000:  # NaN fails this too
        problems.append("rtt_ms: %r is outside 0.01..1000" % params["rtt_ms"])
    if params["speed_mbps"] is not None and not 1 <= params["speed_mbps"] <= 10000000:
        problems.append("speed_mbps: %r is outside 1..10000000" % params["speed_mbps"])
    problem = sysctl_file_problem(params["sysctl_file"])
    if problem:
        problems.append("sysctl_file: %r %s" % (params["sysctl_file"], problem))
    problem = root_problem(params["root"])
    if problem:
        problems.append("root: %r %s" % (params["root"], problem))
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", required=True),
            speed_mbps=dict(type="int"),
            rtt_ms=dict(type="float", default=1.0),
            buffers=dict(type="bool", default=True),
            rings=dict(type="str", choices=["max", "keep"], default="max"),
            irq_affinity=dict(type="bool", default=True),
            allow_management=dict(type="bool", default=False),
            root=dict(type="path", default="/"),
            sysctl_file=dict(type="str", default="/etc/sysctl.d/60-gpuops-fabric.conf"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = option_problems(params)
    if problems:
        module.fail_json(msg="; ".join(problems))
    file_path, root = params["sysctl_file"], params["root"]
    node = Node(root)
    missing = [i for i in params["interfaces"] if not node.exists(i)]
    if missing:
        module.fail_json(msg="interfaces: %s not on this node (%s)" % (", ".join(missing), ", ".join(
            n for n in node.listdir("sys/class/net") if node.exists(n)) or "no interfaces"))
    live_node = root == "/"
    ports = sorted(set(p for i in params["interfaces"] for p in node.ports(i)))
    speeds = [s for s in (node.speed(p) for p in ports) if s]
    speed = max(speeds) if speeds else params["speed_mbps"]
    result = dict(changed=False, ports=ports, speed_mbps=speed, buffer_bytes=None, sysctls={}, rings=[], irqs=[],
                  notes=[])
    diff_before, diff_after, diffs = [], [], []

    # --- everything is read and planned first; nothing is written before the whole plan stands
    buffers = None
    if params["buffers"]:
        if speed is None:
            result["notes"].append("buffers: no port reports a speed (%s) and speed_mbps is not set" % ", ".join(ports))
        else:
            buffers = plan_buffers(node, speed, params["rtt_ms"], file_path)
            live, before_file, after_file, size, _bdp, notes, value_warnings = buffers
            result["buffer_bytes"] = size
            result["notes"].extend(notes)
            for warning in value_warnings:
                module.warn(warning)
            if before_file != after_file:
                diffs.append({"before_header": file_path, "after_header": file_path,
                              "before": before_file or "", "after": after_file})
            for name, (before, after) in sorted(live.items()):
                result["sysctls"][name] = {"before": before, "after": after, "error": None}
                diff_before.append("%s = %s" % (name, before))
                diff_after.append("%s = %s" % (name, after))
    rings = []
    if params["rings"] == "max":
        if not live_node:
            result["notes"].append("rings: read with ethtool on the live node only (root is %s)" % root)
        else:
            ethtool = module.get_bin_path("ethtool")
            controller = connection_interface(os.environ.get("SSH_CONNECTION"))
            guarded = set(node.ports(controller)) if controller and node.exists(controller) else set()
            for port in ports:
                if ethtool is None:
                    result["notes"].append("rings: ethtool is not installed")
                    break
                rc, out, _err = module.run_command([ethtool, "-g", port])
                parsed = parse_rings(out) if rc == 0 else None
                if parsed is None:
                    result["notes"].append("%s: its driver reports no ring sizes (ethtool -g)" % port)
                    continue
                change = ring_changes(parsed)
                if not change:
                    continue
                if port in guarded and not params["allow_management"]:
                    module.warn("%s carries this connection from the controller (%s); its rings stay as they are "
                                "(a resize resets the link on many drivers): set allow_management to resize them"
                                % (port, controller))
                    result["notes"].append("%s: carries the controller's connection; rings left" % port)
                    continue
                rings.append((port, change, ethtool))
                before = " ".join("%s %d" % (r, c) for r, (c, _m) in sorted(change.items()))
                after = " ".join("%s %d" % (r, m) for r, (_c, m) in sorted(change.items()))
                result["rings"].append({"port": port, "before": before, "after": after, "error": None})
                diff_before.append("%s rings: %s" % (port, before))
                diff_after.append("%s rings: %s" % (port, after))
    moves = []
    if params["irq_affinity"]:
        moves, skipped = plan_irqs(node, ports)
        result["notes"].extend(skipped)
        for port, irq, before, after in moves:
            result["irqs"].append({"port": port, "irq": irq, "before": before, "after": after, "error": None})
            diff_before.append("irq %d (%s) affinity: %s" % (irq, port, before))
            diff_after.append("irq %d (%s) affinity: %s" % (irq, port, after))
        if moves and irqbalance_runs(node):
            module.warn("irqbalance runs on this node and may move the IRQs of %s again; ban them from it or "
                        "stop it" % ", ".join(sorted(set(p for p, _i, _b, _a in moves))))
    if node.refused:  # a path to write leads out of the root: nothing at all is written, check mode or not
        module.fail_json(msg="refused to write outside the root %s: %s" % (root, "; ".join(node.refused)),
                         refused=node.refused, **result)
    if diff_before or diff_after:
        diffs.append({"before_header": "live values", "after_header": "live values",
                      "before": "\n".join(diff_before) + "\n", "after": "\n".join(diff_after) + "\n"})
    result["changed"] = bool(diffs)
    if module._diff:
        result["diff"] = diffs

    if not module.check_mode and result["changed"]:
        if buffers is not None:
            live, before_file, after_file = buffers[0], buffers[1], buffers[2]
            if before_file != after_file:
                try:
                    write_file(root, file_path, "sysctl_file", after_file)
                except OutsideRoot as exc:
                    module.fail_json(msg=str(exc), **result)
                except (IOError, OSError) as exc:
                    module.fail_json(msg="sysctl_file: %s: %s" % (node.path(file_path), exc), **result)
            for name in sorted(live):
                result["sysctls"][name]["error"] = write_value(root, sysctl_path(name), name, live[name][1])
        for port, change, ethtool in rings:
            argv = [ethtool, "-G", port]
            for ring, (_current, maximum) in sorted(change.items()):
                argv += [ring, str(maximum)]
            rc, out, err = module.run_command(argv)
            if rc != 0:
                [entry] = [r for r in result["rings"] if r["port"] == port]
                entry["error"] = (err or out or "ethtool -G exited %d" % rc).strip()[:500]
        for entry in result["irqs"]:
            entry["error"] = write_value(root, "proc/irq/%d/smp_affinity_list" % entry["irq"],
                                         "irq %d (%s)" % (entry["irq"], entry["port"]), entry["after"])
    errors = ["%s: %s" % (name, item["error"]) for name, item in sorted(result["sysctls"].items()) if item["error"]]
    errors += ["%s rings: %s" % (r["port"], r["error"]) for r in result["rings"] if r["error"]]
    errors += ["irq %d (%s): %s" % (r["irq"], r["port"], r["error"]) for r in result["irqs"] if r["error"]]
    for error in errors:
        module.warn("not tuned: %s" % error)
    for warning in node.warnings:  # a file that was not a regular file, or not readable: named, never opened
        module.warn(warning)
    result["msg"] = "%d port(s)%s: %d sysctl(s), %d ring(s), %d IRQ(s) %s%s" % (
        len(ports), " for %d Mb/s" % speed if speed else "", len(result["sysctls"]), len(result["rings"]),
        len(result["irqs"]), "to change" if module.check_mode else "changed",
        "; %d not applied" % len(errors) if errors else "")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
