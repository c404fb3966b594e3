# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""NCCL's environment for a node, from its facts and the network intent; nccl.conf rendered and parsed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem, line_value, UnsafeValue
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_LOOPBACK
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import NEAR, is_near
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import (
    below_vlans, ifname_matches, nic_by_name, roce_v2_gid_index,
)

HEADER = "# Managed by gpuops.fabric (role gpuops.fabric.nccl); local changes are overwritten and reported as drift."
MODES = ("tcp", "rdma")


# nvidia-smi's path words to NCCL's: NCCL calls every path through a CPU's host bridge PHB.
NCCL_PATH = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}
PATH_ORDER = ("PIX", "PXB", "PHB", "SYS")  # NCCL_NET_GDR_LEVEL's words, nearest first
GDR_DEFAULT = NEAR[-1]  # the farthest near path: NCCL's own default level, PXB


# Variables NCCL documents (2.18-2.23 user guide, "Environment Variables"); others pass through with a warning.
KNOWN = frozenset("""
NCCL_SOCKET_IFNAME NCCL_SOCKET_FAMILY NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC NCCL_SOCKET_NTHREADS
NCCL_NSOCKS_PERTHREAD NCCL_CROSS_NIC NCCL_IB_HCA NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT NCCL_IB_GID_INDEX
NCCL_IB_ADDR_FAMILY NCCL_IB_ADDR_RANGE NCCL_IB_ROCE_VERSION_NUM NCCL_IB_SL NCCL_IB_TC NCCL_IB_FIFO_TC
NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_TIMEOUT NCCL_OOB_NET_ENABLE NCCL_OOB_NET_IFNAME NCCL_UID_STAGGER_THRESHOLD
NCCL_UID_STAGGER_RATE NCCL_NET NCCL_NET_PLUGIN NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCL_IGNORE_CPU_AFFINITY
NCCL_CONF_FILE NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD
NCCL_CONVERSION_TIMEOUT NCCL_TOPO_FILE NCCL_TOPO_DUMP_FILE NCCL_SET_THREAD_NAME NCCL_P2P_DISABLE NCCL_P2P_LEVEL
NCCL_P2P_DIRECT_DISABLE NCCL_SHM_DISABLE NCCL_BUFFSIZE NCCL_NTHREADS NCCL_MAX_NCHANNELS NCCL_MIN_NCHANNELS
NCCL_CHECKS_DISABLE NCCL_CHECK_POINTERS NCCL_LAUNCH_MODE NCCL_IB_DISABLE NCCL_IB_AR_THRESHOLD NCCL_IB_QPS_PER_CONNECTION
NCCL_IB_SPLIT_DATA_ON_QPS NCCL_IB_CUDA_SUPPORT NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_ADAPTIVE_ROUTING
NCCL_IB_ECE_ENABLE NCCL_IB_MERGE_NICS NCCL_MEM_SYNC_DOMAIN NCCL_NET_GDR_LEVEL NCCL_NET_GDR_READ
NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_SINGLE_RING_THRESHOLD NCCL_LL_THRESHOLD NCCL_TREE_THRESHOLD
NCCL_ALGO NCCL_PROTO NCCL_NVB_DISABLE NCCL_PXN_DISABLE NCCL_P2P_PXN_LEVEL NCCL_RUNTIME_CONNECT
NCCL_GRAPH_REGISTER NCCL_LOCAL_REGISTER NCCL_LEGACY_CUDA_REGISTER NCCL_SET_STACK_SIZE NCCL_GRAPH_MIXING_SUPPORT
NCCL_DMABUF_ENABLE NCCL_NVLS_ENABLE NCCL_IB_MQP_RETRY_ALL NCCL_IB_MQP_RETRY_CNT NCCL_IB_MQP_RETRY_SLEEP_MSEC
NCCL_NET_DISABLE_INTRA NCCL_NET_FORCE_FLUSH NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE NCCL_WORK_FIFO_DEPTH
NCCL_CTA_POLICY NCCL_NVLS_CHUNKSIZE NCCL_IB_ROCE_VERSION_NUM NCCL_HOSTID NCCL_COMM_BLOCKING NCCL_MNNVL_ENABLE
NCCL_RAS_ENABLE NCCL_RAS_ADDR NCCL_RAS_TIMEOUT_FACTOR NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE
""".split())
NAME = re.compile(r"^NCCL_[A-Z0-9_]+$")


def socket_threads(speed_mbps):
    """(NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD) for a TCP link of this speed, or None for NCCL's defaults.

    NCCL's guide suggests 4 threads x 4 sockets for generic 100G networks (product at most 64); 25-50G links get
    2 x 2; slower links keep NCCL's defaults.
    """
    if not speed_mbps:
        return None
    if speed_mbps >= 100000:
        return 4, 4
    if speed_mbps >= 25000:
        return 2, 2
    return None


def _link_speed(facts, iface):
    """(speed, bond legs) under an interface: a VLAN's parent, a bond's own speed (the sum the kernel reports)."""
    nic = below_vlans(facts, iface, keep_last=True)
    if nic is None:
        return None, 0
    legs = len([n for n in facts.get("nics") or [] if n.get("bond_master") == nic["name"]])
    return nic.get("speed_mbps"), legs


def _training_gid(port, interface, address):
    """The RoCE v2 GID index of the training interface's address (``address``: its first in the facts) on ``port``,
    found as the rdma probe finds its own (roce_v2_gid_index); where the table has none (the address not
    there yet, a table not read), the first RoCE v2 GID with an IPv4 address that names the interface; else the
    facts' choice (the port's own netdev's)."""
    index = roce_v2_gid_index(port, address) if address else None
    if index is not None:
        return index
    for gid in port.get("gids") or []:
        if isinstance(gid, dict) and gid.get("type") == "RoCE v2" and gid.get("ipv4") and interface \
                and gid.get("netdev") == interface and isinstance(gid.get("index"), int):
            return gid["index"]
    return port.get("roce_v2_gid_index")


def _first_ipv4(facts, interface):
    """The interface's first IPv4 address in the facts (they list them sorted by address), or None."""
    addresses = (nic_by_name(facts, interface) or {}).get("ipv4")
    for entry in addresses if isinstance(addresses, list) else []:
        if isinstance(entry, str) and entry:
            return entry.partition("/")[0]
    return None


def _hcas_by_closeness(facts, notes, warnings, interface=None):
    """Active RDMA ports, those nearest each GPU first (GPU order), as (hca, port, link_layer, gid_index, path)."""
    active = []
    address = _first_ipv4(facts, interface) if interface else None
    for dev in facts.get("rdma") or []:
        for port in dev.get("ports") or []:
            if port.get("state") == "ACTIVE":
                active.append((dev["name"], port["port"], port.get("link_layer"),
                               _training_gid(port, interface, address), dev.get("numa_node")))
    by_name = dict(((a[0], a[1]), a) for a in active)
    ordered, paths = [], {}
    for gpu in sorted(facts.get("gpus") or [], key=lambda g: g.get("index") if g.get("index") is not None else 0):
        for near in gpu.get("nearest_nics") or []:
            for name in near.get("nic_names") or []:
                for key in sorted(k for k in by_name if k[0] == name):
                    if key not in ordered:
                        ordered.append(key)
                    paths.setdefault(gpu.get("index"), []).append(near.get("type"))
    if not facts.get("gpus"):
        ordered = sorted(by_name, key=lambda k: (by_name[k][4] if by_name[k][4] is not None else 99, k))
        notes.append("NCCL_IB_HCA: no GPUs in the facts; every active port, by NUMA node")
    else:
        left = sorted(set(by_name) - set(ordered))
        if left:
            notes.append("NCCL_IB_HCA: not nearest to any GPU, left out: %s" % ", ".join("%s:%d" % k for k in left))
        notes.append("NCCL_IB_HCA: the ports nearest GPU 0, 1, ... in that order")
    return [by_name[k] for k in ordered], paths


def nccl_settings(facts, interface, mode="tcp", overrides=None, host="node", planned=None):
    """Returns (settings as an ordered list of (name, value)), notes, warnings, errors).

    ``planned``: interface names the network role is about to create; they count as present (pre-flight on a new
    cluster, before the bond and VLAN exist)."""
    notes, warnings, errors = [], [], []
    settings = []
    facts = facts or {}
    if mode not in MODES:
        errors.append("fabric_nccl_mode: %r is not one of %s" % (mode, ", ".join(MODES)))
        return settings, notes, warnings, errors
    if interface and ifname_problem(interface):
        errors.append("fabric_nccl_interface: %r %s" % (interface, ifname_problem(interface)))
        return settings, notes, warnings, errors
    if not interface:
        errors.append("%s: no training interface: set fabric_nccl_interface or attach the training network in "
                      "fabric_attachments" % host)
    elif facts.get("nics") is not None and nic_by_name(facts, interface) is None and interface not in (planned or ()):
        errors.append("%s: the training interface %s does not exist on this node (it has: %s)" % (
            host, interface, ", ".join(n["name"] for n in facts["nics"] if n["kind"] != NETDEV_LOOPBACK)))
    if interface:
        settings.append(("NCCL_SOCKET_IFNAME", "=" + interface))
        also = [n for n in ifname_matches(interface, [x["name"] for x in facts.get("nics") or []]) if n != interface]
        notes.append("NCCL_SOCKET_IFNAME: '=' makes NCCL match %s exactly (a bare name is a prefix%s)"
                     % (interface, ": %s would also take %s" % (interface, ", ".join(also)) if also else ""))
    speed, legs = _link_speed(facts, interface) if interface else (None, 0)
    if mode == "tcp":
        settings.append(("NCCL_IB_DISABLE", "1"))
        threads = socket_threads(speed)
        if legs > 1 and not threads:
            threads = (2, 2)
            notes.append("bond of %d legs: several sockets so that flows hash over the legs" % legs)
        if threads:
            settings += [("NCCL_SOCKET_NTHREADS", str(threads[0])), ("NCCL_NSOCKS_PERTHREAD", str(threads[1]))]
            notes.append("NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD: %d x %d for a %d Mbit/s link"
                         % (threads[0], threads[1], speed))
        else:
            notes.append("socket threads: NCCL's defaults for a %s link" % ("%d Mbit/s" % speed if speed else
                                                                            "link of unknown speed"))
    else:
        hcas, paths = _hcas_by_closeness(facts, notes, warnings, interface)
        if not hcas:
            errors.append("%s: fabric_nccl_mode is rdma but the node has no active RDMA port (facts rdma: %s)"
                          % (host, ", ".join(d["name"] for d in facts.get("rdma") or []) or "none"))
            return settings, notes, warnings, errors
        settings.append(("NCCL_IB_DISABLE", "0"))
        settings.append(("NCCL_IB_HCA", "=" + ",".join("%s:%d" % (h[0], h[1]) for h in hcas)))
        roce = [h for h in hcas if h[2] == "Ethernet"]
        if roce:
            indexes = sorted(set(h[3] for h in roce if h[3] is not None))
            missing = ["%s:%d" % (h[0], h[1]) for h in roce if h[3] is None]
            if missing:
                errors.append("%s: no RoCE v2 GID with an IPv4 address on %s (is the training address on its "
                              "netdev?)" % (host, ", ".join(missing)))
            elif len(indexes) > 1:
                errors.append("%s: the RoCE v2 IPv4 GID index differs between ports (%s); NCCL_IB_GID_INDEX takes one"
                              % (host, ", ".join("%s:%d=%d" % (h[0], h[1], h[3]) for h in roce)))
            else:
                settings.append(("NCCL_IB_GID_INDEX", str(indexes[0])))
                notes.append("NCCL_IB_GID_INDEX: the RoCE v2 GID carrying the port's IPv4 address")
        settings.append(("NCCL_NET_GDR_LEVEL", _gdr_level(facts, paths, notes, warnings)))
    for name, value in sorted((overrides or {}).items(), key=lambda kv: str(kv[0])):
        where = "fabric_nccl_env.%s" % name
        if not isinstance(name, str) or not NAME.match(name):
            errors.append("%s: not an NCCL variable name (NCCL_ and capitals)" % where)
            continue
        if isinstance(value, (dict, list)) or value is None:
            errors.append("%s: %r must be a string or number" % (where, value))
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        try:
            line_value(text, where)
        except UnsafeValue:
            errors.append("%s: %r must be one line without control characters (nccl.conf has no escapes)"
                          % (where, value))
            continue
        if name not in KNOWN:
            warnings.append("%s: not a variable NCCL documents; passed through as is (a typo?)" % where)
        settings = [(n, v) for n, v in settings if n != name] + [(name, text)]
        notes.append("%s: set by fabric_nccl_env" % name)
    return settings, notes, warnings, errors


def _gdr_level(facts, paths, notes, warnings):
    modules = facts.get("kernel_modules") or {}
    if modules and not (modules.get("nvidia_peermem") or modules.get("nv_peer_mem")):
        warnings.append("NCCL_NET_GDR_LEVEL: LOC (GPUDirect RDMA off): neither nvidia_peermem nor nv_peer_mem "
                        "is loaded")
        notes.append("NCCL_NET_GDR_LEVEL: LOC, GPUDirect RDMA off: neither nvidia_peermem nor nv_peer_mem is loaded")
        return "LOC"
    worst = None
    for gpu, types in sorted(paths.items(), key=lambda kv: kv[0] if kv[0] is not None else -1):
        best = min((PATH_ORDER.index(NCCL_PATH[t]) for t in types if t in NCCL_PATH), default=None)
        if best is None:
            continue
        if not is_near(PATH_ORDER[best]):
            warnings.append("GPU %s reaches its nearest HCA only through %s: GPUDirect RDMA stays off for it"
                            % (gpu, PATH_ORDER[best]))
        worst = best if worst is None else max(worst, best)
    if worst is None:
        notes.append("NCCL_NET_GDR_LEVEL: %s (no GPU to HCA paths in the facts; NCCL's usual default)" % GDR_DEFAULT)
        return GDR_DEFAULT
    if not is_near(PATH_ORDER[worst]):
        notes.append("NCCL_NET_GDR_LEVEL: %s; some GPU reaches its nearest HCA only through the CPU (%s), "
                     "where GPUDirect RDMA does not pay" % (GDR_DEFAULT, PATH_ORDER[worst]))
        return GDR_DEFAULT
    notes.append("NCCL_NET_GDR_LEVEL: %s, the farthest of the GPU to nearest-HCA paths" % PATH_ORDER[worst])
    return PATH_ORDER[worst]


def render_conf(settings, notes):
    """nccl.conf: KEY=VALUE lines NCCL reads without any escape, so a value with a line break or NUL is refused
    (UnsafeValue) rather than written."""
    lines = [HEADER]
    lines += ["# " + line_value(note, "nccl.conf comment") for note in notes]
    lines += ["%s=%s" % (line_value(name, "nccl.conf name"), line_value(value, name)) for name, value in settings]
    return "\n".join(lines) + "\n"
