#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: probe_plan
short_description: Plan the path and throughput probes of an inventory (who probes whom, in which round)
version_added: 0.1.0
description:
  - For each network in C(fabric_networks), finds each host's address in the network's subnet in its gathered
    C(gpuops_fabric) facts (the addresses the hosts really have, not the ones the intent promises), then pairs the
    hosts; all pairs up to O(all_pairs_max) hosts, else a bounded plan of 3 rounds (5 with an odd count) that still
    has every host as client and server and, when hosts set C(fabric_switch), crosses every switch.
  - RV(jumbo) lists, per host, the peers to ping with full-size frames (M(gpuops.fabric.path_probe)).
  - RV(throughput) is a list of rounds of disjoint pairs for M(gpuops.fabric.throughput_probe), on the networks
    whose role is in O(throughput_roles). Each client entry carries the goodput the bandwidth model expects, that is
    C(ethernet_goodput) of the link speed at the network's MTU. The speed is C(fabric_networks.<name>.speed_mbps)
    when set, else the slower end's link speed, taking one bond leg (one TCP flow rides one leg).
  - Hosts attached to a network (C(fabric_attachments)) without an address in it are listed in RV(missing).
  - This is an action plugin; the module file only carries its documentation.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.controller_action
  - gpuops.fabric.attributes.actiongroup
attributes:
  check_mode:
    support: full
    details:
      - Computes only.
options:
  hosts:
    description: The hosts to plan for; default all hosts of the play. Hosts without gathered facts are left out.
    type: list
    elements: str
  networks:
    description: The networks to probe; default every network in C(fabric_networks).
    type: list
    elements: str
  throughput_roles:
    description: Network roles measured with iperf3.
    type: list
    elements: str
    default: [training, storage]
  all_pairs_max:
    description: Up to this many hosts on a network, probe every pair; above it, the bounded plan.
    type: int
    default: 32
  port:
    description: TCP port of the iperf3 servers.
    type: int
    default: 5201
  min_fraction:
    description: A measurement below this fraction of the expected goodput is a finding (PROBE-003).
    type: float
    default: 0.8
  repeat:
    description:
      - How many times each pair is measured, 1 to 10. The whole list of rounds runs this many times, one pass after
        the other, so that a pair's runs are apart in time; each round keeps its own port (O(port) + its index).
      - Each part then carries C(run) (from 1) and C(runs); the audit judges a pair's median goodput (PROBE-003)
        and the spread between its runs (STAB-008).
    type: int
    default: 1
  rdma:
    description:
      - Plan the rdma probe too (perftest's C(ib_write_bw) and C(ib_write_lat) after iperf3 in each round's slot).
      - Each part of a throughput round then carries C(rdma), the RDMA port and RoCE v2 GID index that its address's
        traffic uses (C(device), C(port), C(gid_index), C(link_layer)), C(tcp_port) (perftest's exchange) and
        C(lat_iterations) (C(ib_write_lat)'s writes, the same at both ends; 1000, or 200 where an end is software
        RoCE, whose CPU is its NIC). The client's also carries the peer's, C(expected_gbps) (the slower port's rate as NCCL counts a network line,
        0.96 of it) with C(basis), C(min_fraction) and C(notes) (an active MTU or link layer that differs).
      - Where an end has no such port (no RDMA port under its interface, no RoCE v2 GID for its address, a port
        not ACTIVE), both ends' C(rdma) is C(skip) with the reason, and neither runs perftest (PROBE-006 names it).
    type: bool
    default: false
  rdma_port:
    description:
      - perftest's TCP port in the first round, for C(ib_write_bw); C(ib_write_lat) takes the next one. Each round has
        two of its own (O(rdma_port) + twice its index, and the next).
    type: int
    default: 18515
"""

EXAMPLES = r"""
- name: Plan the probes
  gpuops.fabric.probe_plan:
    hosts: "{{ ansible_play_hosts }}"
  run_once: true
  delegate_to: localhost
  register: fabric_probe_plan
"""

RETURN = r"""
jumbo:
  description: Per host, the targets of its full-size pings (peer, address, network, mtu, source).
  returned: always
  type: dict
throughput:
  description:
    - Rounds; each maps host to its part, C(role) server (bind, port) or client (bind, server, port, expected_gbps,
      speed_mbps, mtu, min_fraction, basis), with C(run) and C(runs) where O(repeat) is above 1, and C(rdma) with
      O(rdma).
  returned: always
  type: list
  elements: dict
throughput_by_host:
  description:
    - The same rounds per host of O(hosts) with a part in any of them, in order, C(role=idle) where the host has no
      part in a round; what M(gpuops.fabric.throughput_probe) takes in O(gpuops.fabric.throughput_probe#module:mode=rounds).
  returned: always
  type: dict
  sample: {node1: [{role: server, bind: 198.18.1.1, port: 5201}, {role: idle}]}
missing:
  description: Per host, networks it is attached to but has no address in.
  returned: always
  type: dict
plans:
  description:
    - Per network, the kind of plan, hosts, rounds (of one pass), pairs and the most pairs in one round; C(runs), the
      passes (O(repeat)), on the networks measured with iperf3.
  returned: always
  type: dict
  sample: {training: {kind: all_pairs, hosts: 4, rounds: 3, pairs: 6, max_pairs_per_round: 2, runs: 1}}
rdma_extra_s:
  description:
    - Seconds the rdma probe adds to each round's slot beyond the measurement's duration (C(ib_write_lat), starting
      the runs); the probes role sizes the slot with it.
  returned: always
  type: int
  sample: 25
"""
