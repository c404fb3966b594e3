# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The network backends by name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._network.netplan import render_netplan
from ansible_collections.gpuops.fabric.plugins.module_utils._network.networkd import render_networkd
from ansible_collections.gpuops.fabric.plugins.module_utils._network.networkmanager import render_networkmanager

NETWORK_RENDERERS = {"netplan": render_netplan, "networkmanager": render_networkmanager, "networkd": render_networkd}
