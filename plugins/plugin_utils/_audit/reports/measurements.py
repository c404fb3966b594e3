# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The reports' measurements section: what the probes measured, per host -- throughput pairs with their latency
under load as flat columns, RDMA writes with their latency percentiles, full-size ping pairs, nccl-tests peaks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import observed


def _ms(part, key):
    return finite(part.get(key)) if isinstance(part, dict) else None


def latency_row(latency):
    """The latency under load of one measurement as flat report columns (None where it was not measured)."""
    latency = latency if isinstance(latency, dict) else {}
    idle, loaded = latency.get("idle"), latency.get("loaded")
    return {"idle_p50_ms": _ms(idle, "p50_ms"), "idle_p99_ms": _ms(idle, "p99_ms"),
            "loaded_p50_ms": _ms(loaded, "p50_ms"), "loaded_p99_ms": _ms(loaded, "p99_ms"),
            "loaded_max_ms": _ms(loaded, "max_ms"), "loaded_loss_percent": _ms(loaded, "loss_percent")}


def _entries(probes, key):
    """The measurements of one probe as dicts (hand-set or corrupt host variables may hold anything)."""
    value = probes.get(key)
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def measurements(expects):
    """What the probes measured, per host: throughput pairs, full-size ping pairs, nccl-tests peaks."""
    rows = []
    for host in sorted(expects):
        probes = observed(expects[host], "probes")
        if not isinstance(probes, dict):
            continue
        for entry in _entries(probes, "throughput"):
            rows.append({"host": host, "kind": "throughput", "peer": entry.get("peer"), "network": entry.get("network"),
                         "gbps": entry.get("gbps"), "expected_gbps": entry.get("expected_gbps"),
                         "basis": entry.get("basis"), "retransmits": entry.get("retransmits"),
                         "retransmit_percent": entry.get("retransmit_percent"), "error": entry.get("error"),
                         "run": entry.get("run"), "runs": entry.get("runs")})
            rows[-1].update(latency_row(entry.get("latency")))
            rdma = entry.get("rdma")
            if isinstance(rdma, dict):
                latency = rdma.get("latency") if isinstance(rdma.get("latency"), dict) else {}
                rows.append({"host": host, "kind": "perftest", "peer": entry.get("peer"), "network": entry.get("network"),
                             "device": rdma.get("device"), "port": rdma.get("port"), "gid_index": rdma.get("gid_index"),
                             "gbps": rdma.get("gbps"), "expected_gbps": rdma.get("expected_gbps"),
                             "basis": rdma.get("basis"), "skip": rdma.get("skip"), "error": rdma.get("error"),
                             "typical_us": finite(latency.get("t_typical_us")), "p99_us": finite(latency.get("p99_us")),
                             "p999_us": finite(latency.get("p999_us")), "run": entry.get("run"),
                             "runs": entry.get("runs")})
        for entry in _entries(probes, "jumbo"):
            rows.append({"host": host, "kind": "jumbo", "peer": entry.get("peer"), "network": entry.get("network"),
                         "payload": entry.get("payload"), "mtu": entry.get("mtu"), "status": entry.get("status")})
        nccl = probes.get("nccl")
        if isinstance(nccl, dict) and nccl.get("installed") and nccl.get("rows"):
            rows.append({"host": host, "kind": "nccl", "scope": probes.get("nccl_scope"),
                         "max_busbw": nccl.get("max_busbw"), "avg_busbw": nccl.get("avg_busbw")})
    return rows
