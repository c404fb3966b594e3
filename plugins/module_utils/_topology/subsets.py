# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The facts' subsets and sources, and how gather_subset expands: no reader imported. The topology_facts action plugin
runs in a worker process forked for each host and task, and imports what it imports afresh each time; the readers
(facts.py and all below it) cost it about 40 ms a host on the controller, the module's own names here nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SUBSETS = ("numa", "pci", "gpu", "nic", "rdma", "bond", "vlan", "paths", "nccl", "lldp", "link_modes", "counters")
MIN_SUBSETS = ("numa",)
SOURCES = ("sysfs", "hwloc_xml", "nccl_xml")


def resolve_subsets(requested):
    """Expand ``gather_subset`` (all, min, names, ``!name``, ``!all``) to a list in canonical order.

    As with Ansible's own facts: a list of only exclusions starts from ``all``; ``!all`` leaves
    just ``min`` plus what is named; ``min`` is always gathered unless ``!min`` is given.
    """
    items = [str(item).strip() for item in (requested or ["all"])]
    include, exclude = set(), set()
    for item in items:
        negate = item.startswith("!")
        name = item[1:] if negate else item
        if name not in SUBSETS and name not in ("all", "min"):
            raise ValueError("gather_subset: %r is not one of all, min, %s (optionally prefixed with !)"
                             % (item, ", ".join(SUBSETS)))
        if negate:
            if name not in ("all", "min"):
                exclude.add(name)
        elif name == "all":
            include.update(SUBSETS)
        elif name == "min":
            include.update(MIN_SUBSETS)
        else:
            include.add(name)
    if not any(not item.startswith("!") for item in items) and "!all" not in items:
        include.update(SUBSETS)
    if "!min" not in items:
        include.update(MIN_SUBSETS)
    else:
        exclude.update(set(MIN_SUBSETS) - set(n for n in items if n in MIN_SUBSETS))
    return [s for s in SUBSETS if s in include and s not in exclude]
