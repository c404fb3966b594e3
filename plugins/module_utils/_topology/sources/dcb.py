# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""A RoCE port's priority flow control (PFC) from the node's own tools: ``dcb pfc show dev <port>`` (iproute2's DCB
netlink client, which mlx5, ice, bnxt and others answer) and, where dcb is missing or the driver does not answer it,
``mlnx_qos -i <port>`` (NVIDIA's MLNX_OFED tool). Both print which of the eight 802.1p priorities PFC is enabled for;
dcb also the pause frames each priority sent (requests) and received (indications), and mlnx_qos the trust state
(pcp or dscp) that maps packets to priorities.

``parse_dcb_pfc(text)`` and ``parse_mlnx_qos(text)`` -> {"enabled": [priority ...], ...} or None when the text holds
no PFC table; bounded. ``gather(run, dcb, mlnx_qos, names)`` -> {port: entry} on a live node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import MAX_COUNTER

MAX_BYTES = 256 * 1024
MAX_LINES = 2000
PRIORITIES = tuple(range(8))
# "prio-pfc 0:off 1:on ..." (iproute2 5.11 on); "pg-pfc" in the patch that introduced it (tests/fixtures/realdata)
_DCB_MAP = re.compile(r"^(prio-pfc|pg-pfc|requests|indications)((?:\s+[0-7]:\S{1,20}){1,8})\s*$")
_DCB_CAP = re.compile(r"(?:^|\s)pfc-cap\s+([0-9]{1,2})(?:\s|$)")
_PAIR = re.compile(r"^([0-7]):(\S{1,20})$")
_QOS_PRIORITY = re.compile(r"^priority((?:\s+[0-7]){8})\s*$")
_QOS_ENABLED = re.compile(r"^enabled((?:\s+[01]){8})\s*$")
_QOS_TRUST = re.compile(r"^Priority trust state:\s*(pcp|dscp)\s*$", re.IGNORECASE)


def _lines(text):
    return [line.strip() for line in (text or "")[:MAX_BYTES].splitlines()[:MAX_LINES]]


def parse_dcb_pfc(text):
    """``dcb pfc show dev X`` (plain output): {"enabled", "capability", "requests", "indications"} (the counters
    {"priority": count}, None where not printed), or None without a prio-pfc line of all eight priorities."""
    enabled, counters, capability = None, {"requests": None, "indications": None}, None
    for line in _lines(text):
        cap = _DCB_CAP.search(line)
        if cap:
            capability = int(cap.group(1))
        match = _DCB_MAP.match(line)
        if not match:
            continue
        pairs = {}
        for word in match.group(2).split():
            pair = _PAIR.match(word)
            if pair:
                pairs[int(pair.group(1))] = pair.group(2)
        if sorted(pairs) != list(PRIORITIES):
            continue
        if match.group(1) in ("prio-pfc", "pg-pfc"):
            if any(v not in ("on", "off") for v in pairs.values()):
                continue
            enabled = sorted(p for p, v in pairs.items() if v == "on")
        else:
            values = dict((str(p), int(v)) for p, v in pairs.items() if v.isdigit() and int(v) <= MAX_COUNTER)
            if len(values) == len(PRIORITIES):
                counters[match.group(1)] = values
    if enabled is None:
        return None
    return {"enabled": enabled, "capability": capability, "requests": counters["requests"],
            "indications": counters["indications"]}


def parse_mlnx_qos(text):
    """``mlnx_qos -i X``: {"enabled", "trust"} from its "PFC configuration" table (a priority row 0..7, then an
    enabled row of 0/1) and its trust line, or None without that table."""
    lines, enabled, trust = _lines(text), None, None
    for index, line in enumerate(lines):
        found = _QOS_TRUST.match(line)
        if found:
            trust = found.group(1).lower()
        header = _QOS_PRIORITY.match(line)
        if not header or index + 1 >= len(lines):
            continue
        order = [int(p) for p in header.group(1).split()]
        row = _QOS_ENABLED.match(lines[index + 1])
        if sorted(order) != list(PRIORITIES) or not row:
            continue
        enabled = sorted(p for p, flag in zip(order, row.group(1).split()) if flag == "1")
    if enabled is None:
        return None
    return {"enabled": enabled, "trust": trust}


def gather(run, dcb, mlnx_qos, names):
    """{port: {"enabled", "source", ...}} for the named ports (the RoCE ones) on a live node: dcb first, then
    mlnx_qos. A port neither answers (no tool, a driver without DCB, a name that is not an interface name) is left
    out. ``run(argv) -> (rc, out, err)``."""
    found = {}
    for name in sorted(set(names)):
        if ifname_problem(name):
            continue  # never an argument a tool could take for an option
        entry = None
        if dcb:
            rc, out, _err = run([dcb, "pfc", "show", "dev", name])
            entry = parse_dcb_pfc(out) if rc == 0 else None
            if entry is not None:
                entry["source"] = "dcb"
        if entry is None and mlnx_qos:
            rc, out, _err = run([mlnx_qos, "-i", name])
            entry = parse_mlnx_qos(out) if rc == 0 else None
            if entry is not None:
                entry["source"] = "mlnx_qos"
        if entry is not None:
            found[name] = dict(sorted(entry.items()))
    return found
