# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The whole rule catalog: the engine with every rule family registered. Import CATALOG and the evaluation from here
(not from engine), so that no family is missing; a new family's file is added to the import below."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# re-exported: the callers' one import of the catalog and its evaluation
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import (  # noqa: F401  # pylint: disable=unused-import
    CATALOG, SEVERITY_RANK, evaluate_host, evaluate_inventory,
)
# importing a family registers its rules
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules import (
    bond, drift, gdr, lldp, link, nccl, net, numa, pcie, probe,
)

FAMILIES = (pcie, numa, net, bond, gdr, drift, nccl, probe, lldp, link)
