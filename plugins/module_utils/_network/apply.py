# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Putting rendered files in place on a node: owned files only, compared, written atomically, applied."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import os
import stat
import tempfile
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem

# Where each backend reads its files, and the names this collection owns there. Nothing else is touched.
MANAGED = {
    "netplan": ("/etc/netplan", ("60-gpuops-fabric.yaml",)),
    "networkmanager": ("/etc/NetworkManager/system-connections", ("gpuops-",)),
    "networkd": ("/etc/systemd/network", ("60-gpuops-",)),
}


class ApplyError(Exception):
    pass


def owned(backend, path):
    directory, prefixes = MANAGED[backend]
    return os.path.dirname(path) == directory and any(os.path.basename(path).startswith(p) for p in prefixes)


def detect_backend(root):
    """netplan when the node has netplan, else NetworkManager when it keeps keyfiles, else networkd."""
    def join(path):
        return os.path.join(root, path.lstrip("/"))

    if os.path.isdir(join("/etc/netplan")) and (os.path.exists(join("/usr/sbin/netplan")) or
                                                os.path.exists(join("/usr/bin/netplan"))):
        return "netplan"
    if os.path.isdir(join("/etc/NetworkManager/system-connections")) and os.path.exists(join("/usr/sbin/NetworkManager")):
        return "networkmanager"
    return "networkd"


def _read(path):
    try:
        with open(path) as handle:
            return handle.read(), stat.S_IMODE(os.stat(path).st_mode)
    except (IOError, OSError):
        return None, None


def present_files(root, backend):
    directory, _prefixes = MANAGED[backend]
    full = os.path.join(root, directory.lstrip("/"))
    found = {}
    for name in sorted(os.listdir(full)) if os.path.isdir(full) else []:
        path = os.path.join(directory, name)
        if owned(backend, path):
            content, mode = _read(os.path.join(full, name))
            if content is not None:
                found[path] = {"content": content, "mode": "%04o" % mode}
    return found


def plan_changes(root, backend, wanted, replace):
    """Compare wanted files with the node. Returns (changes, diffs); nothing is written."""
    for path in wanted:
        if not isinstance(path, str) or any(ord(c) < 32 or ord(c) == 127 for c in path):
            raise ApplyError("%r: a file path with a control character (newline, NUL, ...) is never written" % (path,))
        if not owned(backend, path):
            raise ApplyError("%s: not a file this collection owns for %s (only %s/%s*)" % (
                path, backend, MANAGED[backend][0], "*|".join(MANAGED[backend][1])))
        name = _interface_of(backend, path)
        if name is not None and ifname_problem(name):
            raise ApplyError("%r: the interface name in this file name %s" % (path, ifname_problem(name)))
    present = present_files(root, backend)
    changes, diffs = [], []
    for path in sorted(wanted):
        new = wanted[path]
        old = present.get(path)
        if old is None or old["content"] != new["content"] or old["mode"] != new["mode"]:
            changes.append(("write", path, new))
            diffs.append({
                "before_header": path if old else "/dev/null", "after_header": path,
                "before": old["content"] if old else "", "after": new["content"],
            })
            if old is not None and old["content"] == new["content"]:
                diffs[-1]["after_header"] = "%s (mode %s -> %s)" % (path, old["mode"], new["mode"])
    if replace:
        for path in sorted(set(present) - set(wanted)):
            changes.append(("remove", path, None))
            diffs.append({"before_header": path, "after_header": "/dev/null", "before": present[path]["content"],
                          "after": ""})
    return changes, diffs


def apply_changes(root, changes):
    """Write atomically (temp file in the same directory, fsync, rename) with the wanted mode."""
    for action, path, new in changes:
        full = os.path.join(root, path.lstrip("/"))
        if action == "remove":
            os.unlink(full)
            continue
        directory = os.path.dirname(full)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd, tmp = tempfile.mkstemp(prefix=".gpuops.", dir=directory)
        try:
            os.fchmod(fd, int(new["mode"], 8))
            with os.fdopen(fd, "w") as handle:
                handle.write(new["content"])
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(tmp, full)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def unified(diffs):
    """One text diff of all changes, for logs and drift findings."""
    out = []
    for item in diffs:
        out.extend(difflib.unified_diff(item["before"].splitlines(True), item["after"].splitlines(True),
                                        item["before_header"], item["after_header"]))
    return "".join(out)


def apply_commands(backend, changes):
    """Argument lists that make the backend apply the changed files to the running system."""
    names = sorted(set(_interface_of(backend, path) for _action, path, _new in changes) - {None})
    if backend == "netplan":
        return [["netplan", "apply"]]
    if backend == "networkd":
        commands = [["networkctl", "reload"]]
        present = [n for n in names if os.path.exists("/sys/class/net/" + n)]
        if present:
            commands.append(["networkctl", "reconfigure"] + present)
        return commands
    commands = [["nmcli", "connection", "reload"]]
    for action, path, _new in changes:
        if action == "write":
            commands.append(["nmcli", "connection", "up", "id", os.path.basename(path)[:-len(".nmconnection")]])
    return commands


def _interface_of(backend, path):
    name = os.path.basename(path)
    if backend == "networkd" and name.startswith("60-gpuops-"):
        return name[len("60-gpuops-"):].rsplit(".", 1)[0]
    if backend == "networkmanager" and name.startswith("gpuops-"):
        return name[len("gpuops-"):-len(".nmconnection")]
    return None
