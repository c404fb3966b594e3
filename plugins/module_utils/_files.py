# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The one way this collection writes a file, on a node (network files) and on the controller (reports, plans,
the allocation file): atomically."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def inside(path, real_root):
    """Whether the resolved ``path`` lies in ``real_root`` (itself resolved): the one test of confinement."""
    return real_root == os.sep or path == real_root or path.startswith(real_root.rstrip(os.sep) + os.sep)


def outside_root(root, path):
    """None, or why writing ``path`` (absolute, meant below ``root``) would leave ``root``: the deepest part of it
    that exists resolves, through a symbolic link, outside the root's own real path (an image root whose etc is a
    link to the build machine's /etc). A root of / holds everything."""
    real_root = os.path.realpath(root)
    probe = os.path.abspath(path)
    while not os.path.lexists(probe) and probe != os.path.dirname(probe):
        probe = os.path.dirname(probe)
    if os.path.islink(probe) and probe == os.path.abspath(path):
        probe = os.path.dirname(probe)  # a link at the name itself is replaced (write) or removed (unlink), not used
    real = os.path.realpath(probe)
    if inside(real, real_root):
        return None
    return "%s leads out of the root %s (through a symbolic link, to %s); refused" % (path, root, real)


def write_atomic(path, content, mode="0644", root=None):
    """Write ``content`` to ``path`` with ``mode`` (octal text) so that readers see the old file or the new one,
    never half of it: a temporary file in the same directory, written, flushed to disk, then renamed over ``path``.
    A failure leaves no temporary file behind. Missing parent directories are created (0755).

    Nothing at ``path`` is followed: a symbolic link there (report.json pointing at /etc/passwd) is replaced by the
    new file, never written through -- the temporary file is created exclusively (O_EXCL, which refuses a link) and
    rename() replaces the name, not what it points to. A directory there is refused by rename() (EISDIR).

    With ``root``, a path that a symbolic link on its way leads out of ``root`` is refused (ValueError) before any
    directory is made."""
    if root is not None:
        problem = outside_root(root, path)
        if problem:
            raise ValueError(problem)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, 0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".gpuops.", dir=directory)
    try:
        os.fchmod(fd, int(mode, 8))
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
