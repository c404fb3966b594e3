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


def _gid_address(gid):
    """The IP address a GID stands for (an IPv4-mapped GID gives the IPv4 address), or None."""
    import ipaddress
    try:
        address = ipaddress.IPv6Address(str(gid))
    except ValueError:
        return None
    return address.ipv4_mapped or address


def roce_v2_gid_index(port, address):
    """The lowest index of a RoCE v2 GID of ``port`` (a port of the facts' ``rdma``) whose address is ``address`` (an
    IP address, text or object), or None: the GID that traffic from that address uses, as perftest and NCCL address
    it (a port under VLANs holds one per VLAN address, each naming its VLAN; an address that left and came back takes
    another slot)."""
    import ipaddress
    try:
        wanted = ipaddress.ip_address(str(address).partition("/")[0])
    except ValueError:
        return None
    indexes = sorted(g["index"] for g in port.get("gids") or [] if isinstance(g, dict) and g.get("type") == "RoCE v2"
                     and isinstance(g.get("index"), int) and not isinstance(g.get("index"), bool)
                     and _gid_address(g.get("gid")) == wanted)
    return indexes[0] if indexes else None


def rdma_endpoint(facts, interface, address):
    """The RDMA port that traffic from ``address`` on ``interface`` uses, as perftest and NCCL address it:
    ({"device", "port", "link_layer", "gid_index", "rate_gbps", "active_mtu", "pci", "software"}, None), or
    (None, why there is none).

    The port is one whose netdev is the interface, the interface under its VLANs, or a bond member under it (RoCE
    LAG), or whose GID table names the interface. On RoCE (link layer Ethernet) the address must be a RoCE v2 GID
    of that port: its index is ``gid_index`` (a port under VLANs holds one per VLAN address, each naming its VLAN);
    on InfiniBand the port's own GID serves (``gid_index`` None). A port that is not ACTIVE is named as the cause."""
    import ipaddress
    try:
        wanted = ipaddress.ip_address(str(address))
    except ValueError:
        return None, "%r is not an IP address" % (address,)
    names = set([interface, base_interface(facts, interface)])
    names.update(p["name"] for p in ports_under(facts, interface, physical_only=False))
    found = []
    for device in facts.get("rdma") or []:
        for port in device.get("ports") or []:
            gids = [g for g in port.get("gids") or [] if isinstance(g, dict)]
            if port.get("netdev") in names or any(g.get("netdev") == interface for g in gids):
                found.append((device, port, gids))
    if not found:
        return None, "no RDMA port under %s (RDMA devices: %s)" % (
            interface, ", ".join(sorted(str(d.get("name")) for d in facts.get("rdma") or [])) or "none")
    said = []
    for device, port, gids in sorted(found, key=lambda f: (str(f[0].get("name")), f[1].get("port") or 0)):
        where = "%s:%s" % (device.get("name"), port.get("port"))
        if port.get("link_layer") == "Ethernet":
            gid_index = roce_v2_gid_index(port, wanted)
            if gid_index is None:
                said.append("%s has no RoCE v2 GID for %s (the address is not on a netdev of that port, or its GID "
                            "table was not read)" % (where, wanted))
                continue
        else:
            gid_index = None
        if port.get("state") != "ACTIVE":
            said.append("%s is %s, not ACTIVE" % (where, port.get("state") or "in an unknown state"))
            continue
        return {"device": device.get("name"), "port": port.get("port"), "link_layer": port.get("link_layer"),
                "gid_index": gid_index, "rate_gbps": port.get("rate_gbps"), "active_mtu": port.get("active_mtu"),
                "pci": device.get("address"), "software": device.get("software")}, None
    return None, "; ".join(said)
