# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""report.json: indented for people, except its ``nodes``, one node result per line (a node's facts indented would
double the file; a line per node is what grep and jq -c want)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


def render_json(report):
    nodes = report.get("nodes")
    rest = dict((k, v) for k, v in report.items() if k != "nodes")
    text = json.dumps(rest, indent=2, sort_keys=False, default=str)
    if not isinstance(nodes, list) or not rest:
        return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"
    lines = ",\n".join("    " + json.dumps(node, default=str, separators=(",", ":")) for node in nodes)
    return "%s,\n  \"nodes\": [%s]\n}\n" % (text[:-2], "\n" + lines + "\n  " if nodes else "")
