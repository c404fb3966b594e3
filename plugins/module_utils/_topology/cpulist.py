# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""CPU list and CPU mask conversions (kernel cpulist "0-3,8" and hex masks).

Both parsers take time linear in the length of their input and never build more than ``MAX_CPUS``
CPU numbers, whatever they are given: a CPU number at or above ``MAX_CPUS`` makes the input junk
(None). The bound is twice the largest CONFIG_NR_CPUS any Linux architecture allows (8192 on x86_64
with MAXSMP, arm64 and powerpc), so no real kernel or hwloc file comes near it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
MAX_CPUS = 16384
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdef")
_MAX_WORD_BITS = 32


def _decimal(text):
    """ASCII digits only (str.isdecimal() also takes other scripts' digits), at most 6 of them."""
    return 0 < len(text) <= 6 and all(c in _DIGITS for c in text)


def parse_cpulist(text, limit=MAX_CPUS):
    """``"0-3,8,10-11"`` -> [0, 1, 2, 3, 8, 10, 11]; empty -> []; junk -> None.

    Overlapping and repeated ranges are merged before they are expanded, so the work is bounded by
    the text's length plus ``limit``; a CPU number at or above ``limit`` is junk.
    """
    if text is None:
        return None
    text = text.strip()
    if not text:
        return []
    ranges = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not _decimal(lo) or (sep and not _decimal(hi)):
            return None
        lo_i = int(lo)
        hi_i = int(hi) if sep else lo_i
        if hi_i < lo_i or hi_i >= limit:
            return None
        ranges.append((lo_i, hi_i))
    ranges.sort()
    cpus = []
    last = -1
    for lo_i, hi_i in ranges:
        if hi_i > last:
            cpus.extend(range(max(lo_i, last + 1), hi_i + 1))
            last = hi_i
    return cpus


def parse_cpumask(text, limit=MAX_CPUS):
    """A CPU mask -> sorted CPU list; junk -> None.

    Accepts the kernel's form (32-bit hex words, most significant first, comma separated) and
    hwloc's (each word may carry ``0x`` and may be shortened, and an empty word stands for zero).
    Leading zero words are skipped whatever their number; a set bit at or above ``limit`` is junk.
    Linear in the text's length (no big-integer shifting).
    """
    if text is None:
        return None
    words = text.strip().split(",")
    if not any(word.strip() for word in words):
        return None
    cpus = []
    base = 0
    for word in reversed(words):
        word = word.strip().lower()
        if word.startswith("0x"):
            word = word[2:]
        if len(word) > _MAX_WORD_BITS // 4 or not all(c in _HEX for c in word):
            return None
        value = int(word, 16) if word else 0
        if value:
            if base + value.bit_length() > limit:
                return None
            while value:
                low = value & -value  # a word is at most 32 bits: small-integer arithmetic
                cpus.append(base + low.bit_length() - 1)
                value ^= low
        base += _MAX_WORD_BITS
    return cpus


def format_cpulist(cpus):
    """[0, 1, 2, 3, 8] -> ``"0-3,8"``."""
    if cpus is None:
        return None
    ranges = []
    start = prev = None
    for cpu in sorted(cpus):
        if start is None:
            start = prev = cpu
        elif cpu == prev + 1:
            prev = cpu
        elif cpu == prev:
            continue
        else:
            ranges.append((start, prev))
            start = prev = cpu
    if start is not None:
        ranges.append((start, prev))
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)
