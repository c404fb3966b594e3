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
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.bandwidth import ModelError
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.collective import predict
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.node_shape import shape_from_facts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.planner import (
    by_link_speed, chart, node_paths, scaling, table,
)

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
    """Name each GPU's bottleneck to the network and predict the allreduce time per step, on the controller."""

    NAME = "bandwidth_plan"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        if args["gradient_bytes"] <= 0:
            raise AnsibleActionFail("bandwidth_plan: gradient_bytes: %r must be above 0" % args["gradient_bytes"])
        if args["nodes"] < 2:
            raise AnsibleActionFail("bandwidth_plan: nodes: %r must be 2 or more" % args["nodes"])
        if args["compute_seconds"] is not None and args["compute_seconds"] <= 0:
            raise AnsibleActionFail("bandwidth_plan: compute_seconds: %r must be above 0" % args["compute_seconds"])
        hosts, hostvars = target_hosts("bandwidth_plan", args["hosts"], task_vars)
        plan_dir = args["plan_dir"] or task_vars.get("fabric_plan_dir") or "fabric-plan"
        compute = ", compute %.3g s per step" % args["compute_seconds"] if args["compute_seconds"] else ""
        intro = "Gradient %.3g bytes per step, up to %d nodes%s." % (args["gradient_bytes"], args["nodes"], compute)
        plans, skipped, markdown, charts = {}, {}, ["# Bandwidth plan", "", intro, ""], []
        allowed = {}
        for host in hosts:
            # A host the model cannot plan (no facts, no training network, no GPU...) is named, left out and
            # reported; the others are still planned.
            hv = hostvars[host]
            facts = (hv.get("ansible_facts") or {}).get("gpuops_fabric")
            if not facts:
                gathered = hv.get("fabric_plan_gather") or {}
                why = gathered.get("msg") if gathered.get("failed") or gathered.get("unreachable") else None
                skipped[host] = ("its facts could not be gathered: %s" % " ".join(str(why).split())[:200] if why else
                                 "no gpuops_fabric facts (did topology_facts run?)")
                continue
            mode = args["mode"] or hv.get("fabric_nccl_mode") or "tcp"
            interface, problems = training_interface(hv) if mode == "tcp" else (None, [])
            allowed[host] = self._allowed(facts, args["mode"] or hv.get("fabric_nccl_mode"),
                                          None if problems else interface, args["nodes"])
            mtu = args["mtu"] or self._training_mtu(hv, facts, interface)
            try:
                if problems:
                    raise ModelError("; ".join(problems))
                plan = node_paths(facts, mode, interface, mtu, args["socket_gbytes_per_s"])
                rows = scaling(args["gradient_bytes"], plan["node"]["gbytes_per_s"], args["nodes"],
                               args["compute_seconds"]) if plan["node"]["gbytes_per_s"] else []
                speeds = by_link_speed(plan, mode, mtu, args["gradient_bytes"], args["nodes"], args["compute_seconds"])
            except ModelError as exc:
                skipped[host] = "%s (mode %s)" % (exc, mode)
                continue
            entry = {"mode": mode, "interface": interface, "mtu": mtu, "plan": plan, "scaling": rows,
                     "by_link_speed": [dict((k, v) for k, v in s.items() if k != "rows") for s in speeds]}
            markdown.append(table(host, plan, rows, args["compute_seconds"]))
            markdown.append(self._verdict(speeds, args))
            charts.append((host, speeds, {"rows": rows, "gbytes_per_s": plan["node"]["gbytes_per_s"]} if rows else None))
            plans[host] = entry
        reasons = ["%s: %s" % (host, skipped[host]) for host in sorted(skipped)]
        if not plans and not any((a.get(k) or {}).get("busbw_gbytes_per_s") is not None
                                 for a in allowed.values() for k in ("node", "across")):
            raise AnsibleActionFail("bandwidth_plan: no host could be planned:\n" + "\n".join(reasons))
        if allowed:
            markdown += self._allowed_table(allowed, args["nodes"])
        if skipped:
            markdown += ["## Not planned", ""] + ["- %s" % r for r in reasons] + [""]
        for reason in reasons:
            self._display.warning("bandwidth_plan: %s was not planned: %s" % tuple(reason.split(": ", 1)))
        if args["chart"] and not self._task.check_mode:
            # One chart per host, named after it: the name must be one file name inside plan_dir, nothing else.
            targets = {}
            for host, _speeds, _actual in charts:
                try:
                    if hostname_problem(host):
                        raise ValueError("inventory host name %r %s" % (host, hostname_problem(host)))
                    targets[host] = safe_join(plan_dir, "%s.png" % host)
                except ValueError as exc:
                    raise AnsibleActionFail("bandwidth_plan: %s: %s" % (host, exc))
            os.makedirs(plan_dir, exist_ok=True)
            for host, speeds, actual in charts:
                try:
                    plans[host]["chart"] = chart(targets[host], host, speeds, actual, args["compute_seconds"])
                except ModelError as exc:
                    raise AnsibleActionFail(str(exc))
        text = "\n".join(markdown)
        files = []
        if not self._task.check_mode:
            write_atomic(os.path.join(plan_dir, "plan.md"), text, "0644")
            write_atomic(os.path.join(plan_dir, "plan.json"), json.dumps(plans, indent=1, sort_keys=True) + "\n",
                         "0644")
            files = sorted(os.path.join(plan_dir, f) for f in os.listdir(plan_dir))
        result.update(changed=False, plans=plans, markdown=text, files=files, skipped_hosts=skipped, allowed=allowed,
                      msg="bandwidth plan of %d host(s) in %s%s" % (
                          len(plans), plan_dir, "; not planned: %s" % ", ".join(sorted(skipped)) if skipped else ""))
        return result

    @staticmethod
    def _allowed(facts, mode, interface, nodes):
        """What the hardware allows NCCL's all_reduce on this node alone and on ``nodes`` like it (the model of NCCL's
        collectives, the audit's too): {"node", "across", "notes", "problem"}. A host without a training network
        in its intent takes the NIC nearest each GPU as its rail, and the notes say so."""
        out = {"node": None, "across": None, "notes": [], "problem": None}
        try:
            shape = shape_from_facts(facts, mode if mode in ("tcp", "rdma") else None, interface)
            out["notes"] = list(shape["notes"])
            for key, count in (("node", 1), ("across", nodes)):
                found = predict(shape, count)
                out[key] = {"busbw_gbytes_per_s": found["busbw_gbytes_per_s"], "limited_by": found["limited_by"],
                            "algorithm": found["algorithm"]}
        except ModelError as exc:
            out["problem"] = str(exc)
        return out

    @staticmethod
    def _allowed_table(allowed, nodes):
        lines = ["## What the hardware allows NCCL's all_reduce", "",
                 "Bus bandwidth of large messages, from the model of NCCL's collectives (docs/nccl.md).", "",
                 "| host | one node GB/s | limited by | %d nodes GB/s | limited by |" % nodes, "|---|---|---|---|---|"]
        for host in sorted(allowed):
            entry = allowed[host]
            cells = []
            for key in ("node", "across"):
                part = entry.get(key) or {}
                figure = part.get("busbw_gbytes_per_s")
                cells += ["%.4g" % figure if figure is not None else "-",
                          part.get("limited_by") or entry.get("problem") or "-"]
            lines.append("| %s | %s |" % (host.replace("|", "\\|"), " | ".join(c.replace("|", "\\|") for c in cells)))
        return lines + [""]

    @staticmethod
    def _training_mtu(hostvars, facts, interface):
        """The training network's MTU from the intent, else the interface's, else 1500."""
        networks = hostvars.get("fabric_networks") or {}
        for name, net in networks.items() if isinstance(networks, dict) else []:
            if isinstance(net, dict) and net.get("role", name) == "training" and isinstance(net.get("mtu"), int):
                return net["mtu"]
        for nic in facts.get("nics") or []:
            if nic["name"] == interface and nic.get("mtu"):
                return nic["mtu"]
        return 1500

    @staticmethod
    def _verdict(speeds, args):
        lines = ["| link speed | node to network GB/s | allreduce at %d nodes (ms) | %s" % (
            args["nodes"], "network becomes the ceiling at |" if args["compute_seconds"] else ""),
            "|---|---|---|" + ("---|" if args["compute_seconds"] else "")]
        for entry in speeds:
            last = entry["rows"][-1]["allreduce_s"] * 1000
            cell = ""
            if args["compute_seconds"]:
                cell = " %s |" % ("%d nodes" % entry["ceiling_nodes"] if entry["ceiling_nodes"] else
                                  "not within %d nodes" % args["nodes"])
            lines.append("| %d GbE | %.2f | %.2f |%s" % (entry["speed_gbe"], entry["gbytes_per_s"], last, cell))
        return "\n".join(lines) + "\n"
