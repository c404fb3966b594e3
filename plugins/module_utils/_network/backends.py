# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The network backends by name.

Each backend module has the same names: DIRECTORY and OWNED_PREFIXES (where its files live and which of them this
collection owns), detect(root), render(plan), parse(texts, problems), interface_of(path) and
apply_commands(changes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._network import netplan, networkd, networkmanager

# In the order detection tries them: netplan when the node has netplan, else NetworkManager when it keeps
# keyfiles, else networkd.
BACKENDS = (("netplan", netplan), ("networkmanager", networkmanager), ("networkd", networkd))

BY_NAME = dict(BACKENDS)

NETWORK_RENDERERS = dict((name, module.render) for name, module in BACKENDS)


def backend_module(name):
    """The module of backend ``name``; KeyError when there is no such backend."""
    return BY_NAME[name]


def detect_backend(root):
    """The name of the first backend, in BACKENDS' order, that the node under ``root`` has."""
    return next(name for name, module in BACKENDS if module.detect(root))
