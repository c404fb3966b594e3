# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic
from ansible_collections.gpuops.fabric.plugins.module_utils._names import hostname_problem, safe_join, UnsafeValue
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import NETWORK_RENDERERS as RENDERERS
from ansible_collections.gpuops.fabric.plugins.plugin_utils._action import ControllerAction, target_hosts
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.addresses import allocate_indices
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.plan import check_collisions, plan_host
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import IntentError, validate_networks

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str"),
    allocation_file=dict(type="path"),
    render_dir=dict(type="path"),
)


class ActionModule(ControllerAction):
    """Validate the network intent of every host on the controller, address it, and render the files."""

    NAME = "network_intent"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def compute(self, result, args, task_vars):
        # Plain strings: host names go into the allocation file.
        hosts, hostvars = target_hosts("network_intent", args["hosts"], task_vars)

        allocations, allocation_file = {}, args["allocation_file"] or task_vars.get("fabric_allocation_file")
        indices = {}
        if allocation_file:
            allocations = self._read_allocations(allocation_file)
            needing = [h for h in hosts if hostvars[h].get("fabric_host_index") is None
                       and not hostvars[h].get("fabric_addresses")]
            networks = {}
            for host in needing:
                errors = []
                networks[host] = validate_networks(hostvars[host].get("fabric_networks"), errors)
            try:
                new = allocate_indices(allocations, needing, networks)
            except IntentError as exc:
                raise AnsibleActionFail(str(exc))
            indices = dict((h, new[h]) for h in needing)
            result["allocations_changed"] = new != allocations

        plans, messages, warnings = {}, [], []
        if args["render_dir"]:
            # Host names become folder names under render_dir: one path component each, nothing else.
            messages.extend("%s: inventory host name %r %s" % (h, h, hostname_problem(h)) for h in hosts
                            if hostname_problem(h))
        for host in hosts:
            hv = hostvars[host]
            facts = (hv.get("ansible_facts") or {}).get("gpuops_fabric")
            try:
                plan, errors, host_warnings = plan_host(host, hv, facts, indices.get(host))
            except Exception as exc:  # pylint: disable=broad-except
                # A validator that trips over an input nobody foresaw must still name the host and stop the run
                # cleanly, before anything is touched, rather than end the task with a bare Python error.
                plan, host_warnings = None, []
                errors = ["its intent could not be checked (%s: %s); this is a gpuops.fabric bug, please report it "
                          "with this host's fabric_ variables" % (type(exc).__name__, exc)]
            messages.extend("%s: %s" % (host, e) for e in errors)
            warnings.extend("%s: %s" % (host, w) for w in host_warnings)
            if plan is not None:
                plans[host] = plan
        messages.extend(check_collisions(plans))
        if messages:
            raise AnsibleActionFail("network intent is invalid:\n" + "\n".join(messages))

        rendered = {}
        for host, plan in sorted(plans.items()):
            backends = [plan["backend"]] if plan["backend"] != "auto" else sorted(RENDERERS)
            try:
                rendered[host] = dict((b, dict((p, {"content": c, "mode": m}) for p, (c, m) in
                                               RENDERERS[b](plan).items())) for b in backends)
            except UnsafeValue as exc:
                messages.append("%s: %s" % (host, exc))
        if messages:
            raise AnsibleActionFail("network intent cannot be rendered:\n" + "\n".join(messages))
        # Pinned only once the whole intent is valid: a failed run leaves the allocation file as it was.
        if result.get("allocations_changed") and not self._task.check_mode:
            self._write_allocations(allocation_file, new)
        if args["render_dir"] and not self._task.check_mode:
            # Every path is checked before the first file is written: nothing is half-written.
            targets = []
            for host in sorted(rendered):
                for backend in sorted(rendered[host]):
                    for path, item in sorted(rendered[host][backend].items()):
                        try:
                            target = safe_join(args["render_dir"], host, backend, path.lstrip("/"))
                        except ValueError as exc:
                            raise AnsibleActionFail("%s: render_dir: %s" % (host, exc))
                        targets.append((target, item["content"], item["mode"]))
            for target, content, mode in targets:
                write_atomic(target, content, mode)
        for warning in warnings:
            self._display.warning(warning)
        result.update(changed=False, plans=plans, rendered=rendered, warnings_list=warnings,
                      msg="network intent of %d host(s) is valid" % len(plans))
        return result

    @staticmethod
    def _read_allocations(path):
        import yaml
        if not os.path.lexists(path):
            return {}
        if not os.path.isfile(path):
            raise AnsibleActionFail("fabric_allocation_file: %s is not a regular file" % path)
        if os.path.getsize(path) > 16 << 20:
            raise AnsibleActionFail("fabric_allocation_file: %s is larger than 16 MiB; not an allocation file" % path)
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise AnsibleActionFail("fabric_allocation_file: %s cannot be read as YAML: %s"
                                    % (path, str(exc).replace("\n", " ")))
        hosts = data.get("hosts") if isinstance(data, dict) else None
        if not isinstance(hosts, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                                  for v in hosts.values()):
            raise AnsibleActionFail("%s: expected 'hosts:' mapping host names to positive indices" % path)
        return dict(hosts)

    def _write_allocations(self, path, allocations):
        import yaml
        text = ("# Host indices pinned by gpuops.fabric the first time each host was seen; keep this file.\n"
                + yaml.safe_dump({"version": 1, "hosts": dict(sorted((str(h), int(i)) for h, i in allocations.items()))},
                                 default_flow_style=False))
        write_atomic(path, text, "0644")
