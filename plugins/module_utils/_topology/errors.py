# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Errors the collection's libraries raise for the user to read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class TopologyError(Exception):
    """The input cannot be read as a topology at all (the message names the path)."""
