#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: network_intent
short_description: Validate, address and render the network intent of every host on the controller
version_added: 0.1.0
description:
  - Reads each host's C(fabric_networks), C(fabric_bonds), C(fabric_attachments), C(fabric_host_index),
    C(fabric_addresses) and C(fabric_network_backend), validates them (every error names the host, the key path and
    the value), computes addresses, and plans the interfaces to create (ports, bonds, VLANs, in that order) with
    each parent's MTU raised to the largest MTU riding on it.
  - Bond members may be a list of names or a JMESPath selector over the host's C(gpuops_fabric) facts; facts also
    let it check that members exist and are physical ports.
  - Addresses come from C(fabric_addresses), a host's C(fabric_host_index) (address = subnet + index), or an
    allocation file on the controller that pins an index to each host the first time it is seen, so adding or
    removing hosts never renumbers the others. Network, broadcast and gateway addresses are never handed out.
  - Renders the files for netplan, NetworkManager keyfiles and systemd-networkd (all three when the backend is
    C(auto)); with O(render_dir) writes them to the controller for review. Changes nothing on any host.
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
      - In check mode neither the allocation file nor the rendered files are written.
options:
  hosts:
    description: Hosts whose intent to validate; defaults to all hosts of the play.
    type: list
    elements: str
  allocation_file:
    description:
      - YAML file on the controller pinning host indices (C(hosts:) host to index). Created when missing.
      - Defaults to the C(fabric_allocation_file) variable; without either, hosts need C(fabric_host_index) or
        C(fabric_addresses).
    type: path
  render_dir:
    description: Write each host's rendered files to C(<render_dir>/<host>/<backend>/<path>) on the controller.
    type: path
notes:
  - The intent's shape, with a full example, is in docs/network_intent.md.
seealso:
  - module: gpuops.fabric.topology_facts
"""

EXAMPLES = r"""
- name: Validate and render the network intent of all GPU nodes
  gpuops.fabric.network_intent:
    hosts: "{{ query('inventory_hostnames', 'gpu_nodes') }}"
    allocation_file: "{{ inventory_dir }}/fabric-allocations.yml"
    render_dir: ./fabric-network
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
plans:
  description: Per host, the backend, the addresses per network and the interfaces in creation order (name, kind,
    MTU, members, VLAN id and parent, addresses, gateways, routes, bond options).
  returned: success
  type: dict
rendered:
  description: Per host and backend, the files by path, each with C(content) and C(mode); what
    M(gpuops.fabric.network_config) takes as O(gpuops.fabric.network_config#module:rendered).
  returned: success
  type: dict
warnings_list:
  description: Warnings (802.3ad with one member, training network on the management interface, an untagged
    network's MTU raised for its VLANs), each prefixed with the host.
  returned: success
  type: list
  elements: str
allocations_changed:
  description: Whether new hosts were given indices in the allocation file.
  returned: when an allocation file is used
  type: bool
"""
