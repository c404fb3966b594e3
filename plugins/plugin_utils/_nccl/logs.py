# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The NCCL logs and topology dumps a host's ``fabric_nccl_logs`` names, on the controller: the paths checked before
any host is touched, then each file read (bounded: its head and its tail) and parsed -- an NCCL_DEBUG=INFO log by
``_probing/nccl_log.py``, an NCCL_TOPO_DUMP_FILE dump into facts by ``_topology/sources/ncclxml.py``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import io
import os
import re
import stat

from ansible_collections.gpuops.fabric.plugins.module_utils._lines import read_blocks, split_lines
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log import parse_nccl_log
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError

KEY = "fabric_nccl_logs"
MAX_FILES = 1024               # files per host (one per process of a job, NCCL_DEBUG_FILE=...%h.%p)
HEAD_BYTES = 64 * 1024 * 1024  # a log's first 64 MiB is read (NCCL's init lines come first) ...
TAIL_BYTES = 8 * 1024 * 1024   # ... and its last 8 MiB (the warnings and errors of a run that died)
_SNIFF = 4096


def log_paths(value, key=KEY):
    """The files ``value`` names (a path or a list of paths and glob patterns, relative ones to the working
    directory), sorted within each pattern. Returns (paths, errors); each error names the key and the value."""
    if value is None or value == []:
        return [], []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return [], ["%s: expected a list of paths on the controller, got %r" % (key, value)]
    paths, seen, errors = [], set(), []
    for index, item in enumerate(value):
        where = "%s[%d]" % (key, index)
        if not isinstance(item, str) or not item.strip():
            errors.append("%s: %r is not a path" % (where, item))
            continue
        if "\x00" in item:
            errors.append("%s: %r holds a NUL character" % (where, item))
            continue
        pattern = os.path.abspath(os.path.expanduser(item))
        if os.path.isfile(pattern) or not glob.has_magic(pattern):  # a literal name may hold [ or *
            found = [pattern] if os.path.isfile(pattern) else []
        else:
            found = []
            for path in glob.iglob(pattern):
                if os.path.isfile(path):
                    found.append(path)
                if len(found) > MAX_FILES:
                    break
            found.sort()
        if not found:
            what = "matches no file" if glob.has_magic(pattern) and not os.path.exists(pattern) else (
                "is not a regular file" if os.path.exists(pattern) else "does not exist")
            errors.append("%s: %r %s on the controller" % (where, item, what))
            continue
        for path in found:
            if path not in seen:
                seen.add(path)
                paths.append(path)
        if len(paths) > MAX_FILES:
            break
    if len(paths) > MAX_FILES:
        errors.append("%s: %r names more than %d files; at most %d are read per host (name this host's own, e.g. "
                      "nccl.<host>.*)" % (key, value, MAX_FILES, MAX_FILES))
    return paths, errors


def _open(path):
    """A binary handle on a regular file (a FIFO or a device named by a glob would block or never end), and its
    size."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError("not a regular file")
    except Exception:
        os.close(fd)
        raise
    return io.open(fd, "rb"), info.st_size


def _blocks(raw, first, limit, tally):
    """``first`` (bytes already read), then blocks of the file up to ``limit`` bytes in all."""
    if first:
        yield first
    yield from read_blocks(raw, limit - len(first), tally=tally)


def _lines(raw, first, size, tally):
    """The file's lines (each bounded by split_lines), read in blocks: the whole of a file up to HEAD_BYTES +
    TAIL_BYTES (and no more, should it grow while read), else its first HEAD_BYTES and its last TAIL_BYTES, without
    the line cut at either edge. Whatever the file holds (a line with no end, gigabytes of NUL bytes), at most
    HEAD_BYTES + TAIL_BYTES are read: the time is bounded with the bytes."""
    if size <= HEAD_BYTES + TAIL_BYTES:
        yield from split_lines(_blocks(raw, first, HEAD_BYTES + TAIL_BYTES, tally))
        return
    yield from split_lines(_blocks(raw, first, HEAD_BYTES, tally), keep_last=False)
    raw.seek(size - TAIL_BYTES)
    yield from split_lines(read_blocks(raw, TAIL_BYTES, tally=tally), skip_first=True)


def read_log(path):
    """One file: {"path", "kind": "log" or "topology_dump", "size", "truncated" (the middle of a large log was not
    read), "skipped_bytes" (how much of it), "bytes_read", "parsed" (a log), "facts" (a dump), "error"}. Never raises:
    a file that cannot be read is an entry with its error."""
    entry = {"path": path, "kind": "log", "size": None, "truncated": False, "skipped_bytes": 0, "bytes_read": 0,
             "parsed": None, "facts": None, "error": None}
    try:
        raw, size = _open(path)
    except (IOError, OSError) as exc:
        entry["error"] = "cannot read %s: %s" % (path, getattr(exc, "strerror", None) or exc)
        return entry
    entry["size"] = size
    tally = [0]
    try:
        with raw:
            first = raw.read(min(_SNIFF, HEAD_BYTES))
            tally[0] += len(first)
            if re.search(r"^\s*<system[\s>]", first.decode("utf-8", "replace"), re.M):
                entry["kind"] = "topology_dump"
                return _dump(entry, path)
            entry["truncated"] = size > HEAD_BYTES + TAIL_BYTES
            entry["skipped_bytes"] = max(0, size - HEAD_BYTES - TAIL_BYTES)
            entry["parsed"] = parse_nccl_log(_lines(raw, first, size, tally))
    except (IOError, OSError, ValueError) as exc:
        entry["error"] = "cannot read %s: %s" % (path, exc)
    finally:
        entry["bytes_read"] = tally[0]
    return entry


def _dump(entry, path):
    """An NCCL topology dump read into facts; as posted or logged, it may be an excerpt (xmlfile.load_xml_excerpt)."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.build import build_facts
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.subsets import resolve_subsets
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import classify_devices
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ncclxml import (
        DUMP_SUBSETS, read_nccl_xml,
    )
    try:
        topo = read_nccl_xml(path, excerpt=True)
        classify_devices(topo)
        entry["facts"] = build_facts(topo, resolve_subsets(list(DUMP_SUBSETS)))
    except TopologyError as exc:
        entry["error"] = str(exc)
    return entry


def read_logs(paths):
    return [read_log(path) for path in paths]
