#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: bandwidth_plan
short_description: Name each GPU's bottleneck to the network and predict the allreduce time per step
version_added: 0.1.0
description:
  - For each host's topology facts (live or captured), lists each GPU's path to the network as segments (its PCIe
    link, the links above it, the NIC's slot, the NIC's line rate, the socket crossing when GPU and NIC sit on
    different sockets) and names the slowest.
  - The node's bandwidth to the network, for O(mode=tcp) the training interface's TCP goodput at the MTU capped by
    its ports' slots and the GPUs' side, for O(mode=rdma) the sum over rails (the RDMA NIC nearest each GPU) of each
    rail's slowest segment.
  - The gradient allreduce per step across 2 to O(nodes) nodes (ring, 2(n-1)/n of the gradient over that
    bandwidth, latency left out), and with O(compute_seconds) the communication share and scaling efficiency
    (no overlap of communication and compute assumed, the pessimistic case).
  - The same for the node with its NICs at 10, 25, 100, 200 and 400 GbE, and where the network becomes the ceiling
    (communication takes as long as compute).
  - Writes C(plan.md), C(plan.json) and one PNG chart per host (matplotlib) to O(plan_dir) on the controller.
  - A host the model cannot plan (no facts, no training network in C(tcp) mode, no GPU, no RDMA NIC near a GPU in
    C(rdma) mode) is left out with a warning that names it and why, and listed under C(Not planned) in C(plan.md);
    the other hosts are planned. The task fails only when no host can be planned.
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
      - In check mode nothing is written; the plan is returned.
options:
  hosts:
    description: Hosts to plan; defaults to all hosts of the play.
    type: list
    elements: str
  gradient_bytes:
    description: Bytes allreduced per step (for data parallel training, the gradients, e.g. 4 x parameters in fp32).
    type: float
    required: true
  nodes:
    description: Plan for 2 up to this many nodes.
    type: int
    default: 16
  compute_seconds:
    description: Compute time per step; gives communication share, efficiency and the ceiling.
    type: float
  mode:
    description: C(tcp) or C(rdma); default each host's C(fabric_nccl_mode), else C(tcp).
    type: str
    choices: [tcp, rdma]
  mtu:
    description: The MTU for TCP goodput; default the training network's MTU of the intent, else the interface's.
    type: int
  socket_gbytes_per_s:
    description: Usable bandwidth of the socket crossing (UPI, xGMI) in GB/s; unknown (and listed as such) when not given.
    type: float
  plan_dir:
    description: Where to write the plan; default C(fabric_plan_dir), else C(fabric-plan).
    type: path
  chart:
    description: Draw the PNG charts (needs matplotlib on the controller).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Plan 1 GB of gradients per step, 0.25 s of compute, up to 32 nodes
  gpuops.fabric.bandwidth_plan:
    gradient_bytes: 1000000000
    compute_seconds: 0.25
    nodes: 32
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
plans:
  description: Per host the mode, interface, MTU, the per-GPU segments and bottlenecks, the node's bandwidth and what
    sets it, the scaling rows and the by-link-speed summary.
  returned: success
  type: dict
markdown:
  description: The plan as Markdown (what plan.md holds).
  returned: success
  type: str
files:
  description: The files written.
  returned: success
  type: list
  elements: str
skipped_hosts:
  description: The hosts left out of the plan, each with why.
  returned: success
  type: dict
  sample: {node-c: "no training network attached in fabric_attachments; set fabric_nccl_interface (mode tcp)"}
allowed:
  description:
    - Per host with facts, planned or not, what the hardware allows NCCL's all_reduce (the model of NCCL's
      collectives the audit uses too), C(node) on the host alone and C(across) O(nodes) hosts like it, each with
      C(busbw_gbytes_per_s), C(limited_by) and C(algorithm); C(notes) say what the model assumed (a host without a
      training network in its intent takes the NIC nearest each GPU as its rail) and C(problem) why a figure is missing.
    - The same figures are a table in plan.md.
  returned: success
  type: dict
  sample: {node-a: {node: {busbw_gbytes_per_s: 370.8, limited_by: "NVLink through NVSwitch (18 links x 20.6 GB/s)",
                           algorithm: ring}, across: null, notes: [], problem: null}}
"""
