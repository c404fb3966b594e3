# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The kernel log, for the sysfs reader: on the live node the ring buffer (/dev/kmsg, read without blocking: each
read one record, until none is left), in a capture its saved copy (var/log/dmesg, var/log/kern.log below the root,
the last MAX_LOG_BYTES). Only the PCIe bandwidth lines are kept (sources/kernel_log.py). Nothing here blocks, and a
log that cannot be read is an unknown, not an error."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import stat

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.kernel_log import parse_pcie_bandwidth

KMSG = "/dev/kmsg"
MAX_RECORDS = 200000  # the ring buffer holds a few MiB: far fewer records than this
MAX_LOG_BYTES = 8 * 1024 * 1024
SAVED_LOGS = ("var/log/dmesg", "var/log/kern.log")


def kmsg_lines(path=KMSG, limit=MAX_RECORDS):
    """The messages of the kernel's ring buffer, oldest first, or None where it cannot be opened (no root, a
    container without it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    lines = []
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            return None
        for _attempt in range(limit + 1000):
            if len(lines) >= limit:
                break
            try:
                record = os.read(fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue  # records overwritten while reading: the next read goes on after them
                break  # EAGAIN: none left
            if not record:
                break
            # "6,339,5140900,-;mlx5_core 0000:...: ..." (level, sequence, microseconds since boot) then continuation
            # lines (" SUBSYSTEM=pci"); the time goes in front as dmesg prints it
            head, _sep, text = record.decode("utf-8", "replace").partition(";")
            fields = head.split(",")
            usec = fields[2] if len(fields) > 2 and fields[2].isdigit() and len(fields[2]) < 16 else None
            lines.append("[%s] %s" % ("%d.%06d" % divmod(int(usec), 1000000) if usec else "?",
                                      text.split("\n", 1)[0]))
    finally:
        os.close(fd)
    return lines


def tail_lines(path, limit=MAX_LOG_BYTES):
    """The lines of the last ``limit`` bytes of a regular file (the first, cut, dropped), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        start = max(0, size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], min(size, limit)
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = b"".join(chunks).decode("utf-8", "replace").splitlines()
    return lines[1:] if start else lines


class KernelLogMixin:
    """Reads the kernel's PCIe bandwidth lines into ``topo.kernel_pcie``: {"source", "entries"}."""

    def read_kernel_log(self):
        lines, source = None, None
        if self.root in ("/", ""):
            lines = kmsg_lines()
            source = KMSG if lines is not None else None
        if lines is None:
            for name in SAVED_LOGS:
                path = self.path(name)
                real = os.path.realpath(path)
                if self.root not in ("/", "") and not real.startswith(os.path.realpath(self.root) + os.sep):
                    continue  # a link in a capture that leads out of it
                lines = tail_lines(path)
                if lines is not None:
                    source = "/" + name if self.root in ("/", "") else path
                    break
        self.topo.kernel_pcie = {"source": source, "entries": parse_pcie_bandwidth(lines) if lines else [],
                                 "oldest_s": oldest_seconds(lines)}


_STAMP = re.compile(r"^(?:\S.{0,60}?)?\[\s{0,12}(\d{1,10})\.(\d{1,9})\]")


def oldest_seconds(lines):
    """Seconds after boot of the oldest message read ("[    9.070303] ..." as dmesg and syslog's kernel lines print
    it, in the first 100 lines), or None: a log whose oldest message is minutes after boot no longer holds the
    messages of the boot, when the PCI core and the drivers print the links they found."""
    for line in (lines or [])[:100]:
        match = _STAMP.match(line[:200])
        if match:
            return int(match.group(1))
    return None
