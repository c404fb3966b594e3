# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""systemd-networkd: where its .netdev/.network files live, detecting it on a node, rendering a plan to them, reading
them back, and the commands that apply them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
from ansible_collections.gpuops.fabric.plugins.module_utils._names import networkd_value
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import (
    file_part, plan_iface, int_or_none, marker_lines, primary_of, HEADER, IFACE_BOND, IFACE_ETHERNET, IFACE_VLAN, interface_order,
    parse_ini,
)

# Where systemd-networkd reads its files, and the names this collection owns there (PREFIX + interface + .netdev
# or .network). Nothing else is touched.
DIRECTORY = "/etc/systemd/network"
PREFIX = "60-gpuops-"
OWNED_PREFIXES = (PREFIX,)


def detect(root):
    """The fallback, tried last: a node with neither netplan nor NetworkManager's keyfiles uses systemd-networkd."""
    return True


def _milliseconds(value):
    match = re.match(r"^\s*(\d+)\s*(ms|s|sec|msec)?\s*$", str(value or ""))
    if not match:
        return None
    number = int(match.group(1))
    return number * 1000 if match.group(2) in ("s", "sec") else number


def parse_networkd(files, problems=None):
    """systemd-networkd .netdev and .network files: {file name: content}."""
    ifaces, vlan_parent, bond_of, primaries = {}, {}, {}, set()
    for path in sorted(files):
        entries = parse_ini(files[path], path, problems)
        values = dict(((s, k), v) for s, k, v in entries)
        if path.endswith(".netdev"):
            name = values.get(("NetDev", "Name"))
            kind = {"bond": IFACE_BOND, "vlan": IFACE_VLAN}.get(values.get(("NetDev", "Kind")))
            if not name or kind is None:
                if problems is not None:
                    problems.append("%s: no [NetDev] Name= with Kind=bond or vlan" % path)
                continue
            iface = ifaces.setdefault(name, plan_iface(name, kind))
            iface["kind"] = kind
            iface["mtu"] = iface["mtu"] or int_or_none(values.get(("NetDev", "MTUBytes")))
            if kind == IFACE_BOND:
                iface["mode"] = values.get(("Bond", "Mode"), "balance-rr")
                iface["miimon"] = _milliseconds(values.get(("Bond", "MIIMonitorSec"), "0"))
                iface["lacp_rate"] = values.get(("Bond", "LACPTransmitRate"))
                iface["xmit_hash_policy"] = values.get(("Bond", "TransmitHashPolicy"))
                iface["primary"] = None
            else:
                iface["id"] = int_or_none(values.get(("VLAN", "Id")))
        elif path.endswith(".network"):
            name = values.get(("Match", "Name"))
            if not name:
                if problems is not None:
                    problems.append("%s: no [Match] Name=" % path)
                continue
            iface = ifaces.setdefault(name, plan_iface(name, IFACE_ETHERNET))
            iface["mtu"] = int_or_none(values.get(("Link", "MTUBytes"))) or iface["mtu"]
            route = None
            for section, key, value in entries:
                if section == "Network" and key == "Address":
                    iface["addresses"].append(value)
                elif section == "Network" and key == "Gateway":
                    iface["gateways"].append(value)
                elif section == "Network" and key == "VLAN":
                    vlan_parent[value] = name
                elif section == "Network" and key == "Bond":
                    bond_of[name] = value
                elif section == "Network" and key == "PrimarySlave" and value.lower() in ("true", "yes", "1"):
                    primaries.add(name)
                elif section == "Route":
                    if key == "Destination":
                        route = {"to": value, "via": None, "metric": None}
                        iface["routes"].append(route)
                    elif route is not None and key == "Gateway":
                        route["via"] = value
                    elif route is not None and key == "Metric":
                        route["metric"] = int_or_none(value)
    for member, bond in sorted(bond_of.items()):
        if member not in ifaces:
            continue
        ifaces[member]["bond"] = bond
        if bond in ifaces:
            ifaces[bond]["members"].append(member)
            if member in primaries:
                ifaces[bond]["primary"] = member
    for vlan, parent in vlan_parent.items():
        if vlan in ifaces:
            ifaces[vlan]["parent"] = parent
    return interface_order(list(ifaces.values()))


def render_networkd(plan):
    files = {}
    vlans_on = {}
    for iface in plan["interfaces"]:
        if iface["kind"] == IFACE_VLAN:
            vlans_on.setdefault(iface["parent"], []).append(iface["name"])
    for iface in plan["interfaces"]:
        name = iface["name"]
        base = "%s/%s%s" % (DIRECTORY, PREFIX, file_part(name))
        if iface["kind"] in (IFACE_BOND, IFACE_VLAN):
            netdev = ["# " + HEADER, "[NetDev]", "Name=%s" % networkd_value(name), "Kind=%s" % iface["kind"]]
            if iface.get("mtu"):
                netdev.append("MTUBytes=%d" % iface["mtu"])
            if iface["kind"] == IFACE_BOND:
                netdev += ["", "[Bond]", "Mode=%s" % networkd_value(iface["mode"]),
                           "MIIMonitorSec=%dms" % iface["miimon"]]
                if iface.get("lacp_rate"):
                    netdev.append("LACPTransmitRate=%s" % networkd_value(iface["lacp_rate"]))
                if iface.get("xmit_hash_policy"):
                    netdev.append("TransmitHashPolicy=%s" % networkd_value(iface["xmit_hash_policy"]))
            else:
                netdev += ["", "[VLAN]", "Id=%d" % iface["id"]]
            files[base + ".netdev"] = ("\n".join(netdev) + "\n", "0644")
        network = ["# " + HEADER] + marker_lines(plan, [iface]) + ["[Match]", "Name=%s" % networkd_value(name, glob=True), ""]
        if iface.get("mtu"):
            network += ["[Link]", "MTUBytes=%d" % iface["mtu"], ""]
        network.append("[Network]")
        if iface["kind"] == IFACE_ETHERNET and iface.get("bond"):
            network.append("Bond=%s" % networkd_value(iface["bond"]))
            if iface["name"] == primary_of(plan, iface["bond"]):
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


# The owned files, {path: content}: the .netdev and .network files read together.
parse = parse_networkd

render = render_networkd


def interface_of(path):
    """The interface an owned file's name says, or None."""
    name = os.path.basename(path)
    if name.startswith(PREFIX):
        return name[len(PREFIX):].rsplit(".", 1)[0]
    return None


def apply_commands(changes):
    """Argument lists that make systemd-networkd apply the changed files: reload, then reconfigure the changed
    interfaces that exist."""
    names = sorted(set(interface_of(path) for _action, path, _new in changes) - {None})
    commands = [["networkctl", "reload"]]
    present = [n for n in names if os.path.exists("/sys/class/net/" + n)]
    if present:
        commands.append(["networkctl", "reconfigure"] + present)
    return commands
