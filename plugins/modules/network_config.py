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
    rollback timer for changes that cut the controller off is being built (see docs/network_intent.md).
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
      - C(gathered) returns the owned files present on the node and touches nothing.
    type: str
    choices: [merged, replaced, rendered, gathered]
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
diff_text:
  description: A unified diff of everything changed (or that would change in check mode).
  returned: always
  type: str
applied:
  description: The backend commands run to apply the change, with their return codes.
  returned: always
  type: list
  elements: dict
  sample: [{command: [netplan, apply], rc: 0}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._netapply import (
    ApplyError,
    apply_changes,
    apply_commands,
    detect_backend,
    plan_changes,
    present_files,
    unified,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["merged", "replaced", "rendered", "gathered"], default="merged"),
            rendered=dict(type="dict"),
            backend=dict(type="str", choices=["auto", "netplan", "networkmanager", "networkd"], default="auto"),
            root=dict(type="path", default="/"),
            apply=dict(type="bool", default=True),
            apply_timeout=dict(type="int", default=120),
        ),
        required_if=[("state", "merged", ("rendered",)), ("state", "replaced", ("rendered",)),
                     ("state", "rendered", ("rendered",))],
        supports_check_mode=True,
    )
    params = module.params
    root = params["root"]
    backend = params["backend"] if params["backend"] != "auto" else detect_backend(root)
    if params["state"] == "gathered":
        module.exit_json(changed=False, backend=backend, files=present_files(root, backend), diff_text="")
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
    try:
        changes, diffs = plan_changes(root, backend, wanted, replace=params["state"] == "replaced")
        if changes and not module.check_mode:
            apply_changes(root, changes)
    except (ApplyError, OSError) as exc:
        module.fail_json(msg=str(exc))
    applied = []
    if changes and not module.check_mode and params["apply"] and root == "/":
        for command in apply_commands(backend, changes):
            binary = module.get_bin_path(command[0], required=True)
            rc, out, err = module.run_command(["timeout", str(params["apply_timeout"]), binary] + command[1:],
                                              environ_update={"LC_ALL": "C"})
            applied.append({"command": command, "rc": rc})
            if rc != 0:
                module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(command), rc, (err or out).strip()),
                                 applied=applied, files=["%s %s" % (a, p) for a, p, _n in changes])
    result = dict(changed=bool(changes), backend=backend, files=["%s %s" % (a, p) for a, p, _n in changes],
                  diff_text=unified(diffs), applied=applied)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
