#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: path_probe
short_description: Check that full-size frames cross the path to peers (ping with the don't-fragment bit)
version_added: 0.1.0
description:
  - For each target, pings with the largest payload the network's MTU allows (MTU - 28 for IPv4, MTU - 48 for IPv6)
    and the don't-fragment bit set (C(ping -M do)), then with a small payload. A path where the small pings pass and
    the full-size ones do not has a hop with a smaller MTU (this host's interface, the peer's, or a switch port).
  - Targets are usually computed by M(gpuops.fabric.probe_plan) (all pairs for small inventories, a bounded plan
    that covers every host and switch for large ones); the role C(gpuops.fabric.probes) wires them together.
  - Runs the targets concurrently (O(parallel)); each ping is bounded in time (O(count), O(wait)).
  - Needs iputils C(ping) on the node (Debian package iputils-ping).
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.probe
  - gpuops.fabric.attributes.actiongroup
options:
  targets:
    description: The peers to ping.
    type: list
    elements: dict
    required: true
    suboptions:
      peer:
        description: The peer's inventory name (for the report).
        type: str
        required: true
      address:
        description: The peer's address on the network.
        type: str
        required: true
      network:
        description: The network's name (for the report).
        type: str
        required: true
      mtu:
        description: The network's MTU; the payload is MTU - 28 (IPv4) or MTU - 48 (IPv6).
        type: int
        required: true
      source:
        description: This host's address on the network (C(ping -I)).
        type: str
      interface:
        description: This host's interface holding O(targets[].source) (passed through for the report).
        type: str
      interface_mtu:
        description: Its MTU as gathered (passed through for the report).
        type: int
      peer_interface:
        description: The peer's interface holding O(targets[].address) (passed through for the report).
        type: str
      peer_mtu:
        description: Its MTU as gathered (passed through for the report).
        type: int
  count:
    description: Full-size pings per target (small pings are as many).
    type: int
    default: 3
  wait:
    description: Seconds to wait for each reply.
    type: float
    default: 1.0
  parallel:
    description: Targets pinged at once.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: Full-size frames to two peers on the training network
  gpuops.fabric.path_probe:
    targets:
      - {peer: node-b, address: 198.18.1.2, network: training, mtu: 9000, source: 198.18.1.1}
      - {peer: node-c, address: 198.18.1.3, network: training, mtu: 9000, source: 198.18.1.1}
  register: jumbo
"""

RETURN = r"""
probes:
  description: One entry per target, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    peer:
      description: The peer's inventory name.
      type: str
    network:
      description: The network's name.
      type: str
    address:
      description: The peer's address.
      type: str
    source:
      description: This host's address used as source, if given.
      type: str
    mtu:
      description: The network's MTU.
      type: int
    payload:
      description: The ICMP payload of the full-size pings (bytes).
      type: int
    status:
      description:
        - C(ok) every full-size ping answered; C(loss) some lost; C(mtu) full-size pings fail where small ones pass
          (or this host refuses to send them); C(unreachable) small pings fail too; C(error) ping could not run.
      type: str
      sample: mtu
    jumbo:
      description: Counts of the full-size pings (sent, received, errors, local_error as ping printed it).
      type: dict
    small:
      description: Counts of the small pings.
      type: dict
  sample:
    - peer: node-b
      network: training
      address: 198.18.1.2
      source: 198.18.1.1
      mtu: 9000
      payload: 8972
      status: mtu
      jumbo: {sent: 3, received: 0, errors: 0, local_error: null}
      small: {sent: 3, received: 3, errors: 0, local_error: null}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  (after the documentation, as modules are laid out)

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import end_on_hangup
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.ping import (
    check_targets, probe_paths, said_paths,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            targets=dict(type="list", elements="dict", required=True, options=dict(
                peer=dict(type="str", required=True),
                address=dict(type="str", required=True),
                network=dict(type="str", required=True),
                mtu=dict(type="int", required=True),
                source=dict(type="str"),
                interface=dict(type="str"),
                interface_mtu=dict(type="int"),
                peer_interface=dict(type="str"),
                peer_mtu=dict(type="int"),
            )),
            count=dict(type="int", default=3),
            wait=dict(type="float", default=1.0),
            parallel=dict(type="int", default=8),
        ),
        supports_check_mode=True,
    )
    end_on_hangup()
    error = check_targets(module.params["targets"])
    if error:
        module.fail_json(msg=error)
    if module.params["count"] < 1 or module.params["parallel"] < 1 or module.params["wait"] <= 0:
        module.fail_json(msg="count and parallel must be at least 1 and wait above 0 (got count=%r, parallel=%r, "
                             "wait=%r)" % (module.params["count"], module.params["parallel"], module.params["wait"]))
    targets = module.params["targets"]
    if not targets:
        module.exit_json(changed=False, probes=[], msg="no targets")
    ping = module.get_bin_path("ping", required=True)
    probes = probe_paths(module.run_command, ping, targets, module.params["count"], module.params["wait"],
                         module.params["parallel"])
    module.exit_json(changed=False, probes=probes, msg=said_paths(probes))


if __name__ == "__main__":
    main()
