# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family NCCL: nccl.conf drift, the socket interface and the transport."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.interfaces import ifname_matches
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.common import active_rdma_ports

# ---- NCCL ---------------------------------------------------------------------------------------------


@host_rule(
    "NCCL-001", "NCCL configuration drifted from what the facts and intent give", "fail",
    """/etc/nccl.conf differs from what the nccl role derives from this node's facts and the network intent: it
    was edited by hand, the node changed (a NIC moved, a VLAN was renamed) or the intent changed and the role has
    not run since. NCCL then picks interfaces or HCAs nobody reviewed.""",
    """Review the diff; put wanted values in fabric_nccl_env, then run `ansible-playbook gpuops.fabric.nccl`.""")
def nccl_drift(ctx):
    drift = ctx.observed.get("nccl_drift")
    if drift is None:
        raise NotApplicable("no NCCL drift check ran (use playbooks/drift.yml)")
    if drift.get("error"):
        ctx.finding("nccl", "NCCL drift check failed: %s" % drift["error"], drift)
        return
    if drift.get("changed"):
        ctx.finding(drift.get("path") or "/etc/nccl.conf", "%s would be rewritten to match the facts and intent"
                    % (drift.get("path") or "/etc/nccl.conf"), {"diff": drift.get("diff") or ""})


def _nccl_conf(ctx):
    ctx.need("nccl", "nics")
    conf = ctx.facts["nccl"]
    if not conf.get("present"):
        raise NotApplicable("no %s on this node (NCCL uses its defaults)" % conf.get("path", "/etc/nccl.conf"))
    return conf


@host_rule(
    "NCCL-002", "NCCL_SOCKET_IFNAME selects the wrong interfaces", "fail",
    """NCCL_SOCKET_IFNAME is a list of prefixes unless it starts with '=': 'bond0' also selects 'bond0.100', and a
    name the node does not have selects nothing, so NCCL falls back to whatever interface it finds first — often
    the management NIC.""",
    """Name the training interface exactly (`NCCL_SOCKET_IFNAME==bond0.100`); the nccl role writes it so.""")
def nccl_socket_ifname(ctx):
    conf = _nccl_conf(ctx)
    spec = conf["values"].get("NCCL_SOCKET_IFNAME")
    if not spec:
        raise NotApplicable("NCCL_SOCKET_IFNAME is not set in %s" % conf["path"])
    names = [n["name"] for n in ctx.facts["nics"]]
    chosen = ifname_matches(spec, names)
    body = spec.lstrip("^")
    named = [p.lstrip("=") for p in body.split(",") if p]
    evidence = {"NCCL_SOCKET_IFNAME": spec, "selects": chosen, "interfaces": names}
    if not chosen:
        ctx.finding(spec, "NCCL_SOCKET_IFNAME=%s selects no interface on this node" % spec, evidence)
    elif not spec.startswith("^") and not body.startswith("="):
        extra = sorted(set(chosen) - set(named))
        if extra:
            ctx.finding(spec, "NCCL_SOCKET_IFNAME=%s is a prefix: it also selects %s" % (spec, ", ".join(extra)),
                        evidence)


@host_rule(
    "NCCL-003", "NCCL transport contradicts the intended mode", "fail",
    """fabric_nccl_mode says how the training traffic should travel. rdma intended with NCCL_IB_DISABLE=1 runs over
    TCP sockets at a fraction of the speed; tcp intended on a node with active RDMA ports but IB not disabled lets
    NCCL pick RDMA nobody has validated — the seed's advice is to make TCP stable first.""",
    """Run `ansible-playbook gpuops.fabric.nccl` with the intended fabric_nccl_mode, or change the mode.""")
def nccl_transport(ctx):
    conf = _nccl_conf(ctx)
    mode = ctx.expect.get("nccl_mode")
    if mode not in ("tcp", "rdma"):
        raise NotApplicable("fabric_nccl_mode is not set for this host")
    disabled = conf["values"].get("NCCL_IB_DISABLE", "0").strip() == "1"
    active = active_rdma_ports(ctx.facts)
    evidence = {"fabric_nccl_mode": mode, "NCCL_IB_DISABLE": conf["values"].get("NCCL_IB_DISABLE"),
                "active_rdma_ports": active}
    if mode == "rdma" and disabled:
        ctx.finding("NCCL_IB_DISABLE", "rdma intended but NCCL_IB_DISABLE=1: NCCL runs over TCP sockets", evidence)
    elif mode == "tcp" and not disabled and active:
        ctx.finding("NCCL_IB_DISABLE", "tcp intended but IB is not disabled and the node has active RDMA ports "
                    "(%s): NCCL will use them" % ", ".join(active), evidence)
