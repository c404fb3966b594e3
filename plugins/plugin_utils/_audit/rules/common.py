# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Helpers that several rule families use."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


import ipaddress

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import path_rank
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


def interface_addresses(facts):
    """[(interface, ip_interface)] of global addresses in the facts (not loopback, not link-local)."""
    found = []
    for nic in facts.get("nics") or []:
        for text in (nic.get("ipv4") or []) + (nic.get("ipv6") or []):
            try:
                address = ipaddress.ip_interface(text)
            except ValueError:
                continue
            if not (address.ip.is_loopback or address.ip.is_link_local):
                found.append((nic["name"], address))
    return found


def management_functions(ctx):
    """{PCI address of a NIC function: the management network it carries}: the device a management network of
    fabric_networks is attached to (fabric_attachments) and every interface with an address in one's subnets, down to
    their ports (a VLAN's parent, a bond's members). Empty without an intent."""
    management = dict((n, v) for n, v in (ctx.expect.get("networks") or {}).items() if v.get("role") == "management")
    if not management:
        return {}
    devices = [(device, name) for name, device in sorted((ctx.expect.get("attachments") or {}).items())
               if name in management and isinstance(device, str)]
    for interface, address in interface_addresses(ctx.facts):
        devices += [(interface, name) for name, net in sorted(management.items())
                    if any(address.version == s.version and address.ip in s for s in net.get("subnets") or [])]
    found = {}
    for device, name in devices:
        for port in ports_under(ctx.facts, device):
            found.setdefault(port["address"], name)
    return found


def nearest_nics(facts, gpu, leave_out=()):
    """The NIC functions nearest a GPU (the best path type of the facts' gpu_nic paths) other than ``leave_out``:
    [(path entry)], all of that rank."""
    paths = [p for p in (facts.get("paths") or {}).get("gpu_nic") or []
             if p.get("gpu") == gpu and p.get("nic") not in leave_out and p.get("type")]
    if not paths:
        return []
    best = min(path_rank(p["type"]) for p in paths)
    return [p for p in paths if path_rank(p["type"]) == best]
