# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family STAB: stability between two readings of the counters, and under the probes' load. Importing it
registers its rules, in this order: links, ports and devices (links.py), RoCE (roce.py), under load (load.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.stab import links, roce, load  # noqa: F401  # pylint: disable=unused-import
