"""Probe plans: rounds of disjoint pairs; all pairs for small inventories; a bounded plan that covers every host
(as client and server) and every switch for large ones."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.fabric.plugins.plugin_utils._probes import all_pairs, bounded, coverage, plan


def disjoint(rounds):
    return all(len(set(itertools.chain.from_iterable(pairs))) == 2 * len(pairs) for pairs in rounds)


@given(st.integers(min_value=0, max_value=40))
def test_all_pairs_covers_every_pair_once(n):
    hosts = ["h%02d" % i for i in range(n)]
    rounds = all_pairs(hosts)
    pairs = [frozenset(p) for r in rounds for p in r]
    assert len(pairs) == len(set(pairs)) == n * (n - 1) // 2
    assert disjoint(rounds)
    assert len(rounds) == (0 if n < 2 else n - 1 if n % 2 == 0 else n)
    assert all(len(r) <= n // 2 for r in rounds)
    if n >= 3:
        assert coverage(rounds, hosts)["never_served"] == []


@settings(max_examples=60)
@given(st.integers(min_value=2, max_value=300), st.integers(min_value=1, max_value=12))
def test_bounded_covers_hosts_servers_and_switches(n, switches):
    hosts = ["node%04d" % i for i in range(n)]
    switch_of = dict((h, "leaf%02d" % (i * switches // n)) for i, h in enumerate(hosts))
    rounds = bounded(hosts, switch_of)
    assert disjoint(rounds)
    assert len(rounds) == (3 if n % 2 == 0 else 5)
    assert all(len(r) <= n // 2 for r in rounds)
    assert all(a != b for r in rounds for a, b in r)
    covered = coverage(rounds, hosts, switch_of)
    assert covered == {"unseen": [], "never_served": [], "switches_not_crossed": []}
    clients = set(a for r in rounds for a, _b in r)
    assert clients == set(hosts)


def test_coverage_names_what_a_plan_misses():
    switch_of = {"a": "s1", "b": "s1", "c": "s2", "d": "s2"}
    covered = coverage([[("a", "b")]], ["a", "b", "c", "d"], switch_of)
    assert covered == {"unseen": ["c", "d"], "never_served": ["a", "c", "d"], "switches_not_crossed": ["s1", "s2"]}


@pytest.mark.parametrize("n,kind,rounds", [(1, "all_pairs", 0), (8, "all_pairs", 7), (32, "all_pairs", 31),
                                           (33, "bounded", 5), (1000, "bounded", 3), (10000, "bounded", 3)])
def test_plan_kind_and_rounds(n, kind, rounds):
    result = plan(["h%05d" % i for i in range(n)])
    assert (result["kind"], len(result["rounds"])) == (kind, rounds)
    assert result["max_pairs_per_round"] <= n // 2
