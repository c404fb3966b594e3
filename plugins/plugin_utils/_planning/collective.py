# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the hardware allows NCCL's collectives: the bus bandwidth nccl-tests would print, against message size,
on one node and on N nodes, and the segment that caps it.

The model is NCCL's own ring model, with NCCL's own figures (each constant below names its source):

- The time of a collective of S bytes over n ranks is a latency plus the bytes each rank moves over the bus
  bandwidth B of the ring: t = L + f S / B, where f is nccl-tests' bus factor (all_reduce 2 (n - 1) / n,
  all_gather and reduce_scatter (n - 1) / n), so that the bus bandwidth nccl-tests prints is f S / t, which tends
  to B for large S. L is NCCL's latency for the protocol it picks (LL, LL128, Simple): a base plus one hop latency
  per ring step, intra-node steps at the NVLink or PCIe figure and the steps that cross nodes at the network
  figure. The protocol with the shortest time wins, as in NCCL's tuner.
- B is the narrowest of the segments the ring crosses. Inside a node: NVLink (links per GPU times NCCL's per-link
  figure for the GPU's generation), NVLink SHARP on NVSwitch systems that have it, PCIe peer to peer (NCCL's PCIe
  figure of the narrowest GPU link; through an Intel root complex less NCCL's P2P overhead), or shared memory
  through the CPU (PCIe, and the socket interconnect between NUMA nodes). Across nodes: the sum over the rails NCCL
  uses of each rail's narrowest segment (line rate at NCCL's network efficiency, or TCP goodput at the MTU for the
  socket transport; the NIC's slot; the GPU's side of the path: its link, the switch uplinks above it, a socket
  crossing).

On two nodes NCCL's Tree sends each node's buffer over the network once, where the ring's bus factor counts it
2 (n - 1) / n times: the network figure is that much higher there (the intra-node figure still caps it).
What the model leaves out, on purpose: CollNet/SHARP and NVLink SHARP across nodes (a measured figure above the
model on 2+ nodes may be one of them), the Tree's own latencies and per-channel caps, congestion from other
traffic, the cost of the copy through host memory where shared memory replaces P2P, and the few TCP flows of NCCL's
sockets on fast ports (no published figure to cite for either: a prediction on 100G sockets says so in its notes). A node *shape* is the
model's input: node_shape.shape_from_facts() builds one from the facts, the validation corpus writes them by hand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError, ethernet_goodput

# ---- figures and their sources ---------------------------------------------------------------------------------
NCCL_TOPO = "NCCL src/graph/topo.h and topo.cc (2.18 to 2.28)"
NCCL_TUNING = "NCCL src/graph/tuning.cc (2.18)"
# GB/s NCCL counts per NVLink, by the GPU's compute capability (topo.h SM60/SM70/SM80/SM86/SM90/SM100_NVLINK_BW)
NVLINK_PER_LINK = ((10.0, 40.1), (9.0, 20.6), (8.6, 12.0), (8.0, 20.0), (7.0, 20.0), (6.0, 18.0))
# PCIe per lane in units of 100 Mbit/s (topo.cc kvDictPciGen); NCCL's GB/s = width x this / 80 (Gen3 x16: 12)
PCIE_LANE = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}
# the interconnect between CPU sockets, GB/s (topo.h BDW/SKL/SRP/ERP_QPI_BW, AMD_ZEN12/34/5_BW, P9_BW, ARM_BW)
CPU_LINK = {"intel-broadwell": 6.0, "intel-skylake": 10.0, "intel-sapphirerapids": 22.0, "intel-emeraldrapids": 40.0,
            "amd-zen2": 16.0, "amd-zen3": 24.0, "amd-zen4": 24.0, "amd-zen5": 32.0, "power9": 32.0, "arm": 6.0}
CPU_LINK_DEFAULT = "intel-skylake"
# Intel root complexes turn GPU peer traffic into 64-byte TLPs: it costs 6/5 of the PCIe bandwidth (topo.h)
INTEL_P2P_OVERHEAD = 6.0 / 5.0
# NCCL counts a 100 Gbit/s NIC as 12 GB/s (topo.h NET_BW): 96% of the line rate
NET_EFFICIENCY = 12.0 / 12.5
# NVLink SHARP: NCCL converts its bus bandwidth to algorithm bandwidth with 5/6 (tuning.cc), not the ring's n/2(n-1)
NVLS_RATIO = 5.0 / 6.0
NVLS_LATENCY = 23.0  # microseconds, on one node: tuning.cc hwLat NVLink NVLS/Simple, with no base and no per-rank step
# Ring latencies in microseconds (tuning.cc baseLat and hwLat, Ring row): per protocol, a base and one figure a
# step for NVLink, PCIe and the network; bw is the share of the bus bandwidth the protocol reaches (LL: 1/4; LL128:
# 120 of 128 bytes, 0.92, used only where the ring runs over NVLink; Simple: all of it)
PROTOCOLS = (
    {"name": "LL", "base": 6.6, "nvlink": 0.6, "pcie": 1.0, "net": 2.7, "bw": 0.25},
    {"name": "LL128", "base": 14.0, "nvlink": 1.9, "pcie": 2.5, "net": 4.0, "bw": 0.92},
    {"name": "Simple", "base": 8.4, "nvlink": 3.4, "pcie": 5.7, "net": 14.0, "bw": 1.0},
)
# NCCL's docs (env.html, NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD): one TCP flow per socket, threads x
# sockets per connection, 1 x 1 by default off AWS and GCP, "for generic 100G networks ... manually set to 4"
SOCKET_FLOWS_NOTE = ("NCCL's sockets: NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD TCP flows per connection, 1 x 1 "
                     "by default (AWS 2 x 8, GCP gVNIC 4 x 1); NCCL's docs advise 4 and 4 on generic 100G networks. "
                     "The model counts the wire's TCP goodput, which few flows may not reach")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
INTRA_KINDS = ("nvswitch", "nvlink", "pcie", "shm")
TRANSPORTS = ("ib", "roce", "efa", "plugin", "socket")
MAX_GPUS = 1024
MAX_NODES = 100000
MAX_RAILS = 64
DEFAULT_SIZES = tuple(2 ** k for k in range(3, 34))  # 8 B .. 8 GiB, nccl-tests' -b 8 -e 8G -f 2


def nvlink_per_link(compute_capability):
    """NCCL's GB/s per NVLink for a GPU of this compute capability (float like 9.0), or None when unknown."""
    if compute_capability is None:
        return None
    for floor, figure in NVLINK_PER_LINK:
        if compute_capability >= floor - 1e-9:
            return figure
    return None


def pcie_gbytes(generation, width):
    """NCCL's GB/s for a PCIe link of this generation and width (Gen3 x16: 12), or None when either is unknown."""
    if generation not in PCIE_LANE or not isinstance(width, int) or isinstance(width, bool) or width < 1:
        return None
    return width * PCIE_LANE[generation] / 80.0


def _num(where, value, low, high, integer=False, nullable=False):
    if value is None and nullable:
        return None
    number = finite(value)
    if number is None or (integer and not isinstance(number, int)):
        wanted = "a whole number" if integer else "a finite number"
        raise ModelError("%s: expected %s, got %r" % (where, wanted, value))
    if not low <= number <= high:
        raise ModelError("%s: %r is outside %s..%s" % (where, value, low, high))
    return number


def _choice(where, value, choices, nullable=False):
    if value is None and nullable:
        return None
    if value not in choices:
        raise ModelError("%s: expected one of %s, got %r" % (where, ", ".join(choices), value))
    return value


def check_shape(shape):
    """The shape, checked: every key the model reads, with its type and range; ModelError names the key."""
    if not isinstance(shape, dict):
        raise ModelError("shape: expected a mapping, got %r" % (shape,))
    out = {
        "gpus": _num("gpus", shape.get("gpus"), 1, MAX_GPUS, integer=True),
        "compute_capability": _num("compute_capability", shape.get("compute_capability"), 1.0, 20.0,
                                   nullable=True),
        "intra": _choice("intra", shape.get("intra"), INTRA_KINDS),
        "nvlinks": _num("nvlinks", shape.get("nvlinks"), 1, 64, integer=True, nullable=True),
        "nvls": bool(shape.get("nvls")),
        "pcie_generation": _num("pcie_generation", shape.get("pcie_generation"), 1, 6, integer=True,
                                nullable=True),
        "pcie_width": _num("pcie_width", shape.get("pcie_width"), 1, 32, integer=True, nullable=True),
        "through_cpu": _choice("through_cpu", shape.get("through_cpu", "none"), ("none", "intel", "amd", "other")),
        "numa_crossing": bool(shape.get("numa_crossing")),
        "cpu": _choice("cpu", shape.get("cpu"), tuple(sorted(CPU_LINK)), nullable=True),
        "cpu_link_gbytes_per_s": _num("cpu_link_gbytes_per_s", shape.get("cpu_link_gbytes_per_s"), 0.001, 100000,
                                      nullable=True),
        "rails": [],
        "notes": [str(n) for n in shape.get("notes") or []] if isinstance(shape.get("notes") or [], list) else None,
    }
    if out["notes"] is None:
        raise ModelError("notes: expected a list of texts, got %r" % (shape.get("notes"),))
    if out["intra"] in ("nvswitch", "nvlink") and out["nvlinks"] is None:
        raise ModelError("nvlinks: %s needs the number of NVLinks per GPU" % out["intra"])
    if out["nvls"] and out["intra"] != "nvswitch":
        raise ModelError("nvls: NVLink SHARP needs intra nvswitch, not %s" % out["intra"])
    rails = shape.get("rails") or []
    if not isinstance(rails, list) or len(rails) > MAX_RAILS:
        raise ModelError("rails: expected a list of at most %d rails, got %r" % (MAX_RAILS, rails))
    for index, rail in enumerate(rails):
        where = "rails[%d]" % index
        if not isinstance(rail, dict):
            raise ModelError("%s: expected a mapping, got %r" % (where, rail))
        out["rails"].append({
            "name": str(rail.get("name") or "rail %d" % index),
            "transport": _choice(where + ".transport", rail.get("transport"), TRANSPORTS),
            "gbits": _num(where + ".gbits", rail.get("gbits"), 0.001, 100000),
            "mtu": _num(where + ".mtu", rail.get("mtu", 1500), 576, 65536, integer=True),
            "slot_gbytes_per_s": _num(where + ".slot_gbytes_per_s", rail.get("slot_gbytes_per_s"), 0.001, 100000,
                                      nullable=True),
            "gpu_side_gbytes_per_s": _num(where + ".gpu_side_gbytes_per_s", rail.get("gpu_side_gbytes_per_s"),
                                          0.001, 100000, nullable=True),
            "gpu_side": str(rail.get("gpu_side") or "GPU link"),
            "ports": _num(where + ".ports", rail.get("ports", 1), 1, 64, integer=True),
            "gpus": [str(g) for g in rail.get("gpus") or []] if isinstance(rail.get("gpus") or [], list) else None,
        })
        if out["rails"][-1]["gpus"] is None:
            raise ModelError("%s.gpus: expected a list of the GPUs on the rail, got %r" % (where, rail.get("gpus")))
    return out


def _gpu_link(shape):
    figure = pcie_gbytes(shape["pcie_generation"], shape["pcie_width"])
    if figure is None:
        return None
    return {"name": "GPU PCIe link (Gen%d x%d)" % (shape["pcie_generation"], shape["pcie_width"]),
            "gbytes_per_s": figure, "source": NCCL_TOPO + ": width x lane rate / 80"}


def _cpu_link(shape):
    if shape["cpu_link_gbytes_per_s"] is not None:
        return {"name": "socket interconnect (as given)", "gbytes_per_s": shape["cpu_link_gbytes_per_s"],
                "source": "the figure the user gave for the socket interconnect"}
    cpu = shape["cpu"] or CPU_LINK_DEFAULT
    return {"name": "socket interconnect (%s)" % cpu, "gbytes_per_s": CPU_LINK[cpu],
            "source": NCCL_TOPO + (": CPU link figure" if shape["cpu"] else
                                   ": CPU link figure; the CPU is not known, %s assumed" % CPU_LINK_DEFAULT)}


def intra_segments(shape):
    """The segments a ring inside one node crosses, each {name, gbytes_per_s, source}; the ring's per-hop kind."""
    kind = shape["intra"]
    if kind in ("nvswitch", "nvlink"):
        per_link = nvlink_per_link(shape["compute_capability"])
        if per_link is None:
            return [{"name": "NVLink (%d links, generation unknown)" % shape["nvlinks"], "gbytes_per_s": None,
                     "source": "the GPU's compute capability is not known"}], "nvlink"
        return [{"name": "NVLink%s (%d links x %.1f GB/s)" % (" through NVSwitch" if kind == "nvswitch" else "",
                                                              shape["nvlinks"], per_link),
                 "gbytes_per_s": shape["nvlinks"] * per_link, "source": NCCL_TOPO + ": NVLink figure"}], "nvlink"
    link = _gpu_link(shape) or {"name": "GPU PCIe link (not known)", "gbytes_per_s": None, "source": None}
    segments = [link]
    if kind == "pcie" and shape["through_cpu"] == "intel" and link["gbytes_per_s"] is not None:
        segments.append({"name": "peer traffic through an Intel root complex",
                         "gbytes_per_s": link["gbytes_per_s"] / INTEL_P2P_OVERHEAD,
                         "source": NCCL_TOPO + ": INTEL_P2P_OVERHEAD (6/5)"})
    if shape["numa_crossing"]:
        segments.append(_cpu_link(shape))
    return segments, "pcie"


def rail_segments(rail, shape):
    """One rail's segments: its line (or TCP goodput), its NIC's slot, the GPU's side."""
    if rail["transport"] == "socket":
        goodput = ethernet_goodput(rail["gbits"] * 1000, rail["mtu"]) / 8.0
        line = {"name": "%s TCP goodput (%g Gbit/s at MTU %d)" % (rail["name"], rail["gbits"], rail["mtu"]),
                "gbytes_per_s": goodput, "source": "Ethernet framing and TCP/IP headers (bandwidth.py)"}
    else:
        line = {"name": "%s line rate (%g Gbit/s, %s)" % (rail["name"], rail["gbits"], rail["transport"]),
                "gbytes_per_s": rail["gbits"] / 8.0 * NET_EFFICIENCY,
                "source": NCCL_TOPO + ": NET_BW, 12 GB/s for 100 Gbit/s"}
    segments = [line]
    if rail["slot_gbytes_per_s"] is not None:
        segments.append({"name": "%s PCIe slot" % rail["name"], "gbytes_per_s": rail["slot_gbytes_per_s"],
                         "source": NCCL_TOPO + ": width x lane rate / 80"})
    gpu_side = rail["gpu_side_gbytes_per_s"]
    if gpu_side is None:
        link = _gpu_link(shape)
        gpu_side = link["gbytes_per_s"] if link else None
    if gpu_side is not None:
        segments.append({"name": "%s: %s" % (rail["name"], rail["gpu_side"]), "gbytes_per_s": gpu_side,
                         "source": NCCL_TOPO + ": width x lane rate / 80"})
    return segments


def _narrowest(segments):
    known = [s for s in segments if s["gbytes_per_s"] is not None]
    return min(known, key=lambda s: s["gbytes_per_s"]) if known else None


def bus_bandwidth(shape, nodes, collective="all_reduce"):
    """The ring's bus bandwidth for large messages and the segment that sets it, on ``nodes`` nodes of ``shape``.

    Returns {"gbytes_per_s", "limited_by", "segments": [...], "intra_hop", "inter"}; gbytes_per_s is None when no
    segment on the way has a known figure (the reason is in limited_by)."""
    segments, hop = [], None
    if shape["gpus"] > 1:
        intra, hop = intra_segments(shape)
        segments += [dict(s, part="intra") for s in intra]
    inter = None
    if nodes > 1:
        if not shape["rails"]:
            raise ModelError("rails: %d nodes need at least one rail (a NIC NCCL uses between nodes)" % nodes)
        rails, total, unknown = [], 0.0, []
        for rail in shape["rails"]:
            found = _narrowest(rail_segments(rail, shape))
            rails.append({"rail": rail["name"], "gbytes_per_s": found["gbytes_per_s"] if found else None,
                          "limited_by": found["name"] if found else None,
                          "limit": found["name"][len(rail["name"]) + 1:].lstrip(": ") if found else None})
            if found is None:
                unknown.append(rail["name"])
            else:
                total += found["gbytes_per_s"]
        narrow = ["%s%s" % ("%d x " % sum(1 for r in rails if r["limit"] == limit) if len(rails) > 1 else "", limit)
                  for limit in sorted(set(r["limit"] for r in rails if r["limit"]))]
        inter = {"gbytes_per_s": total if not unknown else None, "rails": rails}
        plural = "" if len(rails) == 1 else "s"
        segments.append({"name": "network: %d rail%s (%s)" % (len(rails), plural, "; ".join(narrow) or "unknown"),
                         "gbytes_per_s": inter["gbytes_per_s"], "source": "sum of each rail's narrowest segment",
                         "part": "inter"})
    if (collective == "all_reduce" and nodes == 2 and inter is not None and inter["gbytes_per_s"] is not None
            and shape["gpus"] > 1):
        # NCCL's Tree on two nodes: each node sends and receives the buffer once over the network, so the bus
        # bandwidth (counted over all n ranks) is the network's times (n - 1) N / (n (N - 1)) = 2 (n - 1) / n
        ranks = shape["gpus"] * nodes
        tree = inter["gbytes_per_s"] * 2.0 * (ranks - 1) / ranks
        inter["tree_gbytes_per_s"] = tree
        segments[-1] = dict(segments[-1], gbytes_per_s=tree, name=segments[-1]["name"] + ", Tree on two nodes",
                            source=segments[-1]["source"] + "; two nodes: NCCL's Tree moves each node's buffer "
                            "over the network once (x 2 (n - 1) / n)")
    found = _narrowest(segments)
    if not segments:
        return {"gbytes_per_s": None, "limited_by": "one GPU on one node: no collective traffic", "segments": [],
                "intra_hop": None, "inter": None}
    if found is None or any(s["gbytes_per_s"] is None for s in segments):
        missing = [s["name"] for s in segments if s["gbytes_per_s"] is None]
        return {"gbytes_per_s": None, "limited_by": "not known: %s" % ", ".join(missing), "segments": segments,
                "intra_hop": hop, "inter": inter}
    return {"gbytes_per_s": found["gbytes_per_s"], "limited_by": found["name"], "segments": segments,
            "intra_hop": hop, "inter": inter}


def bus_factor(collective, ranks):
    """nccl-tests' bus factor: busbw = algbw x this."""
    if ranks < 2:
        return 0.0
    return (2.0 if collective == "all_reduce" else 1.0) * (ranks - 1) / ranks


def _latency_us(protocol, collective, ranks, nodes, hop):
    steps = 2 * (ranks - 1) if collective == "all_reduce" else ranks - 1
    inter_steps = (2 * nodes if collective == "all_reduce" else nodes - 1) if nodes > 1 else 0
    inter_steps = min(inter_steps, steps)
    intra = protocol[hop or "pcie"]
    return protocol["base"] + (steps - inter_steps) * intra + inter_steps * protocol["net"]


def _fastest(found, nvls, collective, ranks, nodes, size):
    """(microseconds, protocol) of the fastest of NCCL's protocols (NVLS where it has a figure) for ``size`` bytes."""
    factor, ring, best = bus_factor(collective, ranks), found["gbytes_per_s"], None
    for protocol in PROTOCOLS:
        if protocol["name"] == "LL128" and found["intra_hop"] != "nvlink":
            continue
        latency = _latency_us(protocol, collective, ranks, nodes, found["intra_hop"])
        time_us = latency + factor * size / (1000.0 * ring * protocol["bw"])
        if best is None or time_us < best[0]:
            best = (time_us, protocol["name"])
    if nvls:
        time_us = NVLS_LATENCY + factor * size / (1000.0 * nvls)
        if time_us < best[0]:
            best = (time_us, "NVLS")
    return best


def _solve(shape, nodes, collective):
    """The checked shape's ring figure, NVLS figure (or None), bus figure, algorithm and notes on ``nodes`` nodes."""
    nodes = _num("nodes", nodes, 1, MAX_NODES, integer=True)
    _choice("collective", collective, COLLECTIVES)
    ranks = shape["gpus"] * nodes
    found = bus_bandwidth(shape, nodes, collective)
    notes = list(shape["notes"])
    algorithm = "tree" if found["inter"] and "tree_gbytes_per_s" in found["inter"] else "ring"
    bus, nvls = found["gbytes_per_s"], None
    if nodes > 1 and any(r["transport"] == "socket" and r["gbits"] / r["ports"] >= 100 for r in shape["rails"]):
        notes.append(SOCKET_FLOWS_NOTE)
    if shape["nvls"] and nodes == 1 and collective == "all_reduce" and bus is not None and ranks > 1:
        # NVLink SHARP reduces in the switch: NCCL's algorithm bandwidth is 5/6 of the NVLink bus figure; NCCL takes
        # it where it is faster than the ring (not on two GPUs, where the ring's bus factor is 1)
        nvls = bus * NVLS_RATIO * bus_factor(collective, ranks)
        if nvls > bus:
            notes.append("NVLink SHARP (NVLS): algorithm bandwidth 5/6 of the NVLink figure (%s)" % NCCL_TUNING)
            bus, algorithm = nvls, "nvls"
    return {"nodes": nodes, "ranks": ranks, "found": found, "nvls": nvls, "bus": bus, "algorithm": algorithm,
            "notes": notes}


def predict(shape, nodes=1, collective="all_reduce", sizes=DEFAULT_SIZES):
    """The expected bus bandwidth of ``collective`` on ``nodes`` nodes of ``shape`` (checked with check_shape).

    Returns {"collective", "nodes", "ranks", "busbw_gbytes_per_s" (large messages), "limited_by", "segments",
    "algorithm", "curve": [{"bytes", "protocol", "time_us", "busbw_gbytes_per_s"}], "notes"}."""
    solved = _solve(check_shape(shape), nodes, collective)
    ranks, found, bus = solved["ranks"], solved["found"], solved["bus"]
    curve = []
    if bus is not None and ranks > 1:
        for size in sizes:
            time_us, protocol = _fastest(found, solved["nvls"], collective, ranks, solved["nodes"], size)
            curve.append({"bytes": size, "protocol": protocol, "time_us": round(time_us, 3),
                          "busbw_gbytes_per_s": round(bus_factor(collective, ranks) * size / (time_us * 1000.0), 3)})
    return {"collective": collective, "nodes": solved["nodes"], "ranks": ranks,
            "busbw_gbytes_per_s": round(bus, 3) if bus is not None else None,
            "limited_by": found["limited_by"], "segments": found["segments"], "inter": found["inter"],
            "algorithm": solved["algorithm"], "curve": curve, "notes": solved["notes"]}


def seconds(shape, nodes, size, collective="all_reduce"):
    """One collective of ``size`` bytes on ``nodes`` nodes of ``shape``: {"seconds", "busbw_gbytes_per_s" (at that
    size), "protocol", "limited_by", "algorithm"}; seconds is None where the bus figure is not known, 0 where there
    is no collective traffic (one GPU on one node)."""
    solved = _solve(check_shape(shape), nodes, collective)
    size = _num("size", size, 0, 1e18)
    out = {"seconds": None, "busbw_gbytes_per_s": None, "protocol": None,
           "limited_by": solved["found"]["limited_by"], "algorithm": solved["algorithm"]}
    if solved["ranks"] < 2:
        out["seconds"] = 0.0
    elif solved["bus"] is not None:
        time_us, protocol = _fastest(solved["found"], solved["nvls"], collective, solved["ranks"], solved["nodes"],
                                     size)
        out.update(seconds=time_us / 1e6, protocol=protocol,
                   busbw_gbytes_per_s=bus_factor(collective, solved["ranks"]) * size / (time_us * 1000.0))
    return out


def summary(prediction):
    """The figures a report shows of a prediction: {busbw (large messages), limited_by, algorithm, at 1 MiB}."""
    return {"busbw_gbytes_per_s": prediction["busbw_gbytes_per_s"], "limited_by": prediction["limited_by"],
            "algorithm": prediction["algorithm"], "at_1mib_gbytes_per_s": at_size(prediction, 2 ** 20)}


def at_line_rate(shape, gbits_per_port):
    """The same node with every rail's ports at ``gbits_per_port`` Gbit/s (its slots and GPU side unchanged)."""
    shape = check_shape(shape)
    speed = _num("gbits_per_port", gbits_per_port, 0.001, 100000)
    return dict(shape, rails=[dict(r, gbits=speed * r["ports"]) for r in shape["rails"]])


def at_size(prediction, size):
    """The predicted bus bandwidth at ``size`` bytes (the nearest curve point at or above it), or None."""
    for point in prediction["curve"]:
        if point["bytes"] >= size:
            return point["busbw_gbytes_per_s"]
    return prediction["curve"][-1]["busbw_gbytes_per_s"] if prediction["curve"] else None
