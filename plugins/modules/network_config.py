#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: network_config
short_description: Put the rendered network configuration of a GPU node in place
version_added: 0.1.0
description:
  - Takes the files M(gpuops.fabric.network_intent) rendered for this host and puts the ones for the node's backend
    in place. Only files this collection owns are ever written or removed
    (C(/etc/netplan/60-gpuops-fabric.yaml), C(/etc/NetworkManager/system-connections/gpuops-*),
    C(/etc/systemd/network/60-gpuops-*)); interfaces the intent does not name are never touched.
  - Writes atomically with the modes the backends want (netplan and keyfiles 0600), reports C(changed) with a
    C(diff), and changes nothing in check mode.
  - With O(apply) (the default) the backend then applies the change to the running system. A node-side
    rollback timer (and, with NetworkManager, its own checkpoint) undoes a change that cuts the controller off.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.actiongroup
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    description: Running the action again with the same input gives the same result and changes nothing.
    support: full
options:
  state:
    description:
      - C(merged) writes the intent's files and leaves other owned files alone.
      - C(replaced) also removes owned files the intent no longer renders (an interface dropped from the intent).
      - C(rendered) returns the files for the chosen backend and touches nothing.
      - C(gathered) returns the owned files present on the node and, in RV(intent), what they configure in the
        intent's shape (C(fabric_networks), C(fabric_bonds), C(fabric_attachments), C(fabric_addresses) for this
        host); touches nothing. Fed back as the inventory's intent, it renders the same files (no change).
      - C(confirmed) disarms the rollback timer of the last change and drops its backup, once that change has been
        applied and has run for O(settle) seconds; until then it returns RV(pending) and disarms nothing, so the
        caller asks again over a new round trip (the role retries every 2 s). A confirmation that was under way
        when the change cut the path therefore never disarms the timer.
    type: str
    choices: [merged, replaced, rendered, gathered, confirmed]
    default: merged
  rendered:
    description:
      - The files per backend, as C(rendered[inventory_hostname]) from M(gpuops.fabric.network_intent), that is
        backend name to a mapping of path to C(content) and C(mode).
      - Required unless O(state=gathered).
    type: dict
  backend:
    description: Which backend's files to use. C(auto) detects it on the node (netplan, else NetworkManager, else networkd).
    type: str
    choices: [auto, netplan, networkmanager, networkd]
    default: auto
  root:
    description: Directory standing for C(/) (tests, image builds). Default C(/).
    type: path
    default: /
  apply:
    description:
      - After a change, make the backend bring the running system in line (C(netplan apply); C(networkctl reload)
        and C(networkctl reconfigure) of the changed interfaces; C(nmcli connection reload) and C(nmcli connection
        up) of the changed connections). Never with a O(root) other than C(/), and never in check mode.
    type: bool
    default: true
  apply_timeout:
    description: Seconds the backend's apply may take before the module gives up and fails.
    type: int
    default: 120
  settle:
    description:
      - With O(state=confirmed), how many seconds the applied change must have run before a confirmation counts
        (backends finish some of their work after their apply command returns, as networkd's DHCP release).
    type: int
    default: 5
  rollback_timeout:
    description:
      - Before applying, arm a timer on the node (a transient systemd timer) that puts the previous files back and
        re-applies them after this many seconds, unless O(state=confirmed) disarms it first. The role confirms
        once the controller reaches the node again, so a change that cuts the controller off undoes itself.
      - With the NetworkManager backend, NetworkManager's own checkpoint (D-Bus C(CheckpointCreate), all devices,
        deleting connections added after it) rolls the running state back after this many seconds; the timer
        then puts the files back byte for byte 15 seconds later. Confirmation destroys the checkpoint.
      - C(0) applies without a safety net.
    type: int
    default: 180
  interfaces:
    description:
      - Names of the interfaces the rendered files configure (from the plan). When the interface carrying this
        connection is among them, the module refuses unless O(allow_management=true).
    type: list
    elements: str
    default: []
  allow_management:
    description: Allow changing the interface the controller's connection uses (the rollback timer still guards it).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Plan the network of all hosts on the controller
  gpuops.fabric.network_intent:
  run_once: true
  delegate_to: localhost
  register: fabric_network_intent

- name: Put this host's files in place
  gpuops.fabric.network_config:
    rendered: "{{ fabric_network_intent.rendered[inventory_hostname] }}"
    state: replaced
"""

RETURN = r"""
backend:
  description: The backend whose files were used.
  returned: always
  type: str
  sample: netplan
files:
  description: For C(rendered) the files that would be written; for C(gathered) the owned files present; otherwise
    the paths written or removed.
  returned: always
  type: raw
intent:
  description:
    - With O(state=gathered), the owned files read back into the intent's shape for this host. Network names and
      roles come from the comment markers the renderers write; files without them get names from the interface.
  returned: when state is gathered
  type: dict
  sample:
    fabric_networks: {training: {role: training, subnet: 198.18.4.0/24, vlan: 100, mtu: 9000}}
    fabric_bonds: {bond0: {members: [enp0s4, enp0s5], mode: 802.3ad, miimon: 100, lacp_rate: fast, mtu: 9000}}
    fabric_attachments: {training: bond0}
    fabric_addresses: {training: {ipv4: 198.18.4.1}}
    fabric_network_backend: netplan
unrepresented:
  description: With O(state=gathered), what the files configure that the intent cannot say (a second address of one
    family on an interface, a gateway on a non-management network) or had to guess (a network name).
  returned: when state is gathered
  type: list
  elements: str
diff_text:
  description: A unified diff of everything changed (or that would change in check mode).
  returned: always
  type: str
rollback_armed:
  description: Whether a rollback timer was armed (a live change with O(rollback_timeout) above 0).
  returned: always
  type: bool
nm_checkpoint:
  description: The D-Bus path of the NetworkManager checkpoint guarding this change, when NetworkManager is the backend.
  returned: always
  type: str
  sample: /org/freedesktop/NetworkManager/Checkpoint/1
pending:
  description: With O(state=confirmed), true while the change is still being applied or has not yet run for
    O(settle) seconds; nothing was disarmed, ask again.
  returned: when state is confirmed
  type: bool
applied:
  description: The backend commands run to apply the change, with their return codes.
  returned: always
  type: list
  elements: dict
  sample: [{command: [netplan, apply], rc: 0}]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._network.apply import (
    apply_changes, ApplyError, plan_changes, present_files, unified,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import backend_module, detect_backend
from ansible_collections.gpuops.fabric.plugins.module_utils._network.readback import gather_intent
from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import (
    arm_rollback, confirm, connection_interface, defer_apply,
)

ARGUMENT_SPEC = dict(
    state=dict(type="str", choices=["merged", "replaced", "rendered", "gathered", "confirmed"],
               default="merged"),
    rendered=dict(type="dict"),
    backend=dict(type="str", choices=["auto", "netplan", "networkmanager", "networkd"], default="auto"),
    root=dict(type="path", default="/"),
    apply=dict(type="bool", default=True),
    apply_timeout=dict(type="int", default=120),
    settle=dict(type="int", default=5),
    rollback_timeout=dict(type="int", default=180),
    interfaces=dict(type="list", elements="str", default=[]),
    allow_management=dict(type="bool", default=False),
)


def check_interfaces(module, interfaces):
    """Fail on a name in ``interfaces`` that is not an interface name this collection writes."""
    for index, name in enumerate(interfaces):
        if ifname_problem(name):
            module.fail_json(msg="interfaces[%d]: %r %s" % (index, name, ifname_problem(name)))


def gathered(module, root, backend):
    """state=gathered: the owned files present, read back into the intent's shape."""
    files = present_files(root, backend)
    try:
        intent, unrepresented = gather_intent(backend, files)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        module.fail_json(msg="could not read the %s files back: %s" % (backend, exc), files=files)
    return dict(changed=False, backend=backend, files=files, diff_text="", intent=intent, unrepresented=unrepresented)


def wanted_files(module, backend, rendered):
    """The rendered files of ``backend``, each checked to have its content and mode."""
    if backend not in rendered:
        module.fail_json(msg="rendered: no files for backend %s (have: %s); render with fabric_network_backend: auto "
                         "or %s" % (backend, ", ".join(sorted(rendered)) or "none", backend))
    wanted = rendered[backend]
    for path, item in wanted.items():
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or \
                not isinstance(item.get("mode"), str):
            module.fail_json(msg="rendered.%s.%s: expected content and mode" % (backend, path))
    return wanted


def plan(module, root, backend, wanted):
    """What would change, and the interface carrying the controller's connection (refused when the change would
    touch it, unless allow_management). Returns (changes, diffs, controller_iface); nothing is written."""
    params = module.params
    try:
        changes, diffs = plan_changes(root, backend, wanted, replace=params["state"] == "replaced")
    except (ApplyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    controller_iface = connection_interface(os.environ.get("SSH_CONNECTION")) if root == "/" else None
    if changes and controller_iface and controller_iface in params["interfaces"] and not params["allow_management"]:
        module.fail_json(msg="%s carries this connection from the controller; the intent would change it. Set "
                         "fabric_network_allow_management: true to allow it (the rollback timer still guards it)"
                         % controller_iface, controller_interface=controller_iface)
    return changes, diffs, controller_iface


def write(module, root, backend, changes, live):
    """Write the changes, behind a rollback timer when they will be applied live. Returns what arm_rollback
    armed, or None."""
    armed = None
    try:
        if live and module.params["rollback_timeout"] > 0:
            armed = arm_rollback(module, root, backend, changes, module.params["rollback_timeout"])
        apply_changes(root, changes)
    except (ApplyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    return armed


def apply_now(module, backend, changes):
    """Run the backend's commands now, each under the apply timeout; the first that fails fails the task."""
    applied = []
    for command in backend_module(backend).apply_commands(changes):
        binary = module.get_bin_path(command[0], required=True)
        rc, out, err = module.run_command(["timeout", str(module.params["apply_timeout"]), binary] + command[1:],
                                          environ_update={"LC_ALL": "C"})
        applied.append({"command": command, "rc": rc})
        if rc != 0:
            module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(command), rc, (err or out).strip()),
                             applied=applied, files=["%s %s" % (a, p) for a, p, _n in changes])
    return applied


def put_in_place(module, root, backend, wanted):
    """state=merged or replaced: compare; unless in check mode write what changed and apply it."""
    params = module.params
    live = params["apply"] and root == "/"
    changes, diffs, controller_iface = plan(module, root, backend, wanted)
    armed, applied = None, []
    if changes and not module.check_mode:
        armed = write(module, root, backend, changes, live)
        if armed:
            # Apply a moment after this module has answered, so a change that cuts the connection cannot
            # swallow the answer; state=confirmed disarms the rollback once the apply has run a few seconds.
            applied = defer_apply(module, backend_module(backend).apply_commands(changes), params["apply_timeout"])
        elif live:
            applied = apply_now(module, backend, changes)
    result = dict(changed=bool(changes), backend=backend, files=["%s %s" % (a, p) for a, p, _n in changes],
                  diff_text=unified(diffs), applied=applied, rollback_armed=armed is not None,
                  rollback_timeout=armed["timeout"] if armed else None,
                  nm_checkpoint=armed["nm_checkpoint"] if armed else None, controller_interface=controller_iface)
    if module._diff:
        result["diff"] = diffs
    return result


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[("state", "merged", ("rendered",)), ("state", "replaced", ("rendered",)),
                     ("state", "rendered", ("rendered",))],
        supports_check_mode=True,
    )
    params = module.params
    root = params["root"]
    check_interfaces(module, params["interfaces"])
    backend = params["backend"] if params["backend"] != "auto" else detect_backend(root)
    if params["state"] == "gathered":
        module.exit_json(**gathered(module, root, backend))
    if params["state"] == "confirmed":
        if params["settle"] < 0:
            module.fail_json(msg="settle: %d is below 0" % params["settle"])
        module.exit_json(**confirm(module, root, params["settle"]))
    wanted = wanted_files(module, backend, params["rendered"] or {})
    if params["state"] == "rendered":
        module.exit_json(changed=False, backend=backend, files=wanted, diff_text="")
    module.exit_json(**put_in_place(module, root, backend, wanted))


if __name__ == "__main__":
    main()
