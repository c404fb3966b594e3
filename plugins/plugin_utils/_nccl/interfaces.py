# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Which interfaces NCCL may use: the training interface of a host, the ports under a bond or VLAN, and
NCCL_SOCKET_IFNAME matching."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem, vlan_interface


def nic_by_name(facts, name):
    """The NIC fact named ``name``, or None."""
    for nic in facts.get("nics") or []:
        if nic["name"] == name:
            return nic
    return None


def below_vlans(facts, name, keep_last=False):
    """The interface under ``name``'s VLANs (``name`` itself when it is no VLAN). A VLAN whose parent is missing
    from the facts gives None, or with ``keep_last`` the last interface found."""
    nic = nic_by_name(facts, name)
    seen = set()
    while nic is not None and nic.get("vlan") and nic["name"] not in seen:
        seen.add(nic["name"])
        parent = nic_by_name(facts, nic["vlan"]["parent"])
        if parent is None and keep_last:
            break
        nic = parent
    return nic


def ports_under(facts, name, physical_only=True):
    """The ports an interface's traffic leaves on: a VLAN's parent's, a bond's members, or the interface itself.
    ``physical_only`` keeps those with a PCI address (what has slots, link modes, NUMA); without it a veth or other
    virtual port counts too (it has LLDP neighbours all the same)."""
    nic = below_vlans(facts, name)
    if nic is None:
        return []
    members = [n for n in facts.get("nics") or [] if n.get("bond_master") == nic["name"]] or [nic]
    return [m for m in members if m.get("address") or not physical_only]


def base_interface(facts, name):
    """The interface under ``name``'s VLANs (bond0.100 rides on bond0); ``name`` itself when it is no VLAN or the
    facts do not know it."""
    nic = below_vlans(facts, name, keep_last=True)
    return nic["name"] if nic is not None else name


def ifname_matches(spec, names):
    """The interfaces NCCL_SOCKET_IFNAME selects from ``names`` (prefix, '=' exact, '^' exclude)."""
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    parts = [p for p in body.split(",") if p]

    def hit(name):
        return any(name == p if exact else name.startswith(p) for p in parts)
    return [n for n in names if hit(n) != exclude]


def training_interface(hostvars):
    """(interface, errors): ``fabric_nccl_interface`` if set, else the interface carrying the training network
    in the network intent (``fabric_attachments`` plus the network's VLAN: bond0 + vlan 100 -> bond0.100)."""
    given = hostvars.get("fabric_nccl_interface")
    if given:
        if ifname_problem(given):
            return None, ["fabric_nccl_interface: %r %s" % (given, ifname_problem(given))]
        return given, []
    networks = hostvars.get("fabric_networks") or {}
    attachments = hostvars.get("fabric_attachments") or {}
    if not isinstance(networks, dict) or not isinstance(attachments, dict):
        return None, ["fabric_networks / fabric_attachments: expected mappings (the network role validates them)"]
    training = sorted(name for name, net in networks.items()
                      if isinstance(net, dict) and net.get("role", name) == "training" and name in attachments)
    if not training:
        return None, ["no training network attached in fabric_attachments; set fabric_nccl_interface"]
    if len(training) > 1:
        return None, ["training networks %s are all attached; set fabric_nccl_interface to the one NCCL uses"
                      % ", ".join(training)]
    vlan = networks[training[0]].get("vlan")
    device = attachments[training[0]]
    name = vlan_interface(device, vlan) if vlan is not None else device
    if name is None:
        return None, ["fabric_networks.%s.vlan: %r is not a VLAN id (1 to 4094)" % (training[0], vlan)]
    if ifname_problem(name):
        return None, ["fabric_attachments.%s: %r %s" % (training[0], name, ifname_problem(name))]
    return name, []
