# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: ethernet_goodput
short_description: TCP goodput of an Ethernet link in Gbit/s
version_added: 0.1.0
author:
  - gpuops.fabric maintainers (@gpuops)
description:
  - The TCP payload rate an Ethernet link can carry at a given MTU, in Gbit/s (10^9 bits per second).
  - Each frame costs 38 bytes on the wire beyond the IP packet (preamble and start delimiter 8, Ethernet header 14,
    FCS 4, inter-frame gap 12; 42 with an 802.1Q tag); each packet carries IPv4 (20) or IPv6 (40), TCP (20) and,
    by default as Linux sends them, TCP timestamps (12).
  - 10GbE gives 9.41 Gbit/s at MTU 1500 and 9.90 Gbit/s at MTU 9000.
options:
  _input:
    description: Link speed in Mbit/s, as the kernel reports it (C(speed_mbps) in the topology facts).
    type: int
    required: true
  mtu:
    description: The interface MTU in bytes.
    type: int
    default: 1500
  vlan:
    description: Frames carry an 802.1Q tag.
    type: bool
    default: false
  ipv6:
    description: TCP over IPv6.
    type: bool
    default: false
  timestamps:
    description: TCP timestamps on (the Linux default, C(net.ipv4.tcp_timestamps=1)).
    type: bool
    default: true
  digits:
    description: Round the result to this many decimal places; no rounding when omitted.
    type: int
"""

EXAMPLES = r"""
- name: 10GbE at MTU 9000 (9.9 Gbit/s)
  ansible.builtin.debug:
    msg: "{{ 10000 | gpuops.fabric.ethernet_goodput(mtu=9000, digits=2) }}"

- name: What each NIC should give iperf3 at its MTU
  ansible.builtin.debug:
    msg: "{{ item.name }}: {{ item.speed_mbps | gpuops.fabric.ethernet_goodput(mtu=item.mtu, digits=2) }} Gbit/s"
  loop: "{{ ansible_facts.gpuops_fabric.nics | selectattr('speed_mbps') }}"
"""

RETURN = r"""
_value:
  description: TCP goodput in Gbit/s, or C(none) when the speed is unknown (C(none)).
  type: float
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import (
    ethernet_goodput as _goodput, ModelError,
)


def ethernet_goodput(speed_mbps, mtu=1500, vlan=False, ipv6=False, timestamps=True, digits=None):
    if speed_mbps is None:
        return None
    try:
        value = _goodput(speed_mbps, mtu=mtu, vlan=vlan, ipv6=ipv6, timestamps=timestamps)
    except ModelError as exc:
        raise AnsibleFilterError("ethernet_goodput: %s" % exc)
    return round(value, int(digits)) if digits is not None else value


class FilterModule(object):
    def filters(self):
        return {"ethernet_goodput": ethernet_goodput}
