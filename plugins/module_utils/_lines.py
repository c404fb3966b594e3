# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Lines of a file read bounded in memory and bytes, whatever it holds: blocks of fixed size, each line cut at
MAX_LINE characters as it is read (a line without an end costs no more than a short one), \r\n, \r, \n and runs of
NUL bytes (logrotate's copytruncate hole) as line ends."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import codecs
import re

MAX_LINE = 2000  # characters of a line looked at
BLOCK = 1 << 20  # bytes (or characters) read at a time: never a readline() without a size

# where a line ends: \r\n, \r or \n (as Python's universal newlines), or a run of NUL bytes -- what logrotate's
# copytruncate leaves before the first line written after it (a hole of any size, with no newline)
_BREAK = re.compile(u"\r\n?|\n|\x00+")


def _pieces(data):
    """[(text, the line end after it, None for the last piece)] of a block; a block with no \\r and no NUL (the
    usual one, and a line with no end) is split in one call."""
    if u"\r" not in data and u"\x00" not in data:
        pieces = data.split(u"\n")
        return [(piece, u"\n") for piece in pieces[:-1]] + [(pieces[-1], None)]
    found, start = [], 0
    for match in _BREAK.finditer(data):
        found.append((data[start:match.start()], match.group()))
        start = match.end()
    found.append((data[start:], None))
    return found


def read_blocks(handle, max_bytes=None, block=BLOCK, tally=None):
    """What ``handle`` (binary or text) holds, ``block`` at a time, at most ``max_bytes`` in all; ``tally``, a
    list of one number, counts what was read."""
    left = max_bytes
    while left is None or left > 0:
        data = handle.read(block if left is None else min(block, left))
        if not data:
            return
        if left is not None:
            left -= len(data)
        if tally is not None:
            tally[0] += len(data)
        yield data


def split_lines(blocks, skip_first=False, keep_last=True):
    """The lines of an iterable of blocks (bytes, UTF-8 with errors replaced, or text), each at most MAX_LINE
    characters: the rest of a longer line is dropped as it is read, never held, so a line without an end costs no
    more memory than a short one. A block of NUL bytes ends a line without being decoded. ``skip_first``: drop what
    comes before the first line end (a read that starts inside a line); ``keep_last``: yield a last line that has no
    end (False when the read stopped inside a line)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    part, held, first, after_cr = [], 0, skip_first, False
    for data in blocks:
        if isinstance(data, bytes):
            data = u"\x00" if not data.strip(b"\x00") else decoder.decode(data)
        if after_cr and data[:1] == u"\n":  # a \r\n cut in two by the block size
            data = data[1:]
        for piece, end in _pieces(data):
            if piece and held < MAX_LINE:
                part.append(piece[:MAX_LINE - held])
                held += len(part[-1])
            if end is None:  # the line goes on in the next block
                continue
            if end[0] == u"\x00" and not part and not first:
                continue  # NUL bytes between lines: no line of their own
            line, part, held = u"".join(part), [], 0
            if first:
                first = False
                continue
            yield line
        after_cr = data[-1:] == u"\r"
    piece = decoder.decode(b"", True)
    if piece and held < MAX_LINE:
        part.append(piece[:MAX_LINE - held])
    if part and keep_last and not first:
        yield u"".join(part)


def read_lines(handle, limit=None, max_bytes=None, tally=None):
    """Lines of an open file (text or binary), each at most MAX_LINE characters (the rest of a longer line is
    dropped), at most ``limit`` of them, from at most ``max_bytes`` read in blocks (``tally``: see read_blocks)."""
    count = 0
    for line in split_lines(read_blocks(handle, max_bytes, tally=tally)):
        if limit is not None and count >= limit:
            return
        count += 1
        yield line
