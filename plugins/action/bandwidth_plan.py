# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.module_utils._names import hostname_problem, safe_join
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import training_interface
from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import ControllerAction, target_hosts
from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import MAX_NODES
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.node_shape import shape_from_facts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.planner import chart, plan_node, table

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str"),
    gradient_bytes=dict(type="float", required=True),
    nodes=dict(type="int", default=16),
    compute_seconds=dict(type="float"),
    mode=dict(type="str", choices=["tcp", "rdma"]),
    mtu=dict(type="int"),
    socket_gbytes_per_s=dict(type="float"),
    plan_dir=dict(type="path"),
    chart=dict(type="bool", default=True),
)


class ActionModule(ControllerAction):
    """What the hardware allows NCCL's all_reduce on each host and on N like it, the segment that caps it, and the
    gradient all_reduce per step on 2..N nodes, on the controller (the model of NCCL's collectives)."""

    NAME = "bandwidth_plan"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        if finite(args["gradient_bytes"], 1e-9, 1e15) is None:
            raise AnsibleActionFail("bandwidth_plan: gradient_bytes: %r must be above 0 (at most 1e15)"
                                    % args["gradient_bytes"])
        if not 2 <= args["nodes"] <= MAX_NODES:
            raise AnsibleActionFail("bandwidth_plan: nodes: %r must be 2 or more (at most %d)"
                                    % (args["nodes"], MAX_NODES))
        if args["compute_seconds"] is not None and finite(args["compute_seconds"], 1e-9, 86400) is None:
            raise AnsibleActionFail("bandwidth_plan: compute_seconds: %r must be above 0 (at most 86400)"
                                    % args["compute_seconds"])
        hosts, hostvars = target_hosts("bandwidth_plan", args["hosts"], task_vars)
        plan_dir = args["plan_dir"] or task_vars.get("fabric_plan_dir") or "fabric-plan"
        compute = ", compute %.3g s per step" % args["compute_seconds"] if args["compute_seconds"] else ""
        intro = "Gradient %.3g bytes per step, up to %d nodes%s." % (args["gradient_bytes"], args["nodes"], compute)
        plans, skipped, markdown = {}, {}, ["# Bandwidth plan", "", intro, "",
                                            "Every figure is the model of NCCL's collectives (docs/nccl.md), the one "
                                            "the audit holds measured runs against.", ""]
        for host in hosts:
            # A host the model cannot plan (no facts, no GPU, no figure...) is named, left out and reported; the
            # others are still planned.
            hv = hostvars[host]
            facts = (hv.get("ansible_facts") or {}).get("gpuops_fabric")
            if not facts:
                gathered = hv.get("fabric_plan_gather") or {}
                why = gathered.get("msg") if gathered.get("failed") or gathered.get("unreachable") else None
                skipped[host] = ("its facts could not be gathered: %s" % " ".join(str(why).split())[:200] if why else
                                 "no gpuops_fabric facts (did topology_facts run?)")
                continue
            mode = args["mode"] or hv.get("fabric_nccl_mode")
            mode = mode if mode in ("tcp", "rdma") else None
            interface, problems = training_interface(hv) if mode != "rdma" else (None, [])
            shape = None
            try:
                shape = shape_from_facts(facts, mode, None if problems else interface, args["socket_gbytes_per_s"])
                rdma = any(r["transport"] != "socket" for r in shape["rails"])
                nearest = bool(problems) and not rdma
                if nearest:
                    # no training interface: the NIC nearest each GPU, as a server model gets it; said
                    shape["notes"].insert(0, "%s: the NIC nearest each GPU is its rail" % "; ".join(problems))
                # the MTU to plan for: the argument's on every socket rail, else the intent's on the training
                # interface (what site.yml sets), else each interface's own from the facts
                mtu = args["mtu"] or self._intent_mtu(hv)
                shape["rails"] = [dict(r, mtu=mtu) if mtu and r["transport"] == "socket" and (
                    args["mtu"] or r["name"] == interface) else r for r in shape["rails"]]
                plan = plan_node(shape, args["gradient_bytes"], args["nodes"], args["compute_seconds"])
            except ModelError as exc:
                # the notes that say why a rail is missing (an interface not in the facts, a port without a speed)
                why = [n for n in (shape or {}).get("notes") or [] if n.endswith(("no rail", "left out"))]
                skipped[host] = "%s (mode %s)%s" % (exc, mode or "as the hardware allows",
                                                    "; " + "; ".join(why) if why else "")
                continue
            if nearest:
                self._display.warning("bandwidth_plan: %s: %s; planned on the NIC nearest each GPU"
                                      % (host, "; ".join(problems)))
            plan.update(mode=mode or ("rdma" if rdma else "tcp"),
                        interface=None if problems else interface, gpus=shape["gpus"])
            markdown.append(table(host, plan, args["compute_seconds"]))
            plans[host] = plan
        reasons = ["%s: %s" % (host, skipped[host]) for host in sorted(skipped)]
        if not plans:
            raise AnsibleActionFail("bandwidth_plan: no host could be planned:\n" + "\n".join(reasons))
        if skipped:
            markdown += ["## Not planned", ""] + ["- %s" % r for r in reasons] + [""]
        for reason in reasons:
            self._display.warning("bandwidth_plan: %s was not planned: %s" % tuple(reason.split(": ", 1)))
        if args["chart"] and not self._task.check_mode:
            # One chart per host, named after it: the name must be one file name inside plan_dir, nothing else.
            targets = {}
            for host in plans:
                try:
                    if hostname_problem(host):
                        raise ValueError("inventory host name %r %s" % (host, hostname_problem(host)))
                    targets[host] = safe_join(plan_dir, "%s.png" % host)
                except ValueError as exc:
                    raise AnsibleActionFail("bandwidth_plan: %s: %s" % (host, exc))
            os.makedirs(plan_dir, exist_ok=True)
            for host in sorted(plans):
                try:
                    plans[host]["chart"] = chart(targets[host], host, plans[host], args["compute_seconds"])
                except ModelError as exc:
                    raise AnsibleActionFail(str(exc))
        for plan in plans.values():
            # the chart's curves per link speed stay out of the result: their last point and ceiling stay in
            for entry in plan["by_link_speed"]:
                entry["allreduce_s"] = entry.pop("rows")[-1]["allreduce_s"]
        text = "\n".join(markdown)
        files = []
        if not self._task.check_mode:
            write_atomic(os.path.join(plan_dir, "plan.md"), text, "0644")
            write_atomic(os.path.join(plan_dir, "plan.json"), json.dumps(plans, indent=1, sort_keys=True) + "\n",
                         "0644")
            files = sorted(os.path.join(plan_dir, f) for f in os.listdir(plan_dir))
        result.update(changed=False, plans=plans, markdown=text, files=files, skipped_hosts=skipped,
                      msg="bandwidth plan of %d host(s) in %s%s" % (
                          len(plans), plan_dir, "; not planned: %s" % ", ".join(sorted(skipped)) if skipped else ""))
        return result

    @staticmethod
    def _intent_mtu(hostvars):
        """The training network's MTU from the intent (what site.yml sets), or None: the interface's own then."""
        networks = hostvars.get("fabric_networks") or {}
        for name, net in networks.items() if isinstance(networks, dict) else []:
            if isinstance(net, dict) and net.get("role", name) == "training" and isinstance(net.get("mtu"), int) \
                    and not isinstance(net.get("mtu"), bool):
                return net["mtu"]
        return None
