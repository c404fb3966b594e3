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


def write_atomic(path, content, mode="0644"):
    """Write ``content`` to ``path`` with ``mode`` (octal text) so that readers see the old file or the new one,
    never half of it: a temporary file in the same directory, written, flushed to disk, then renamed over ``path``.
    A failure leaves no temporary file behind. Missing parent directories are created (0755)."""
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
