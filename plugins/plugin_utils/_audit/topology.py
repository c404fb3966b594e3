# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Each audited host's PCIe/NUMA tree as the reports draw it (report.json's ``topology``, report.html's pictures):
the GPUs, accelerators, NICs and NVMe drives, the bridges on their way up to the host bridge and NUMA node, each
link's state (pcie.link_verdict: below its maximum, capped by its slot, idle, healthy, not judged; or narrower than a
device below it), the GPU-NIC pairs NCCL would use, and the ids of the findings on each device. Facts come from the
nodes: values of the wrong type are left out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import BRIDGE_KINDS, ENDPOINT_KINDS, INTERNAL_KINDS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import link_sides, link_verdict
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.links import pcie_fields, text_or_none

# The link drawn above a device is the device's own (an endpoint's, a switch's upstream port's: sysfs gives both ends
# of a link the same figures); the internal kinds (model.INTERNAL_KINDS) have none of their own.
ENDPOINTS, BRIDGES, INTERNAL = ENDPOINT_KINDS, BRIDGE_KINDS, INTERNAL_KINDS
MAX_DEVICES = 256  # per host; a bigger tree is cut (devices nearest the endpoints first), and says so
LINK_STATES = ("below", "narrower", "capped", "idle", "ok", "unknown")
_TOKEN = re.compile(r"->|/|,|\s+")


def _tokens(subject):
    return [t for t in _TOKEN.split(str(subject or "")) if t]


def _widths(link):
    sides = link_sides(link)
    return sides["current"], sides["max"]


def host_tree(facts, findings):
    """The tree of one host: {numa: [ids], bridges: [{id, numa}], devices: [...], pairs: [...], cut: n}, or None
    when the facts hold no PCI device to draw."""
    pci = [d for d in (facts.get("pci") if isinstance(facts.get("pci"), list) else [])
           if isinstance(d, dict) and text_or_none(d.get("address"))]
    by_address = {}
    for device in pci:
        by_address.setdefault(device["address"], device)
    wanted = [a for a in sorted(by_address) if by_address[a].get("kind") in ENDPOINTS]
    if not wanted:
        return None
    keep = []
    seen = set()
    for address in wanted:
        chain = by_address[address].get("chain")
        for step in [address] + [c for c in (chain if isinstance(chain, list) else []) if isinstance(c, str)]:
            if step in by_address and step not in seen and (step == address or by_address[step].get("kind") in BRIDGES):
                seen.add(step)
                keep.append(step)
    cut = max(0, len(keep) - MAX_DEVICES)
    kept = set(keep[:MAX_DEVICES])
    gpus = dict((g.get("address"), g) for g in (facts.get("gpus") if isinstance(facts.get("gpus"), list) else [])
                if isinstance(g, dict) and isinstance(g.get("address"), str))
    names = _device_names(facts, by_address)
    devices = {}
    for address in sorted(kept):
        device = by_address[address]
        parent = device.get("parent") if isinstance(device.get("parent"), str) and device["parent"] in kept else None
        gpu = gpus.get(address) or {}
        index = finite(gpu.get("index"), 0, 4096)
        label = ("GPU%d" % index) if isinstance(index, int) else None
        devices[address] = {
            "address": address, "kind": text_or_none(device.get("kind")) or "other", "parent": parent,
            "host_bridge": text_or_none(device.get("host_bridge")), "numa": finite(device.get("numa_node"), 0, 4096),
            "label": label or (", ".join(sorted(names.get(address, []))[:3]) or None),
            "name": text_or_none(device.get("name")), "link": pcie_fields(device.get("link")),
            "gpu_link_state": text_or_none(gpu.get("link_state")), "findings": [], "state": "unknown"}
    children = {}
    for address, device in devices.items():
        if device["parent"]:
            children.setdefault(device["parent"], []).append(address)
    for address, device in devices.items():
        device["state"] = _link_state(device, devices, children)
    _place_findings(devices, findings, names, facts)
    numa = sorted(set(d["numa"] for d in devices.values() if d["numa"] is not None))
    bridges = {}
    for device in devices.values():  # a host bridge's NUMA node: that of the devices below it
        bridge = device["host_bridge"] or "?"
        if device["parent"] is None or bridge in bridges:
            bridges.setdefault(bridge, set())
            if device["numa"] is not None:
                bridges[bridge].add(device["numa"])
    pairs = []
    for address in sorted(gpus):
        if address not in devices:
            continue
        for near in gpus[address].get("nearest_nics") if isinstance(gpus[address].get("nearest_nics"), list) else []:
            if isinstance(near, dict) and near.get("nic") in devices:
                pairs.append({"gpu": address, "nic": near["nic"], "type": text_or_none(near.get("type"))})
    return {"numa": numa,
            "bridges": [{"id": b, "numa": min(bridges[b]) if bridges[b] else None} for b in sorted(bridges)],
            "devices": [devices[a] for a in sorted(devices)], "pairs": pairs, "cut": cut}


def _link_state(device, devices, children):
    """The link's verdict (pcie.link_verdict, the one the PCIE rules give: below its own maximum and its slot's, idle,
    capped by its slot, ok), and narrower: it runs narrower than an endpoint below it could use; unknown: no link to
    judge (or a switch's internal port)."""
    if device["kind"] in INTERNAL or not device["link"]:
        return "unknown"
    parent = devices.get(device["parent"]) if device["parent"] else None
    slot = ((parent or {}).get("link") or {}).get("max")  # the port above: what PCIE-005 takes as the slot
    verdict = link_verdict(device["kind"], device["link"], slot, device["gpu_link_state"])["verdict"]
    if verdict == "below":
        return "below"
    current = _widths(device["link"])[0]
    if current.get("width") is not None:
        stack = list(children.get(device["address"], []))
        while stack:
            below = devices[stack.pop()]
            stack.extend(children.get(below["address"], []))
            if below["kind"] in ENDPOINTS:
                best = _widths(below["link"])[1].get("width")
                if best is not None and best > current["width"]:
                    return "narrower"
    return verdict  # idle, capped, ok, or unknown (current and best not both known: not judged, as PCIE-005)


def _device_names(facts, by_address):
    """PCI address -> the names findings may call it by: its interfaces and RDMA devices."""
    names = {}
    for nic in facts.get("nics") if isinstance(facts.get("nics"), list) else []:
        if isinstance(nic, dict) and text_or_none(nic.get("address")) in by_address and text_or_none(nic.get("name")):
            names.setdefault(nic["address"], set()).add(text_or_none(nic["name"]))
    for rdma in facts.get("rdma") if isinstance(facts.get("rdma"), list) else []:
        if isinstance(rdma, dict) and text_or_none(rdma.get("address")) in by_address and text_or_none(rdma.get("name")):
            names.setdefault(rdma["address"], set()).add(text_or_none(rdma["name"]))
    return names


def _place_findings(devices, findings, names, facts):
    """Each finding's id on the devices its subject names: a PCI address (or a bus/slot prefix of one), an interface
    or RDMA device, a bond (its members), a VLAN (its parent); both ends of a pair (A->B)."""
    by_name = {}
    for address, known in names.items():
        for name in known:
            by_name.setdefault(name, set()).add(address)
    for bond in facts.get("bonds") if isinstance(facts.get("bonds"), list) else []:
        if isinstance(bond, dict) and text_or_none(bond.get("name")):
            members = bond.get("members") if isinstance(bond.get("members"), list) else []
            for member in members:
                member_name = member.get("name") if isinstance(member, dict) else member
                by_name.setdefault(bond["name"], set()).update(by_name.get(member_name, ()))
    for vlan in facts.get("vlans") if isinstance(facts.get("vlans"), list) else []:
        if isinstance(vlan, dict) and text_or_none(vlan.get("name")):
            by_name.setdefault(vlan["name"], set()).update(by_name.get(vlan.get("parent"), ()))
    for finding in findings:
        targets = set()
        for token in _tokens(finding.get("subject")):
            if token in devices:
                targets.add(token)
            elif token in by_name:
                targets.update(a for a in by_name[token] if a in devices)
            elif re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\Z", token):
                targets.update(a for a in devices if a.startswith(token + "."))
        for address in targets:
            entry = devices[address]["findings"]
            if finding["id"] not in [f["id"] for f in entry]:
                entry.append({"id": finding["id"], "severity": finding.get("severity")})
    rank = {"fail": 0, "warn": 1, "info": 2}
    for device in devices.values():
        # the most severe first; of those, the ones about links (PCIe, stability) before the others: it is a
        # picture of links
        device["findings"].sort(key=lambda f: (rank.get(f["severity"], 3), not f["id"].startswith(("PCIE-", "STAB-")),
                                               f["id"]))


def topology_trees(facts_by_host, findings):
    """host -> its tree (host_tree), for each audited host with PCI devices to draw, sorted by host."""
    by_host = {}
    for finding in findings:
        if finding.get("host") and not finding.get("waived"):
            by_host.setdefault(finding["host"], []).append(finding)
    trees = {}
    for host in sorted(facts_by_host):
        facts = facts_by_host[host] if isinstance(facts_by_host[host], dict) else {}
        tree = host_tree(facts, by_host.get(host, []))
        if tree:
            trees[host] = tree
    return trees
