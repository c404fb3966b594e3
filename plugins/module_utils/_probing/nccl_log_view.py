# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""One host's view of a parsed NCCL log (nccl_log.parse_nccl_log): its sections merged (a host's own lines and the
unprefixed ones), and which sections are about a given host. Values of the wrong type (a hand-written or stored
result) are left out, never raised on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_topology_log import (
    checked as checked_topology, public as public_topology,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log import (
    MAX_ITEMS, MAX_RANKS, choose_net, count_item, keep_item, new_section,
)

_SCALAR_TYPES = {"cuda_driver": int, "oob": dict, "bootstrap": dict}
_ITEM_TYPES = {"dmabuf_gpus": int, "no_device": str}  # the lists whose items are not objects


def merge_sections(sections):
    """One view of several sections (a host's own and the unprefixed lines): the first value of each scalar, lists
    and counts combined. A value of the wrong type (a hand-written result) is left out, never raised on."""
    view = new_section()
    view["topology"] = public_topology(view["topology"])
    for section in sections:
        if not isinstance(section, dict):
            continue
        for key, value in section.items():
            if key not in view or value is None:
                continue
            if key == "topology":  # one host's tree: the first section that printed it
                if isinstance(value, dict) and value.get("seen") is True and not view[key].get("seen"):
                    view[key] = checked_topology(value)
                continue
            default = view[key]
            if isinstance(default, list):
                for item in value if isinstance(value, list) else ():
                    if isinstance(item, _ITEM_TYPES.get(key, dict)):
                        keep_item(view[key], item, MAX_RANKS if key == "ranks" else MAX_ITEMS)
            elif isinstance(default, dict):
                for k, v in value.items() if isinstance(value, dict) else ():
                    if key == "transports":
                        if isinstance(v, int):
                            count_item(view[key], k, v)
                    elif k not in view[key] and len(view[key]) < 2 * MAX_ITEMS:
                        view[key][k] = v
            elif isinstance(default, bool):
                view[key] = default or value is True
            elif key in ("warn_count", "error_count"):
                view[key] += value if isinstance(value, int) else 0
            elif key in ("nranks", "nnodes", "channels", "trees"):
                if isinstance(value, int):
                    view[key] = max(view[key] or 0, value)
            elif default is None and isinstance(value, _SCALAR_TYPES.get(key, str)):
                view[key] = value
    view["net_devices"] = [d for d in view["net_devices"] if isinstance(d, dict) and "name" in d and "index" in d]
    choose_net(view)
    return view


def host_view(parsed, names, adopt=True):
    """The part of a parsed log that is about one host: the sections of the prefix host names in ``names`` (compared
    case-insensitively, also by short name), with the unprefixed lines. With ``adopt``, a log of one host that is not
    named is taken for this host (a container's hostname rarely is the inventory's); the view says so
    (``assumed_host``). Returns (view, None), or (None, why) when the log is about other hosts only."""
    wanted = set()
    for name in names:
        if name:
            name = str(name).lower()
            wanted.update([name, name.split(".", 1)[0]])
    sections = parsed.get("sections") if isinstance(parsed, dict) else None
    sections = sections if isinstance(sections, dict) else {}
    hosts = [h for h in parsed.get("hosts") or [] if isinstance(h, str) and h in sections] \
        if isinstance(parsed, dict) else []
    chosen = [h for h in hosts if h.lower() in wanted or h.lower().split(".", 1)[0] in wanted]
    assumed = False
    if not chosen and len(hosts) == 1 and adopt:
        chosen, assumed = hosts, True
    if hosts and not chosen:
        return None, "the log's NCCL lines come from %s, not from this host" % ", ".join(hosts[:5])
    view = merge_sections([sections[h] for h in chosen] + ([sections[""]] if "" in sections else []))
    view["hosts"] = chosen
    view["assumed_host"] = assumed
    return view, None
