# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family DRIFT: network files that differ from the intent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import NotApplicable, host_rule

# ---- configuration drift ----------------------------------------------------------------------------


@host_rule(
    "DRIFT-001", "Network configuration drifted from the intent", "fail",
    """The node's network files differ from what the inventory's intent renders: someone changed an MTU, removed
    a VLAN or edited a bond by hand, or the intent changed and was not applied. The next reboot or reload brings
    up a network nobody reviewed.""",
    """Review the diff; if the change is wanted, put it in the inventory's intent, then run
    `ansible-playbook gpuops.fabric.network` to apply the intent again.""")
def drift_network(ctx):
    drift = ctx.observed.get("drift")
    if drift is None:
        raise NotApplicable("no drift check ran (use playbooks/drift.yml)")
    if drift.get("error"):
        ctx.finding("network", "drift check failed: %s" % drift["error"], drift)
        return
    for change in drift["changes"]:
        action, _sep, path = change.partition(" ")
        ctx.finding(path, "%s would be %s to match the intent (%s)" % (
            path, "rewritten" if action == "write" else "removed", drift.get("backend")),
            {"diff": drift["diff"], "backend": drift.get("backend")})
