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
      - C(confirmed) disarms the rollback timer of the last change and drops its backup.
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
applied:
  description: The backend commands run to apply the change, with their return codes.
  returned: always
  type: list
  elements: dict
  sample: [{command: [netplan, apply], rc: 0}]
"""

import json
import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._network.readback import gather_intent
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem, shell_word
from ansible_collections.gpuops.fabric.plugins.module_utils._network.apply import (
    ApplyError, apply_changes, apply_commands, detect_backend, plan_changes, present_files, unified,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import (
    ROLLBACK_DIR, ROLLBACK_UNIT, connection_interface, restore_script, shell_command,
)


NM_BUS = ["org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager"]
# Roll back also deletes connections added after the checkpoint and disconnects devices that appeared after it.
NM_CHECKPOINT_FLAGS = 0x02 | 0x04
# NetworkManager's checkpoint rolls the running state back first; the files are put back this much later.
NM_FILES_GRACE = 15


def nm_checkpoint(module, timeout):
    """Ask NetworkManager for a checkpoint of all devices that rolls back by itself after ``timeout`` s."""
    busctl = module.get_bin_path("busctl")
    if not busctl:
        module.fail_json(msg="no busctl on this node: cannot create a NetworkManager checkpoint; set "
                         "rollback_timeout: 0 to apply without one")
    rc, out, err = module.run_command([busctl, "call"] + NM_BUS + ["CheckpointCreate", "aouu", "0", str(timeout),
                                                                   str(NM_CHECKPOINT_FLAGS)])
    if rc != 0 or len(out.split()) < 2:
        module.fail_json(msg="NetworkManager refused a checkpoint: %s (is NetworkManager running? does another "
                         "tool hold a checkpoint?)" % (err or out).strip())
    return out.split()[1].strip('"')


def nm_checkpoint_destroy(module, path):
    """Destroy a checkpoint (the change is confirmed). False when NetworkManager no longer has it."""
    busctl = module.get_bin_path("busctl")
    if not busctl:
        return False
    rc, _out, _err = module.run_command([busctl, "call"] + NM_BUS + ["CheckpointDestroy", "o", path])
    return rc == 0


def armed_checkpoint():
    """The NetworkManager checkpoint the last armed change recorded in its manifest, or None."""
    try:
        with open(os.path.join(ROLLBACK_DIR, "manifest.json")) as handle:
            return json.load(handle).get("checkpoint")
    except (IOError, OSError, ValueError, AttributeError):
        return None


def previous_checkpoint(module):
    """A checkpoint an earlier, unconfirmed run of ours left behind: destroy it before taking a new one."""
    path = armed_checkpoint()
    if path:
        nm_checkpoint_destroy(module, path)


def arm_rollback(module, root, backend, changes, timeout):
    """Back up what the change touches and arm a node-side timer that restores it.

    With NetworkManager as backend, NetworkManager's own checkpoint-with-rollback restores the running state
    at ``timeout``; the timer then puts the files back (byte for byte) a little later.
    """
    backup = ROLLBACK_DIR
    checkpoint = None
    if backend == "networkmanager":
        previous_checkpoint(module)
        checkpoint = nm_checkpoint(module, timeout)
        timeout += NM_FILES_GRACE
    if os.path.isdir(backup):
        shutil.rmtree(backup)
    os.makedirs(os.path.join(backup, "files"), 0o700)
    created, saved = [], []
    for _action, path, _new in changes:
        if os.path.exists(path):
            target = os.path.join(backup, "files", path.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)
            saved.append(path)
        else:
            created.append(path)
    script = os.path.join(backup, "restore.sh")
    with open(script, "w") as handle:
        handle.write(restore_script(backend, backup, created, saved, apply_commands(backend, changes)))
    os.chmod(script, 0o700)
    with open(os.path.join(backup, "manifest.json"), "w") as handle:
        json.dump({"backend": backend, "created": created, "armed_at": time.time(), "timeout": timeout,
                   "checkpoint": checkpoint}, handle)
    systemd_run = module.get_bin_path("systemd-run")
    if systemd_run:
        module.run_command([module.get_bin_path("systemctl") or "systemctl", "stop", ROLLBACK_UNIT + ".timer"])
        module.run_command([module.get_bin_path("systemctl") or "systemctl", "reset-failed", ROLLBACK_UNIT + ".service"])
        rc, out, err = module.run_command([systemd_run, "--collect", "--unit=%s" % ROLLBACK_UNIT, "--on-active=%ds" % timeout,
                                           "--timer-property=AccuracySec=1s", "/bin/sh", script])
        if rc != 0:
            if checkpoint:
                nm_checkpoint_destroy(module, checkpoint)
            module.fail_json(msg="could not arm the rollback timer: %s" % (err or out).strip())
        return {"timer": ROLLBACK_UNIT + ".timer", "timeout": timeout, "nm_checkpoint": checkpoint}
    module.fail_json(msg="no systemd-run on this node: cannot arm a rollback timer; set rollback_timeout: 0 to "
                     "apply without one")
    return None


def defer_apply(module, commands, timeout):
    script = os.path.join(ROLLBACK_DIR, "apply.sh")
    lines = ["#!/bin/sh", "rc=0"]
    for command in commands:
        lines.append("timeout %d %s || rc=$?" % (timeout, shell_command(command)))
    lines.append("echo $rc > %s" % shell_word(ROLLBACK_DIR + "/applied"))
    with open(script, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(script, 0o700)
    unit = "gpuops-fabric-apply-%d" % int(time.time() * 1000)
    rc, out, err = module.run_command([module.get_bin_path("systemd-run", required=True), "--unit=%s" % unit,
                                       "--on-active=2s", "--timer-property=AccuracySec=100ms", "/bin/sh", script])
    if rc != 0:
        module.fail_json(msg="could not schedule the apply: %s" % (err or out).strip())
    return [{"command": c, "deferred": True} for c in commands]


def confirm(module, root, timeout):
    """Wait for a deferred apply, then disarm the rollback timer; report a rollback that already happened."""
    marker = os.path.join(ROLLBACK_DIR, "rolled-back")
    applied_marker = os.path.join(ROLLBACK_DIR, "applied")
    if not os.path.isdir(ROLLBACK_DIR):
        return dict(changed=False, rolled_back=False, disarmed=False, msg="nothing to confirm")
    deadline = time.time() + timeout
    while not os.path.exists(applied_marker) and not os.path.exists(marker) and time.time() < deadline:
        time.sleep(1)
    rolled_back = os.path.exists(marker)
    stopped = False
    checkpoint = armed_checkpoint()
    if root == "/" and not module.check_mode and not rolled_back and module.get_bin_path("systemctl"):
        rc, _out, _err = module.run_command([module.get_bin_path("systemctl"), "stop", ROLLBACK_UNIT + ".timer"])
        stopped = rc == 0
        if checkpoint and not nm_checkpoint_destroy(module, checkpoint):
            # NetworkManager already rolled the running state back; put the files back too, now.
            module.run_command(["/bin/sh", os.path.join(ROLLBACK_DIR, "restore.sh")])
            module.fail_json(msg="the change was rolled back on the node by NetworkManager's checkpoint %s: the "
                             "controller did not confirm it in time; the previous files are back" % checkpoint,
                             rolled_back=True, nm_checkpoint=checkpoint)
    apply_rc = None
    if os.path.exists(applied_marker):
        with open(applied_marker) as handle:
            apply_rc = int(handle.read().strip() or "1")
    if apply_rc not in (None, 0) and not rolled_back:
        module.fail_json(msg="applying the change failed on the node (rc %d); the rollback timer was disarmed, the "
                         "new files are in place" % apply_rc, apply_rc=apply_rc)
    if rolled_back:
        with open(marker) as handle:
            when = handle.read().strip()
        module.fail_json(msg="the change was rolled back on the node at %s: the controller did not confirm it in "
                         "time" % when, rolled_back=True)
    if os.path.isdir(ROLLBACK_DIR) and not module.check_mode:
        shutil.rmtree(ROLLBACK_DIR)
    return dict(changed=False, rolled_back=False, disarmed=stopped, apply_rc=apply_rc, nm_checkpoint=checkpoint)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["merged", "replaced", "rendered", "gathered", "confirmed"],
                       default="merged"),
            rendered=dict(type="dict"),
            backend=dict(type="str", choices=["auto", "netplan", "networkmanager", "networkd"], default="auto"),
            root=dict(type="path", default="/"),
            apply=dict(type="bool", default=True),
            apply_timeout=dict(type="int", default=120),
            rollback_timeout=dict(type="int", default=180),
            interfaces=dict(type="list", elements="str", default=[]),
            allow_management=dict(type="bool", default=False),
        ),
        required_if=[("state", "merged", ("rendered",)), ("state", "replaced", ("rendered",)),
                     ("state", "rendered", ("rendered",))],
        supports_check_mode=True,
    )
    params = module.params
    root = params["root"]
    for index, name in enumerate(params["interfaces"]):
        if ifname_problem(name):
            module.fail_json(msg="interfaces[%d]: %r %s" % (index, name, ifname_problem(name)))
    backend = params["backend"] if params["backend"] != "auto" else detect_backend(root)
    if params["state"] == "gathered":
        files = present_files(root, backend)
        try:
            intent, unrepresented = gather_intent(backend, files)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            module.fail_json(msg="could not read the %s files back: %s" % (backend, exc), files=files)
        module.exit_json(changed=False, backend=backend, files=files, diff_text="", intent=intent,
                         unrepresented=unrepresented)
    if params["state"] == "confirmed":
        module.exit_json(**confirm(module, root, params["apply_timeout"]))
    rendered = params["rendered"] or {}
    if backend not in rendered:
        module.fail_json(msg="rendered: no files for backend %s (have: %s); render with fabric_network_backend: auto "
                         "or %s" % (backend, ", ".join(sorted(rendered)) or "none", backend))
    wanted = rendered[backend]
    for path, item in wanted.items():
        if not isinstance(item, dict) or not isinstance(item.get("content"), str) or \
                not isinstance(item.get("mode"), str):
            module.fail_json(msg="rendered.%s.%s: expected content and mode" % (backend, path))
    if params["state"] == "rendered":
        module.exit_json(changed=False, backend=backend, files=wanted, diff_text="")
    live = params["apply"] and root == "/"
    try:
        changes, diffs = plan_changes(root, backend, wanted, replace=params["state"] == "replaced")
    except (ApplyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    controller_iface = connection_interface(os.environ.get("SSH_CONNECTION")) if root == "/" else None
    if changes and controller_iface and controller_iface in params["interfaces"] and not params["allow_management"]:
        module.fail_json(msg="%s carries this connection from the controller; the intent would change it. Set "
                         "fabric_network_allow_management: true to allow it (the rollback timer still guards it)"
                         % controller_iface, controller_interface=controller_iface)
    armed = None
    try:
        if changes and not module.check_mode:
            if live and params["rollback_timeout"] > 0:
                armed = arm_rollback(module, root, backend, changes, params["rollback_timeout"])
            apply_changes(root, changes)
    except (ApplyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    applied = []
    if armed:
        # Apply a moment after this module has answered, so a change that cuts the connection cannot
        # swallow the answer; state=confirmed then waits for the apply and disarms the rollback.
        applied = defer_apply(module, apply_commands(backend, changes), params["apply_timeout"])
    elif changes and not module.check_mode and live:
        for command in apply_commands(backend, changes):
            binary = module.get_bin_path(command[0], required=True)
            rc, out, err = module.run_command(["timeout", str(params["apply_timeout"]), binary] + command[1:],
                                              environ_update={"LC_ALL": "C"})
            applied.append({"command": command, "rc": rc})
            if rc != 0:
                module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(command), rc, (err or out).strip()),
                                 applied=applied, files=["%s %s" % (a, p) for a, p, _n in changes])
    result = dict(changed=bool(changes), backend=backend, files=["%s %s" % (a, p) for a, p, _n in changes],
                  diff_text=unified(diffs), applied=applied, rollback_armed=armed is not None,
                  rollback_timeout=armed["timeout"] if armed else None,
                  nm_checkpoint=armed["nm_checkpoint"] if armed else None, controller_interface=controller_iface)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
