# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""CPU list and CPU mask conversions (kernel cpulist "0-3,8" and hex masks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def parse_cpulist(text):
    """``"0-3,8,10-11"`` -> [0, 1, 2, 3, 8, 10, 11]; empty -> []; junk -> None."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return []
    cpus = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            return None
        lo, sep, hi = part.partition("-")
        if not lo.isdecimal() or (sep and not hi.isdecimal()):
            return None
        lo_i = int(lo)
        hi_i = int(hi) if sep else lo_i
        if hi_i < lo_i or hi_i - lo_i > 65536:
            return None
        cpus.update(range(lo_i, hi_i + 1))
    return sorted(cpus)


def parse_cpumask(text):
    """A CPU mask -> sorted CPU list; junk -> None.

    Accepts the kernel's form (32-bit hex words, most significant first, comma separated) and
    hwloc's (each word may carry ``0x`` and may be shortened, and an empty word stands for zero).
    """
    if text is None:
        return None
    words = text.strip().split(",")
    if not any(word.strip() for word in words):
        return None
    value = 0
    for word in words:
        word = word.strip().lower()
        if word.startswith("0x"):
            word = word[2:]
        if len(word) > 8 or (word and not all(c in "0123456789abcdef" for c in word)):
            return None
        value = (value << 32) | (int(word, 16) if word else 0)
    cpus = []
    bit = 0
    while value:
        if value & 1:
            cpus.append(bit)
        value >>= 1
        bit += 1
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
        else:
            ranges.append((start, prev))
            start = prev = cpu
    if start is not None:
        ranges.append((start, prev))
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)
