# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the three network backends share: the header and marker comment of every file this collection writes
(rendered and read back), routes, and the helpers of the parsers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
from ansible_collections.gpuops.fabric.plugins.module_utils._names import (
    UnsafeValue,
    line_value,
)


def on_root(root, path):
    """``path`` (absolute, as on the node) under ``root``, the directory standing for / (tests, image builds)."""
    return os.path.join(root, path.lstrip("/"))


def parse_ini(text, path=None, problems=None):
    """[(section, key, value)] of an INI-like file; keys may repeat (networkd's Address=). A line that is neither a
    comment, a [section] nor key=value, or a key before any section, is noted in ``problems`` with its line."""
    entries, section = [], None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if "=" in line and section is not None:
            key, value = line.split("=", 1)
            entries.append((section, key.strip(), value.strip()))
        elif problems is not None:
            problems.append("%s line %d: %s: %r" % (path, number, "a setting before any [section]" if "=" in line
                                                    else "neither [section] nor key=value", line[:80]))
    return entries


# The kinds of the interfaces in a network plan (plugin_utils/_intent/plan.py writes them, the backends render and
# read them back), in the order a plan lists them: ports first, then the bonds over them, then the VLANs.
IFACE_ETHERNET = "ethernet"
IFACE_BOND = "bond"
IFACE_VLAN = "vlan"
IFACE_KINDS = (IFACE_ETHERNET, IFACE_BOND, IFACE_VLAN)


def link_members(ifaces):
    by_name = dict((i["name"], i) for i in ifaces)
    for iface in ifaces:
        for member in iface["members"]:
            if member in by_name:
                by_name[member]["bond"] = iface["name"]
    return interface_order(ifaces)


def interface_order(ifaces):
    return sorted(ifaces, key=lambda i: (IFACE_KINDS.index(i["kind"]), i["name"]))


MARKER_RE = re.compile(r"^# network (.+) role (\S+) on (\S+)$", re.M)


def plan_iface(name, kind):
    return {"name": name, "kind": kind, "mtu": None, "addresses": [], "gateways": [], "routes": [],
            "members": [], "bond": None}


def int_or_none(value):
    text = str(value).strip()
    digits = text[1:] if text.startswith("-") else text
    # ASCII digits only, and not a thousand of them (int() would take "1_000" and other scripts' digits)
    if not 0 < len(digits) <= 18 or not all(c in "0123456789" for c in digits):
        return None
    return int(text)


def markers(texts):
    """{interface: [(network, role)]} from the marker comments of the given file contents."""
    found = {}
    for text in texts:
        for network, role, iface in MARKER_RE.findall(text):
            found.setdefault(iface, []).append((network, role))
    return found


def as_mapping(value):
    return value if isinstance(value, dict) else {}


def as_sequence(value):
    return value if isinstance(value, list) else []


HEADER = "Managed by gpuops.fabric; local changes are overwritten and reported as drift."


# One comment line per network an interface carries, so state=gathered can give the intent back by name.
MARKER = "# network %s role %s on %s"


def marker_lines(plan, ifaces):
    roles = plan.get("roles") or {}
    return [line_value(MARKER % (network, roles.get(network, network), iface["name"]), "comment")
            for iface in ifaces for network in iface.get("networks") or []]


def plan_routes(iface):
    routes = []
    for gateway in iface.get("gateways") or []:
        routes.append({"to": "default", "via": gateway, "metric": None})
    routes.extend(iface.get("routes") or [])
    return routes


def file_part(name):
    """An interface name as part of a file name: one path component, nothing else."""
    text = line_value(name, "interface name")
    if "/" in text or text in (".", "..") or not text:
        raise UnsafeValue("%r cannot be part of a file name" % text)
    return text


def primary_of(plan, bond_name):
    for iface in plan["interfaces"]:
        if iface["kind"] == IFACE_BOND and iface["name"] == bond_name:
            return iface.get("primary")
    return None
