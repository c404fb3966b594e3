# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Bounded file I/O for the sysfs reader: regular files only, opened non-blocking, each read capped
(SYSFS_MAX_BYTES for sysfs, PROCFS_MAX_BYTES for procfs); directory listings, links, and the warnings
unreadable files give (at most MAX_WARNINGS kept)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import Topology
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    HEX_RE, in_limits, LIMITS, parse_decimal, short_text,
)


SYSFS_MAX_BYTES = 65536
PROCFS_MAX_BYTES = 8 << 20
READ_CHUNK = 1 << 16
MAX_WARNINGS = 500
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NOCTTY", 0))


# Errors that mean "this kernel or driver does not know" (a down link's speed, an unused GID entry), not
# "something is wrong here": None without a warning. Every other error is named in a warning.
_QUIET_ERRNOS = frozenset((errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.ENODEV, errno.EOPNOTSUPP,
                           getattr(errno, "ENOTSUP", errno.EOPNOTSUPP), errno.ENXIO, errno.EAGAIN))
_FILE_TYPES = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_type(mode):
    for check, name in _FILE_TYPES:
        if check(mode):
            return name
    return "unknown type"


class SysfsFiles:
    """The files below ``root`` ("/" for the live machine), read with bounds; warnings go to ``topo``."""

    def __init__(self, root="/"):
        self.root = root
        self.topo = Topology(source="sysfs")
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
                    self.warn("%s: not a regular file (%s), ignored" % (path, file_type(mode)))
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
                self.warn("%s: not a regular file (%s), ignored" % (path, file_type(mode)))
                return None
            # A sysfs attribute (and a file of a capture) comes whole in one read: a short read is the end.
            # procfs files come a record at a time: read them to the end (or past the bound).
            # Each read asks for at most READ_CHUNK bytes: /proc/sys allocates a kernel buffer of the size asked and
            # fails with ENOMEM past a few MiB (the bound, 8 MiB, would be refused for a 4-byte osrelease).
            whole = limit != PROCFS_MAX_BYTES
            chunks, size = [], 0
            while size <= limit:
                asked = min(limit + 1 - size, READ_CHUNK)
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

    def entries(self, path, limit=4096):
        """{name: whether it is a regular file} of directory ``path`` (at most ``limit`` entries looked at): one
        directory read instead of a stat per file a reader might want, most of which a driver does not have. A name
        that is not a regular file is still there, so that reading it says what it is."""
        found = {}
        try:
            with os.scandir(path) as listing:
                for count, entry in enumerate(listing):
                    if count >= limit:
                        break
                    try:
                        found[entry.name] = entry.is_file(follow_symlinks=False)
                    except OSError:
                        found[entry.name] = False
        except (IOError, OSError) as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                self.warn("%s: directory unreadable (%s)" % (path, exc.strerror or exc))
        return found

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
