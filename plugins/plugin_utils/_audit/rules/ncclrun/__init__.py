# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family NCCLRUN: what NCCL itself decided on a node, from its NCCL_DEBUG=INFO output and its topology dumps.
Importing it registers its rules, in this order: the network, NICs, GDR, errors, the PCI tree and settings NCCL
chose (chosen.py, NCCLRUN-001 to 008), then how it reached the GPUs and the network it was given (reach.py: peer
to peer or shared memory between the node's GPUs, the interface its sockets use, the HCAs NCCL_IB_HCA names)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.ncclrun import chosen, reach  # noqa: F401  # pylint: disable=unused-import
