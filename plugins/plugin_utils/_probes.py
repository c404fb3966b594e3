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
  client, the second the server; every host is both at least once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


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
    return rounds


def plan(hosts, switch_of=None, all_pairs_max=32):
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
