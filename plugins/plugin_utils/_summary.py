# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Short human-readable lines about one node's gpuops_fabric facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import NETDEV_LOOPBACK
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import link_sides


def _link(link):
    sides = link_sides(link)
    cur = sides["current"]
    if cur["generation"] and cur["width"]:
        return "Gen%s x%s%s" % (cur["generation"], cur["width"], " (%.1f GB/s)" % cur["gbytes_per_s"]
                                if cur["gbytes_per_s"] is not None else "")
    if cur["gbytes_per_s"]:
        return "%.1f GB/s" % cur["gbytes_per_s"]
    mx = sides["max"]
    if mx.get("generation") and mx.get("width"):
        return "max Gen%s x%s" % (mx["generation"], mx["width"])
    return "link ?"


def _numa(value):
    return "NUMA %s" % ("?" if value is None else value)


def summarize(facts):
    lines = ["source %s" % facts.get("source")]
    numa = facts.get("numa")
    if numa is not None:
        nodes = numa.get("nodes", [])
        cpuless = [str(n["id"]) for n in nodes if n.get("has_cpus") is False]
        note = " (CPU-less: %s)" % ",".join(cpuless) if cpuless else ""
        lines.append("NUMA: %d node(s)%s" % (numa.get("count", 0), note))
    for gpu in facts.get("gpus", []) or []:
        nearest = gpu.get("nearest_nics") or []
        near = ", ".join("%s %s" % ("/".join(n["nic_names"]) or n["nic"], n["type"] or "locality unknown")
                         for n in nearest) or "no NIC"
        link = gpu.get("link") or {}
        extra = ""
        if gpu.get("link_state") in ("degraded", "idle"):
            extra = " [%s: %s]" % (gpu["link_state"], gpu.get("link_state_reason"))
        lines.append("%s %s (%s) %s, %s, nearest NIC: %s%s" % (
            gpu["kind"].upper(), gpu["address"], gpu.get("vendor"), _numa(gpu.get("numa_node")), _link(link),
            near, extra))
    for nic in facts.get("nics", []) or []:
        if nic.get("kind") == NETDEV_LOOPBACK:
            continue
        speed = "%d Mb/s" % nic["speed_mbps"] if nic.get("speed_mbps") else "speed ?"
        where = "%s %s" % (nic.get("address") or "-", _numa(nic.get("numa_node"))) if nic.get("address") else "virtual"
        lines.append("NIC %s [%s] %s, %s, MTU %s, %s" % (
            nic["name"], nic.get("kind"), where, speed, nic.get("mtu") if nic.get("mtu") else "?",
            nic.get("operstate") or "state ?"))
    for rdma in facts.get("rdma", []) or []:
        for port in rdma.get("ports", []):
            lines.append("RDMA %s/%s %s %s %s%s" % (
                rdma["name"], port["port"], port.get("link_layer") or "?", port.get("state") or "?",
                port.get("rate") or ("%s Gb/s" % port["rate_gbps"] if port.get("rate_gbps") else "rate ?"),
                ", RoCE v2 GID %s" % port["roce_v2_gid_index"] if port.get("roce_v2_gid_index") is not None else ""))
    for bond in facts.get("bonds", []) or []:
        members = ", ".join("%s%s" % (m["name"], "" if m.get("has_partner") is not False else " (no LACP partner)")
                            for m in bond.get("members", []))
        lines.append("BOND %s %s MTU %s: %s" % (bond["name"], bond.get("mode"), bond.get("mtu"), members))
    for vlan in facts.get("vlans", []) or []:
        lines.append("VLAN %s id %s on %s MTU %s" % (vlan["name"], vlan.get("id"), vlan.get("parent"), vlan.get("mtu")))
    nvml = facts.get("nvml") or {}
    if nvml.get("status") != "used" and facts.get("gpus"):
        lines.append("NVML not used: %s" % nvml.get("reason"))
    if facts.get("warnings"):
        lines.append("%d warning(s) while reading; see gpuops_fabric.warnings" % len(facts["warnings"]))
    return lines
