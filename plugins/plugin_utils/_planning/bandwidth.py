# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The bandwidth model: what a link really carries, and what that means for an allreduce.

Pure arithmetic, shared by the filters, the planner and the probe pairing.

Ethernet: every frame on the wire costs, beyond the MTU-sized IP packet, 8 bytes of preamble and start
delimiter, 14 of Ethernet header, 4 of FCS and 12 of inter-frame gap (38 in all; 42 with an 802.1Q tag).
Inside the packet, IPv4 takes 20 bytes (IPv6 40) and TCP 20, plus 12 for the timestamp option Linux sends
by default. At 10 Gbit/s and MTU 1500: 1448 / 1538 x 10 = 9.41 Gbit/s of TCP payload.

Ring allreduce: each rank sends and receives 2 (n - 1) / n of the buffer, so the time is that much data over
the bus bandwidth of the slowest link (NCCL's "bus bandwidth" is defined so that this holds)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
PREAMBLE_SFD = 8
ETHERNET_HEADER = 14
FCS = 4
INTER_FRAME_GAP = 12
VLAN_TAG = 4
IPV4_HEADER = 20
IPV6_HEADER = 40
TCP_HEADER = 20
TCP_TIMESTAMPS = 12


class ModelError(ValueError):
    """An input the model cannot use; the message names the argument and the value."""


def _number(name, value, minimum=None, integer=False):
    if isinstance(value, bool) or value is None:
        raise ModelError("%s: expected a number, got %r" % (name, value))
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise ModelError("%s: expected a number, got %r" % (name, value))
    if integer and float(value) != number:
        raise ModelError("%s: expected a whole number, got %r" % (name, value))
    if minimum is not None and number < minimum:
        raise ModelError("%s: %r is below %s" % (name, value, minimum))
    return number


def frame_overhead(vlan=False):
    """Bytes each frame costs on the wire beyond its MTU-sized payload."""
    return PREAMBLE_SFD + ETHERNET_HEADER + FCS + INTER_FRAME_GAP + (VLAN_TAG if vlan else 0)


def tcp_payload(mtu, ipv6=False, timestamps=True):
    """TCP payload bytes in one full-sized segment (the MSS actually used)."""
    mtu = _number("mtu", mtu, 68, integer=True)
    payload = mtu - (IPV6_HEADER if ipv6 else IPV4_HEADER) - TCP_HEADER - (TCP_TIMESTAMPS if timestamps else 0)
    if payload <= 0:
        raise ModelError("mtu: %d leaves no room for TCP payload" % mtu)
    return payload


def ethernet_goodput(speed_mbps, mtu=1500, vlan=False, ipv6=False, timestamps=True):
    """TCP goodput in Gbit/s of an Ethernet link of ``speed_mbps`` (as the kernel reports it) at ``mtu``."""
    speed = _number("speed_mbps", speed_mbps, 1)
    payload = tcp_payload(mtu, ipv6=ipv6, timestamps=timestamps)
    wire = int(mtu) + frame_overhead(vlan)
    return speed / 1000.0 * payload / wire


def ring_allreduce_factor(ranks):
    """Data each rank moves, as a multiple of the buffer: 2 (n - 1) / n."""
    ranks = _number("ranks", ranks, 1, integer=True)
    return 2.0 * (ranks - 1) / ranks


def allreduce_time(size_bytes, ranks, bus_gbytes_per_s):
    """Seconds for a ring allreduce of ``size_bytes`` over ``ranks`` at ``bus_gbytes_per_s`` (GB/s, 10^9)."""
    size = _number("size_bytes", size_bytes, 0)
    bandwidth = _number("bus_bandwidth", bus_gbytes_per_s, 0)
    if bandwidth == 0:
        raise ModelError("bus_bandwidth: 0 GB/s moves nothing")
    return ring_allreduce_factor(ranks) * size / (bandwidth * 1e9)


def path_bottleneck(segments):
    """The slowest segment of a path: ``segments`` is a list of {name, gbytes_per_s}; unknown speeds are skipped.

    Returns {"name", "gbytes_per_s", "known": [names with a speed], "unknown": [names without]}, or None
    when no segment has a speed.
    """
    if not isinstance(segments, (list, tuple)):
        raise ModelError("segments: expected a list of {name, gbytes_per_s}, got %r" % (segments,))
    known, unknown, slowest = [], [], None
    for index, segment in enumerate(segments):
        if not isinstance(segment, dict) or "name" not in segment:
            raise ModelError("segments[%d]: expected a mapping with name and gbytes_per_s, got %r" % (index, segment))
        speed = segment.get("gbytes_per_s")
        if speed is None:
            unknown.append(segment["name"])
            continue
        speed = _number("segments[%d].gbytes_per_s" % index, speed, 0)
        known.append(segment["name"])
        if slowest is None or speed < slowest[1]:
            slowest = (segment["name"], speed)
    if slowest is None:
        return None
    return {"name": slowest[0], "gbytes_per_s": slowest[1], "known": known, "unknown": unknown}
