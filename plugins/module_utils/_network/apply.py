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
from ansible_collections.gpuops.fabric.plugins.module_utils._files import outside_root, write_atomic
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import backend_module
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import on_root


class ApplyError(Exception):
    pass


def owned(backend, path):
    """Whether ``path`` is a file this collection owns for ``backend`` (its DIRECTORY, one of its OWNED_PREFIXES).
    Nothing else is touched."""
    mod = backend_module(backend)
    return os.path.dirname(path) == mod.DIRECTORY and any(os.path.basename(path).startswith(p)
                                                          for p in mod.OWNED_PREFIXES)


MAX_FILE_BYTES = 16 * 1024 * 1024  # a network file of ours is a few KiB; more is read as far as this, and differs


def _read(path):
    try:
        with open(path) as handle:
            return handle.read(MAX_FILE_BYTES), stat.S_IMODE(os.stat(path).st_mode)
    except (IOError, OSError):
        return None, None


def present_files(root, backend):
    directory = backend_module(backend).DIRECTORY
    full = on_root(root, directory)
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
        mod = backend_module(backend)
        if not owned(backend, path):
            raise ApplyError("%s: not a file this collection owns for %s (only %s/%s*)" % (
                path, backend, mod.DIRECTORY, "*|".join(mod.OWNED_PREFIXES)))
        name = mod.interface_of(path)
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
    # every change confined to the root before any is made (in check mode too): nothing half-written
    problems = [outside_root(root, on_root(root, path)) for _action, path, _new in changes]
    problems = [p for p in problems if p]
    if problems:
        raise ApplyError("; ".join(problems))
    return changes, diffs


def apply_changes(root, changes):
    """Write each wanted file atomically with its mode (module_utils/_files.py); remove what is to go."""
    for action, path, new in changes:
        full = on_root(root, path)
        problem = outside_root(root, full)
        if problem:  # plan_changes refused it already; a link swapped in since is refused here
            raise ApplyError(problem)
        if action == "remove":
            os.unlink(full)
            continue
        write_atomic(full, new["content"], new["mode"], root=root)


def unified(diffs):
    """One text diff of all changes, for logs and drift findings."""
    out = []
    for item in diffs:
        out.extend(difflib.unified_diff(item["before"].splitlines(True), item["after"].splitlines(True),
                                        item["before_header"], item["after_header"]))
    return "".join(out)
