# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Helpers that several rule families use."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import ports_under
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable


def pair_subject(entry, host):
    """The subject of a probe finding: the measured pair and its network, ``host -> peer (network)``."""
    return "%s -> %s (%s)" % (host, entry.get("peer"), entry.get("network"))


def by_pair(entries):
    """Probe measurements grouped by pair: one list per (peer, network), in the order the pairs were first measured.
    With fabric_probe_repeat a pair has a measurement per run; each rule judges the pair once."""
    groups = {}
    for entry in entries:
        if isinstance(entry, dict):
            groups.setdefault((str(entry.get("peer")), str(entry.get("network"))), []).append(entry)
    return list(groups.values())


def runs_said(entries, count=None):
    """" in 2 of 3 runs" (``count`` of them) where a pair was measured more than once, else ""."""
    if len(entries) < 2:
        return ""
    return " in %d of %d runs" % (len(entries) if count is None else count, len(entries))


def goodput(value):
    """A measured goodput (Gbit/s): a finite number from 0, else None (hand-set or corrupt host variables)."""
    value = finite(value, low=0)
    return None if value is None else float(value)


def median(values):
    """The median of a non-empty list of numbers (the mean of the middle two for an even count)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def _gbps(mbps):
    return mbps / 1000.0 if mbps else None


def active_rdma_ports(facts):
    """The RDMA ports in state ACTIVE, as "device:port", sorted."""
    return sorted("%s:%s" % (d["name"], p["port"]) for d in facts.get("rdma") or []
                  for p in d.get("ports") or [] if p.get("state") == "ACTIVE")


def ports_of(facts, device):
    """The NIC facts of the ports a device's traffic leaves on, by name: a VLAN's parent's, a bond's members, or
    the device itself (virtual ports too: a veth has LLDP neighbours)."""
    return sorted(ports_under(facts, device, physical_only=False), key=lambda nic: nic["name"])


def attachments_of(ctx):
    """[(network name, network, device)] for networks this host attaches (fabric_attachments)."""
    networks = ctx.expect.get("networks") or {}
    attachments = ctx.expect.get("attachments") or {}
    found = [(name, networks[name], attachments[name]) for name in sorted(attachments) if name in networks]
    if not found:
        raise NotApplicable("no network of fabric_networks is attached here (fabric_attachments)")
    return found


def duration(seconds):
    """A span for a message: 45 s, 12 min, 3.5 h; None for what is not a number of seconds."""
    seconds = finite(seconds)
    if seconds is None:
        return None
    if seconds < 120:
        return "%d s" % round(max(seconds, 0))
    if seconds < 3600:
        return "%d min" % round(seconds / 60.0)
    return "%.1f h" % (seconds / 3600.0)
