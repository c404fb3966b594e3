# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What the hardware allows NCCL's all_reduce, per host and for the audited hosts together: the one place the audit
asks the model of NCCL's collectives (_planning/collective.py). PROBE-005, the reports and the metrics read the
figures from here and never ask the model themselves.

The mode is the host's fabric_nccl_mode where it is set (rdma: the active RDMA port nearest each GPU is a rail; tcp:
the training interface of the intent's fabric_networks and fabric_attachments; fabric_nccl_interface is not an input
of the audit), else what the hardware allows at its best (rdma where an active RDMA port is nearest some GPU, else
the NIC nearest each GPU, as a server model captured before purchase gets it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import training_interface
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import predict, summary
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.node_shape import shape_from_facts


def _interface(expect):
    """The training interface the intent names (its VLAN included), or None."""
    networks = dict((name, {"role": net.get("role"), "vlan": net.get("vlan")})
                    for name, net in (expect.get("networks") or {}).items() if isinstance(net, dict))
    hostvars = {"fabric_networks": networks, "fabric_attachments": expect.get("attachments") or {}}
    name, errors = training_interface(hostvars)
    return None if errors else name


def _bus_number(address):
    try:
        return int(address.split(":")[-2], 16)
    except (AttributeError, IndexError, ValueError):
        return None


def host_shape(facts, expect, gpus=None, buses=None):
    """The model's shape of a host from its facts and expectations (ModelError where the facts give none); ``gpus``
    the GPUs a run used on the node, where fewer than the node has, and ``buses`` their PCI bus numbers as the run
    listed them (nccl-tests' "[0x1b]"): the rails are then those nearest the GPUs that took part."""
    expect = expect if isinstance(expect, dict) else {}
    mode = expect.get("nccl_mode") if expect.get("nccl_mode") in ("tcp", "rdma") else None
    interface = _interface(expect) if mode != "rdma" else None
    took_part = None
    if isinstance(gpus, int) and not isinstance(gpus, bool) and isinstance(facts, dict) and \
            isinstance(facts.get("gpus"), list) and 1 <= gpus < len(facts["gpus"]) and buses:
        took_part = [g for g in facts["gpus"] if isinstance(g, dict) and _bus_number(g.get("address")) in buses]
        if len(took_part) == gpus:
            facts = dict(facts, gpus=took_part)
    shape = shape_from_facts(facts, mode, interface)
    if interface and any(r["name"] == interface for r in shape["rails"]):
        shape["notes"].append("tcp over %s, the training interface of the intent" % interface)
    if isinstance(gpus, int) and not isinstance(gpus, bool) and 1 <= gpus < shape["gpus"]:
        # the run's GPUs could not be told apart: fewer GPUs, and the rails of as many of them (the first ones)
        shape["notes"].append("%d of the node's %d GPUs took part; which ones is not known: the rails of %d of them"
                              % (gpus, shape["gpus"], gpus))
        shape["rails"] = shape["rails"][:max(1, len(shape["rails"]) * gpus // shape["gpus"])]
        shape["gpus"] = gpus
    elif took_part and len(took_part) == gpus:
        shape["notes"].append("%d of the node's GPUs took part (by the buses the run listed), with their rails" % gpus)
    return shape


def host_row(host, facts, expect, nodes):
    """One host's figures: on the node alone, and on ``nodes`` nodes like it. {"host", "gpus", "rails", "node",
    "nodes", "across", "notes", "problem"}: problem says why a figure is missing."""
    row = {"host": host, "gpus": None, "rails": [], "node": None, "nodes": nodes, "across": None, "notes": [],
           "problem": None}
    try:
        shape = host_shape(facts, expect)
    except ModelError as error:
        row["problem"] = str(error)
        return row
    row.update(gpus=shape["gpus"], rails=["%s (%g Gbit/s, %s)" % (r["name"], r["gbits"], r["transport"])
                                          for r in shape["rails"]], notes=list(shape["notes"]))
    try:
        row["node"] = summary(predict(shape, 1))
    except ModelError as error:
        row["problem"] = str(error)
        return row
    if nodes > 1:
        try:
            row["across"] = summary(predict(shape, nodes))
        except ModelError as error:
            row["problem"] = "across %d nodes: %s" % (nodes, error)
    return row


def allowed(audited):
    """``audited``: {host: (facts, expect)}. {"hosts": [host_row, ...], "cluster": {...} or None}: the cluster's
    figure is its slowest host's across all the audited hosts with GPUs (a ring runs at its slowest member)."""
    with_gpus = sorted(h for h, (facts, _e) in audited.items()
                       if isinstance(facts, dict) and isinstance(facts.get("gpus"), list) and facts["gpus"])
    nodes = len(with_gpus)
    rows = [host_row(h, audited[h][0], audited[h][1], nodes) for h in with_gpus]
    key = "across" if nodes > 1 else "node"
    figures = [(r[key]["busbw_gbytes_per_s"], r["host"], r[key]["limited_by"]) for r in rows
               if r[key] and r[key]["busbw_gbytes_per_s"] is not None]
    unknown = [r["host"] for r in rows if not r[key] or r[key]["busbw_gbytes_per_s"] is None]
    cluster = None
    if figures:
        slowest = min(figures)
        cluster = {"nodes": nodes, "busbw_gbytes_per_s": slowest[0], "slowest_host": slowest[1],
                   "limited_by": slowest[2] + ("; at most this: not known for %s" % ", ".join(unknown)
                                               if unknown else ""), "complete": not unknown}
    elif rows:
        cluster = {"nodes": nodes, "busbw_gbytes_per_s": None, "slowest_host": None,
                   "limited_by": "not known for %s" % ", ".join(unknown), "complete": False}
    return {"hosts": rows, "cluster": cluster}


def run_figure(facts, expect, nodes, gpus_per_node, buses=None):
    """What the hardware allows a measured run (PROBE-005): ``nodes`` nodes like this one with ``gpus_per_node``
    GPUs each (``buses``: this node's GPUs in the run, by PCI bus number); the prediction (predict()'s), or
    ModelError."""
    return predict(host_shape(facts, expect, gpus_per_node, buses), nodes)
