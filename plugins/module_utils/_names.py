# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Names from the inventory that reach a file, a command or a path: one strict pattern per kind of name, and the
quoting of each file format we write. Both, as defence in depth: the validators keep a bad name from being
planned at all, and the quoting keeps a name that slipped past them from meaning anything but itself.

Shipped to the nodes too (network_config checks the interface names it is handed): standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shlex

# Interface names. The kernel (dev_valid_name) takes any bytes but '/', ':', whitespace and NUL, up to IFNAMSIZ-1
# = 15, and not "." or "..". systemd's ifname_valid() also refuses non-ASCII and all-digit names (they read as
# ifindexes); networkd's [Match] Name= and netplan's match treat "*?[" as globs; lldpd's patterns use "!" and ",";
# a leading "-" reads as an option to ip/nmcli/networkctl; iproute2 prints "vlan@parent". So: ASCII letters,
# digits, "_", "-" and ".", starting with a letter, digit or "_", never all digits.
IFNAME_MAX = 15
_IFNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}\Z")
# Names the kernel or the tools give a meaning of their own: /proc/sys/net/ipv4/conf/{all,default},
# /sys/class/net/bonding_masters.
_IFNAME_RESERVED = ("all", "default", "bonding_masters")
IFNAME_RULE = ("1-15 characters of A-Z a-z 0-9 _ . -, starting with a letter, digit or _, not all digits, "
               "not all/default/bonding_masters")

# Network names (keys of fabric_networks) reach comments in every backend's files and the reports.
_NETWORK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}\Z")
NETWORK_RULE = "1-63 characters of A-Z a-z 0-9 _ -, starting with a letter or digit"

# Inventory host names become directory names under the render and plan folders. DNS names, IPv4 and IPv6
# addresses (":"), and Ansible's own aliases ("node017_a") fit; path separators, ".." and control characters do not.
_HOSTNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}\Z")
HOSTNAME_RULE = "1-253 characters of A-Z a-z 0-9 _ . : -, starting with a letter, digit or _, not . or .."

# lldpd's interface pattern list (``configure system interface pattern``): comma-separated globs, each optionally
# prefixed with "!" (exclude) or "!!" (never, whatever else matches).
_LLDPD_PATTERN = re.compile(r"^(!{0,2}[A-Za-z0-9_.*?-]{1,15})(,!{0,2}[A-Za-z0-9_.*?-]{1,15})*\Z")
LLDPD_PATTERN_RULE = "comma-separated interface globs (A-Z a-z 0-9 _ . - * ?), each optionally prefixed with ! or !!"


def _text(value):
    return isinstance(value, str) and not isinstance(value, bool)


def type_word(value):
    """What a YAML value is, in the user's words (Ansible wraps values in tagged subclasses: isinstance, not type)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__


def ifname_problem(name):
    """Why ``name`` is not an interface name this collection writes anywhere, or None when it is one."""
    if not _text(name):
        return "is not an interface name (a %s, not a string)" % type_word(name)
    if not name:
        return "is empty"
    if len(name.encode("utf-8")) > IFNAME_MAX:
        return "is longer than %d characters (Linux IFNAMSIZ)" % IFNAME_MAX
    if name.isdigit():
        return "is all digits (read as an interface index by ip and systemd)"
    if name in _IFNAME_RESERVED:
        return "is a name the kernel reserves (/proc/sys/net/ipv4/conf/%s, /sys/class/net)" % name
    if not _IFNAME.match(name):
        return "has characters outside the interface name rule (%s)" % IFNAME_RULE
    return None


VLAN_IDS = (1, 4094)  # 802.1Q: 0 means no VLAN, 4095 is reserved


def vlan_id(value):
    """``value`` when it is a VLAN id (an int from 1 to 4094; not a bool, not text), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not VLAN_IDS[0] <= value <= VLAN_IDS[1]:
        return None
    return value


def vlan_interface(device, vlan):
    """The name of VLAN ``vlan`` on ``device`` as the network role creates it and NCCL is told to use it
    (``bond0`` + 100 -> ``bond0.100``), or None when ``vlan`` is not a VLAN id. The name itself is checked by the
    caller with ifname_problem (a long port name plus an id can pass IFNAMSIZ)."""
    return None if vlan_id(vlan) is None else "%s.%d" % (device, vlan)


def network_problem(name):
    if not _text(name):
        return "is a %s; network names are strings (quote it in YAML, '%s', or name it, e.g. vlan%s)" % (
            type_word(name), name, name)
    if not _NETWORK.match(name):
        return "is not a network name (%s)" % NETWORK_RULE
    return None


def hostname_problem(name):
    if not _text(name) or name in (".", "..") or not _HOSTNAME.match(name):
        return "is not usable as a folder name (%s)" % HOSTNAME_RULE
    return None


def lldpd_pattern_problem(value):
    if not _text(value):
        return "must be a string of interface patterns"
    if value and not _LLDPD_PATTERN.match(value):
        return "is not an lldpd interface pattern list (%s)" % LLDPD_PATTERN_RULE
    return None


def safe_join(base, *parts):
    """``base``/``parts`` joined, refusing any result outside ``base``: an absolute part, a ".." part, a NUL, or a
    symlink inside ``base`` that points out of it."""
    for part in parts:
        if not part or part.startswith("/") or "\0" in part or ".." in part.split("/"):
            raise ValueError("%r would leave the folder %s" % (part, base))
    root = os.path.realpath(base)
    path = os.path.realpath(os.path.join(root, *parts))
    if path != root and not path.startswith(root.rstrip(os.sep) + os.sep):
        raise ValueError("%s would leave the folder %s" % ("/".join(parts), base))
    return path


# ---- quoting, one function per format -------------------------------------------------------------------
class UnsafeValue(ValueError):
    """A value that a format cannot carry (a newline in a line-based file), refused rather than written."""


_CONTROL = re.compile(u"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def line_value(value, where="value"):
    """``value`` for a one-line format without escapes (nccl.conf, a comment line): control characters refused."""
    text = str(value)
    if _CONTROL.search(text):
        raise UnsafeValue("%s: %r holds a control character (newline, NUL, ...) that this file cannot carry"
                          % (where, text))
    return text


_YAML_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")
# Plain scalars YAML 1.1 or 1.2 would read as something other than the same string.
_YAML_SPECIAL = frozenset("y n yes no on off true false null ~".split())


def yaml_scalar(value):
    """A YAML scalar that reads back as exactly this string: plain when that is unambiguous, else double-quoted
    with every character YAML's double-quoted style needs escaped (JSON's string syntax is a subset of it)."""
    text = str(value)
    if _YAML_PLAIN.match(text) and text.lower() not in _YAML_SPECIAL:
        return text
    return json.dumps(text, ensure_ascii=True)


def keyfile_value(value):
    """A GLib key-file value (NetworkManager's .nmconnection) that reads back as this string: GLib's escapes for
    backslash, newline, carriage return, and a leading space (``\\s``). A tab stays as it is but for a leading one
    (GLib would strip it), as NetworkManager itself writes it, so that what NetworkManager writes back is byte for byte what we wrote."""
    text = str(value)
    if "\0" in text:
        raise UnsafeValue("%r holds a NUL byte, which a key file cannot carry" % text)
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if text.startswith(" "):
        text = "\\s" + text[1:]
    elif text.startswith("\t"):
        text = "\\t" + text[1:]
    return text


def networkd_value(value, glob=False):
    """A systemd-networkd setting value. Unit files have no escape for a newline (only line continuation), so a
    control character is refused. ``glob``: for [Match] Name=, which is a whitespace-separated glob list read with
    fnmatch(): glob characters and backslash are escaped, so the name matches only itself."""
    text = line_value(value, "networkd value")
    if glob:
        if any(c.isspace() for c in text):
            raise UnsafeValue("%r holds whitespace, which splits a networkd Name= match" % text)
        text = re.sub(r"([\\*?\[\]])", r"\\\1", text)
    return text


def shell_word(value):
    """One word for /bin/sh (shlex.quote: single quotes, a quote inside closed, escaped and reopened)."""
    text = str(value)
    if "\0" in text:
        raise UnsafeValue("%r holds a NUL byte, which a shell word cannot carry" % text)
    return shlex.quote(text)
