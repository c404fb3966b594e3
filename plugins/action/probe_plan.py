# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import ControllerAction, target_hosts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import held_facts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import DECLARED, RDMA_EXTRA_S, default
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import validate_networks
from ansible_collections.gpuops.fabric.plugins.plugin_utils._planning.pairing import targets

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str"),
    networks=dict(type="list", elements="str"),
    throughput_roles=dict(type="list", elements="str", default=default("fabric_probe_throughput_roles")),
    all_pairs_max=dict(type="int", default=default("fabric_probe_all_pairs_max")),
    port=dict(type="int", default=default("fabric_probe_port")),
    min_fraction=dict(type="float", default=default("fabric_probe_min_fraction")),
    repeat=dict(type="int", default=default("fabric_probe_repeat")),
    rdma=dict(type="bool", default=False),
    rdma_port=dict(type="int", default=default("fabric_probe_rdma_port")),
)
MAX_REPEAT = DECLARED["fabric_probe_repeat"].high


class ActionModule(ControllerAction):
    """Which host probes which, on which address, in which round: computed once on the controller."""

    NAME = "probe_plan"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        hosts, hostvars = target_hosts("probe_plan", args["hosts"], task_vars)
        if not 0 < args["min_fraction"] <= 1:
            raise AnsibleActionFail("probe_plan: min_fraction: %r must be above 0 and at most 1 (0.8 = 80%% of the "
                                    "expected goodput)" % args["min_fraction"])
        for key in ("port", "rdma_port"):
            if not 1 <= args[key] <= 65535:
                raise AnsibleActionFail("probe_plan: %s: %r is outside 1..65535" % (key, args[key]))
        if not 1 <= args["repeat"] <= MAX_REPEAT:
            raise AnsibleActionFail("probe_plan: repeat: %r is outside 1..%d (how many times each pair is measured)"
                                    % (args["repeat"], MAX_REPEAT))
        if args["all_pairs_max"] < 2:
            raise AnsibleActionFail("probe_plan: all_pairs_max: %r must be at least 2" % args["all_pairs_max"])
        inputs, errors = {}, []
        for host in hosts:
            own = hostvars[host]
            facts, _problem = held_facts(own)  # the audit's text, or the facts as a mapping
            if not facts:
                continue  # unreachable, failed or unreadable in the gather step: the audit reports it
            host_errors = []
            networks = validate_networks(own.get("fabric_networks"), host_errors, check_overlap=False)
            errors.extend("%s: %s" % (host, e) for e in host_errors)
            inputs[host] = {"facts": facts, "networks": networks, "attachments": own.get("fabric_attachments") or {},
                            "switch": own.get("fabric_switch")}
        if errors:
            raise AnsibleActionFail("probe_plan: the network intent is invalid:\n" + "\n".join(errors))
        known = set(n for i in inputs.values() for n in i["networks"])
        unknown = sorted(set(args["networks"] or []) - known)
        if unknown:
            raise AnsibleActionFail("probe_plan: networks: %s not in any host's fabric_networks (known: %s)"
                                    % (", ".join(unknown), ", ".join(sorted(known)) or "none"))
        planned = targets(inputs, args["throughput_roles"], args["networks"], args["all_pairs_max"], args["port"],
                          args["min_fraction"], args["repeat"], args["rdma"], args["rdma_port"])
        for key, per_round in (("port", 1), ("rdma_port", 2)) if args["rdma"] else (("port", 1),):
            if args[key] + per_round * len(planned["throughput"]) - 1 > 65535:
                raise AnsibleActionFail("probe_plan: %s: %d + %d round(s) passes 65535 (each round has %s)" % (
                    key, args[key], len(planned["throughput"]), "its own port" if per_round == 1 else
                    "two ports of its own, ib_write_bw's and ib_write_lat's"))
        result.update(changed=False, rdma_extra_s=RDMA_EXTRA_S, **planned)
        # each host's part of every round, for throughput_probe mode=rounds; hosts without any part are left out
        result["throughput_by_host"] = dict(
            (host, [part.get(host) or {"role": "idle"} for part in planned["throughput"]])
            for host in sorted(inputs) if any(host in part for part in planned["throughput"]))
        result["msg"] = "; ".join("%s: %d host(s), %s, %d round(s), %d pair(s)%s" % (
            name, p["hosts"], p["kind"].replace("_", " "), p["rounds"], p["pairs"],
            ", each measured %d times" % p["runs"] if (p.get("runs") or 1) > 1 else "")
            for name, p in sorted(planned["plans"].items())) or "no network with addressed hosts to probe"
        return result
