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
# Importing a family registers its rules, in this order: the catalog's (and the evaluation's) order is the order of
# this list, then of the rules in each file. Reports sort findings, outcomes and rules, so it shows nowhere else.
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules import (
    pcie, numa, net, bond, gdr, drift, nccl, ncclrun, probe, lldp, link, stab,
)

FAMILIES = (pcie, numa, net, bond, gdr, drift, nccl, ncclrun, probe, lldp, link, stab)
