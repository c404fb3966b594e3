# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""report.json."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"
