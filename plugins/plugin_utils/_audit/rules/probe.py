# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family PROBE: results of the active probes (ping, iperf3, nccl-tests)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import (
    host_rule, inventory_rule, NotApplicable, observed,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import (
    by_pair, goodput, median, pair_subject, runs_said,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log_view import merge_sections
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.allowed import run_figure
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import default
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import at_size

MIN_FRACTION = default("fabric_probe_min_fraction")  # where the probe results do not carry it

# ---- probes (traffic between the hosts; opt-in) -----------------------------------------------------------------


def _probes(ctx, key=None):
    probes = ctx.observed.get("probes")
    if not isinstance(probes, dict):
        raise NotApplicable("no probes ran (opt in with fabric_probes_enabled: true or --tags probes)")
    if key is not None and not isinstance(probes.get(key), list):
        raise NotApplicable("the %s probe did not run" % key)
    return probes


@inventory_rule(
    "PROBE-001", "Full-size frames do not cross the path", "fail",
    """A ping with the don't-fragment bit and the largest payload the network's MTU allows fails where small pings
    pass: a hop on the path (this host, the peer, a switch port or the bond/VLAN under the address) has a smaller MTU.
    TCP then stalls or falls back to small segments after path-MTU discovery times out, and NCCL connections hang or
    crawl while every per-node check looks fine. A host that fails with every peer is the likely culprit; the
    message names it.""",
    """Compare `ip link` MTUs along the path (interface, VLAN, bond and its ports on both hosts) and the switch ports'
    frame size with fabric_networks.<name>.mtu; run the network role to apply the intent.""")
def probe_jumbo(ctx, hosts):
    tried, failed = {}, []
    ran = False
    for host, (_facts, expect) in sorted(hosts.items()):
        probes = observed(expect, "probes")
        if not isinstance(probes, dict) or not isinstance(probes.get("jumbo"), list):
            continue
        ran = True
        for entry in probes["jumbo"]:
            peer = entry.get("peer")
            for who in (host, peer):
                tried[who] = tried.get(who, 0) + 1
            if entry.get("status") in ("mtu", "loss"):
                failed.append((host, entry))
    if not ran:
        raise NotApplicable("no jumbo probe ran (opt in with fabric_probes_enabled: true or --tags probes)")
    blamed = {}
    for host, entry in failed:
        for who in (host, entry.get("peer")):
            blamed[who] = blamed.get(who, 0) + 1
    culprits = sorted(h for h, n in blamed.items() if n == tried.get(h) and n > 1)
    for host, entry in failed:
        jumbo = entry.get("jumbo") or {}
        if entry["status"] == "loss":
            what = "%s of %s full-size pings were lost" % ((jumbo.get("sent") or 0) - (jumbo.get("received") or 0),
                                                           jumbo.get("sent"))
        elif jumbo.get("local_error"):
            what = "this host refuses to send them (%s)" % jumbo["local_error"]
        else:
            what = "they get no answer while small pings do"
        low = ["%s's %s has MTU %s" % (who, iface, mtu) for who, iface, mtu in (
            (host, entry.get("interface"), entry.get("interface_mtu")),
            (entry.get("peer"), entry.get("peer_interface"), entry.get("peer_mtu")))
            if iface and isinstance(mtu, int) and isinstance(entry.get("mtu"), int) and mtu < entry["mtu"]]
        if low:
            what += " (%s)" % ", ".join(low)
        suspects = [c for c in culprits if c in (host, entry.get("peer"))]
        message = "%d-byte pings with don't-fragment (MTU %s) from %s %s to %s %s on %s: %s" % (
            entry.get("payload") or 0, entry.get("mtu"), host, entry.get("source") or "", entry.get("peer"),
            entry.get("address"), entry.get("network"), what)
        if suspects:
            message += "; %s fails with every peer" % " and ".join(suspects)
        ctx.finding(pair_subject(entry, host), message, dict(entry, suspects=suspects), host=host,
                    severity="warn" if entry["status"] == "loss" else None)


@host_rule(
    "PROBE-002", "Peer unreachable on the network", "fail",
    """Even small pings from this host to a peer's address on the network get no answer: the peer's interface is
    down or unaddressed, a VLAN is missing on a switch port, or a firewall drops ICMP. Collective traffic between these
    two nodes cannot flow on this network.""",
    """Check both hosts' interface and address on the network (`ip -br addr`), the VLAN on the switch ports, and
    firewall rules; then probe again.""")
def probe_unreachable(ctx):
    probes = _probes(ctx, "jumbo")
    for entry in probes["jumbo"]:
        if entry.get("status") == "unreachable":
            ctx.finding(pair_subject(entry, ctx.host), "%s cannot reach %s at %s on %s, not even with small pings" % (
                ctx.host, entry.get("peer"), entry.get("address"), entry.get("network")), entry)


@host_rule(
    "PROBE-003", "TCP goodput below what the link gives", "fail",
    """iperf3 between two nodes measured less than the configured fraction of the goodput the bandwidth model
    expects for the link speed and MTU (a 10GbE link at MTU 9000 gives about 9.90 Gbit/s of TCP payload, at 1500
    about 9.41). iperf looking normal is not enough: the number must match the link. Typical causes are a port
    negotiated down, a bad cable or optic with retransmits, a bond carrying everything on one leg, a shaper or a
    congested uplink. Without a known link speed the measurement is shown as information.""",
    """Check both ends' negotiated speed (`ethtool`), error counters and retransmits, the switch port and uplink;
    set fabric_networks.<name>.speed_mbps to the speed the network is built for. On fast or long paths, socket
    buffers below twice the bandwidth-delay product cap one flow's goodput: the role gpuops.fabric.tuning sizes them
    (docs/tuning.md).""")
def probe_throughput(ctx):
    probes = _probes(ctx, "throughput")
    for entries in by_pair(probes["throughput"]):
        measured = [(goodput(e.get("gbps")), e) for e in entries]
        measured = [(gbps, e) for gbps, e in measured if gbps is not None]
        if not measured:
            continue  # PROBE-004
        gbps, entry = median([g for g, _e in measured]), measured[0][1]
        expected = goodput(entry.get("expected_gbps")) or None
        fraction = goodput(entry.get("min_fraction"))
        fraction = fraction if fraction and fraction <= 1 else MIN_FRACTION
        evidence = dict((k, entry.get(k)) for k in ("peer", "network", "bind", "server", "gbps", "expected_gbps",
                                                    "min_fraction", "basis", "retransmits", "speed_mbps", "mtu"))
        said = "%.3g Gbit/s" % gbps
        if len(entries) > 1:  # fabric_probe_repeat: the pair's typical goodput; the spread is STAB-008's
            evidence.update(gbps=gbps, runs=[goodput(e.get("gbps")) for e in entries],
                            retransmits=[e.get("retransmits") for e in entries])
            said = "%.3g Gbit/s (%s)" % (gbps, "the median of %d runs" % len(measured) if len(measured) > 1 else
                                         "1 of %d runs measured" % len(entries))
        if expected is None:
            ctx.finding(pair_subject(entry, ctx.host), "%s -> %s on %s: %s measured; %s, not judged" % (
                ctx.host, entry.get("peer"), entry.get("network"), said, entry.get("basis") or "no expectation"),
                evidence, severity="info")
        elif gbps < fraction * expected:
            retransmits = sum(r for r in (e.get("retransmits") for _g, e in measured)
                              if isinstance(r, int) and not isinstance(r, bool))
            ctx.finding(pair_subject(entry, ctx.host), "%s -> %s on %s: %s, %s of the %.3g Gbit/s expected (%s); "
                        "below %d%%%s" % (ctx.host, entry.get("peer"), entry.get("network"), said,
                                          _share(gbps, expected), expected, entry.get("basis"),
                                          round(100 * fraction),
                                          ", %s retransmits" % retransmits if retransmits else ""),
                        evidence)


@host_rule(
    "PROBE-004", "Probe could not run", "warn",
    """A probe this run asked for did not produce a measurement: the host has no address on a network it is attached
    to, ping or iperf3 is missing, an iperf3 server could not start (the port is taken), a measurement failed, or the
    pings of the latency under load did not run.
    The path it should have checked is unverified.""",
    """Install iputils-ping and iperf3 on the nodes, free the probe port (fabric_probe_port) or pick another, and
    check the addresses on the network; then probe again.""")
def probe_errors(ctx):
    probes = _probes(ctx)
    for text in probes.get("missing") or []:
        ctx.finding("probes", text, {"missing": text})
    if probes.get("jumbo_error"):
        ctx.finding("path_probe", "full-size pings did not run: %s" % probes["jumbo_error"],
                    {"error": probes["jumbo_error"]})
    for entry in probes.get("jumbo") or []:
        if entry.get("status") == "error":
            ctx.finding(pair_subject(entry, ctx.host), "ping to %s on %s did not run: %s" % (
                entry.get("peer"), entry.get("network"),
                entry.get("error") or (entry.get("jumbo") or {}).get("output") or "no output"), entry)
    if probes.get("throughput_error"):
        ctx.finding("throughput_probe", "the iperf3 rounds did not run: %s" % probes["throughput_error"],
                    {"error": probes["throughput_error"]})
    # a server per run of a pair (fabric_probe_repeat): one finding for the pair, its ports and errors listed
    grouped = {}
    for entry in probes.get("server_errors") or []:
        if isinstance(entry, dict):
            grouped.setdefault((str(entry.get("tool") or "iperf3"), str(entry.get("bind")), str(entry.get("peer")),
                                str(entry.get("network"))), []).append(entry)
    for (tool, bind, peer, network), entries in sorted(grouped.items()):
        entry = entries[0]
        runs = entry.get("runs") if isinstance(entry.get("runs"), int) and entry.get("runs") > 1 else None
        message = "%s server for %s on %s %s%s: %s" % (
            tool, peer, network, "did not start" if tool == "iperf3" else "failed",
            " in %d of %d runs" % (len(entries), runs) if runs else "",
            "; ".join(sorted(set(str(e.get("error")) for e in entries))))
        ports = sorted(set(str(e.get("port") if tool == "iperf3" else (e.get("rdma") or {}).get("tcp_port"))
                           for e in entries))
        subject = "%s server %s:%s" % (tool, bind, ports[0]) if len(entries) == 1 else "%s server %s for %s" % (
            tool, bind, peer)
        ctx.finding(subject, message, entry if len(entries) == 1 else dict(entry, ports=ports,
                                                                           runs=[e.get("run") for e in entries]))
    throughput = probes.get("throughput") if isinstance(probes.get("throughput"), list) else []
    for entries in by_pair(throughput):
        entry = entries[0]
        failed = [e for e in entries if e.get("gbps") is None]
        if failed:
            ctx.finding(pair_subject(entry, ctx.host), "iperf3 from %s to %s on %s failed%s: %s" % (
                ctx.host, entry.get("peer"), entry.get("network"), runs_said(entries, len(failed)),
                "; ".join(sorted(set(str(e.get("error")) for e in failed)))),
                failed[0] if len(entries) == 1 else dict(failed[0], runs=[e.get("run") for e in failed]))
        unmeasured = [e for e in entries if e not in failed and isinstance(e.get("latency"), dict) and
                      e["latency"].get("error")]
        if unmeasured:
            ctx.finding(pair_subject(entry, ctx.host), "latency under load from %s to %s on %s not measured%s: %s" % (
                ctx.host, entry.get("peer"), entry.get("network"), runs_said(entries, len(unmeasured)),
                "; ".join(sorted(set(str(e["latency"]["error"]) for e in unmeasured)))),
                {"peer": entry.get("peer"), "network": entry.get("network"), "latency": unmeasured[0]["latency"]})


def _share(part, whole):
    """``part`` as a percentage of ``whole``: whole numbers from 1%, two figures below (0.46%, not 0%)."""
    value = 100.0 * part / whole
    return "%d%%" % round(value) if value >= 1 else "%.2g%%" % value


def _latency_said(row):
    """"latency 1.9 us typical, p99 2.0, p99.9 5.4" from ib_write_lat's row, or "" without one."""
    if not isinstance(row, dict):
        return ""
    said = [("%s %.3g" % (label, finite(row.get(key)))) for key, label in (
        ("t_typical_us", "typical"), ("p99_us", "p99"), ("p999_us", "p99.9")) if finite(row.get(key)) is not None]
    return "; latency (us) %s" % ", ".join(said) if said else ""


@host_rule(
    "PROBE-006", "RDMA writes below the ports' rate, or not measured", "fail",
    """The rdma probe (opt-in: 'rdma' in fabric_probes) ran perftest's ib_write_bw and ib_write_lat between the RDMA
    ports that carry the pair's addresses, after iperf3 in the same round. Found when the average write bandwidth is
    below the configured fraction of the slower port's rate as NCCL counts a network line (0.96 of it, the bandwidth
    model's figure); when the pair could not connect (the cause perftest shows: no TCP connection to the peer's
    perftest, a queue pair that did not reach RTR because of the GID index, the path MTU or the route between the
    GIDs); or when the plan could not pair them (no RDMA port under the interface, no RoCE v2 GID for the address, a
    port not ACTIVE: a warning). The latency percentiles are in the message and evidence, not judged. Under software
    RoCE (rxe, siw) the rate is the netdev's in steps and says nothing of what the CPU can move: the message says so.""",
    """For a low figure: the port's rate and width (ibstatus, mlxlink), PFC and ECN on RoCE (STAB-003, STAB-004),
    the NIC's PCIe slot (PCIE-), and the CPU's frequency governor (perftest's own warning). For a pair that could not
    connect: the GID table (show_gids, the facts' rdma ports), the addresses on the RDMA port's netdev, the MTU on
    both ends and the route between the two addresses.""")
def probe_rdma(ctx):
    probes = _probes(ctx, "throughput")
    entries = [e for e in probes["throughput"] if isinstance(e, dict) and isinstance(e.get("rdma"), dict)]
    if not entries:
        raise NotApplicable("the rdma probe did not run (opt in: 'rdma' in fabric_probes, with throughput)")
    for group in by_pair(entries):
        entry, rdma = group[0], group[0]["rdma"]
        subject = pair_subject(entry, ctx.host)
        where = "%s -> %s on %s" % (ctx.host, entry.get("peer"), entry.get("network"))
        if rdma.get("skip"):
            ctx.finding(subject, "%s: RDMA not measured: %s" % (where, rdma["skip"]),
                        {"peer": entry.get("peer"), "network": entry.get("network"), "skip": rdma["skip"]},
                        severity="warn")
            continue
        measured = [(goodput(e["rdma"].get("gbps")), e["rdma"]) for e in group]
        failed = [r for g, r in measured if g is None]
        measured = [(g, r) for g, r in measured if g is not None]
        evidence = dict((k, rdma.get(k)) for k in ("device", "port", "gid_index", "peer_device", "peer_port",
                                                   "peer_gid_index", "expected_gbps", "min_fraction", "basis",
                                                   "notes", "software"))
        evidence.update(peer=entry.get("peer"), network=entry.get("network"), bind=entry.get("bind"),
                        server=entry.get("server"))
        # what differs between the two ends (an active MTU, the link layer): a likely cause, said with the result
        notes = [str(n) for n in rdma.get("notes") or [] if n] if isinstance(rdma.get("notes"), list) else []
        noted = " (the plan noted: %s)" % "; ".join(notes) if notes else ""
        if failed and not measured:
            evidence.update(error=failed[0].get("error"))
            ctx.finding(subject, "%s: RDMA writes (%s:%s) failed%s: %s%s" % (
                where, rdma.get("device"), rdma.get("port"), runs_said(group, len(failed)),
                "; ".join(sorted(set(str(r.get("error")) for r in failed))), noted), evidence)
            continue
        gbps = median([g for g, _r in measured])
        latency = measured[-1][1].get("latency")
        # ib_write_bw measured, ib_write_lat not: its error is said with the figure
        unmeasured = sorted(set(str(r.get("error")) for _g, r in measured if r.get("error")))
        evidence.update(gbps=gbps, latency=latency, runs=[g for g, _r in measured] if len(group) > 1 else None,
                        error="; ".join(unmeasured) or None)
        no_latency = "; latency not measured: %s" % "; ".join(unmeasured) if unmeasured else ""
        expected = goodput(rdma.get("expected_gbps")) or None
        fraction = goodput(rdma.get("min_fraction"))
        fraction = fraction if fraction and fraction <= 1 else MIN_FRACTION
        software = " (software RoCE: %s)" % ", ".join(rdma["software"]) if rdma.get("software") else ""
        if expected is None:
            ctx.finding(subject, "%s: RDMA writes %.3g Gbit/s; %s, not judged%s%s" % (
                where, gbps, rdma.get("basis") or "no expectation", _latency_said(latency), no_latency), evidence,
                severity="warn" if unmeasured else "info")
        elif gbps < fraction * expected:
            ctx.finding(subject, "%s: RDMA writes %.3g Gbit/s, %s of the %.3g Gbit/s expected (%s)%s; below "
                        "%d%%%s%s%s" % (where, gbps, _share(gbps, expected), expected, rdma.get("basis"), software,
                                        round(100 * fraction), _latency_said(latency), no_latency, noted), evidence)
        elif unmeasured:
            ctx.finding(subject, "%s: RDMA writes %.3g Gbit/s%s" % (where, gbps, no_latency), evidence,
                        severity="warn")


@host_rule(
    "PROBE-005", "NCCL all-reduce not measured or below expectation", "warn",
    """Where nccl-tests is installed, all_reduce_perf shows what NCCL reaches over the paths the other checks looked
    at. Not installed is information only. With fabric_nccl_tests_expected_busbw set, a peak bus bandwidth below the
    configured fraction of it is a warning; without it, the peak is held against what the hardware allows at the
    same message size (the model of NCCL's collectives from the facts: NVLink or PCIe inside the node, the rails
    between nodes), and the finding names the segment that caps it and what the run's own NCCL log says (sockets, host
    memory, GPUDirect RDMA off). A run that produced no table is a warning too.""",
    """Install nccl-tests (github.com/NVIDIA/nccl-tests) to measure; compare NCCL_DEBUG=INFO output with the
    interfaces and HCAs the nccl role chose.""")
def probe_nccl(ctx):
    probes = _probes(ctx)
    result = probes.get("nccl")
    if not isinstance(result, dict) or result.get("skipped") or "installed" not in result:
        raise NotApplicable("nccl-tests did not run on this host")
    if not result.get("installed"):
        ctx.finding("nccl-tests", result.get("msg") or "nccl-tests is not installed: NCCL not measured",
                    {"installed": False}, severity="info")
        return
    scope = "across nodes" if probes.get("nccl_scope") == "launcher" else "on this node"
    if result.get("error") or not result.get("rows"):
        ctx.finding("nccl-tests", "all_reduce_perf %s gave no result: %s" % (scope, result.get("error")),
                    {"command": result.get("command"), "error": result.get("error")})
        return
    expected = probes.get("nccl_expected_busbw")
    fraction = probes.get("min_fraction") or MIN_FRACTION
    peak = result.get("max_busbw")
    if expected:
        if peak is not None and peak < fraction * float(expected):
            ctx.finding("nccl-tests", "all_reduce_perf %s peaks at %.3g GB/s bus bandwidth, %d%% of the %.3g GB/s "
                        "expected (below %d%%)" % (scope, peak, round(100.0 * peak / float(expected)),
                                                   float(expected), round(100 * fraction)),
                        {"max_busbw": peak, "avg_busbw": result.get("avg_busbw"), "expected_busbw": expected,
                         "rows": [(r["bytes"], r["busbw"]) for r in result["rows"]]})
        return
    _against_the_model(ctx, result, scope, fraction, probes.get("nccl_scope") == "launcher")


def _bus(text):
    """nccl-tests' bus of a rank ("0x1b", "1b") as a number, or None."""
    try:
        return int(text, 16) if isinstance(text, str) and 0 < len(text) <= 10 else None
    except ValueError:
        return None


def _run_nodes(result, host):
    """(nodes, GPUs per node, this host's GPUs' bus numbers) of an nccl-tests run from the ranks it listed; (1, None,
    None) where it listed none."""
    listed = result.get("ranks") if isinstance(result.get("ranks"), list) else []
    ranks = [r for r in listed if isinstance(r, dict) and isinstance(r.get("host"), str)]
    hosts = sorted(set(r["host"] for r in ranks))
    if not hosts:
        return 1, None, None
    short = str(host).split(".", maxsplit=1)[0].lower()
    mine = [r for r in ranks if r["host"].split(".", maxsplit=1)[0].lower() == short] or \
        (ranks if len(hosts) == 1 else [])
    buses = set(_bus(r.get("bus")) for r in mine) - set([None])
    return len(hosts), max(sum(1 for r in ranks if r["host"] == h) for h in hosts), buses or None


def _run_said(result, nodes):
    """What the run's own NCCL log says that explains a shortfall: [(text, rule id)]; sockets only across nodes (on
    one node NCCL names its network whatever it is and uses none)."""
    parsed = result.get("nccl_log")
    if not isinstance(parsed, dict) or not isinstance(parsed.get("sections"), dict):
        return []
    view = merge_sections([s for s in parsed["sections"].values() if isinstance(s, dict)])
    said = []
    if view.get("network") == "Socket" and nodes > 1:
        said.append(("NCCL used TCP sockets between the nodes", "NCCLRUN-001"))
    if view.get("p2p_off") or view.get("shm"):
        said.append(("GPUs exchanged data through host memory, not peer to peer", "NCCLRUN-009"))
    if any(isinstance(g, dict) and g.get("enabled") is False for g in view.get("gdr") or []):
        said.append(("GPUDirect RDMA was disabled", "NCCLRUN-004"))
    return said


def _against_the_model(ctx, result, scope, fraction, launched):
    """No figure given: the measured peak against what the hardware allows at the same message size."""
    listed = result["rows"] if isinstance(result["rows"], list) else []
    rows = [r for r in listed if isinstance(r, dict) and finite(r.get("busbw"), 0) is not None
            and isinstance(r.get("bytes"), int) and not isinstance(r.get("bytes"), bool)]
    if not rows:
        return
    best = max(rows, key=lambda r: r["busbw"])
    nodes, per_node, buses = _run_nodes(result, ctx.host)
    if launched and per_node is None:
        raise NotApplicable("no fabric_nccl_tests_expected_busbw, and the launcher's run listed no ranks: how many "
                            "nodes it spanned is not known")
    try:
        prediction = run_figure(ctx.facts, ctx.expect, nodes, per_node, buses)
    except ModelError as error:
        raise NotApplicable("no fabric_nccl_tests_expected_busbw, and the model has no figure: %s" % error)
    allowed = at_size(prediction, best["bytes"])
    if allowed is None:
        raise NotApplicable("no fabric_nccl_tests_expected_busbw, and the model has no figure: %s"
                            % prediction["limited_by"])
    if best["busbw"] >= fraction * allowed:
        return
    said = _run_said(result, nodes)
    ctx.finding("nccl-tests", "all_reduce_perf %s peaks at %.3g GB/s bus bandwidth at %d bytes, %d%% of the %.3g GB/s "
                "the hardware allows there on %d node%s (%s, %s; below %d%%)%s" % (
                    scope, best["busbw"], best["bytes"], round(100.0 * best["busbw"] / allowed), allowed, nodes,
                    "" if nodes == 1 else "s", prediction["algorithm"], prediction["limited_by"],
                    round(100 * fraction),
                    "; the run's log: " + "; ".join("%s (%s)" % s for s in said) if said else ""),
                {"max_busbw": best["busbw"], "bytes": best["bytes"], "allowed_busbw": allowed,
                 "allowed_large_busbw": prediction["busbw_gbytes_per_s"], "limited_by": prediction["limited_by"],
                 "algorithm": prediction["algorithm"], "nodes": nodes, "gpus_per_node": per_node,
                 "explained_by": [s[1] for s in said], "model_notes": prediction["notes"],
                 "rows": [(r["bytes"], r["busbw"]) for r in rows]})
