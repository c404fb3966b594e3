# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Probe plans: which hosts test which, in rounds of disjoint pairs, so every pair in a round can run at once
without two probes sharing an endpoint.

- ``all_pairs``: every pair exactly once (the circle method: n - 1 rounds of n / 2 pairs; n rounds when n is odd).
  For small inventories.
- ``bounded``: a fixed number of rounds for any inventory size that still covers every host and, when hosts carry
  the switch they hang off, every switch: neighbours in switch order both ways (each host's own link, mostly below
  its own switch), then each host against the one half the inventory away (across switches: the uplinks), and two
  one-pair rounds for the host an odd count leaves out. Directed for throughput: in each pair the first host is the
  client, the second the server; every host is both at least once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import default
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import (
    nic_by_name, ports_under, rdma_endpoint,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ethernet_goodput
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import NET_EFFICIENCY
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.perftest import (
    LAT_ITERATIONS, LAT_ITERATIONS_SOFTWARE,
)


def all_pairs(hosts):
    """Rounds of disjoint pairs covering every unordered pair exactly once."""
    ring = sorted(hosts)
    if len(ring) < 2:
        return []
    if len(ring) % 2:
        ring.append(None)
    n = len(ring)
    fixed, rest = ring[0], ring[1:]
    rounds = []
    served, driven = {}, {}
    for _number in range(n - 1):
        line = [fixed] + rest
        pairs = []
        for a, b in ((line[i], line[n - 1 - i]) for i in range(n // 2)):
            if a is None or b is None:
                continue
            # the host that has served least serves (then the one that has driven most): with 3 or more hosts
            # every host is a server somewhere
            server = min((a, b), key=lambda h: (served.get(h, 0), -driven.get(h, 0), h))
            client = b if server == a else a
            served[server] = served.get(server, 0) + 1
            driven[client] = driven.get(client, 0) + 1
            pairs.append((client, server))
        rounds.append(pairs)
        rest = rest[-1:] + rest[:-1]
    return rounds


def _ordered(hosts, switch_of):
    switch_of = switch_of or {}
    return sorted(hosts, key=lambda h: (str(switch_of.get(h, "")), h))


def bounded(hosts, switch_of=None):
    """Three rounds (five with an odd count) of disjoint (client, server) pairs: every host a client and a server,
    and, when there is more than one switch, pairs across switches that leave no switch out."""
    order = _ordered(hosts, switch_of)
    n = len(order)
    if n < 2:
        return []
    # 1 and 2: neighbours in switch order, both ways (0->1, 2->3, ... then 1->0, 3->2, ...): each host's own link,
    # mostly below its own switch, measured in each direction
    forth = [(order[i], order[i + 1]) for i in range(0, n - 1, 2)]
    rounds = [forth, [(b, a) for a, b in forth]]
    # 3: each host against the one half the inventory away in switch order: across switches, over the uplinks
    half = n // 2
    rounds.append([(order[i + half], order[i]) for i in range(half)])
    # 4 and 5: an odd count leaves the last host out of rounds 1 to 3; it serves, then drives
    if n % 2:
        rounds.append([(order[0], order[-1])])
        rounds.append([(order[-1], order[1])])
    # with very few hosts round 3 repeats round 2 (2 or 3 hosts: half is 1): a pair is measured once a pass
    planned, unique = set(), []
    for pairs in rounds:
        pairs = [p for p in pairs if p not in planned]
        planned.update(pairs)
        if pairs:
            unique.append(pairs)
    return unique


def plan(hosts, switch_of=None, all_pairs_max=default("fabric_probe_all_pairs_max")):
    """The plan for an inventory: all pairs up to ``all_pairs_max`` hosts, else the bounded plan."""
    hosts = sorted(set(str(h) for h in hosts))
    kind = "all_pairs" if len(hosts) <= all_pairs_max else "bounded"
    rounds = all_pairs(hosts) if kind == "all_pairs" else bounded(hosts, switch_of)
    return {"kind": kind, "hosts": len(hosts), "rounds": rounds,
            "pairs": sum(len(r) for r in rounds), "max_pairs_per_round": max([len(r) for r in rounds] or [0])}


def coverage(rounds, hosts, switch_of=None):
    """What a plan covers: hosts never in a pair, hosts never serving, switches no pair crosses out of."""
    seen, served, crossing = set(), set(), set()
    switch_of = switch_of or {}
    for pairs in rounds:
        for client, server in pairs:
            seen.update((client, server))
            served.add(server)
            a, b = switch_of.get(client), switch_of.get(server)
            if a is not None and b is not None and a != b:
                crossing.update((a, b))
    switches = set(v for h, v in switch_of.items() if h in set(hosts))
    return {"unseen": sorted(set(hosts) - seen), "never_served": sorted(set(hosts) - served),
            "switches_not_crossed": sorted(switches - crossing) if len(switches) > 1 else []}


# ---- probe targets from facts and intent ------------------------------------------------------------------
def _addresses_on(facts, network):
    """{IP version: (interface, ip)} of this host's addresses in the network's subnet and subnet6 (the first of
    each)."""
    found = {}
    for version, key, subnet in ((4, "ipv4", network.get("subnet")), (6, "ipv6", network.get("subnet6"))):
        if subnet is None:
            continue
        subnet = ipaddress.ip_network(str(subnet), strict=False)
        for nic in facts.get("nics") or []:
            for text in nic.get(key) or []:
                try:
                    address = ipaddress.ip_interface(text)
                except ValueError:
                    continue
                if address.ip in subnet and version not in found:
                    found[version] = (nic["name"], address.ip)
    return found


def _one_version(addresses, name):
    """({host: (interface, ip)} over one IP version, {host: why not probed}) from {host: {version: (interface, ip)}}:
    a client cannot reach an IPv4 server from an IPv6 address, so a network is probed over the version most of its
    hosts have (IPv4 on a tie), and a host without it is told so."""
    counts = dict((v, sum(1 for a in addresses.values() if v in a)) for v in (4, 6))
    version = 4 if counts[4] >= counts[6] else 6
    where, left = {}, {}
    for host, found in sorted(addresses.items()):
        if version in found:
            where[host] = found[version]
        else:
            left[host] = ("not probed on %s: this host has only IPv%d there, and the network is probed over IPv%d "
                          "(the version most of its hosts have; %d of %d)" % (
                              name, 10 - version, version, counts[version], len(addresses)))
    return where, left


def _flow_speed(facts, iface):
    """Mbit/s one TCP flow can reach through ``iface``: the slowest port under it (a flow rides one bond leg), or
    the interface's own speed when it has no physical port (veth, virtio without PCI address)."""
    speeds = [p.get("speed_mbps") for p in ports_under(facts, iface) if (p.get("speed_mbps") or 0) > 0]
    if speeds:
        return min(speeds)
    nic = nic_by_name(facts, iface) or {}
    return nic.get("speed_mbps") if (nic.get("speed_mbps") or 0) > 0 else None


def _mtu(network, facts, iface):
    if network.get("mtu"):
        return network["mtu"], "fabric_networks.%s.mtu" % network["name"]
    mtu = (nic_by_name(facts, iface) or {}).get("mtu")
    return (mtu, "%s's MTU" % iface) if mtu else (1500, "default")


def _iface_mtu(facts, iface):
    return (nic_by_name(facts, iface) or {}).get("mtu")


def _rdma_parts(client, c_facts, c_where, server, s_facts, s_where, tcp_port, min_fraction):
    """(the client's and the server's ``rdma`` entries) of a pair for the rdma probe: each end's port and GID index
    for its address (rdma_endpoint), and on the client the expectation: the slower port's rate as NCCL counts a
    network's line (NET_EFFICIENCY, the bandwidth model's). Where an end has none, both entries say why
    (``skip``) and neither end runs perftest."""
    (c_iface, c_ip), (s_iface, s_ip) = c_where, s_where
    ends = []
    for host, facts, iface, ip in ((client, c_facts, c_iface, c_ip), (server, s_facts, s_iface, s_ip)):
        endpoint, why = rdma_endpoint(facts, iface, str(ip))
        ends.append((host, endpoint, why))
    skipped = ["%s: %s" % (host, why) for host, endpoint, why in ends if endpoint is None]
    if skipped:
        return {"skip": "; ".join(skipped)}, {"skip": "; ".join(skipped)}
    (_c, mine, _w), (_s, theirs, _x) = ends
    keys = ("device", "port", "gid_index", "link_layer")
    client_part = dict((k, mine[k]) for k in keys)
    server_part = dict((k, theirs[k]) for k in keys)
    rates = [r for r in (finite(mine.get("rate_gbps"), 0.001), finite(theirs.get("rate_gbps"), 0.001)) if r is not None]
    notes = []
    if mine.get("active_mtu") and theirs.get("active_mtu") and mine["active_mtu"] != theirs["active_mtu"]:
        notes.append("active MTU %d on %s, %d on %s: the connection uses the smaller" % (
            mine["active_mtu"], client, theirs["active_mtu"], server))
    if mine["link_layer"] != theirs["link_layer"]:
        notes.append("link layer %s on %s, %s on %s" % (mine["link_layer"], client, theirs["link_layer"], server))
    expected = round(min(rates) * NET_EFFICIENCY, 3) if len(rates) == 2 else None
    basis = ("the slower port's rate, %g Gbit/s (%s:%s and %s:%s), as NCCL counts a network line (%g)" % (
        min(rates), mine["device"], mine["port"], theirs["device"], theirs["port"], NET_EFFICIENCY)
        if expected else "a port's rate unknown")
    software = [e for e in (mine["software"], theirs["software"]) if e]
    # both ends must count the same writes; where the CPU is the NIC, fewer (a busy emulated CPU took 22 ms a write)
    iterations = LAT_ITERATIONS_SOFTWARE if software else LAT_ITERATIONS
    client_part.update(skip=None, tcp_port=tcp_port, peer_device=theirs["device"], peer_port=theirs["port"],
                       peer_gid_index=theirs["gid_index"], expected_gbps=expected, min_fraction=min_fraction,
                       basis=basis, notes=notes, software=software, lat_iterations=iterations)
    server_part.update(skip=None, tcp_port=tcp_port, lat_iterations=iterations)
    return client_part, server_part


def targets(inputs, throughput_roles=tuple(default("fabric_probe_throughput_roles")), networks=None,
            all_pairs_max=default("fabric_probe_all_pairs_max"), port=default("fabric_probe_port"),
            min_fraction=default("fabric_probe_min_fraction"), repeat=default("fabric_probe_repeat"),
            rdma=False, rdma_port=default("fabric_probe_rdma_port")):
    """Probe targets for an inventory.

    ``inputs``: {host: {"facts": gpuops_fabric facts, "networks": {name: validated network}, "attachments": {},
    "switch": optional switch name}}. ``networks``: the names to probe (default all).

    Returns {"jumbo": {host: [target]}, "throughput": [round: {host: entry}], "missing": {host: [text]},
    "plans": {network: plan summary}}. A throughput round pairs hosts on one network; in each pair the client entry
    carries the expected goodput of the bandwidth model (Gbit/s) and its basis. With ``repeat`` above 1 the whole
    list of rounds runs that many times, one pass after the other (a pair's runs apart in time, which is what shows
    goodput that swings); each part says its ``run`` (from 1) of ``runs``, each round has its own port.
    With ``rdma`` each part of a throughput round also has an ``rdma`` entry (_rdma_parts) with two perftest TCP
    ports of its own, ``tcp_port`` (``rdma_port`` + twice the round's index) for ib_write_bw and the next one for
    ib_write_lat: a client that ended its bandwidth run first would otherwise reach the bandwidth server's socket,
    still open, and wait there in vain (seen on the test VMs).
    """
    defined = {}
    for host in sorted(inputs):
        for name, net in sorted((inputs[host].get("networks") or {}).items()):
            defined.setdefault(name, net)
    wanted = sorted(defined) if networks is None else [n for n in networks if n in defined]
    jumbo, rounds, missing, plans = {}, [], {}, {}
    for name in wanted:
        network = dict(defined[name], name=name)
        found = {}
        for host in sorted(inputs):
            facts = inputs[host].get("facts") or {}
            addresses = _addresses_on(facts, network)
            if addresses:
                found[host] = addresses
            elif name in (inputs[host].get("attachments") or {}):
                missing.setdefault(host, []).append(
                    "not probed on %s: no address in %s on this host" % (
                        name, " or ".join(str(network[k]) for k in ("subnet", "subnet6") if network.get(k))))
        where, left = _one_version(found, name)
        for host, why in sorted(left.items()):
            missing.setdefault(host, []).append(why)
        switch_of = dict((h, inputs[h].get("switch")) for h in where if inputs[h].get("switch"))
        chosen = plan(list(where), switch_of, all_pairs_max)
        plans[name] = {"kind": chosen["kind"], "hosts": chosen["hosts"], "rounds": len(chosen["rounds"]),
                       "pairs": chosen["pairs"], "max_pairs_per_round": chosen["max_pairs_per_round"]}
        for pairs in chosen["rounds"]:
            for client, server in pairs:
                (c_iface, c_ip), (s_iface, s_ip) = where[client], where[server]
                mtu, _basis = _mtu(network, inputs[client]["facts"], c_iface)
                jumbo.setdefault(client, []).append({
                    "peer": server, "address": str(s_ip), "network": name, "mtu": mtu,
                    "source": str(c_ip),
                    "interface": c_iface, "interface_mtu": _iface_mtu(inputs[client]["facts"], c_iface),
                    "peer_interface": s_iface,
                    "peer_mtu": _iface_mtu(inputs[server]["facts"], s_iface)})
        if network.get("role", name) not in throughput_roles:
            continue
        plans[name]["runs"] = repeat
        for pairs in chosen["rounds"]:
            entries = {}
            # a port per round: a node that ran ahead of its peer meets no server of an earlier round (which would
            # turn it away as busy), only a refused connection, which it tries again
            round_port = port + len(rounds)
            for client, server in pairs:
                (c_iface, c_ip), (s_iface, s_ip) = where[client], where[server]
                c_facts, s_facts = inputs[client]["facts"], inputs[server]["facts"]
                mtu, mtu_basis = _mtu(network, c_facts, c_iface)
                if network.get("speed_mbps"):
                    speed, basis = network["speed_mbps"], "fabric_networks.%s.speed_mbps" % name
                else:
                    speeds = [s for s in (_flow_speed(c_facts, c_iface), _flow_speed(s_facts, s_iface)) if s]
                    speed, basis = (min(speeds), "link speed") if len(speeds) == 2 else (None, "link speed unknown")
                expected = (round(ethernet_goodput(speed, mtu, vlan=bool(network.get("vlan")), ipv6=c_ip.version == 6),
                                  3) if speed else None)
                entries[server] = {"role": "server", "bind": str(s_ip), "port": round_port, "network": name,
                                   "peer": client}
                entries[client] = {"role": "client", "bind": str(c_ip), "server": str(s_ip), "port": round_port,
                                   "network": name, "peer": server, "speed_mbps": speed, "mtu": mtu,
                                   "expected_gbps": expected, "min_fraction": min_fraction,
                                   "basis": "%s: %s Mb/s at MTU %s (%s)" % (basis, speed, mtu, mtu_basis)
                                   if speed else basis}
                if rdma:
                    entries[client]["rdma"], entries[server]["rdma"] = _rdma_parts(
                        client, c_facts, where[client], server, s_facts, where[server],
                        rdma_port + 2 * len(rounds), min_fraction)
            if entries:
                rounds.append(entries)
    if repeat > 1:
        passes = []
        for run in range(repeat):
            for entries in rounds:
                round_port = port + len(passes)
                passes.append(dict((host, dict(part, port=round_port, run=run + 1, runs=repeat, **(
                    {"rdma": dict(part["rdma"], tcp_port=rdma_port + 2 * len(passes))}
                    if part.get("rdma") and not part["rdma"].get("skip") else {})))
                    for host, part in entries.items()))
        rounds = passes
    return {"jumbo": jumbo, "throughput": rounds, "missing": missing, "plans": plans}
