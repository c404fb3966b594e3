# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family NCCLRUN, what NCCL chose: its network, NICs, GPUDirect RDMA, errors, PCI tree and settings (its
NCCL_DEBUG=INFO output and its topology dump, from fabric_nccl_logs or the nccl-tests probe) checked against the
facts and the intent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import is_near, path_rank
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import active_rdma_ports
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.gpudirect import dmabuf_state
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.gdr import IOMMU_TRANSLATING, p2p_bridges
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import (
    NotApplicable, host_rule, inventory_rule,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.nccl_views import (
    gpu_of, host_logs, log_evidence, log_topologies, log_views, nccl_dumps, nccl_logs, nic_address, path_type,
    socket_traffic,
)

# NCCL_* settings that differ between hosts by design: names of a host's own interfaces and files, diagnostics
PER_HOST_SETTINGS = frozenset(("NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE",
                               "NCCL_TOPO_DUMP_FILE_RANK", "NCCL_HOSTID", "NCCL_COMM_ID", "NCCL_GRAPH_DUMP_FILE",
                               "NCCL_GRAPH_FILE", "NCCL_CONF_FILE"))


# ---- rules -----------------------------------------------------------------------------------------------------


@host_rule(
    "NCCLRUN-001", "NCCL fell back to TCP sockets", "fail",
    """NCCL moved data over TCP sockets (\"Using network Socket\", connections \"via NET/Socket\") on a node that has
    active RDMA ports or where RDMA is intended. That is a fraction of the bandwidth at several times the latency;
    the usual causes are a missing or mis-set NCCL_IB_HCA, NCCL_IB_DISABLE=1 left from a test, an RDMA stack NCCL
    could not open in the container (no /dev/infiniband, no libibverbs), or a net plugin that failed to load.""",
    """Read the log's NET/IB or NET/Plugin lines for why IB was not used; give the container /dev/infiniband and
    libibverbs, unset NCCL_IB_DISABLE, or set fabric_nccl_mode: tcp where TCP is what you want.""")
def nccl_socket_fallback(ctx):
    views = log_views(ctx)
    mode = ctx.expect.get("nccl_mode")
    if mode == "tcp":
        raise NotApplicable("fabric_nccl_mode is tcp: sockets are intended")
    active = active_rdma_ports(ctx.facts)
    wanted = mode == "rdma" or ctx.expect.get("rdma")
    if not active and not wanted:
        raise NotApplicable("no active RDMA port and RDMA not intended: sockets are NCCL's only network here")
    gpus = len(ctx.facts.get("gpus") or [])
    for source, view in views:
        traffic = socket_traffic(view, gpus)
        if traffic is False:
            continue
        why = "fabric_nccl_mode is rdma" if mode == "rdma" else (
            "RDMA is expected (fabric_expectations.rdma)" if wanted else "the node has active RDMA ports (%s)"
            % ", ".join(active[:4]))
        said = "NCCL used TCP sockets (%s) although %s" % (
            ", ".join(d["name"] for d in view["net_devices"]) or "network Socket", why)
        if traffic is None:  # the log stops after init: what it chose, not what it sent
            said = ("NCCL chose TCP sockets as its network (%s) although %s; the log stops before any connection "
                    "or communicator line, so whether the run spans nodes is not known: across nodes it would use "
                    "them" % (", ".join(d["name"] for d in view["net_devices"]) or "network Socket", why))
        env = dict((k, v) for k, v in view["env"].items() if k.startswith(("NCCL_IB", "NCCL_NET")))
        ctx.finding(source, said, dict(
            log_evidence(source, view, "network", "net_devices", "transport NET/Socket", "no_device IB"),
            active_rdma_ports=active, env=env, init_only=traffic is None), severity="warn" if traffic is None else None)


@host_rule(
    "NCCLRUN-002", "NCCL sends a GPU's traffic through a distant NIC", "warn",
    """For each GPU NCCL picks a NIC; when the one it uses is farther (PHB, NODE, SYS) than a NIC the facts show
    beside the GPU (PIX, PXB), every byte crosses the CPU or the socket link. NCCL does this when its view of the
    PCI tree is wrong (a VM, an NCCL_TOPO_FILE of another machine) or NCCL_IB_HCA leaves the near NIC out. PXN
    routes (through a peer GPU's NIC over NVLink) are NCCL's deliberate choice and not judged.""",
    """Check NCCL_IB_HCA names every near NIC; in a VM give NCCL the real topology (fabric_nccl_topo_file: true
    writes one from the facts); compare `nvidia-smi topo -m`.""")
def nccl_distant_nic(ctx):
    ctx.need("gpus")
    views = log_views(ctx)
    judged = 0
    for source, view in views:
        names = dict((d["index"], d["name"]) for d in view["net_devices"])
        used = {}  # GPU -> {NIC: transport}: NCCL spreads a GPU's channels over NICs on purpose (crossNic)
        for conn in view["connections"]:
            gpu, name = gpu_of(view, conn), names.get(conn.get("nic"))
            if not conn.get("pxn") and gpu and name is not None:
                used.setdefault(gpu, {}).setdefault(name, conn.get("transport"))
        for gpu in sorted(used):
            paths = dict((n, path_type(ctx.facts, gpu, nic_address(ctx.facts, n))) for n in used[gpu])
            paths = dict((n, t) for n, t in paths.items() if t)
            best = _best_nic(ctx.facts, gpu, [d["name"] for d in view["net_devices"]])
            if not paths or best is None:
                continue
            judged += 1
            if is_near(best[1]) and all(path_rank(t) > path_rank(best[1]) for t in paths.values()):
                name = sorted(paths, key=lambda n: (path_rank(paths[n]), n))[0]
                ctx.finding("%s->%s" % (gpu, name), "NCCL sends GPU %s through %s (%s) although %s is %s" % (
                    gpu, ", ".join("%s (%s)" % (n, paths[n]) for n in sorted(paths)) if len(paths) > 1 else name,
                    paths[name], best[0], best[1]),
                    dict(log_evidence(source, view, "net_devices"), gpu=gpu, nic=name, nic_path=paths[name],
                         nics=dict(sorted(paths.items())), nearest=best[0], nearest_path=best[1],
                         transport=used[gpu][name]))
    if not judged:
        raise NotApplicable("the logs name no GPU-to-NIC connection the facts can place (NCCL_DEBUG_SUBSYS without "
                            "INIT, a one-node run, or devices the facts do not have)")


def _best_nic(facts, gpu, names):
    """(name, path type) of the nearest of the NICs NCCL could use (those it listed) to a GPU."""
    best = None
    for name in names:
        nic = nic_address(facts, name)
        kind = path_type(facts, gpu, nic) if nic else None
        if kind and (best is None or path_rank(kind) < path_rank(best[1])):
            best = (name, kind)
    return best


@host_rule(
    "NCCLRUN-003", "NCCL carries training traffic on the management network", "fail",
    """NCCL moved collective data through an interface with an address in a management network of fabric_networks:
    it competes with SSH and monitoring on a slower link, and a saturated job can cut the node off. NCCL picks the
    first interface it finds when NCCL_SOCKET_IFNAME is unset or matches nothing.""",
    """Set NCCL_SOCKET_IFNAME to the training interface (`ansible-playbook gpuops.fabric.nccl` writes it from the
    intent) and check it selects what you mean (NCCL-002).""")
def nccl_on_management(ctx):
    views = log_views(ctx)
    management = [(n, v) for n, v in (ctx.expect.get("networks") or {}).items() if v.get("role") == "management"]
    if not management:
        raise NotApplicable("fabric_networks names no management network")
    for source, view in views:
        if not socket_traffic(view):
            continue  # the OOB/bootstrap interface is meant for this; only socket data traffic is judged
        for device in view["net_devices"]:
            network = _network_of(device, management, ctx.facts)
            if network:
                ctx.finding(device["name"], "NCCL sends data through %s (%s), on management network %s" % (
                    device["name"], device.get("address") or "address not logged", network),
                    dict(log_evidence(source, view, "net_devices", "network"), interface=device["name"],
                         NCCL_SOCKET_IFNAME=view["env"].get("NCCL_SOCKET_IFNAME")))


def _network_of(device, networks, facts):
    addresses = [device.get("address")] + [a.split("/", 1)[0] for n in facts.get("nics") or []
                                           if n.get("name") == device["name"] for a in (n.get("ipv4") or [])]
    for text in addresses:
        try:
            ip = ipaddress.ip_address((text or "").split("%", 1)[0])
        except ValueError:
            continue
        for name, net in networks:
            if any(ip in subnet for subnet in net.get("subnets") or []):
                return name
    return None


@host_rule(
    "NCCLRUN-004", "GPUDirect RDMA disabled although the hardware path allows it", "fail",
    """NCCL printed \"GPU Direct RDMA Disabled\" for an HCA that sits below the same PCIe switch as a GPU (PIX or
    PXB in the facts), or the data it received through that HCA, over any transport (IB, IBext, a net plugin such as
    AWS Libfabric), was not GDRDMA: every transfer is staged through host memory, which on such a node costs about
    half the network bandwidth. The facts say why where they can: nvidia_peermem not loaded (and no DMA-BUF), ACS
    redirecting peer-to-peer on the path.""",
    """Load nvidia_peermem (or use DMA-BUF: kernel 5.12+, the open GPU kernel module, NCCL_DMABUF_ENABLE=1), disable
    ACS redirect on the switch ports (GDR-002); NCCL_NET_GDR_LEVEL overrides NCCL's distance limit.""")
def nccl_gdr_disabled(ctx):
    ctx.need("gpus")
    if ctx.expect.get("nccl_mode") == "tcp":
        raise NotApplicable("fabric_nccl_mode is tcp: NCCL is meant to use sockets, without GPUDirect RDMA")
    views = log_views(ctx)
    judged = 0
    for source, view in views:
        if view["network"] == "Socket" or view["net_kind"] == "Socket":
            continue  # NET/Socket prints "GPU Direct RDMA Disabled" for every socket NIC: nothing to judge
        names = dict((d["index"], d["name"]) for d in view["net_devices"])
        # an HCA NCCL enabled GDR for anywhere, or moved GDRDMA data through, is not judged on another line's word
        working = set(names.get(c.get("nic")) for c in view["connections"] if "/GDRDMA" in (c.get("transport") or ""))
        working.update(e.get("hca_name") or names.get(e.get("hca")) for e in view["gdr"] if e.get("enabled"))
        disabled = {}  # HCA -> (near GPUs, the first line's entry)
        for entry in view["gdr"]:
            if entry.get("net") == "Socket":
                continue
            name = entry.get("hca_name") or names.get(entry.get("hca"))
            nic = nic_address(ctx.facts, name) if name else None
            if not nic:
                continue
            judged += 1
            if entry.get("enabled") or name in working:
                continue
            if entry.get("gpu") is not None or entry.get("gpu_rank") is not None:
                gpu = gpu_of(view, entry)
                gpus = [gpu] if gpu else []  # a GPU the line names but the log does not place: not judged
            else:
                gpus = [g["address"] for g in ctx.facts["gpus"]]
            near = [g for g in gpus if is_near(path_type(ctx.facts, g, nic))]
            if near:  # else NCCL is right: through the CPU, staging costs nothing more
                held = disabled.setdefault(name, (set(), entry))
                held[0].update(near)
        # any transport (IB, IBext, a net plugin such as AWS Libfabric): data received through an HCA without GDRDMA
        # went through host memory. Receives only: before Hopper NCCL reads the send side from host memory by design
        # (NCCL_NET_GDR_READ), so a send without GDRDMA says nothing.
        for conn in view["connections"]:
            name = names.get(conn.get("nic"))
            transport = conn.get("transport") or ""
            if conn.get("direction") != "receive" or transport.startswith("NET/Socket") or not name or conn.get("pxn"):
                continue
            nic = nic_address(ctx.facts, name)
            gpu = gpu_of(view, conn)
            if not nic or not gpu:
                continue
            judged += 1
            if "/GDRDMA" in transport or name in working or not is_near(path_type(ctx.facts, gpu, nic)):
                continue
            held = disabled.setdefault(name, (set(), {"detail": "connections via %s, not GDRDMA" % transport}))
            held[0].add(gpu)
        staged = ["transport " + t for t in sorted(view["transports"]) if t.startswith("NET/") and "/GDRDMA" not in t]
        for name in sorted(disabled):
            near, entry = sorted(disabled[name][0]), disabled[name][1]
            reasons = _gdr_reasons(ctx, near, nic_address(ctx.facts, name))
            ctx.finding(name, "NCCL disabled GPUDirect RDMA for %s, which shares a PCIe switch with GPU %s%s" % (
                name, ", ".join(near), "; the facts say: " + "; ".join(reasons) if reasons else
                "; the facts show no reason (IOMMU or driver: see the log)"),
                dict(log_evidence(source, view, "gdr_disabled", "net_devices", *staged), hca=name, gpus=near,
                     detail=entry.get("detail"), reasons=reasons))
    if not judged:
        raise NotApplicable("the logs say nothing of GPUDirect RDMA for an HCA the facts know (no RDMA network, or "
                            "NCCL_DEBUG_SUBSYS without INIT/NET)")


def _gdr_reasons(ctx, gpus, nic):
    reasons = []
    modules = ctx.facts.get("kernel_modules")
    if modules is not None and not (modules.get("nvidia_peermem") or modules.get("nv_peer_mem")):
        dmabuf, why = dmabuf_state(ctx.facts)
        if not dmabuf:
            reasons.append("neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF %s" % why)
    pci = ctx.pci()
    translated = sorted(a for a in gpus + [nic] if ((pci.get(a) or {}).get("iommu") or {}).get("type")
                        in IOMMU_TRANSLATING)
    if translated:
        reasons.append("the IOMMU translates DMA of %s" % ", ".join(translated))
    on_path = set(b for gpu in gpus for b in p2p_bridges(pci, gpu, nic))
    redirect = sorted(b for b in on_path if ((pci.get(b) or {}).get("acs") or {}).get("redirects_p2p"))
    if redirect:
        reasons.append("ACS redirects peer-to-peer on %s" % ", ".join(redirect))
    return reasons


@host_rule(
    "NCCLRUN-005", "NCCL reported errors or warnings", "fail",
    """NCCL printed WARN lines or an NCCL error: a missing socket interface, a failed RDMA call, a refused
    connection, a bootstrap timeout. Errors end the job; warnings often precede a hang or a silent fallback.""",
    """Read the quoted lines; the usual fixes: NCCL_SOCKET_IFNAME naming an interface that exists and is up on every
    node, the same NCCL version everywhere, RDMA devices and memlock limits in the container, firewalls open between
    the nodes.""")
def nccl_errors(ctx):
    views = log_views(ctx)
    for source, view in views:
        # routine IB events (a port coming up, the subnet manager re-registering) NCCL warns of are not judged
        warnings = [w for w in view["warnings"] if w.get("kind") != "ib_event"]
        serious = [w for w in warnings if w.get("kind") in ("no_socket_interface", "net_error", "bootstrap", "cuda")]
        if view["errors"] or serious:
            first = (view["errors"] + serious)[0]
            ctx.finding(source, "NCCL %s (%d error line(s), %d warning(s)); first at line %d: %s" % (
                "failed" if view["errors"] else "warned", view["error_count"], view["warn_count"], first["line"],
                first["text"]),
                {"log": source, "errors": view["errors"][:10], "warnings": warnings[:10],
                 "init_complete": view["init_complete"]})
        elif warnings:
            ctx.finding(source, "NCCL printed %d warning(s); first at line %d: %s" % (
                len(warnings), warnings[0]["line"], warnings[0]["text"]),
                {"log": source, "warnings": warnings[:10]}, severity="warn")


@host_rule(
    "NCCLRUN-006", "NCCL's view of the PCI tree differs from the facts", "warn",
    """NCCL builds rings and picks NICs from its own reading of the PCI tree, which its topology dump shows (and its
    INFO log, with NCCL_DEBUG_SUBSYS=GRAPH: "=== System", "CPU/FFFFFFFFFFFFFFFF", path lines). In VMs
    and with some BIOS settings it sees a flattened tree (no switches, NUMA -1): a GPU and NIC below one switch
    (PIX/PXB in the facts) look to NCCL as if joined through the CPU (PHB/SYS), so it disables GPUDirect RDMA and
    builds rings across the socket.""",
    """Give NCCL the real topology: `fabric_nccl_topo_file: true` in the nccl role writes /etc/nccl-topo.xml from the
    facts and points NCCL_TOPO_FILE at it.""")
def nccl_topology_view(ctx):
    ctx.need("gpus")
    dumps = nccl_dumps(ctx.observed) + log_topologies(ctx)
    if not dumps:
        raise NotApplicable("no NCCL topology dump of this host (NCCL_TOPO_DUMP_FILE in fabric_nccl_logs, or the "
                            "nccl-tests probe), and no log that prints NCCL's topology (NCCL_DEBUG_SUBSYS with GRAPH)")
    for source, dump, error in dumps:
        if error or not isinstance(dump, dict):
            ctx.finding(source, "NCCL topology dump %s could not be read: %s" % (source, error), {"dump": source},
                        severity="info")
            continue
        theirs = dict((g["address"], g) for g in dump.get("gpus") or [])
        mine = dict((g["address"], g) for g in ctx.facts["gpus"])
        common = sorted(set(theirs) & set(mine))
        if not common:
            ctx.finding(source, "NCCL's dump names GPUs %s, the facts %s: a dump of another machine?" % (
                ", ".join(sorted(theirs)[:4]) or "none", ", ".join(sorted(mine)[:4]) or "none"),
                {"dump": source, "dump_gpus": sorted(theirs), "facts_gpus": sorted(mine)})
            continue
        lost = [a for a in common if theirs[a].get("numa_node") is None]
        if lost and ((ctx.facts.get("numa") or {}).get("count") or 0) != 1:  # one NUMA node: nothing to place
            placed = [a for a in lost if mine[a].get("numa_node") is not None]
            ctx.finding("numa", "NCCL sees no NUMA node for GPU %s (NUMA -1): it cannot keep its threads and buffers "
                        "on the GPU's socket; %s" % (", ".join(lost[:4]) + (" and %d more" % (len(lost) - 4)
                                                                            if len(lost) > 4 else ""),
                                                     "the facts place it on node %s" % mine[placed[0]]["numa_node"]
                                                     if placed else "the facts know none either (a VM that shows "
                                                     "the guest no NUMA topology?)"),
                        {"dump": source, "gpus": lost, "facts_numa": dict((a, mine[a].get("numa_node"))
                                                                          for a in lost)})
        for address in common:
            for near in mine[address].get("nearest_nics") or []:
                if not is_near(near.get("type")):
                    continue
                seen = path_type(dump, address, near["nic"])
                if seen and path_rank(seen) > path_rank(near["type"]):
                    nic = "/".join(near.get("nic_names") or []) or near["nic"]
                    ctx.finding("%s->%s" % (address, near["nic"]), "NCCL sees GPU %s and NIC %s as %s; the facts "
                                "give %s (one PCIe switch)" % (address, nic, seen, near["type"]),
                                {"dump": source, "gpu": address, "nic": near["nic"], "nccl_path": seen,
                                 "facts_path": near["type"]})


@inventory_rule(
    "NCCLRUN-007", "NCCL version, CUDA driver or NCCL_* environment differs across hosts", "warn",
    """Ranks of one job must run the same NCCL (its protocol changes between releases; mixed versions hang or fail
    at init), and NCCL_* settings that differ between nodes (one node with NCCL_IB_DISABLE=1, another NCCL_ALGO)
    make the job as slow as the odd node.""",
    """Install one NCCL build (one container image) everywhere and set NCCL_* from one place (the nccl role).""")
def nccl_inventory_divergence(ctx, hosts):
    seen = {"version": {}, "cuda_driver": {}, "env": {}}
    for host in sorted(hosts):
        for _source, view, _why in nccl_logs(host, hosts[host][1]):
            if view is None:
                continue
            if view["version"]:
                seen["version"].setdefault(view["version"], set()).add(host)
            if view["cuda_driver"]:
                seen["cuda_driver"].setdefault(view["cuda_driver"], set()).add(host)
            for key, value in view["env"].items():
                if key not in PER_HOST_SETTINGS and not key.startswith("NCCL_DEBUG"):
                    seen["env"].setdefault(key, {}).setdefault(value, set()).add(host)
    judged = [k for k in ("version", "cuda_driver") if seen[k]]
    if not judged and not seen["env"]:
        raise NotApplicable("no NCCL log names a version, a driver or an NCCL_* setting")
    for key in ("version", "cuda_driver"):
        if len(seen[key]) > 1:
            ctx.finding(key, "NCCL logs show %d %s values: %s" % (len(seen[key]), key, _spread(seen[key])),
                        {key: dict((str(v), sorted(h)) for v, h in seen[key].items())}, host=None)
    for name in sorted(seen["env"]):
        values = seen["env"][name]
        if len(values) > 1:
            ctx.finding(name, "%s differs across hosts: %s" % (name, _spread(values)),
                        {name: dict((v, sorted(h)) for v, h in values.items())}, host=None)


def _spread(values):
    parts = []
    for value in sorted(values, key=str):
        hosts = sorted(values[value])
        more = " and %d more" % (len(hosts) - 3) if len(hosts) > 3 else ""
        parts.append("%s on %s%s" % (value, ", ".join(hosts[:3]), more))
    return "; ".join(parts)


@host_rule(
    "NCCLRUN-008", "An NCCL log given could not be used", "warn",
    """A file of fabric_nccl_logs could not be read, holds no NCCL line (NCCL_DEBUG=INFO was not set for the run),
    or holds only other hosts' lines: the NCCLRUN rules could not judge it.""",
    """Run the job with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH (NCCL_DEBUG_FILE=/path/nccl.%h.%p
    writes one file per process) and point fabric_nccl_logs at this host's files.""")
def nccl_unusable_logs(ctx):
    logs = host_logs(ctx)
    if not logs:
        raise NotApplicable("no NCCL log of this host (fabric_nccl_logs, or the nccl-tests probe)")
    usable = any(view is not None for _s, view, _w in logs)
    for source, view, why in logs:
        # another host's file (a glob over every pod's files) is only worth a word when none is this host's
        if view is None and not (usable and why and "not from this host" in why):
            ctx.finding(source, why, {"log": source})
