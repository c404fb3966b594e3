# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Numbers read from files nobody here wrote: bounded decimal and hex parsing, the limits a value must be in, and the
one test of "a usable number" for values that arrive already decoded (JSON, YAML, host variables)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re


# Plausible ranges of the numbers read, (low, high) inclusive: anything outside is no kernel's answer.
MAX_COUNTER = (1 << 64) - 1  # a kernel or driver counter is at most 64 bits
MAX_SPEED_MBPS = 3200000  # 3.2 Tbit/s: twice 1.6 Tbit/s, the fastest Ethernet rate standardised
LIMITS = {
    "numa_node": (0, 1023),          # MAX_NUMNODES: NODES_SHIFT is at most 10
    "distance": (0, 255),            # ACPI SLIT entries are one byte
    "mem_kb": (0, 1 << 44),          # 16 PiB per node
    "speed": (0, MAX_SPEED_MBPS),
    "mtu": (0, 65575),               # IP6_MAX_MTU, the largest any in-tree driver allows (loopback: 65536)
    "dev_port": (0, 65535),          # unsigned short
    "type": (0, 65535),              # ARPHRD_*, unsigned short
    "miimon": (0, 2147483647),       # milliseconds, an int
    "rate_gbps": (0, 3200),          # InfiniBand: 12x XDR is 2400 Gb/s
    "port": (1, 65535),
    "gid_index": (0, 65535),
    "vlan_id": (0, 4095),            # 12 bits
    "aggregator_id": (0, 65535),
    "link_failure_count": (0, 4294967295),
    "class": (0, 0xFFFFFF),
    "pci_id": (0, 0xFFFF),
}


# Speeds the kernel prints for "unknown": -1 (SPEED_UNKNOWN), and as unsigned on older kernels.
UNKNOWN_SPEEDS = (-1, 65535, 4294967295)


# Digit strings of any length a file can hold are numbers (then out of range); int() of a few thousand digits is
# quick, and Python refuses more than 4300.
INT_RE = re.compile(r"^-?[0-9]{1,4000}$")
RATE_RE = re.compile(r"^[0-9]{1,4000}(?:\.[0-9]{1,9})?$")
HEX_RE = re.compile(r"^(?:0[xX])?[0-9a-fA-F]{1,16}$")


def finite(value, low=None, high=None):
    """``value`` when it is an int or a float (never a bool) that is finite, that a float can hold, and within
    ``low``..``high`` (inclusive; None leaves that side open), else None.

    The one guard for numbers that arrive decoded: JSON gives NaN, Infinity and a 400-digit integer as readily as
    1.5, YAML gives true for yes, and a host variable can hold anything. Every consumer of such a number calls this
    instead of its own isinstance and isfinite (tests/unit/plugins/module_utils/test_values.py holds that)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        if not math.isfinite(value):  # an int past a float's range raises instead
            return None
    except OverflowError:
        return None
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return value


def is_hex(text):
    return bool(text) and all(c in "0123456789abcdef" for c in text)


def parse_decimal(text):
    """An ASCII decimal integer (optionally negative), else None (str.isdecimal() and int() also take other
    scripts' digits, "+5" and "1_0"); at most 4000 digits."""
    text = (text or "").strip()
    return int(text) if INT_RE.match(text) else None


def in_limits(value, what):
    low, high = LIMITS[what]
    return value is not None and low <= value <= high


def short_text(text):
    """A value for a warning: long ones (a 400-digit number) cut, with their length."""
    return text if len(text) <= 24 else "%s... (%d characters)" % (text[:20], len(text))


def hex_field(text, high=0xFFFF):
    """A hex number up to ``high``, else None."""
    if not text or not HEX_RE.match(text):
        return None
    value = int(text, 16)
    return value if value <= high else None


def hex_pair(text):
    """``"15B3:1003"`` -> (0x15b3, 0x1003); anything else -> (None, None)."""
    first, sep, second = (text or "").partition(":")
    if not sep:
        return None, None
    a, b = hex_field(first.strip()), hex_field(second.strip())
    return (a, b) if a is not None and b is not None else (None, None)
