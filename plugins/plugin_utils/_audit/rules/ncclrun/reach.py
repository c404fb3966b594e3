# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family NCCLRUN, how NCCL reached the GPUs and the network it was given: peer to peer or shared memory
between the node's GPUs (NCCLRUN-009), the interfaces its sockets and bootstrap bound to (NCCLRUN-010), the HCAs
NCCL_IB_HCA names (NCCLRUN-011). Each names the log lines it read and, from the facts, the likely cause."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_LOOPBACK, SOFTWARE_NETDEVS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import is_near
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable, host_rule
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.nccl_views import (
    log_evidence, log_views, pci_of_bus_id, socket_traffic, spans_nodes,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import active_rdma_ports
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.gdr import IOMMU_TRANSLATING, p2p_bridges

# ---- peer to peer between the node's GPUs ----------------------------------------------------------------------


def _text(value):
    return value if isinstance(value, str) and value else None


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bus_ids(view):
    """{("cuda"|"nvml"|"rank", number): busId} from the log's init lines ("rank 0 ... cudaDev 0 nvmlDev 4 busId
    95000"), each kept only where it names one busId (under Slurm every process has cudaDev 0)."""
    found = {}
    for entry in view["ranks"]:
        if not isinstance(entry, dict) or not _text(entry.get("bus_id")):
            continue
        for key, field in (("cuda", "cuda_dev"), ("nvml", "nvml_dev"), ("rank", "rank")):
            number = _int(entry.get(field))
            if number is not None:
                found.setdefault((key, number), set()).add(entry["bus_id"])
    return dict((k, v.pop()) for k, v in found.items() if len(v) == 1)


def _gpu(view, value, known=None):
    """The PCI address of a GPU as a P2P or SHM line writes it: a busId an init line gave, or one of at least four
    hex digits (newer NCCL writes a rank or a device index there: "3[3]", not a place in the PCI tree)."""
    value = _text(value)
    if not value:
        return None
    known = set(r.get("bus_id") for r in view["ranks"] if isinstance(r, dict)) if known is None else known
    return pci_of_bus_id(value) if value in known or len(value) >= 4 else None


def _p2p_pairs(view):
    """{(gpu, gpu): {"said": set of what the log says, "nvml": NVML refused it}} of the GPU pairs NCCL did not
    connect peer to peer, from "Could not enable P2P", "P2P is disabled" and connections through shared memory. A
    GPU is its PCI address where the log's init lines tell it, else "dev N" or "rank N" as the line names it."""
    pairs = {}
    buses = _bus_ids(view)
    known = set(buses.values())
    for entry in view["p2p_off"]:
        devs = entry.get("devs") if isinstance(entry, dict) else None
        if not isinstance(devs, list) or len(devs) != 2 or any(_int(d) is None for d in devs):
            continue
        gpus = entry.get("gpus") if isinstance(entry.get("gpus"), list) and len(entry["gpus"]) == 2 else [None, None]
        numbering = "nvml" if entry.get("numbering") == "nvml" else "cuda"
        named = [_gpu(view, g, known) or (pci_of_bus_id(buses[(numbering, d)]) if (numbering, d) in buses else None)
                 for g, d in zip(gpus, devs)]
        key = tuple(sorted(g or "%s dev %d" % (numbering, d) for g, d in zip(named, devs)))
        found = pairs.setdefault(key, {"said": set(), "nvml": False})
        why = entry.get("why") if entry.get("why") in ("disabled", "not enabled") else "refused"
        found["said"].add("P2P %s%s" % (why, " (NVLink)" if entry.get("nvlink") is True else ""))
        found["nvml"] = found["nvml"] or why == "disabled"
    for conn in view["shm"]:
        if not isinstance(conn, dict) or _int(conn.get("rank")) is None or _int(conn.get("peer")) is None:
            continue
        ends = ((conn.get("gpu"), conn["rank"]), (conn.get("peer_gpu"), conn["peer"]))
        named = [_gpu(view, g, known) or (pci_of_bus_id(buses[("rank", r)]) if ("rank", r) in buses else None)
                 for g, r in ends]
        key = tuple(sorted(g or "rank %d" % r for g, (_bus, r) in zip(named, ends)))
        transport = _text(conn.get("transport")) or "shared memory"
        pairs.setdefault(key, {"said": set(), "nvml": False})["said"].add("via %s" % transport)
    # a pair one of whose GPUs the log does not place ("P2P is disabled between connected GPUs 1 and 0" gives NVML's
    # indices, and only some processes print their init lines) is the one placed pair that shares its other GPU
    for key in [k for k in pairs if any(" " in g for g in k)]:
        placed = [g for g in key if " " not in g]
        matches = [k for k in pairs if k != key and " " not in "".join(k) and placed and placed[0] in k]
        if len(placed) == 1 and len(matches) == 1:
            merged = pairs[matches[0]]
            merged["said"] |= pairs[key]["said"]
            merged["nvml"] = merged["nvml"] or pairs[key]["nvml"]
            del pairs[key]
    return pairs


def _gpu_path(facts, a, b):
    for path in (facts.get("paths") or {}).get("gpu_gpu") or []:
        if {path.get("gpu"), path.get("peer")} == {a, b}:
            return path.get("type")
    return None


def _p2p_causes(ctx, view, pair, nvml):
    """What the facts and the log say keeps two GPUs from peer to peer, most telling first; and whether the cause is
    NCCL's own default (not a fault)."""
    causes, by_design = [], False
    env = view["env"]
    if str(env.get("NCCL_P2P_DISABLE", "")).strip() == "1":
        causes.append("NCCL_P2P_DISABLE=1 is set for the run")
    if env.get("NCCL_P2P_LEVEL"):
        causes.append("NCCL_P2P_LEVEL=%s is set for the run" % env["NCCL_P2P_LEVEL"])
    pci = ctx.pci() if isinstance(ctx.facts.get("pci"), list) else {}
    a, b = pair
    kind = _gpu_path(ctx.facts, a, b)
    if a in pci and b in pci and (kind is None or is_near(kind)):
        # below one switch (PIX, PXB) ACS decides whether P2P turns there or climbs to the root complex; through the
        # CPU it climbs anyway
        for bridge in p2p_bridges(pci, a, b):
            acs = pci[bridge].get("acs") or {}
            if acs.get("redirects_p2p"):
                causes.append("ACS redirect on %s %s between them (control %s)" % (
                    str(pci[bridge].get("kind")).replace("_", " "), bridge, acs.get("control")))
                break
    if a in pci and b in pci:
        translating = sorted(x for x in (a, b) if (pci[x].get("iommu") or {}).get("type") in IOMMU_TRANSLATING)
        if translating:
            causes.append("the IOMMU translates the DMA of %s" % ", ".join(translating))
        if kind == "SYS":
            causes.append("their path crosses the link between CPU sockets (SYS), where NCCL does not use peer to "
                          "peer by default")
            by_design = len(causes) == 1
        elif kind in ("NODE", "PHB"):
            causes.append("their path runs through the CPU (%s), where peer to peer depends on the platform" % kind)
    if nvml:
        by_design = False
        causes.append("NVML reports peer to peer unsupported between them (a VM or container that hides it, or GPUs "
                      "without it)")
    return causes, by_design


@host_rule(
    "NCCLRUN-009", "GPUs of the node exchange data through host memory, not peer to peer", "warn",
    """NCCL moved traffic between two GPUs of one node through shared host memory ("via SHM", "via direct shared
    memory") or said it could not enable peer to peer between them ("Could not enable P2P", "P2P is disabled
    between connected GPUs"). Every byte then crosses PCIe twice and the CPU's memory: half the intra-node
    bandwidth or less. The finding names the pair, the lines and the likely cause from the facts: NCCL_P2P_DISABLE
    or NCCL_P2P_LEVEL in the run, ACS redirect on a bridge between them, an IOMMU translating their DMA, a VM or
    container where NVML refuses P2P, a path through the CPU. Across CPU sockets (SYS) NCCL uses shared memory by
    default: information, not a fault.""",
    """Unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL; turn ACS off on the switch ports between the GPUs and boot bare-metal
    nodes with iommu=pt; in a VM, pass the GPUs through with their PCIe switch (or NVLink) and P2P enabled in the
    hypervisor; check `nvidia-smi topo -p2p r`.""")
def nccl_p2p(ctx):
    views = log_views(ctx)
    seen = False
    for source, view in views:
        pairs = _p2p_pairs(view)
        seen = seen or bool(pairs) or any(t.startswith("P2P") for t in view["transports"])
        for pair in sorted(pairs):
            said = pairs[pair]["said"]
            causes, by_design = _p2p_causes(ctx, view, pair, pairs[pair]["nvml"])
            ctx.finding("%s->%s" % pair, "GPUs %s and %s: %s%s" % (
                pair[0], pair[1], "; ".join(sorted(said)),
                "; likely: " + "; ".join(causes) if causes else "; no cause in the facts (see the log lines)"),
                dict(log_evidence(source, view, "p2p_off", "transport SHM/direct/direct",
                                  "transport direct shared memory"),
                     gpus=list(pair), said=sorted(said), causes=causes,
                     env=dict((k, v) for k, v in view["env"].items() if k.startswith("NCCL_P2P"))),
                severity="info" if by_design else None)
    if not seen:
        raise NotApplicable("the logs show no connection between two GPUs of the node (one GPU per node, or "
                            "NCCL_DEBUG_SUBSYS without INIT)")


# ---- the interfaces NCCL's sockets bound to -------------------------------------------------------------------

# interfaces that never carry traffic between nodes: loopback, container and VM bridges, tunnels, veth pairs, CNI
# overlays (their names as Docker, libvirt, LXD, Podman, Kubernetes CNIs and VPNs make them)
VIRTUAL_NAME = re.compile(r"^(lo|docker\d{0,4}|docker_gwbridge|br-[0-9a-f]{6,16}|br-int|br-ex|ovs-system|"
                          r"virbr\d{1,4}(?:-nic)?|lxcbr\d{1,4}|lxdbr\d{1,4}|lxc\w{1,16}|podman\d{1,4}|cni\d{1,4}|"
                          r"cbr\d{1,4}|flannel[.\w]{0,16}|cali\w{1,16}|cilium\w{0,16}|weave|vethwe-\w{1,16}|"
                          r"vxlan[.\w]{0,16}|genev_sys_\d{1,6}|antrea-\w{1,16}|nodelocaldns|kube-\w{1,16}|"
                          r"veth[\w-]{0,16}|tunl\d{1,4}|tun\d{1,4}|ip6tnl\d{1,4}|ip6gre\d{1,4}|gre\d{1,4}|"
                          r"gretap\d{1,4}|sit\d{1,4}|tap[0-9a-f][0-9a-f-]{0,15}|wg\d{1,4}|"
                          r"tailscale\d{1,4}|zt[0-9a-z]{6,14})$")


def virtual_interface(facts, name, address=None):
    """Why interface ``name`` cannot carry NCCL between nodes, or None: the loopback by its kind in the facts or its
    address (127.x, ::1); a bridge or virtual device of the facts, or one the facts do not know, by a name that
    container runtimes, hypervisors, CNIs and VPNs give theirs (a port, bond or VLAN of the facts never is)."""
    for nic in facts.get("nics") or []:
        if isinstance(nic, dict) and nic.get("name") == name:
            if nic.get("kind") == NETDEV_LOOPBACK:
                return "the loopback interface"
            if nic.get("kind") in SOFTWARE_NETDEVS and VIRTUAL_NAME.match(name):
                return "a %s device with no port below it" % nic["kind"]
            if nic.get("kind") not in SOFTWARE_NETDEVS:
                return None  # a port, a bond or a VLAN: whatever it is called
    if name == "lo" or (address or "").startswith("127.") or (address or "").strip("[]") == "::1":
        return "the loopback interface"
    if VIRTUAL_NAME.match(name):
        return "a container, VM, tunnel or overlay interface by its name"
    return None


@host_rule(
    "NCCLRUN-010", "NCCL's sockets bound to a loopback, container or virtual interface", "fail",
    """NCCL's socket transport ("NET/Socket : Using [0]lo:127.0.0.1", docker0, virbr0, a veth, a tunnel, a CNI
    overlay) or its bootstrap chose an interface that does not leave the node, or leaves it through a container's
    NAT: across nodes the run hangs at init or crawls through the overlay. NCCL picks the first interface that is
    up unless NCCL_SOCKET_IFNAME says otherwise, and in containers that is often the wrong one. The data transport
    on such an interface is a fault in a run that spans nodes, a warning where the log stops before saying (a
    communicator line with nNodes or more ranks than the node has GPUs, or connections through a network, say it);
    the bootstrap alone (control traffic) a warning. A run the log shows on one node (one rank, nNodes 1, every
    rank's init line on this node) sent nothing between nodes: not applicable, naming the interfaces.""",
    """Set NCCL_SOCKET_IFNAME to the training interface (the nccl role writes it from the intent), or exclude the
    virtual ones (NCCL_SOCKET_IFNAME=^lo,docker0,virbr0); in Kubernetes use the host network or a secondary network
    for the pods.""")
def nccl_socket_interface(ctx):
    views = log_views(ctx)
    gpus = len(ctx.facts.get("gpus") or [])
    seen, excused, made, judged = 0, set(), 0, 0
    for source, view in views:
        lists = view["net_lists"] if isinstance(view["net_lists"], dict) else {}
        data = [(_text(d.get("name")), _text(d.get("address"))) for d in (lists.get("Socket") or [])
                if isinstance(d, dict) and _text(d.get("name"))]
        control = [(_text(e.get("name")), _text(e.get("address"))) for e in (view["bootstrap"], view["oob"])
                   if isinstance(e, dict) and _text(e.get("name"))]
        seen += len(data) + len(control)
        spans = spans_nodes(view, gpus)
        judged += 1 if (data or control) and spans is not False else 0
        # the data transport: judged where NCCL moved (or, the log stopping after init, may move) data over sockets
        traffic = socket_traffic(view, gpus)
        said = set()
        # (another network's run sends nothing over them; a one-node run's are named in the reason)
        carried = data if traffic is not False or spans is False else []
        for role, found, severity in (("data", carried, "warn" if traffic is None else None),
                                      ("bootstrap", control, "warn")):
            reasons = {}
            for name, address in found:  # one reason per name: any of its addresses that never leaves the node
                if name not in said:
                    reasons[name] = reasons.get(name) or virtual_interface(ctx.facts, name, address)
            bad = sorted((n, why) for n, why in reasons.items() if why)
            said.update(n for n, _why in bad)  # the bootstrap on the data interface: said once, for the data
            if bad and spans is False:  # one rank, or every rank on this node: nothing crossed these interfaces
                excused.update(n for n, _why in bad)
                continue
            if not bad:
                continue
            made += 1
            unknown = "" if spans else (
                "; the log stops before saying whether the run spans nodes: across nodes it would hang or crawl")
            ctx.finding("%s %s" % (role, ",".join(n for n, _w in bad)), "NCCL's %s uses %s%s" % (
                "socket transport (NET/Socket)" if role == "data" else "bootstrap",
                "; ".join("%s (%s)" % (n, why) for n, why in bad), unknown),
                dict(log_evidence(source, view, "net_devices Socket", "bootstrap"), interfaces=[n for n, _w in bad],
                     env=dict((k, v) for k, v in view["env"].items() if k.startswith(("NCCL_SOCKET", "NCCL_IB"))),
                     spans_nodes=spans),
                severity=severity)
    if not seen:
        raise NotApplicable("the logs name no socket or bootstrap interface (no NET/Socket or Bootstrap line)")
    if excused and not made and not judged:  # every log a one-node run (another log judged clean: a pass)
        raise NotApplicable("the run stayed on one node (one rank, NCCL's nNodes 1, or every rank initialised on this "
                            "node): %s carried nothing between nodes" % ", ".join(sorted(excused)))


# ---- NCCL_IB_HCA against the node's HCAs ----------------------------------------------------------------------


def hca_filter(value):
    """NCCL_IB_HCA as NCCL reads it: (exclude, exact, [(name, port or None)]); one leading ^ excludes, then one
    leading = matches names exactly, otherwise an entry is a prefix ("mlx5" names mlx5_0 ... mlx5_N); entries are
    split at commas and not trimmed (" mlx5_1" names no device), a port after a colon."""
    text = str(value)
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    entries = []
    for part in text.split(",")[:64]:
        name, sep, port = part.partition(":")
        digits = re.match(r"[0-9]{1,4}", port)  # NCCL reads the port with atoi: its leading digits, else 0
        if name:
            entries.append((name, (int(digits.group(0)) if digits else 0) if sep else None))
    return exclude, exact, entries


def hca_matches(entry, exact, device, port=None):
    """Whether entry (name, port) names ``device`` (and its ``port``, where the entry gives one)."""
    named = device == entry[0] if exact else device.startswith(entry[0])
    return named and (entry[1] is None or port is None or entry[1] == port)


def _active_ports(facts):
    """[(device, port)] of the node's RDMA ports that are ACTIVE: NCCL opens no other."""
    return [(d["name"], p.get("port")) for d in facts.get("rdma") or [] if isinstance(d, dict) and _text(d.get("name"))
            for p in d.get("ports") or [] if isinstance(p, dict) and p.get("state") == "ACTIVE"]


def _could_not_open(ctx, source, view, value, where, devices, ports):
    """NCCL_IB_HCA names active ports of the node, and NCCL found no device: it could not open them."""
    ctx.finding("NCCL_IB_HCA", "NCCL_IB_HCA=%s (%s) names active ports of the node (%s), but NCCL found no device "
                "(%s) and %s: the process could not open them (a container or VM without /dev/infiniband or the "
                "verbs provider, a missing rdma-core, a VF not passed through)" % (
                    value, where, ", ".join("%s:%s" % p for p in ports), ", ".join("NET/%s" % k for k in
                                                                                   view["no_device"]),
                    "used network %s" % view["network"] if view["network"] else "chose no RDMA network"),
                dict(log_evidence(source, view, "network", *("no_device %s" % k for k in view["no_device"])),
                     value=value, where=where, unmatched=[], devices=devices,
                     active_rdma_ports=active_rdma_ports(ctx.facts), excluding=False))


@host_rule(
    "NCCLRUN-011", "NCCL_IB_HCA names no RDMA device of the node", "fail",
    """The run set NCCL_IB_HCA (in its environment, or in nccl.conf) to devices the node does not have: a typo, a
    name from another server model, mlx5_N numbered differently after a firmware or slot change. NCCL then finds no
    HCA ("NET/IB : No device found") and falls back to TCP sockets (often over IPoIB) without an error, or, where
    only some entries are wrong, leaves those rails unused. The finding names the entries and the devices the node
    has. Where the entries do name active ports of the node and NCCL still found no device, the process could not
    open them (a container or VM without the devices or the verbs library): that is a finding too.""",
    """Set NCCL_IB_HCA to the node's devices (ibv_devices, `rdma link show`; the nccl role writes it from the facts
    with fabric_nccl_mode: rdma), or leave it unset and let NCCL pick the HCAs nearest each GPU.""")
def nccl_ib_hca(ctx):
    views = log_views(ctx)
    devices = sorted(d["name"] for d in ctx.facts.get("rdma") or [] if isinstance(d, dict) and d.get("name"))
    if ctx.facts.get("rdma") is None:
        raise NotApplicable("facts subset 'rdma' was not gathered")
    conf = (ctx.facts.get("nccl") or {}).get("values") if isinstance(ctx.facts.get("nccl"), dict) else None
    judged = 0
    for source, view in views:
        value, where = view["env"].get("NCCL_IB_HCA"), "the run's environment"
        if value is None and isinstance(conf, dict) and conf.get("NCCL_IB_HCA"):
            value, where = conf["NCCL_IB_HCA"], "/etc/nccl.conf"
        if value is None:
            continue
        exclude, exact, entries = hca_filter(value)
        if not entries:
            continue
        judged += 1
        ports = _active_ports(ctx.facts)
        if exclude:  # what is left once the list is taken out: none, and NCCL finds no HCA
            left = [p for p in ports if not any(hca_matches(e, exact, *p) for e in entries)]
            if left and view["no_device"]:
                _could_not_open(ctx, source, view, value, where, devices, left)
            if left or not ports:
                continue
            unmatched, none_left = entries, True
        else:
            unmatched = [e for e in entries if not any(hca_matches(e, exact, *p) for p in ports)]
            none_left = len(unmatched) == len(entries)
        if not unmatched:
            if view["no_device"] and ports:
                named = [p for p in ports if any(hca_matches(e, exact, *p) for e in entries)]
                _could_not_open(ctx, source, view, value, where, devices, named)
            continue
        shown = ", ".join(repr(n) if n != n.strip() else n + (":%d" % p if p is not None else "") for n, p in unmatched)
        said = "NCCL_IB_HCA=%s (%s): %s %s (it has %s; active ports %s)" % (
            value, where, shown, "leaves no active port of the node" if exclude else
            "match%s no active port of the node" % ("es" if len(unmatched) == 1 else ""),
            ", ".join(devices) or "none", ", ".join("%s:%s" % p for p in ports) or "none")
        if view["no_device"]:  # NCCL opened none at all: not a lost rail, the whole network
            said += "; NCCL found no device (%s) and %s" % (
                ", ".join("NET/%s" % k for k in view["no_device"]),
                "used network %s" % view["network"] if view["network"] else "chose no RDMA network")
        active = active_rdma_ports(ctx.facts)
        ctx.finding("NCCL_IB_HCA", said, dict(
            log_evidence(source, view, "network", *("no_device %s" % k for k in view["no_device"])),
            value=value, where=where, unmatched=[n for n, _p in unmatched], devices=devices, active_rdma_ports=active,
            excluding=exclude),
            severity=None if none_left or view["no_device"] else "warn")
    if not judged:
        raise NotApplicable("the logs set no NCCL_IB_HCA that names devices (and nccl.conf none)")
