# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""NetworkManager keyfiles: where they live, detecting them on a node, rendering a plan to them (as NetworkManager
writes them), reading them back, and the commands that apply them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import uuid
from ansible_collections.gpuops.fabric.plugins.module_utils._names import keyfile_value
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import (
    file_part, plan_iface, int_or_none, marker_lines, HEADER, IFACE_BOND, IFACE_ETHERNET, IFACE_VLAN, interface_order, on_root,
    parse_ini,
)

# Where NetworkManager keeps its keyfiles, and the names this collection owns there. Nothing else is touched.
# A keyfile is PREFIX + interface + SUFFIX; its connection id is its name without SUFFIX (apply_commands relies on it).
DIRECTORY = "/etc/NetworkManager/system-connections"
PREFIX = "gpuops-"
SUFFIX = ".nmconnection"
OWNED_PREFIXES = (PREFIX,)


def detect(root):
    """The node runs NetworkManager and keeps keyfiles."""
    return os.path.isdir(on_root(root, DIRECTORY)) and os.path.exists(on_root(root, "/usr/sbin/NetworkManager"))


def parse_keyfiles(texts, paths=None, problems=None):
    """NetworkManager keyfiles (one per connection)."""
    ifaces = []
    for index, text in enumerate(texts):
        path = paths[index] if paths else "keyfile %d" % index
        values = {}
        addresses, gateways, routes = [], [], []
        for section, key, value in parse_ini(text, path, problems):
            values[(section, key)] = value
            if section in ("ipv4", "ipv6") and re.match(r"^address\d+$", key):
                parts = value.split(",")
                addresses.append((int_or_none(key[7:]), section, parts[0]))
                if len(parts) > 1 and parts[1]:
                    gateways.append((section, parts[1]))
            elif section in ("ipv4", "ipv6") and key == "gateway":
                gateways.append((section, value))
            elif section in ("ipv4", "ipv6") and re.match(r"^route\d+$", key):
                parts = value.split(",") + [None, None]
                route = {"to": parts[0], "via": parts[1] or None, "metric": int_or_none(parts[2]) if parts[2] else None}
                routes.append((int_or_none(key[5:]), section, route))
        kind = {"ethernet": IFACE_ETHERNET, "802-3-ethernet": IFACE_ETHERNET, "bond": IFACE_BOND, "vlan": IFACE_VLAN}.get(
            values.get(("connection", "type")))
        name = values.get(("connection", "interface-name"))
        if kind is None or not name:
            if problems is not None:
                problems.append("%s: no [connection] type (ethernet, bond, vlan) and interface-name; not a connection "
                                "this collection writes" % path)
            continue
        iface = plan_iface(name, kind)
        iface["mtu"] = int_or_none(values.get(("ethernet", "mtu")))
        family_order = {"ipv4": 0, "ipv6": 1}
        iface["addresses"] = [a for _n, _f, a in sorted(addresses, key=lambda x: (family_order[x[1]], x[0]))]
        iface["gateways"] = [g for f, g in sorted(gateways, key=lambda x: family_order[x[0]])]
        iface["routes"] = [r for _n, _f, r in sorted(routes, key=lambda x: (family_order[x[1]], x[0]))]
        if values.get(("connection", "slave-type")) == "bond":
            iface["bond"] = values.get(("connection", "master"))
        if kind == IFACE_BOND:
            iface["mode"] = values.get(("bond", "mode"), "balance-rr")
            iface["miimon"] = int_or_none(values.get(("bond", "miimon"), 0))
            iface["lacp_rate"] = values.get(("bond", "lacp_rate"))
            iface["xmit_hash_policy"] = values.get(("bond", "xmit_hash_policy"))
            iface["primary"] = values.get(("bond", "primary"))
        if kind == IFACE_VLAN:
            iface["id"] = int_or_none(values.get(("vlan", "id")))
            iface["parent"] = values.get(("vlan", "parent"))
        ifaces.append(iface)
    by_name = dict((i["name"], i) for i in ifaces)
    for iface in ifaces:
        if iface["bond"] in by_name:
            by_name[iface["bond"]]["members"].append(iface["name"])
    return interface_order(ifaces)


_UUID_NAMESPACE = uuid.UUID("5b1e4c1e-7a43-4d57-9f0b-6770756f7073")


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
        nm_type = {IFACE_ETHERNET: "ethernet", IFACE_BOND: "bond", IFACE_VLAN: "vlan"}[iface["kind"]]
        lines = ["# " + HEADER] + marker_lines(plan, [iface]) + [
            "[connection]", "id=%s%s" % (PREFIX, keyfile_value(name)), "uuid=%s" % _nm_uuid(name), "type=%s" % nm_type,
            "interface-name=%s" % keyfile_value(name)]
        if iface["kind"] == IFACE_ETHERNET and iface.get("bond"):
            lines += ["master=%s" % keyfile_value(iface["bond"]), "slave-type=bond"]
        lines.append("")
        if iface.get("mtu"):
            lines += ["[ethernet]", "mtu=%d" % iface["mtu"], ""]
        if iface["kind"] == IFACE_BOND:
            lines += ["[bond]", "miimon=%d" % iface["miimon"], "mode=%s" % keyfile_value(iface["mode"])]
            if iface.get("lacp_rate"):
                lines.append("lacp_rate=%s" % keyfile_value(iface["lacp_rate"]))
            if iface.get("xmit_hash_policy"):
                lines.append("xmit_hash_policy=%s" % keyfile_value(iface["xmit_hash_policy"]))
            if iface.get("primary"):
                lines.append("primary=%s" % keyfile_value(iface["primary"]))
            lines.append("")
        if iface["kind"] == IFACE_VLAN:
            lines += ["[vlan]", "flags=1", "id=%d" % iface["id"], "parent=%s" % keyfile_value(iface["parent"]), ""]  # 1: reorder headers
        if not (iface["kind"] == IFACE_ETHERNET and iface.get("bond")):
            lines += _nm_ip("ipv4", "ipv4", iface) + [""] + _nm_ip("ipv6", "ipv6", iface) + [""]
        files["%s/%s%s%s" % (DIRECTORY, PREFIX, file_part(name), SUFFIX)] = ("\n".join(lines).rstrip("\n") + "\n", "0600")
    return files


def parse(texts, problems=None):
    """The interfaces the owned keyfiles configure: {path: content}."""
    paths = sorted(texts)
    return parse_keyfiles([texts[p] for p in paths], paths, problems)


render = render_networkmanager


def interface_of(path):
    """The interface an owned keyfile's name says, or None."""
    name = os.path.basename(path)
    if name.startswith(PREFIX):
        return name[len(PREFIX):-len(SUFFIX)]
    return None


def apply_commands(changes):
    """Argument lists that make NetworkManager apply the changed keyfiles: reload, then bring up each written one."""
    commands = [["nmcli", "connection", "reload"]]
    for action, path, _new in changes:
        if action == "write":
            commands.append(["nmcli", "connection", "up", "id", os.path.basename(path)[:-len(SUFFIX)]])
    return commands
