# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Render a host's network plan (from _intent.plan_host) into the files each backend reads.

Pure functions: plan in, {path: (content, mode)} out. The same plan gives byte-identical files, so a
second run finds nothing to change. Every value is written with its format's own quoting (_names): a YAML scalar,
a key-file value, a networkd value; a value a format cannot carry (a newline in a comment line) raises UnsafeValue
rather than being written. The intent's validators keep such names out long before; this is the second wall.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import uuid

from ansible_collections.gpuops.fabric.plugins.module_utils._names import (
    UnsafeValue,
    keyfile_value,
    line_value,
    networkd_value,
    yaml_scalar,
)

NETPLAN_PATH = "/etc/netplan/60-gpuops-fabric.yaml"
NM_DIR = "/etc/NetworkManager/system-connections"
NETWORKD_DIR = "/etc/systemd/network"
_UUID_NAMESPACE = uuid.UUID("5b1e4c1e-7a43-4d57-9f0b-6770756f7073")
HEADER = "Managed by gpuops.fabric; local changes are overwritten and reported as drift."
# One comment line per network an interface carries, so state=gathered can give the intent back by name.
MARKER = "# network %s role %s on %s"


def _markers(plan, ifaces):
    roles = plan.get("roles") or {}
    return [line_value(MARKER % (network, roles.get(network, network), iface["name"]), "comment")
            for iface in ifaces for network in iface.get("networks") or []]


_q = yaml_scalar


def _routes(iface):
    routes = []
    for gateway in iface.get("gateways") or []:
        routes.append({"to": "default", "via": gateway, "metric": None})
    routes.extend(iface.get("routes") or [])
    return routes


def render_netplan(plan):
    sections = {"ethernets": [], "bonds": [], "vlans": []}
    for iface in plan["interfaces"]:
        lines = ["    %s:" % _q(iface["name"])]
        if iface["kind"] == "bond":
            lines.append("      interfaces: [%s]" % ", ".join(_q(m) for m in iface["members"]))
        if iface["kind"] == "vlan":
            lines.append("      id: %d" % iface["id"])
            lines.append("      link: %s" % _q(iface["parent"]))
        if iface.get("mtu"):
            lines.append("      mtu: %d" % iface["mtu"])
        lines.append("      dhcp4: false")
        lines.append("      dhcp6: false")
        if not iface["addresses"]:
            lines.append("      link-local: []")
        else:
            lines.append("      addresses: [%s]" % ", ".join(_q(a) for a in iface["addresses"]))
        routes = _routes(iface)
        if routes:
            lines.append("      routes:")
            for route in routes:
                lines.append("        - to: %s" % _q(route["to"]))
                lines.append("          via: %s" % _q(route["via"]))
                if route.get("metric") is not None:
                    lines.append("          metric: %d" % route["metric"])
        if iface["kind"] == "bond":
            lines.append("      parameters:")
            lines.append("        mode: %s" % _q(iface["mode"]))
            lines.append("        mii-monitor-interval: %d" % iface["miimon"])
            if iface.get("lacp_rate"):
                lines.append("        lacp-rate: %s" % _q(iface["lacp_rate"]))
            if iface.get("xmit_hash_policy"):
                lines.append("        transmit-hash-policy: %s" % _q(iface["xmit_hash_policy"]))
            if iface.get("primary"):
                lines.append("        primary: %s" % _q(iface["primary"]))
        sections[{"ethernet": "ethernets", "bond": "bonds", "vlan": "vlans"}[iface["kind"]]].append("\n".join(lines))
    out = ["# " + HEADER] + _markers(plan, plan["interfaces"]) + ["network:", "  version: 2"]
    for key in ("ethernets", "bonds", "vlans"):
        if sections[key]:
            out.append("  %s:" % key)
            out.extend(sections[key])
    return {NETPLAN_PATH: ("\n".join(out) + "\n", "0600")}


def _nm_uuid(name):
    return str(uuid.uuid5(_UUID_NAMESPACE, "gpuops.fabric/" + name))


def _nm_ip(section, family, iface):
    addresses = [a for a in iface["addresses"] if (":" in a) == (family == "ipv6")]
    lines = ["[%s]" % section]
    if not addresses:
        lines.append("method=disabled")
        return lines
    # NetworkManager's own (normalised) form: the gateway rides on the first address, "addr/prefix,gw",
    # so what NM writes back is byte-for-byte what we wrote and a second run sees no change.
    gateways = [g for g in iface.get("gateways") or [] if (":" in g) == (family == "ipv6")]
    for number, address in enumerate(addresses, 1):
        value = address + ("," + gateways[0] if gateways and number == 1 else "")
        lines.append("address%d=%s" % (number, keyfile_value(value)))
    lines.append("method=manual")
    routes = [r for r in iface.get("routes") or [] if (":" in r["to"]) == (family == "ipv6")]
    for number, route in enumerate(routes, 1):
        value = "%s,%s" % (route["to"], route["via"])
        if route.get("metric") is not None:
            value += ",%d" % route["metric"]
        lines.append("route%d=%s" % (number, keyfile_value(value)))
    return lines


def render_networkmanager(plan):
    files = {}
    for iface in plan["interfaces"]:
        name = iface["name"]
        nm_type = {"ethernet": "ethernet", "bond": "bond", "vlan": "vlan"}[iface["kind"]]
        lines = ["# " + HEADER] + _markers(plan, [iface]) + [
            "[connection]", "id=gpuops-%s" % keyfile_value(name), "uuid=%s" % _nm_uuid(name), "type=%s" % nm_type,
            "interface-name=%s" % keyfile_value(name)]
        if iface["kind"] == "ethernet" and iface.get("bond"):
            lines += ["master=%s" % keyfile_value(iface["bond"]), "slave-type=bond"]
        lines.append("")
        if iface.get("mtu"):
            lines += ["[ethernet]", "mtu=%d" % iface["mtu"], ""]
        if iface["kind"] == "bond":
            lines += ["[bond]", "miimon=%d" % iface["miimon"], "mode=%s" % keyfile_value(iface["mode"])]
            if iface.get("lacp_rate"):
                lines.append("lacp_rate=%s" % keyfile_value(iface["lacp_rate"]))
            if iface.get("xmit_hash_policy"):
                lines.append("xmit_hash_policy=%s" % keyfile_value(iface["xmit_hash_policy"]))
            if iface.get("primary"):
                lines.append("primary=%s" % keyfile_value(iface["primary"]))
            lines.append("")
        if iface["kind"] == "vlan":
            lines += ["[vlan]", "flags=1", "id=%d" % iface["id"], "parent=%s" % keyfile_value(iface["parent"]), ""]  # 1: reorder headers
        if not (iface["kind"] == "ethernet" and iface.get("bond")):
            lines += _nm_ip("ipv4", "ipv4", iface) + [""] + _nm_ip("ipv6", "ipv6", iface) + [""]
        files["%s/gpuops-%s.nmconnection" % (NM_DIR, _file_part(name))] = ("\n".join(lines).rstrip("\n") + "\n", "0600")
    return files


def render_networkd(plan):
    files = {}
    vlans_on = {}
    for iface in plan["interfaces"]:
        if iface["kind"] == "vlan":
            vlans_on.setdefault(iface["parent"], []).append(iface["name"])
    for iface in plan["interfaces"]:
        name = iface["name"]
        base = "%s/60-gpuops-%s" % (NETWORKD_DIR, _file_part(name))
        if iface["kind"] in ("bond", "vlan"):
            netdev = ["# " + HEADER, "[NetDev]", "Name=%s" % networkd_value(name), "Kind=%s" % iface["kind"]]
            if iface.get("mtu"):
                netdev.append("MTUBytes=%d" % iface["mtu"])
            if iface["kind"] == "bond":
                netdev += ["", "[Bond]", "Mode=%s" % networkd_value(iface["mode"]),
                           "MIIMonitorSec=%dms" % iface["miimon"]]
                if iface.get("lacp_rate"):
                    netdev.append("LACPTransmitRate=%s" % networkd_value(iface["lacp_rate"]))
                if iface.get("xmit_hash_policy"):
                    netdev.append("TransmitHashPolicy=%s" % networkd_value(iface["xmit_hash_policy"]))
            else:
                netdev += ["", "[VLAN]", "Id=%d" % iface["id"]]
            files[base + ".netdev"] = ("\n".join(netdev) + "\n", "0644")
        network = ["# " + HEADER] + _markers(plan, [iface]) + ["[Match]", "Name=%s" % networkd_value(name, glob=True), ""]
        if iface.get("mtu"):
            network += ["[Link]", "MTUBytes=%d" % iface["mtu"], ""]
        network.append("[Network]")
        if iface["kind"] == "ethernet" and iface.get("bond"):
            network.append("Bond=%s" % networkd_value(iface["bond"]))
            if iface["name"] == _primary_of(plan, iface["bond"]):
                network.append("PrimarySlave=true")
        else:
            network += ["DHCP=no", "LinkLocalAddressing=%s" % ("ipv6" if any(":" in a for a in iface["addresses"])
                                                               else "no")]
            for address in iface["addresses"]:
                network.append("Address=%s" % networkd_value(address))
            for gateway in iface.get("gateways") or []:
                network.append("Gateway=%s" % networkd_value(gateway))
        for vlan in sorted(vlans_on.get(name, [])):
            network.append("VLAN=%s" % networkd_value(vlan))
        for route in iface.get("routes") or []:
            network += ["", "[Route]", "Destination=%s" % networkd_value(route["to"]),
                        "Gateway=%s" % networkd_value(route["via"])]
            if route.get("metric") is not None:
                network.append("Metric=%d" % route["metric"])
        files[base + ".network"] = ("\n".join(network) + "\n", "0644")
    return files


def _file_part(name):
    """An interface name as part of a file name: one path component, nothing else."""
    text = line_value(name, "interface name")
    if "/" in text or text in (".", "..") or not text:
        raise UnsafeValue("%r cannot be part of a file name" % text)
    return text


def _primary_of(plan, bond_name):
    for iface in plan["interfaces"]:
        if iface["kind"] == "bond" and iface["name"] == bond_name:
            return iface.get("primary")
    return None


RENDERERS = {"netplan": render_netplan, "networkmanager": render_networkmanager, "networkd": render_networkd}
