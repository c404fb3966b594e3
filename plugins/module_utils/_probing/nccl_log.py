# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""NCCL's own words: the ``NCCL_DEBUG=INFO`` output of NCCL 2.4 to 2.2x, read from whatever holds it (a training job's
log with tracebacks and launcher prefixes, nccl-tests' output) into what NCCL decided: its version, the network and
NICs it chose, GPUDirect RDMA per HCA, the transports of its connections, its rings, trees and graph search results,
and its warnings and errors.

Lines are read one at a time, each clipped, and every list kept is bounded, so a log of any size costs bounded memory.
A line NCCL did not write, or one this parser does not know, is skipped; nothing in a log makes the parse fail.
Lines carry NCCL's prefix ``host:pid:tid [cudaDev]``; each host's lines are read into a section of their own, so one
multi-node log serves every host in it (``host_view``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._lines import MAX_LINE
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_topology_log import (
    empty as empty_topology, public as public_topology, read_line as read_topology_line,
)

MAX_ITEMS = 64          # entries kept per list (warnings, graphs, connections, ...) and keys per mapping
MAX_RANKS = 512         # (process, device, communicator) entries kept per host: Megatron makes many communicators
MAX_SECTIONS = 256      # hosts kept apart; the rest of a larger log's hosts are counted, not read
MAX_EVIDENCE = 300      # characters of a line kept as evidence

# host:pid:tid [cudaDev] (file.cc:123 )?NCCL INFO|WARN|TRACE|ERROR; the host after a start, a space or a
# launcher's prefix ("[rank0]:", "[1,0]<stdout>:", "10.0.0.1: ").
_PREFIX = re.compile(r"(?:^|(?<=[\s\]:>|]))([A-Za-z0-9][A-Za-z0-9._-]{0,252}):(\d{1,10}):(\d{1,10}) "
                     r"\[(\d{1,4}|-?\d{1,4}|[^\]\s]{0,16})\] (?:\S{1,200}:\d{1,6} )?NCCL (INFO|WARN|TRACE|ERROR|ABORT) ?")
# a timestamp a log collector put in front (CloudWatch glues "...-07:00" to the host name)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?")
_BARE = re.compile(r"\bNCCL (INFO|WARN) ")
_VERSION = re.compile(r"NCCL version:? ?(\d{1,3}\.\d{1,3}\.\d{1,3})(?:[-.][\w.]{0,20})?(?:\+cuda(\d{1,3}\.\d{1,3}))?")
_DRIVER = re.compile(r"cudaDriverVersion (\d{1,8})")
_NETWORK = re.compile(r"^(?:Using network (.{1,80}?)|Assigned NET plugin (.{1,80}?) to comm)\s*$")
# NCCL 2.23+: each net plugin's init, in NCCL's order ("Failed to initialize NET plugin IB", "Initialized NET plugin
# Socket"); where exactly one came up, that is the network, said or not
_NET_PLUGIN_INIT = re.compile(r"^(Failed to initialize|Initialized) NET plugin (\w{1,40})\s*$")
_NET_USING = re.compile(r"^NET/([A-Za-z][\w ]{0,40}?) ?: Using (.*)$")
_NET_ITEM = re.compile(r"\[(\d{1,4})\]([^\s:\[\]<]{1,64})(\S*)")
_OOB = re.compile(r"OOB ([^\s:<]{1,64}):([^\s<]{1,64})")
_BOOTSTRAP = re.compile(r"^Bootstrap ?: Using (?:\[\d{1,4}\])?([^\s:<\[]{1,64}):([^\s<]{1,64})")
_PLUGIN = re.compile(r"^NET/Plugin ?:? ?(.*)$")
_NO_DEVICE = re.compile(r"^NET/([A-Za-z][\w ]{0,40}?) ?: No device found")
_PLUGIN_LOADED = re.compile(r"(?:Loaded|Using) (?:net|network|non-device net|device net) plugin (?!version)"
                            r"'?([\w .-]{1,60}?)'?(?: \(v\d+\))?$")
# "NCCL_IB_HCA set by environment to mlx5_0", and since 2.12 for some settings "NCCL_IB_HCA set to mlx5_0"
_ENV = re.compile(r"^(NCCL_[A-Z0-9_]{1,60}) set (?:by environment )?to (.{0,200}?)\.?\s*$")
# NICs NCCL merged into one virtual device (2.19+): "[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}"
_MERGED = re.compile(r"\[(\d{1,4})\]=\{([^{}]{0,2000})\}")
_MERGED_ITEM = re.compile(r"\[\d{1,4}\] ?([^\s:\[\]<,{}]{1,64})(:[^\s,{}]{0,32})?")
# "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" (2.19+), "... for GPU 1b000 / HCA 0 (distance 5 > 4)" (before
# 2.12 the GPU is a busId; after, a rank: the line's process tells the GPU), "(DMABUF) enabled for HCA 0 'mlx5_0"
_GDR = re.compile(r"(?:NET/([\w ]{1,40}?) ?: )?GPU Direct RDMA(?: \(([^)]{0,40})\))? (Enabled|Disabled|enabled|disabled) "
                  r"for (?:GPU ([0-9a-fA-F]{1,16})(?:\[\d{1,4}\])? / )?HCA ([0-9a-fA-F]{1,16})(?: '([^'\s]{1,64})'?)?"
                  r"(?: \(([^)]{0,80})\))?")
# NCCL 2.23+: "GPU Direct RDMA Disabled for GPU/0-3 (rank 3) - NET/0-2 (distance 6 > 5)"
_GDR_NODES = re.compile(r"GPU Direct RDMA (Enabled|Disabled|enabled|disabled) for GPU/(?:\w{0,20}-)?(\d{1,6}) "
                        r"\(rank (\d{1,6})\) - NET/(?:\w{0,20}-)?(\d{1,6})\b(?: \(([^)]{0,80})\))?")
_GDR_OFF = re.compile(r"disabling GDR|GDR (?:support )?(?:is )?disabled|GPUDirect RDMA (?:is )?(?:not supported|disabled)",
                      re.I)
_DMABUF = re.compile(r"DMA-BUF is available on GPU device (\d{1,4})")
_CONNECT = re.compile(r"^(?:Channel|Ring) (\d{1,4})(?:/\d{1,4})? : (\d{1,6})(?:\[([0-9a-fA-F]{1,16})\])? -> "
                      r"(\d{1,6})(?:\[([0-9a-fA-F]{1,16})\])?(?: \[(send|receive)\])? via (.+)$")
_DEVICE_SEGMENT = re.compile(r"^(\d{1,4})(\(\d{1,6}\))?$")
# NCCL 2.8 and before name two transports in words: "via direct shared memory" (SHM), "via P2P/direct pointer"
_WORDED = re.compile(r"^(direct shared memory|P2P/direct pointer)\b")
# peer-to-peer between two GPUs of the node refused: "Could not enable P2P between dev 1(=81000) and dev 0(=41000)"
# (2.12+), "P2P is disabled between [NVLINK ]connected GPUs 1 and 0" (2.18+: NVML says P2P is not supported)
_P2P_OFF = re.compile(r"Could not enable P2P between dev (\d{1,4})\(=([0-9a-fA-F]{1,16})\) and dev (\d{1,4})"
                      r"\(=([0-9a-fA-F]{1,16})\)|P2P is disabled between (NVLINK )?connected GPUs (\d{1,4}) and "
                      r"(\d{1,4})")
_RING = re.compile(r"^Channel (\d{1,4})/(\d{1,4}) :(?:\s+\d{1,6})+\s*$")
_TREES = re.compile(r"^Trees((?: \[\d{1,4}\] \S+)+)")
_CHANNELS = re.compile(r"^(\d{1,4}) coll channels")
_PATTERN = re.compile(r"^Pattern (\d{1,3}), crossNic (\d), nChannels (\d{1,4}), bw (\d{1,10}(?:\.\d{1,9})?)/"
                      r"(\d{1,10}(?:\.\d{1,9})?), "
                      r"type (\w{1,8})/(\w{1,8})")
_COMM = re.compile(r"\brank (\d{1,6}) n[Rr]anks (\d{1,6})\b")
_CUDA_DEV = re.compile(r"\bcudaDev (\d{1,4})\b")
_NVML_DEV = re.compile(r"\bnvmlDev (\d{1,4})\b")
_BUS_ID = re.compile(r"\bbusId ([0-9a-fA-F]{1,16})\b")
_NNODES = re.compile(r"\bnNodes (\d{1,6})\b")
_ERROR = re.compile(r"NCCL error|nccl(?:Internal|System|UnhandledCuda|Remote|InvalidUsage|InvalidArgument)Error|"
                    r"NCCL Error \d|ncclCommInitRank failed|NCCL communicator was aborted")

# What a warning or error line is about: the first pattern that matches names its kind.
KINDS = (
    # IB async events NCCL warns of that are routine (a port coming up, the subnet manager re-registering)
    ("ib_event", re.compile(r"Got async event ?: ?(?:port active|client reregist|GID table change|LID change|"
                            r"SM change|P_Key change|port (?:LID|GUID))", re.I)),
    # a net plugin that found none of its own devices and stood aside (aws-ofi-nccl off AWS): NCCL goes on with its
    # internal IB or sockets, which NCCLRUN-001 judges
    ("plugin_declined", re.compile(r"NET/OFI (?:Only EFA provider is supported|Couldn't find any optimal provider|"
                                   r"No eligible providers were found)", re.I)),
    ("no_socket_interface", re.compile(r"no socket interface found|No usable listening interface|"
                                       r"no (?:IB|network) (?:device|interface)s? found", re.I)),
    ("net_error", re.compile(r"NET/(?:IB|OFI|Socket)|NET/\w+ ?:|ibv_\w+|Got completion|libfabric|\bOFI\b|"
                             r"libibverbs|librdmacm|libnccl-net|"
                             r"Connect to .* failed|Connection (?:refused|reset|closed)|remote process exited", re.I)),
    ("bootstrap", re.compile(r"Bootstrap|bootstrap", re.I)),
    ("cuda", re.compile(r"\bCuda\b|CUDA|cuda\w+ failed", re.I)),
)


def kind_of(text):
    for kind, pattern in KINDS:
        if pattern.search(text):
            return kind
    return "other"


def new_section():
    return {"version": None, "cuda": None, "cuda_driver": None, "network": None, "net_plugin": None,
            "net_kind": None, "net_devices": [], "net_lists": {}, "net_plugins": {}, "oob": None, "bootstrap": None, "env": {}, "gdr": [],
            "dmabuf_gpus": [], "transports": {}, "connections": [], "p2p_off": [], "shm": [], "no_device": [],
            "topology": empty_topology(), "ranks": [], "nranks": None, "nnodes": None,
            "channels": None, "trees": None, "graphs": [], "init_complete": False, "warnings": [],
            "warn_count": 0, "errors": [], "error_count": 0, "evidence": {}}


def keep_item(items, entry, limit=MAX_ITEMS):
    if len(items) < limit and entry not in items:
        items.append(entry)


def count_item(mapping, key, by=1):
    """Add to a bounded {key: count}: a key past MAX_ITEMS distinct ones is dropped."""
    if key in mapping or len(mapping) < MAX_ITEMS:
        mapping[key] = mapping.get(key, 0) + by


def _line_evidence(number, line):
    line = line.strip()
    return "line %d: %s" % (number, line if len(line) <= MAX_EVIDENCE else line[:MAX_EVIDENCE] + "...")


def _note(section, key, number, line):
    if key not in section["evidence"] and len(section["evidence"]) < 2 * MAX_ITEMS:
        section["evidence"][key] = _line_evidence(number, line)


def transport_name(via):
    """'NET/IB/0/GDRDMA' -> 'NET/IB/GDRDMA', 'P2P/IPC/read comm 0x12 nRanks 02' -> 'P2P/IPC/read'; the device index
    (any all-digit segment) dropped, what follows the last segment's first space dropped."""
    worded = _WORDED.match(via.strip())
    if worded:
        return worded.group(1)
    parts = via.strip().split("/")
    parts[-1] = parts[-1].split(" ", 1)[0]
    return "/".join(p for p in parts if p and not _DEVICE_SEGMENT.match(p))


def _net_index(via):
    """(NIC index, PXN) of a network connection: "NET/IB/1/GDRDMA" -> (1, False); "NET/IB/1(3)/GDRDMA", through
    the NIC of a peer GPU (rank 3) over NVLink, -> (1, True)."""
    parts = via.strip().split("/")
    if parts[0] != "NET":
        return None, False
    for part in parts[1:]:
        match = _DEVICE_SEGMENT.match(part.split(" ", 1)[0])
        if match:
            return int(match.group(1)), match.group(2) is not None
    return None, False


def _net_devices(kind, items):
    devices = []
    listed = items.split("; OOB", 1)[0]
    merged = _MERGED.findall(listed)
    if merged:  # each merged device's NICs, under its own index
        for index, inner in merged[:MAX_ITEMS]:
            for name, rest in _MERGED_ITEM.findall(inner)[:MAX_ITEMS]:
                port = re.match(r"^:(\d{1,4})/(\w{1,16})", rest or "")
                keep_item(devices, {"index": int(index), "name": name, "port": int(port.group(1)) if port else None,
                                    "link": port.group(2) if port else None, "address": None})
        return devices
    for index, name, rest in _NET_ITEM.findall(listed)[:MAX_ITEMS]:
        device = {"index": int(index), "name": name, "port": None, "link": None, "address": None}
        port = re.match(r"^:(\d{1,4})/(\w{1,16})", rest)
        if port:
            device["port"], device["link"] = int(port.group(1)), port.group(2)
        elif rest.startswith(":"):
            device["address"] = rest[1:].split("<", 1)[0] or None
        devices.append(device)
    return devices


def _p2p_off(section, number, line, message, pid):
    """A line that says peer to peer between two GPUs was refused, read into ``p2p_off``; whether it was one."""
    match = _P2P_OFF.search(message)
    if not match:
        return False
    if match.group(1) is not None:  # CUDA devices and their busIds
        entry = {"devs": [int(match.group(1)), int(match.group(3))], "numbering": "cuda",
                 "gpus": [match.group(2).lower(), match.group(4).lower()], "why": "not enabled", "nvlink": False}
    else:  # NVML's indices
        entry = {"devs": [int(match.group(6)), int(match.group(7))], "numbering": "nvml", "gpus": [None, None],
                 "why": "disabled", "nvlink": bool(match.group(5))}
    keep_item(section["p2p_off"], dict(entry, pid=pid))
    _note(section, "p2p_off", number, line)
    return True


def _message(section, number, line, message, level, pid=None, dev=None):
    """One NCCL line's message (after the prefix) read into a section; ``pid`` and ``dev``: the process and CUDA
    device of the line's prefix, which tell whose GPU a GDR or connection line is about."""
    if level == "WARN":
        section["warn_count"] += 1
        keep_item(section["warnings"], {"line": number, "kind": kind_of(message),
                                        "text": message.strip()[:MAX_EVIDENCE]})
        if "P2P" in message:  # "P2P is disabled between NVLINK connected GPUs 1 and 0" is a WARN (init then fails)
            _p2p_off(section, number, line, message, pid)
        return
    if message[:1] in "=C+ \tGN" and read_topology_line(section["topology"], message):
        _note(section, "topology", number, line)
        return
    match = _VERSION.search(message)
    if match:
        section["version"] = section["version"] or match.group(1)
        section["cuda"] = section["cuda"] or match.group(2)
        _note(section, "version", number, line)
        return
    match = _DRIVER.search(message)
    if match:
        section["cuda_driver"] = section["cuda_driver"] or int(match.group(1))
        return
    match = _NETWORK.match(message)
    if match:
        section["network"] = section["network"] or match.group(1) or match.group(2)
        _note(section, "network", number, line)
        return
    match = _NET_PLUGIN_INIT.match(message)
    if match:
        if len(section["net_plugins"]) < MAX_ITEMS:
            section["net_plugins"].setdefault(match.group(2), match.group(1) == "Initialized")
        _note(section, "net_plugin %s" % match.group(2), number, line)
        return
    match = _BOOTSTRAP.match(message)
    if match:
        section["bootstrap"] = section["bootstrap"] or {"name": match.group(1), "address": match.group(2)}
        _note(section, "bootstrap", number, line)
        return
    match = _PLUGIN.match(message)
    if match:
        text = match.group(1)
        if "No plugin found" in text or "using internal implementation" in text or "version 0" in text:
            section["net_plugin"] = section["net_plugin"] or "internal"
        else:
            loaded = _PLUGIN_LOADED.search(text)
            if loaded:
                section["net_plugin"] = loaded.group(1)
        return
    loaded = _PLUGIN_LOADED.search(message)
    if loaded and section["net_plugin"] in (None, "internal"):
        section["net_plugin"] = loaded.group(1)
        return
    match = _GDR.search(message)
    if match:
        enabled = match.group(3).lower() == "enabled"
        hca = match.group(5)
        keep_item(section["gdr"], {"enabled": enabled, "net": match.group(1), "via": match.group(2),
                                   "gpu": match.group(4).lower() if match.group(4) else None, "gpu_rank": None,
                                   "hca": int(hca, 16) if len(hca) <= 4 else None, "hca_name": match.group(6),
                                   "detail": match.group(7), "pid": pid, "dev": dev})
        _note(section, "gdr_enabled" if enabled else "gdr_disabled", number, line)
        return
    match = _GDR_NODES.search(message)
    if match:
        enabled = match.group(1).lower() == "enabled"
        keep_item(section["gdr"], {"enabled": enabled, "net": None, "via": None, "gpu": None,
                                   "gpu_rank": int(match.group(3)), "hca": int(match.group(4)), "hca_name": None,
                                   "detail": match.group(5), "pid": pid, "dev": dev})
        _note(section, "gdr_enabled" if enabled else "gdr_disabled", number, line)
        return
    if _GDR_OFF.search(message):
        keep_item(section["gdr"], {"enabled": False, "net": None, "via": None, "gpu": None, "gpu_rank": None,
                                   "hca": None, "hca_name": None, "detail": message.strip()[:MAX_EVIDENCE], "pid": pid,
                                   "dev": dev})
        _note(section, "gdr_disabled", number, line)
        return
    match = _NET_USING.match(message)
    if match:
        kind = match.group(1).strip()
        if kind not in section["net_lists"] and len(section["net_lists"]) < 8:
            # one list per kind: NCCL 2.4-2.5 list their socket devices before the IB ones they use
            section["net_lists"][kind] = _net_devices(kind, match.group(2))
            oob = _OOB.search(match.group(2))
            if oob and section["oob"] is None:
                section["oob"] = {"name": oob.group(1), "address": oob.group(2)}
            _note(section, "net_devices " + kind, number, line)
            if not section["net_devices"]:
                section["net_kind"], section["net_devices"] = kind, section["net_lists"][kind]
                _note(section, "net_devices", number, line)
        return
    match = _NO_DEVICE.match(message)
    if match:
        keep_item(section["no_device"], match.group(1).strip())
        _note(section, "no_device " + match.group(1).strip(), number, line)
        return
    if _p2p_off(section, number, line, message, pid):
        return
    match = _DMABUF.search(message)
    if match:
        keep_item(section["dmabuf_gpus"], int(match.group(1)))
        return
    match = _ENV.match(message)
    if match:
        if match.group(1) in section["env"] or len(section["env"]) < MAX_ITEMS:
            section["env"].setdefault(match.group(1), match.group(2).strip())
        return
    match = _CONNECT.match(message)
    if match:
        via = match.group(7)
        name = transport_name(via)
        count_item(section["transports"], name)
        _note(section, "transport " + name, number, line)
        if name.startswith("SHM") or name == "direct shared memory":
            # two GPUs of this node through host memory: who they are, for the P2P rule (NCCLRUN-009)
            keep_item(section["shm"], {"rank": int(match.group(2)), "gpu": (match.group(3) or "").lower() or None,
                                       "peer": int(match.group(4)), "peer_gpu": (match.group(5) or "").lower() or None,
                                       "transport": name, "pid": pid, "dev": dev})
        if name.startswith("NET/"):
            nic, pxn = _net_index(via)
            # "a[x] -> b[y] [send]": this node's GPU is a's; "[receive]": b's (the line is printed by the receiver)
            mine, theirs = (4, 2) if match.group(6) == "receive" else (2, 4)
            keep_item(section["connections"], {
                "rank": int(match.group(mine)), "gpu": (match.group(mine + 1) or "").lower() or None,
                "peer": int(match.group(theirs)), "direction": match.group(6), "nic": nic, "pxn": pxn,
                "transport": name, "pid": pid, "dev": dev})
        return
    match = _RING.match(message)
    if match:
        section["channels"] = max(section["channels"] or 0, int(match.group(2)))
        return
    match = _CHANNELS.match(message)
    if match:
        section["channels"] = max(section["channels"] or 0, int(match.group(1)))
        return
    match = _TREES.match(message)
    if match:
        section["trees"] = max(section["trees"] or 0, match.group(1).count("["))
        return
    match = _PATTERN.match(message)
    if match:
        keep_item(section["graphs"], {"pattern": int(match.group(1)), "cross_nic": match.group(2) == "1",
                                      "channels": int(match.group(3)), "bw_intra": float(match.group(4)),
                                      "bw_inter": float(match.group(5)), "type_intra": match.group(6),
                                      "type_inter": match.group(7)})
        return
    if "Init COMPLETE" in message:
        section["init_complete"] = True
    match = _COMM.search(message)
    if match and ("comm 0x" in message or "Init" in message):
        section["nranks"] = max(section["nranks"] or 0, int(match.group(2)))
        cuda, nvml, bus = _CUDA_DEV.search(message), _NVML_DEV.search(message), _BUS_ID.search(message)
        keep_item(section["ranks"], {"rank": int(match.group(1)), "nranks": int(match.group(2)),
                                     "cuda_dev": int(cuda.group(1)) if cuda else dev,
                                     "nvml_dev": int(nvml.group(1)) if nvml else None,
                                     "bus_id": bus.group(1).lower() if bus else None, "pid": pid, "dev": dev}, MAX_RANKS)
    match = _NNODES.search(message)
    if match:
        section["nnodes"] = max(section["nnodes"] or 0, int(match.group(1)))


def _error(section, number, line):
    section["error_count"] += 1
    keep_item(section["errors"], {"line": number, "kind": kind_of(line), "text": line.strip()[:MAX_EVIDENCE]})


def parse_nccl_log(lines):
    """What NCCL said, from an iterable of lines (``text.splitlines()`` or ``_lines.read_lines(handle)``).

    Returns {"lines": read, "nccl_lines": NCCL's, "hosts": [prefix host names, sorted], "hosts_dropped": count,
    "sections": {host or "": section}}; lines without NCCL's prefix (a bare "NCCL version", a PyTorch "NCCL error")
    go to the section "". A section holds version, cuda, cuda_driver, network ("Using network X"), net_plugin,
    net_kind and net_devices (the "NET/<kind> : Using" line, in NCCL's order: index, name, port, link, address), oob,
    bootstrap, env (NCCL_* set by environment), gdr (per HCA and GPU: enabled, detail), dmabuf_gpus, transports
    ({name: connection count}), connections (over the network: rank, gpu, peer, direction, nic index, transport),
    shm (between two GPUs of the node through host memory: rank, gpu, peer, peer_gpu, transport), p2p_off (GPU
    pairs NCCL could not or would not connect peer to peer: devs, gpus, why, nvlink), no_device (the NET kinds that
    found no device: "NET/IB : No device found"), ranks, nranks, nnodes, channels, trees, graphs (pattern,
    cross_nic, channels, bw, type), init_complete, warnings and errors ({line, kind, text}) with their counts, and evidence ({what: "line N: ..."})."""
    sections = {}
    dropped = set()
    total = nccl = 0
    # PyTorch prints NCCL's last error after its own: "ncclInternalError: ...", "Last error:", then the message
    recent_error = last_error = None
    for number, raw in enumerate(lines, 1):
        total = number
        line = raw[:MAX_LINE]
        stripped = line.strip()
        if not stripped:
            continue
        if last_error is not None:
            nccl += 1
            _error(last_error, number, line)
            recent_error = last_error = None
            continue
        if stripped == "Last error:" and recent_error is not None:
            last_error = recent_error
            continue
        recent_error = None
        if "NCCL" not in line and "nccl" not in line:
            continue
        if "-" in line:
            line = _TIMESTAMP.sub(" ", line)
        match = _PREFIX.search(line)
        pid = dev = None
        if match:
            host, level = match.group(1), match.group(5)
            message = line[match.end():]
            pid, dev = int(match.group(2)), int(match.group(4)) if match.group(4).isdigit() else None
        else:
            bare = _BARE.search(line)
            host, level = "", (bare.group(1) if bare else None)
            message = line[bare.end():] if bare else line
        if host not in sections:
            if len(sections) >= MAX_SECTIONS:
                dropped.add(host)
                if len(dropped) > 100000:
                    dropped = set(list(dropped)[:100000])
                continue
            sections[host] = new_section()
        section = sections[host]
        if _ERROR.search(line):
            nccl += 1
            _error(section, number, line)
            version = _VERSION.search(line)
            if version and not section["version"]:  # PyTorch's "NCCL error in: ..., NCCL version 2.14.3"
                section["version"] = version.group(1)
                _note(section, "version", number, line)
            recent_error = section
            continue
        if level is None:
            if _VERSION.search(line):
                nccl += 1
                _message(section, number, line, line[line.index("NCCL version"):] if "NCCL version" in line
                         else line, "INFO")
            continue
        nccl += 1
        _message(section, number, line, message, level, pid, dev)
    for section in sections.values():
        choose_net(section)
        section["topology"] = public_topology(section["topology"])
    hosts = sorted(h for h in sections if h)
    return {"lines": total, "nccl_lines": nccl, "hosts": hosts, "hosts_dropped": len(dropped),
            "sections": dict((h, s) for h, s in sections.items() if h or _used(s))}


def _used(section):
    empty = new_section()
    return any(section[k] != empty[k] for k in empty if k != "topology") or bool(section["topology"].get("seen"))


def choose_net(section):
    """The device list of the network NCCL used: the kind "Using network X" or the connections' NET/<kind> name,
    else the first listed."""
    up = [name for name, ok in sorted(section["net_plugins"].items()) if ok is True]
    if not section["network"] and len(up) == 1 and len(section["net_plugins"]) > 1:
        section["network"] = up[0]  # the only plugin that came up (2.23+ before "Assigned NET plugin")
    lists = section["net_lists"]
    if not lists:
        return
    used = [section["network"]] if section["network"] else []
    used += [t.split("/")[1] for t in sorted(section["transports"]) if t.startswith("NET/") and t.count("/") >= 1]
    for name in used:
        for kind in sorted(lists):
            if name == kind or name.startswith(kind) or kind.startswith(name):
                section["net_kind"], section["net_devices"] = kind, lists[kind]
                return
