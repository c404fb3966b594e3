# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""NCCL's own topology as its INFO log prints it (NCCL_DEBUG_SUBSYS with GRAPH, NCCL 2.7 to 2.2x): the tree under
each CPU and the path types it found, the same things a topology dump says:

    === System : maxBw 24.0 totalBw 24.0 ===
    CPU/1 (1/2/-1)                                  a CPU (NUMA node 1; CPU/FFFFFFFFFFFFFFFF: NUMA unknown)
    + PCI[24.0] - GPU/81000 (0)                     a GPU below it (busId 81000, rank 0)
    + PCI[24.0] - NIC/D1000
                  + NET[25.0] - NET/1 (...)         NET/1 is the NIC at D1000
    ==========================================
    GPU/81000 :GPU/81000 (0/5000.000000/LOC) CPU/1 (1/24.000000/PHB) NET/1 (3/24.000000/PHB) ...

Newer releases write ids with the system's index in front ("GPU/0-81000", "CPU/0-1"); it is dropped. An NVLink line
("+ NVL[...] - GPU/...") names a peer, not a child, and places nothing. Every map is bounded; a line that does not
fit is skipped."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

MAX_NODES = 256  # GPUs, NICs and NETs kept per host
MAX_PATHS = 4096

_SYSTEM = re.compile(r"^=== System : ")
_CPU = re.compile(r"^CPU/(?:\d{1,3}-)?([0-9A-Fa-f]{1,16})(?: \(|\s{0,8}$)")
_CHILD = re.compile(r"^\s{0,80}\+ (PCI|NET|NVL|SYS|C2C)\[[\d.]{1,12}\] - (GPU|NIC|NET|PCI|CPU|NVS)/(?:\d{1,3}-)?"
                    r"([0-9A-Za-z]{1,20})")
_PATH_HEAD = re.compile(r"^(GPU|NET)/(?:\d{1,3}-)?([0-9A-Za-z]{1,20}) :(?=(?:GPU|NET|CPU|NIC|NVS|PCI)/)")
_PATH = re.compile(r"(GPU|NET)/(?:\d{1,3}-)?([0-9A-Za-z]{1,20}) \(\d{1,6}/[\d.]{1,20}/([A-Z]{2,4})\)")
UNKNOWN_NUMA = "FFFFFFFFFFFFFFFF"


def empty():
    """What a host's log says of NCCL's topology: cpus ({id as printed: NUMA node or None}), gpus and nics ({busId:
    the CPU above it}), nets ({NET index: the NIC's busId}), paths ({"GPU/x->NET/n": type}); ``seen`` whether the
    log printed the block at all."""
    return {"seen": False, "cpus": {}, "gpus": {}, "nics": {}, "nets": {}, "paths": {}, "_cpu": None, "_nic": None}


def read_line(state, message):
    """Read one INFO message into ``state`` (empty()); True when it was a topology line."""
    if _SYSTEM.match(message):
        state["seen"], state["_cpu"], state["_nic"] = True, None, None
        return True
    match = _CPU.match(message)
    if match and state["seen"]:
        cpu = match.group(1).upper()
        if cpu not in state["cpus"] and len(state["cpus"]) < MAX_NODES:
            state["cpus"][cpu] = None if cpu == UNKNOWN_NUMA else int(cpu, 16) if len(cpu) <= 4 else None
        state["_cpu"], state["_nic"] = cpu, None
        return True
    match = _CHILD.match(message)
    if match and state["seen"]:
        link, kind, ident = match.group(1), match.group(2), match.group(3).lower()
        if link == "PCI" and kind == "GPU" and len(state["gpus"]) < MAX_NODES:
            state["gpus"].setdefault(ident, state["_cpu"])
        elif link == "PCI" and kind == "NIC" and len(state["nics"]) < MAX_NODES:
            state["nics"].setdefault(ident, state["_cpu"])
            state["_nic"] = ident
        elif link == "NET" and kind == "NET" and state["_nic"] and len(state["nets"]) < MAX_NODES:
            state["nets"].setdefault(ident, state["_nic"])
        return True
    match = _PATH_HEAD.match(message)
    if match:
        state["seen"] = True
        source = "%s/%s" % (match.group(1), match.group(2).lower())
        for kind, ident, path in _PATH.findall(message[match.end():])[:MAX_NODES]:
            target = "%s/%s" % (kind, ident.lower())
            if target != source and len(state["paths"]) < MAX_PATHS:
                state["paths"].setdefault("%s->%s" % (source, target), path)
        return True
    return False


def public(state):
    """The state without the reader's own place-keeping, for the parse's result."""
    return dict((k, v) for k, v in state.items() if not k.startswith("_"))


def checked(value):
    """A topology as a parse result holds it, from wherever it came (a stored probe result): each map a dict of
    text keys and text or None values, bounded; anything else left out."""
    result = public(empty())
    result["seen"] = True
    for key in ("cpus", "gpus", "nics", "nets", "paths"):
        found = value.get(key)
        for k, v in (found.items() if isinstance(found, dict) else ()):
            if len(result[key]) >= MAX_PATHS:
                break
            if isinstance(k, str) and (v is None or isinstance(v, (str, int)) and not isinstance(v, bool)):
                result[key][k] = v
    return result
