#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: bandwidth_plan
short_description: What the hardware allows NCCL's all_reduce per host and across N nodes, and the time per step
version_added: 0.1.0
description:
  - For each host's topology facts (live or captured), the model of NCCL's collectives (the one the audit holds
    measured nccl-tests runs against, docs/nccl.md) gives what the hardware allows NCCL's all_reduce on the node alone
    and on O(nodes) nodes like it, and names the segment that caps it (NVLink, PCIe, the socket link, a rail's line
    rate or TCP goodput, its NIC slot or GPU side).
  - The rails NCCL would use between nodes, each with its GPUs and what caps it; for O(mode=rdma) the active RDMA
    port nearest each GPU, for O(mode=tcp) the training interface (a bond's legs added). A host without a training
    interface (no C(fabric_nccl_interface), no training network in C(fabric_attachments)) is planned on the NIC
    nearest each GPU, as a server model captured before purchase is, with a warning and a note that say so.
  - The gradient all_reduce per step over every GPU of 2 to O(nodes) nodes (each GPU holding the whole gradient),
    latency and protocol included, shown for each count up to 64 and then doubling; with O(compute_seconds) the
    communication share and scaling efficiency (no overlap of communication and compute assumed, the pessimistic
    case).
  - The same node with its NICs at 10, 25, 100, 200 and 400 GbE per port, and the node count where the network
    becomes the ceiling (communication takes as long as compute; exact between the counts shown).
  - Writes C(plan.md), C(plan.json) and one PNG chart per host (matplotlib) to O(plan_dir) on the controller.
  - A host the model cannot plan (no facts, no GPU, non-NVIDIA GPUs, no rail, a figure that is not known) is left
    out with a warning that names it and why, and listed under C(Not planned) in C(plan.md); the other hosts are
    planned. The task fails only when no host can be planned.
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
    description: C(tcp) or C(rdma); default each host's C(fabric_nccl_mode), else what the hardware allows at its
      best (C(rdma) where an active RDMA port is nearest some GPU, else C(tcp)).
    type: str
    choices: [tcp, rdma]
  mtu:
    description: The MTU for TCP goodput on every socket rail; default the training network's MTU of the intent on the
      training interface, else each interface's own.
    type: int
  socket_gbytes_per_s:
    description: The socket interconnect (UPI, xGMI) in GB/s, where you know it better than the model; default
      NCCL's own figure for the CPU it assumes (Intel Skylake, 10 GB/s; the CPU model is not in the facts).
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
  description:
    - Per host planned, C(mode), C(interface) and C(gpus); C(node) on the host alone and C(across) O(nodes) hosts
      like it, each with C(busbw_gbytes_per_s) (large messages), C(limited_by), C(algorithm) and
      C(at_1mib_gbytes_per_s); C(rails) (each with its C(gpus), C(transport), C(gbits), C(mtu), C(gbytes_per_s) and
      C(limited_by)); C(notes) (what the model assumed); C(scaling) (per node count C(allreduce_s),
      C(busbw_gbytes_per_s), C(protocol), C(algorithm), and with a compute time C(comm_share) and C(efficiency));
      C(ceiling_nodes); and C(by_link_speed) (per speed C(across), C(allreduce_s) at O(nodes) and C(ceiling_nodes)).
  returned: success
  type: dict
  sample: {node-a: {mode: tcp, interface: bond0.100, gpus: 8, across: {busbw_gbytes_per_s: 2.475,
                    limited_by: "network: 1 rail (TCP goodput (20 Gbit/s at MTU 9000))", algorithm: ring}}}
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
  sample: {node-c: "facts: no GPUs on this node; nothing to predict (mode tcp)"}
"""
