# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What NCCL said about a host, read once for the NCCLRUN rules and the reports: its part of each NCCL log
(fabric_nccl_logs, the nccl-tests probe) and its topology dumps, the GPU and NIC each line is about, and the
reports' view of what NCCL chose beside what the hardware offers (nccl_choices)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log_view import host_view
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable, observed
PROBE_SOURCE = "nccl-tests probe"


def spans_nodes(view, gpus=None):
    """Whether the run of a log spans nodes: True for connections through a network (via NET/...), nNodes above 1 or
    more ranks than the node has GPUs (``gpus``); False for one rank, nNodes 1, or init lines of every rank of the
    largest communicator on this host; None where the log cannot tell (a log that stops after init with a few ranks: two
    ranks on an 8-GPU node may be two nodes of one GPU each)."""
    if any(t.startswith("NET/") for t in view["transports"]):
        return True
    nranks, nnodes = view["nranks"] or 0, view["nnodes"] or 0
    if nnodes > 1 or (gpus and nranks > gpus):
        return True
    if nranks == 1 or nnodes == 1:
        return False
    # every rank of the largest communicator initialised here (its own init lines: a smaller communicator's ranks,
    # a tensor-parallel group's 0..3 beside the world's 4..7, are other numbers)
    ranks = set(r["rank"] for r in view["ranks"] if isinstance(r, dict) and r.get("nranks") == nranks
                and isinstance(r.get("rank"), int) and not isinstance(r.get("rank"), bool))
    if 1 < nranks <= len(ranks) and all(rank in ranks for rank in range(nranks)):
        return False
    return None


def socket_traffic(view, gpus=None):
    """Whether NCCL moved data over TCP sockets between nodes: True for connections via NET/Socket, or the Socket
    network in a run that spans nodes (spans_nodes); False where it did not (another network, or a run the log shows
    on one node: a one-node run opens its network and sends nothing through it); None where NCCL chose sockets and
    the log cannot tell whether the run spans nodes (it stops after init, before any connection line, with too
    little said of its ranks)."""
    if any(t.startswith("NET/Socket") for t in view["transports"]):
        return True
    if view["network"] != "Socket" and not (view["network"] is None and list(view["net_lists"]) == ["Socket"]):
        return False  # NCCL 2.4-2.5 print no "Using network": their socket list alone is the choice
    return spans_nodes(view, gpus)


def host_logs(ctx):
    """nccl_logs of the context's host, read into views once for all the host's rules (a view merges its sections:
    no rule needs it done again)."""
    if "_nccl_logs" not in ctx.__dict__:
        ctx.__dict__["_nccl_logs"] = nccl_logs(ctx.host, ctx.observed)
    return ctx.__dict__["_nccl_logs"]


def log_views(ctx):
    """[(source, view)] of the host's NCCL logs that could be read; NotApplicable where there is none."""
    views = [(s, v) for s, v, _why in host_logs(ctx) if v is not None]
    if not views:
        raise NotApplicable("no NCCL log of this host (fabric_nccl_logs, or the nccl-tests probe)")
    return views


def log_evidence(source, view, *keys):
    """A finding's evidence: the log, and the lines of ``view`` noted under ``keys``."""
    lines = dict((k, view["evidence"][k]) for k in keys if k in view["evidence"])
    return dict({"log": source}, **lines)


def nccl_logs(host, expect):
    """[(source, view, why)] of every NCCL log about this host: the files of fabric_nccl_logs and the nccl-tests
    probe's output. ``view`` is the host's part of the log (``nccl_log_view.host_view``), None with ``why`` when the
    file could not be read, holds no NCCL line, or is about other hosts."""
    found = []
    for entry in observed(expect, "nccl_logs") or []:
        if entry.get("kind") != "log":
            continue
        if entry.get("error"):
            found.append((entry["path"], None, entry["error"]))
            continue
        # a one-host log is taken for this host only when no other host names the file too (a glob over all pods'
        # files would hand every host every pod's log)
        found.append(_view(entry["path"], entry.get("parsed"), host, adopt=entry.get("named_by", 1) == 1))
    probes = observed(expect, "probes")
    nccl = probes.get("nccl") if isinstance(probes, dict) else None
    if isinstance(nccl, dict) and isinstance(nccl.get("nccl_log"), dict):
        found.append(_view(PROBE_SOURCE, nccl["nccl_log"], host))
    return found


def _view(source, parsed, host, adopt=True):
    if not isinstance(parsed, dict) or not parsed.get("nccl_lines"):
        lines = parsed.get("lines") if isinstance(parsed, dict) else None
        return (source, None, "no NCCL line in %s%s: was NCCL_DEBUG=INFO set for the run?" % (
            source, " (%d lines read)" % lines if isinstance(lines, int) and lines else ""))
    view, why = host_view(parsed, [host], adopt)
    return (source, view, why)


def nccl_dumps(expect):
    """[(source, facts, error)] of the NCCL topology dumps of this host (fabric_nccl_logs, the probe)."""
    found = [(e["path"], e.get("facts"), e.get("error")) for e in observed(expect, "nccl_logs") or []
             if e.get("kind") == "topology_dump"]
    probes = observed(expect, "probes")
    nccl = probes.get("nccl") if isinstance(probes, dict) else None
    if isinstance(nccl, dict) and isinstance(nccl.get("nccl_topology"), dict):
        found.append((PROBE_SOURCE + " (NCCL_TOPO_DUMP_FILE)", nccl["nccl_topology"], None))
    return found


def log_topologies(ctx):
    """[(source, dump-like facts, None)] of the topologies NCCL printed in this host's logs (NCCL_DEBUG_SUBSYS with
    GRAPH), in the shape of a topology dump's facts (gpus with their NUMA node, paths.gpu_nic), so NCCLRUN-006 holds
    them to the facts the one way it holds dumps."""
    found = []
    for source, view in [(s, v) for s, v, _why in host_logs(ctx) if v is not None]:
        topology = view.get("topology") or {}
        if not topology.get("seen") or not topology.get("gpus"):
            continue
        cpus = topology.get("cpus") or {}
        gpus = [{"address": pci_of_bus_id(bus), "numa_node": cpus.get(cpu)} for bus, cpu in
                sorted(topology["gpus"].items()) if pci_of_bus_id(bus)]
        nets = topology.get("nets") or {}
        paths = []
        for key, kind in sorted((topology.get("paths") or {}).items()):
            head, _sep, tail = key.partition("->")
            if head.startswith("GPU/") and tail.startswith("NET/") and tail[4:] in nets:
                paths.append({"gpu": pci_of_bus_id(head[4:]), "nic": pci_of_bus_id(nets[tail[4:]]), "type": kind})
        found.append(("%s (NCCL's topology in the log)" % source, {"gpus": gpus, "paths": {"gpu_nic": paths}}, None))
    return found


def pci_of_bus_id(bus_id):
    """NCCL's busId ("1b000", "10001c000": domain, bus, device, function in hex, as NCCL packs them; "30" is
    0000:00:03.0) as a PCI address ("0000:1b:00.0"), or None."""
    if not isinstance(bus_id, str) or not re.match(r"^[0-9a-f]{1,16}$", bus_id):
        return None
    text = bus_id.zfill(9)
    return "%04x:%s:%s.%s" % (int(text[:-5], 16), text[-5:-3], text[-3:-1], text[-1]) if int(text[-1], 16) < 8 \
        else None


def gpu_of(view, entry):
    """The PCI address of the GPU a GDR or connection line is about. Its process and CUDA device (the line's
    ``host:pid:tid [dev]`` prefix) against that process's own init lines ("cudaDev 0 nvmlDev 4 busId 95000") first:
    what a line writes as the GPU changed meaning across releases (a busId before 2.12, a rank of the communicator
    after, the nvmlDev since 2.19), and under Slurm every process has cudaDev 0. Then a GDR line's rank, then a
    value that is a busId some init line gave."""
    ranks = [r for r in view["ranks"] if isinstance(r, dict) and r.get("bus_id")]
    pid, dev = entry.get("pid"), entry.get("dev")
    if pid is not None and dev is not None:
        mine = set(r["bus_id"] for r in ranks if r.get("pid") == pid and r.get("dev") == dev)
        if len(mine) == 1:
            return pci_of_bus_id(mine.pop())
    if entry.get("gpu_rank") is not None:
        mine = set(r["bus_id"] for r in ranks if r.get("rank") == entry["gpu_rank"] and
                   (pid is None or r.get("pid") == pid))
        if len(mine) == 1:
            return pci_of_bus_id(mine.pop())
    gpu = entry.get("gpu")
    if gpu and (gpu in set(r["bus_id"] for r in ranks) or (not ranks and len(gpu) >= 4)):
        return pci_of_bus_id(gpu)  # a busId; with no init lines in the log, one of at least four digits
    return None


def nic_address(facts, name):
    """The PCI function of a device NCCL names: an RDMA device (mlx5_0, NET/IB and OFI) or a netdev (NET/Socket)."""
    for rdma in facts.get("rdma") or []:
        if rdma.get("name") == name:
            return rdma.get("address")
    for nic in facts.get("nics") or []:
        if nic.get("name") == name:
            return nic.get("pci_address") or nic.get("address")
    return None


def path_type(facts, gpu, nic):
    for path in (facts.get("paths") or {}).get("gpu_nic") or []:
        if path.get("gpu") == gpu and path.get("nic") == nic:
            return path.get("type")
    return None


def gdr_state(view):
    """"enabled", "disabled", "mixed" or None: NCCL's GPUDirect RDMA lines, and GDRDMA connections as enabled."""
    states = set(g["enabled"] for g in view["gdr"])
    if any("/GDRDMA" in t for t in view["transports"]):
        states.add(True)
    return {(True,): "enabled", (False,): "disabled", (False, True): "mixed"}.get(tuple(sorted(states)))


def nccl_choices(host, facts, expect):
    """One row per NCCL log of a host: version, network, devices, transports, GDR, and per GPU of the facts the NICs
    NCCL used for it beside the nearest NIC the facts give."""
    rows = []
    facts = facts if isinstance(facts, dict) else {}
    for source, view, why in nccl_logs(host, expect):
        row = {"host": host, "log": source, "problem": why, "version": None, "cuda_driver": None, "network": None,
               "net_devices": [], "transports": [], "gdr": None, "gpus": []}
        if view is None:
            rows.append(row)
            continue
        names = dict((d["index"], d["name"]) for d in view["net_devices"])
        used = {}
        for conn in view["connections"]:
            gpu, name = gpu_of(view, conn), names.get(conn.get("nic"))
            if gpu and name:
                used.setdefault(gpu, {}).setdefault(name, conn["transport"] + (" (PXN)" if conn.get("pxn") else ""))
        gpus = []
        for gpu in facts.get("gpus") or []:
            near = (gpu.get("nearest_nics") or [{}])[0]
            chosen = used.get(gpu["address"], {})
            gpus.append({"gpu": gpu["address"],
                         "nccl_nics": [{"nic": n, "path": path_type(facts, gpu["address"], nic_address(facts, n)),
                                        "transport": t} for n, t in sorted(chosen.items())],
                         "nearest": "/".join(near.get("nic_names") or []) or near.get("nic"),
                         "nearest_path": near.get("type")})
        row.update(version=view["version"], cuda_driver=view["cuda_driver"], network=view["network"],
                   net_devices=[d["name"] for d in view["net_devices"]], transports=sorted(view["transports"]),
                   gdr=gdr_state(view), gpus=gpus)
        rows.append(row)
    return rows
