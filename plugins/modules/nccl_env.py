#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nccl_env
short_description: Derive a GPU node's NCCL environment (/etc/nccl.conf) from its facts and network intent
version_added: 0.1.0
description:
  - Computes, on the controller, the NCCL variables for this host and the text of C(/etc/nccl.conf), which NCCL reads
    natively. Writes nothing; the role C(gpuops.fabric.nccl) puts the file in place.
  - Always C(NCCL_SOCKET_IFNAME) with NCCL's exact-match syntax (C(=bond0.100)); a bare name is a prefix and
    C(bond0) would also take C(bond0.100).
  - In C(tcp) mode C(NCCL_IB_DISABLE=1) and, for fast links, more socket threads (4 x 4 at 100 Gbit/s and above as
    NCCL's guide suggests for generic 100G networks, 2 x 2 from 25 Gbit/s or on a bond so flows hash over its legs).
  - In C(rdma) mode C(NCCL_IB_HCA) with the active ports nearest GPU 0, 1, ... in that order (ports nearest no GPU
    are left out), C(NCCL_IB_GID_INDEX) of the RoCE v2 GID carrying the training interface's IPv4 address (a
    port under VLANs has one per VLAN; else the port's own netdev's), and
    C(NCCL_NET_GDR_LEVEL) from the GPU to nearest-HCA path types (C(LOC) when no GPUDirect RDMA kernel module is
    loaded).
  - Any variable can be set or overridden with O(env); names NCCL does not document pass through with a warning.
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
      - Writes nothing in any mode.
options:
  mode:
    description: C(tcp) (start here, make it stable) or C(rdma).
    type: str
    choices: [tcp, rdma]
    default: tcp
  interface:
    description:
      - The interface NCCL's sockets use. Default C(fabric_nccl_interface), else the interface carrying the training
        network of the network intent (C(fabric_attachments) plus its VLAN).
    type: str
  env:
    description: NCCL variables to set or override (name to value).
    type: dict
    default: {}
  facts:
    description: The host's C(gpuops_fabric) facts; default the gathered ones.
    type: dict
  planned_interfaces:
    description:
      - Interfaces the network role is about to create (from M(gpuops.fabric.network_intent)'s plan); they count as
        present, so C(site.yml) can check the NCCL settings before any host is touched on a new cluster.
    type: list
    elements: str
    default: []
  topo_file:
    description:
      - Also generate an NCCL topology file from the facts (RV(topology)) and point C(NCCL_TOPO_FILE) at this path.
      - Off by default, on purpose. NCCL detects the topology itself; a static file is only worth it where the
        detection is wrong (virtual machines hiding the PCIe tree), and a stale file (a NIC moved, a GPU replaced)
        makes things worse than none. The file leaves root ports out, as NCCL's own dumps do, and lets NCCL fill in
        the GPUs' details.
    type: path
notes:
  - Errors name the node and what is missing (rdma mode without an active RDMA port, an interface the node does not
    have, a RoCE port without an IPv4 GID, GID indexes that differ between ports).
"""

EXAMPLES = r"""
- name: Derive the NCCL environment
  gpuops.fabric.nccl_env:
    mode: tcp
  register: nccl

- name: Put it in /etc/nccl.conf
  ansible.builtin.copy:
    content: "{{ nccl.content }}"
    dest: /etc/nccl.conf
    owner: root
    group: root
    mode: "0644"
"""

RETURN = r"""
interface:
  description: The interface NCCL's sockets use.
  returned: success
  type: str
  sample: bond0.100
settings:
  description: The NCCL variables and their values.
  returned: success
  type: dict
  sample: {NCCL_SOCKET_IFNAME: "=bond0.100", NCCL_IB_DISABLE: "1"}
content:
  description: The text of /etc/nccl.conf, with a comment saying where each value came from.
  returned: success
  type: str
notes:
  description: Where each value came from.
  returned: success
  type: list
  elements: str
topology:
  description: The NCCL topology XML generated from the facts, with O(topo_file); else C(null).
  returned: success
  type: str
warnings_list:
  description: Warnings (also shown as Ansible warnings).
  returned: success
  type: list
  elements: str
"""
