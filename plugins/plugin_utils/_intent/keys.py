# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""How messages name a key (``fabric_networks.training.mtu``, ``fabric_bonds['bond 0']``) and the type checks every
validator of host variables shares."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def key_path(key, name):
    """``key.name`` for the error messages; a name that is not printable text shows as its repr, so a newline or
    NUL in an inventory key cannot break the message it is named in."""
    if isinstance(name, str) and name.isprintable():
        return "%s.%s" % (key, name)
    return "%s[%r]" % (key, name)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def mappings_in(value, where, errors):
    """Yield (index, where, mapping) of a list of mappings at ``where`` (None: none); what is not a list, and each
    item that is not a mapping, is an error naming its place -- appended as the walk reaches it, so the caller's
    errors about one entry stay between those about its neighbours."""
    if value is None:
        return
    if not isinstance(value, list):
        errors.append("%s: expected a list, got %r" % (where, value))
        return
    for index, entry in enumerate(value):
        at = "%s[%d]" % (where, index)
        if isinstance(entry, dict):
            yield index, at, entry
        else:
            errors.append("%s: expected a mapping, got %r" % (at, entry))
