#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: host_tuning
short_description: Tune a GPU node's TCP path - socket buffers for the link's bandwidth-delay product, NIC rings, IRQs on the NIC's NUMA node
version_added: 0.1.0
description:
  - For the interfaces given (the training and storage attachments; a bond stands for its members, a VLAN for its
    parent) works out the physical ports and tunes three things, each only upwards or towards the NIC's own socket,
    never lowering what an operator set higher.
  - B(Socket buffers.) The maxima of C(net.core.rmem_max), C(net.core.wmem_max) and the third field of
    C(net.ipv4.tcp_rmem) and C(net.ipv4.tcp_wmem) are raised to twice the bandwidth-delay product of one flow (the
    fastest port's speed, or O(speed_mbps), times O(rtt_ms)), as a power of two from 4 MiB to 1 GiB. Kept across
    reboots in O(sysctl_file) and applied at once through C(/proc/sys). A value the node cannot change (the
    C(net.core) ones are read-only inside a network namespace or container) is reported, not an error.
  - B(Rings) (O(rings=max)). RX and TX rings below the NIC's maximum (C(ethtool -g)) are set to it, at most 8192
    entries (C(ethtool -G)); more ring entries absorb bursts the driver would otherwise drop (STAB-002's NIC
    discards), and past 8192 they only cost memory (some NICs allow a million).
    Many drivers reset the link to resize rings, so a port carrying this connection from the controller is left
    alone unless O(allow_management). Live nodes only (O(root=/)); not kept across reboots or driver reloads.
  - B(IRQ affinity) (O(irq_affinity)). Each MSI/MSI-X interrupt of a port's PCI function whose affinity reaches CPUs
    outside the function's NUMA node is given that node's CPUs (C(/proc/irq/N/smp_affinity_list)). IRQs already on
    the right node, spread across its CPUs, are left as they are. Interrupts whose affinity the kernel manages
    itself are reported and left. Not kept across reboots; a running C(irqbalance) may move them again (warned).
  - Reads and writes files below O(root); a root other than C(/) is a captured tree, where commands do not run.
    No write leaves the root. Every path it would write (the sysctl file, each C(/proc/sys) value, each IRQ's
    C(smp_affinity_list)) is resolved before anything is read or written; when a symbolic link below the root takes
    one out of it, the module fails naming the key and the path, and writes nothing at all (in check mode too).
    Values are opened without following a symbolic link in their last component.
  - A buffer value read from the node that the kernel would refuse (outside C(0..2147483647), C(tcp_rmem) or
    C(tcp_wmem) not three integers from 1 with min <= default <= max, or no number at all) is a warning naming the
    key and the value; that key is neither changed nor written to O(sysctl_file), the others are still tuned.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.actiongroup
attributes:
  check_mode:
    support: full
    details:
      - Reads everything and reports what would change; writes nothing and runs no C(ethtool -G).
  diff_mode:
    support: full
    details:
      - The sysctl file's text before and after, and one line per live value, ring and IRQ that changes.
  idempotent:
    description: Running the module again with the same input changes nothing.
    support: full
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
options:
  interfaces:
    description:
      - The interfaces to tune for (names as the node has them). A bond counts as its members and a VLAN as its
        parent. Each must exist on the node; a name outside the kernel's rules is refused before anything is read.
    type: list
    elements: str
    required: true
  speed_mbps:
    description:
      - The speed of one flow's link in Mb/s when the ports report none (a port that is down, a virtual NIC). The
        fastest port's own speed comes first.
    type: int
  rtt_ms:
    description:
      - Round-trip time the buffers are sized for, in milliseconds (0.01 to 1000). 1 ms covers a data-centre fabric
        with queueing under load; raise it for paths between sites.
    type: float
    default: 1.0
  buffers:
    description: Size the socket buffers.
    type: bool
    default: true
  rings:
    description: C(max) raises RX and TX rings to the NIC's maximum; C(keep) leaves them.
    type: str
    choices: [max, keep]
    default: max
  irq_affinity:
    description: Keep each port's interrupts on its NUMA node.
    type: bool
    default: true
  allow_management:
    description: Also resize the rings of a port that carries this connection from the controller.
    type: bool
    default: false
  root:
    description:
      - Read and write below this directory (a captured tree); C(/) on a live node. An absolute path to a directory.
        Symbolic links inside it are followed only while they stay below it.
    type: path
    default: /
  sysctl_file:
    description:
      - The file in C(/etc/sysctl.d) (below O(root)) that keeps the buffer sizes across reboots; only its name may
        change. A plain file name directly in C(/etc/sysctl.d), 1 to 64 characters of C(A-Z a-z 0-9 _ -) with single
        dots between them, ending in C(.conf); anything else (C(/etc/passwd), a subfolder, C(..)) is refused.
    type: str
    default: /etc/sysctl.d/60-gpuops-fabric.conf
notes:
  - The role C(gpuops.fabric.tuning) runs this module with the training and storage attachments of the network
    intent; docs/tuning.md explains the sizes.
"""

EXAMPLES = r"""
- name: Tune the training NICs of a node
  gpuops.fabric.host_tuning:
    interfaces: [bond0.100]
    rtt_ms: 1
  register: tuned
"""

RETURN = r"""
ports:
  description: The physical ports the interfaces stand for, sorted.
  returned: always
  type: list
  elements: str
  sample: [ens1f0np0, ens1f1np1]
speed_mbps:
  description: The speed the buffers are sized for (the fastest port's, else O(speed_mbps)); null when unknown.
  returned: always
  type: int
buffer_bytes:
  description: The buffer size a flow gets (2 x the bandwidth-delay product, a power of two); null when not sized.
  returned: always
  type: int
  sample: 33554432
sysctls:
  description: Per sysctl, C(before) and C(after) (text as C(/proc/sys) prints it) and C(error) where it could not be set.
  returned: always
  type: dict
  sample: {net.core.rmem_max: {before: "212992", after: "33554432", error: null}}
rings:
  description: Per port whose rings are (or would be) resized, C(port), C(before), C(after), C(error).
  returned: always
  type: list
  elements: dict
irqs:
  description: Per interrupt moved (or to move), C(port), C(irq), C(before), C(after), C(error).
  returned: always
  type: list
  elements: dict
notes:
  description: What was not tuned, and why (a port without a PCI function, a NUMA node the kernel does not know).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import connection_interface
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning import (
    parse_rings, plan_buffers, plan_irqs, ring_changes, sysctl_file_problem,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning_node import (
    Node, OutsideRoot, irqbalance_runs, read_buffers, read_irqs, root_problem, sysctl_path, write_file, write_value,
)


def option_problems(params):
    """Each option that is not what this module takes, as "key: value why"; empty when all are."""
    problems = []
    if not params["interfaces"]:
        problems.append("interfaces: empty; name the training interfaces to tune for")
    for index, name in enumerate(params["interfaces"] or []):
        problem = ifname_problem(name)
        if problem:
            problems.append("interfaces[%d]: %r %s" % (index, name, problem))
    if not 0.01 <= params["rtt_ms"] <= 1000:  # NaN fails this too
        problems.append("rtt_ms: %r is outside 0.01..1000" % params["rtt_ms"])
    if params["speed_mbps"] is not None and not 1 <= params["speed_mbps"] <= 10000000:
        problems.append("speed_mbps: %r is outside 1..10000000" % params["speed_mbps"])
    problem = sysctl_file_problem(params["sysctl_file"])
    if problem:
        problems.append("sysctl_file: %r %s" % (params["sysctl_file"], problem))
    problem = root_problem(params["root"])
    if problem:
        problems.append("root: %r %s" % (params["root"], problem))
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", required=True),
            speed_mbps=dict(type="int"),
            rtt_ms=dict(type="float", default=1.0),
            buffers=dict(type="bool", default=True),
            rings=dict(type="str", choices=["max", "keep"], default="max"),
            irq_affinity=dict(type="bool", default=True),
            allow_management=dict(type="bool", default=False),
            root=dict(type="path", default="/"),
            sysctl_file=dict(type="str", default="/etc/sysctl.d/60-gpuops-fabric.conf"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = option_problems(params)
    if problems:
        module.fail_json(msg="; ".join(problems))
    file_path, root = params["sysctl_file"], params["root"]
    node = Node(root)
    missing = [i for i in params["interfaces"] if not node.exists(i)]
    if missing:
        module.fail_json(msg="interfaces: %s not on this node (%s)" % (", ".join(missing), ", ".join(
            n for n in node.listdir("sys/class/net") if node.exists(n)) or "no interfaces"))
    live_node = root == "/"
    ports = sorted(set(p for i in params["interfaces"] for p in node.ports(i)))
    speeds = [s for s in (node.speed(p) for p in ports) if s]
    speed = max(speeds) if speeds else params["speed_mbps"]
    result = dict(changed=False, ports=ports, speed_mbps=speed, buffer_bytes=None, sysctls={}, rings=[], irqs=[],
                  notes=[])
    diff_before, diff_after, diffs = [], [], []

    # --- everything is read and planned first; nothing is written before the whole plan stands
    live, before_file, after_file = {}, None, None
    if params["buffers"]:
        if speed is None:
            result["notes"].append("buffers: no port reports a speed (%s) and speed_mbps is not set" % ", ".join(ports))
        else:
            readings, before_file = read_buffers(node, file_path)
            live, after_file, size, _bdp, notes, value_warnings = plan_buffers(readings, speed, params["rtt_ms"])
            result["buffer_bytes"] = size
            result["notes"].extend(notes)
            for warning in value_warnings:
                module.warn(warning)
            if before_file != after_file:
                diffs.append({"before_header": file_path, "after_header": file_path,
                              "before": before_file or "", "after": after_file})
            for name, (before, after) in sorted(live.items()):
                result["sysctls"][name] = {"before": before, "after": after, "error": None}
                diff_before.append("%s = %s" % (name, before))
                diff_after.append("%s = %s" % (name, after))
    rings = []
    if params["rings"] == "max":
        if not live_node:
            result["notes"].append("rings: read with ethtool on the live node only (root is %s)" % root)
        else:
            ethtool = module.get_bin_path("ethtool")
            controller = connection_interface(os.environ.get("SSH_CONNECTION"))
            guarded = set(node.ports(controller)) if controller and node.exists(controller) else set()
            for port in ports:
                if ethtool is None:
                    result["notes"].append("rings: ethtool is not installed")
                    break
                rc, out, _err = module.run_command([ethtool, "-g", port])
                parsed = parse_rings(out) if rc == 0 else None
                if parsed is None:
                    result["notes"].append("%s: its driver reports no ring sizes (ethtool -g)" % port)
                    continue
                change = ring_changes(parsed)
                if not change:
                    continue
                if port in guarded and not params["allow_management"]:
                    module.warn("%s carries this connection from the controller (%s); its rings stay as they are "
                                "(a resize resets the link on many drivers): set allow_management to resize them"
                                % (port, controller))
                    result["notes"].append("%s: carries the controller's connection; rings left" % port)
                    continue
                rings.append((port, change, ethtool))
                before = " ".join("%s %d" % (r, c) for r, (c, _m) in sorted(change.items()))
                after = " ".join("%s %d" % (r, m) for r, (_c, m) in sorted(change.items()))
                result["rings"].append({"port": port, "before": before, "after": after, "error": None})
                diff_before.append("%s rings: %s" % (port, before))
                diff_after.append("%s rings: %s" % (port, after))
    moves = []
    if params["irq_affinity"]:
        moves, skipped = plan_irqs(read_irqs(node, ports))
        result["notes"].extend(skipped)
        for port, irq, before, after in moves:
            result["irqs"].append({"port": port, "irq": irq, "before": before, "after": after, "error": None})
            diff_before.append("irq %d (%s) affinity: %s" % (irq, port, before))
            diff_after.append("irq %d (%s) affinity: %s" % (irq, port, after))
        if moves and irqbalance_runs(node):
            module.warn("irqbalance runs on this node and may move the IRQs of %s again; ban them from it or "
                        "stop it" % ", ".join(sorted(set(p for p, _i, _b, _a in moves))))
    if node.refused:  # a path to write leads out of the root: nothing at all is written, check mode or not
        module.fail_json(msg="refused to write outside the root %s: %s" % (root, "; ".join(node.refused)),
                         refused=node.refused, **result)
    if diff_before or diff_after:
        diffs.append({"before_header": "live values", "after_header": "live values",
                      "before": "\n".join(diff_before) + "\n", "after": "\n".join(diff_after) + "\n"})
    result["changed"] = bool(diffs)
    if module._diff:
        result["diff"] = diffs

    if not module.check_mode and result["changed"]:
        if after_file is not None and before_file != after_file:
            try:
                write_file(root, file_path, "sysctl_file", after_file)
            except OutsideRoot as exc:
                module.fail_json(msg=str(exc), **result)
            except (IOError, OSError) as exc:
                module.fail_json(msg="sysctl_file: %s: %s" % (node.path(file_path), exc), **result)
        for name in sorted(live):
            result["sysctls"][name]["error"] = write_value(root, sysctl_path(name), name, live[name][1])
        for port, change, ethtool in rings:
            argv = [ethtool, "-G", port]
            for ring, (_current, maximum) in sorted(change.items()):
                argv += [ring, str(maximum)]
            rc, out, err = module.run_command(argv)
            if rc != 0:
                [entry] = [r for r in result["rings"] if r["port"] == port]
                entry["error"] = (err or out or "ethtool -G exited %d" % rc).strip()[:500]
        for entry in result["irqs"]:
            entry["error"] = write_value(root, "proc/irq/%d/smp_affinity_list" % entry["irq"],
                                         "irq %d (%s)" % (entry["irq"], entry["port"]), entry["after"])
    errors = ["%s: %s" % (name, item["error"]) for name, item in sorted(result["sysctls"].items()) if item["error"]]
    errors += ["%s rings: %s" % (r["port"], r["error"]) for r in result["rings"] if r["error"]]
    errors += ["irq %d (%s): %s" % (r["irq"], r["port"], r["error"]) for r in result["irqs"] if r["error"]]
    for error in errors:
        module.warn("not tuned: %s" % error)
    for warning in node.warnings:  # a file that was not a regular file, or not readable: named, never opened
        module.warn(warning)
    result["msg"] = "%d port(s)%s: %d sysctl(s), %d ring(s), %d IRQ(s) %s%s" % (
        len(ports), " for %d Mb/s" % speed if speed else "", len(result["sysctls"]), len(result["rings"]),
        len(result["irqs"]), "to change" if module.check_mode else "changed",
        "; %d not applied" % len(errors) if errors else "")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
