# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""netplan: where the file lives, detecting it on a node, rendering a plan to it, reading it back, and the
command that applies it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from ansible_collections.gpuops.fabric.plugins.module_utils._names import yaml_scalar as _q
from ansible_collections.gpuops.fabric.plugins.module_utils._network.common import (
    HEADER, IFACE_BOND, IFACE_ETHERNET, IFACE_VLAN, as_mapping, as_sequence, int_or_none, link_members, marker_lines,
    on_root, plan_iface, plan_routes,
)

# Where netplan reads its files, and the one this collection owns there. Nothing else is touched.
DIRECTORY = "/etc/netplan"
FILE_NAME = "60-gpuops-fabric.yaml"
OWNED_PREFIXES = (FILE_NAME,)
NETPLAN_PATH = "%s/%s" % (DIRECTORY, FILE_NAME)


def detect(root):
    """The node has netplan: its directory and its command."""
    return os.path.isdir(on_root(root, DIRECTORY)) and (os.path.exists(on_root(root, "/usr/sbin/netplan")) or
                                                        os.path.exists(on_root(root, "/usr/bin/netplan")))


def parse_netplan(text, path="netplan file", problems=None):
    """One netplan YAML file; shapes netplan would refuse (a list where a mapping goes) are skipped. A file that is
    not YAML raises ValueError naming the path and line; one without a ``network:`` mapping is a problem noted in
    ``problems`` (when given)."""
    try:
        import yaml
    except ImportError:
        raise ValueError("reading netplan files needs PyYAML on the node (netplan itself depends on it)")
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " line %d column %d" % (mark.line + 1, mark.column + 1) if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
        raise ValueError("%s%s: not valid YAML (%s)" % (path, where, problem))
    if not isinstance(as_mapping(loaded).get("network"), dict) and problems is not None:
        problems.append("%s: no 'network:' mapping; netplan would read nothing from it" % path)
    data = as_mapping(as_mapping(loaded).get("network"))
    ifaces = []
    for kind, section in ((IFACE_ETHERNET, "ethernets"), (IFACE_BOND, "bonds"), (IFACE_VLAN, "vlans")):
        for name, conf in sorted(as_mapping(data.get(section)).items(), key=lambda item: str(item[0])):
            conf = as_mapping(conf)
            iface = plan_iface(str(name), kind)
            iface["mtu"] = int_or_none(conf.get("mtu"))
            iface["addresses"] = [str(a) for a in as_sequence(conf.get("addresses")) if isinstance(a, str)]
            for route in as_sequence(conf.get("routes")):
                route = as_mapping(route)
                if str(route.get("to")) in ("default", "0.0.0.0/0", "::/0"):
                    iface["gateways"].append(str(route.get("via")))
                else:
                    iface["routes"].append({"to": str(route.get("to")), "via": str(route.get("via")),
                                            "metric": int_or_none(route.get("metric"))})
            if kind == IFACE_BOND:
                params = as_mapping(conf.get("parameters"))
                iface["members"] = [str(m) for m in as_sequence(conf.get("interfaces"))]
                iface["mode"] = str(params.get("mode", "balance-rr"))
                iface["miimon"] = int_or_none(params.get("mii-monitor-interval", 0))
                iface["lacp_rate"] = params.get("lacp-rate")
                iface["xmit_hash_policy"] = params.get("transmit-hash-policy")
                iface["primary"] = params.get("primary")
            if kind == IFACE_VLAN:
                iface["id"] = int_or_none(conf.get("id"))
                iface["parent"] = conf.get("link")
            ifaces.append(iface)
    return link_members(ifaces)


def render_netplan(plan):
    sections = {"ethernets": [], "bonds": [], "vlans": []}
    for iface in plan["interfaces"]:
        lines = ["    %s:" % _q(iface["name"])]
        if iface["kind"] == IFACE_BOND:
            lines.append("      interfaces: [%s]" % ", ".join(_q(m) for m in iface["members"]))
        if iface["kind"] == IFACE_VLAN:
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
        routes = plan_routes(iface)
        if routes:
            lines.append("      routes:")
            for route in routes:
                lines.append("        - to: %s" % _q(route["to"]))
                lines.append("          via: %s" % _q(route["via"]))
                if route.get("metric") is not None:
                    lines.append("          metric: %d" % route["metric"])
        if iface["kind"] == IFACE_BOND:
            lines.append("      parameters:")
            lines.append("        mode: %s" % _q(iface["mode"]))
            lines.append("        mii-monitor-interval: %d" % iface["miimon"])
            if iface.get("lacp_rate"):
                lines.append("        lacp-rate: %s" % _q(iface["lacp_rate"]))
            if iface.get("xmit_hash_policy"):
                lines.append("        transmit-hash-policy: %s" % _q(iface["xmit_hash_policy"]))
            if iface.get("primary"):
                lines.append("        primary: %s" % _q(iface["primary"]))
        sections[{IFACE_ETHERNET: "ethernets", IFACE_BOND: "bonds", IFACE_VLAN: "vlans"}[iface["kind"]]].append("\n".join(lines))
    out = ["# " + HEADER] + marker_lines(plan, plan["interfaces"]) + ["network:", "  version: 2"]
    for key in ("ethernets", "bonds", "vlans"):
        if sections[key]:
            out.append("  %s:" % key)
            out.extend(sections[key])
    return {NETPLAN_PATH: ("\n".join(out) + "\n", "0600")}


def parse(texts, problems=None):
    """The interfaces the owned files configure: {path: content}, file by file in path order."""
    ifaces = []
    for path in sorted(texts):
        ifaces.extend(parse_netplan(texts[path], path, problems))
    return ifaces


render = render_netplan


def interface_of(path):
    """netplan's one file names no interface."""
    return None


def apply_commands(changes):
    """Argument lists that make netplan apply the changed files to the running system."""
    return [["netplan", "apply"]]
