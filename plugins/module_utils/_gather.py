# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Read the files this collection owns on a node back into the intent's shape (state=gathered).

Each backend's files are parsed into the per-interface plan shape the renderers take (kind, members, MTU,
addresses, gateways, routes, VLAN id and parent), then folded into ``fabric_networks``, ``fabric_bonds``,
``fabric_attachments`` and ``fabric_addresses`` for this host. Network names and roles come from the
marker comments the renderers write; what cannot be said in the intent is listed, not dropped silently.
Fed back to the role, the gathered intent renders the same bytes, so it reports no change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

MARKER = re.compile(r"^# network (.+) role (\S+) on (\S+)$", re.M)


def _iface(name, kind):
    return {"name": name, "kind": kind, "mtu": None, "addresses": [], "gateways": [], "routes": [],
            "members": [], "bond": None}


def _int(value):
    text = str(value).strip()
    digits = text[1:] if text.startswith("-") else text
    # ASCII digits only, and not a thousand of them (int() would take "1_000" and other scripts' digits)
    if not 0 < len(digits) <= 18 or not all(c in "0123456789" for c in digits):
        return None
    return int(text)


def markers(texts):
    """{interface: [(network, role)]} from the marker comments of the given file contents."""
    found = {}
    for text in texts:
        for network, role, iface in MARKER.findall(text):
            found.setdefault(iface, []).append((network, role))
    return found


def _mapping(value):
    return value if isinstance(value, dict) else {}


def _sequence(value):
    return value if isinstance(value, list) else []


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
    if not isinstance(_mapping(loaded).get("network"), dict) and problems is not None:
        problems.append("%s: no 'network:' mapping; netplan would read nothing from it" % path)
    data = _mapping(_mapping(loaded).get("network"))
    ifaces = []
    for kind, section in (("ethernet", "ethernets"), ("bond", "bonds"), ("vlan", "vlans")):
        for name, conf in sorted(_mapping(data.get(section)).items(), key=lambda item: str(item[0])):
            conf = _mapping(conf)
            iface = _iface(str(name), kind)
            iface["mtu"] = _int(conf.get("mtu"))
            iface["addresses"] = [str(a) for a in _sequence(conf.get("addresses")) if isinstance(a, str)]
            for route in _sequence(conf.get("routes")):
                route = _mapping(route)
                if str(route.get("to")) in ("default", "0.0.0.0/0", "::/0"):
                    iface["gateways"].append(str(route.get("via")))
                else:
                    iface["routes"].append({"to": str(route.get("to")), "via": str(route.get("via")),
                                            "metric": _int(route.get("metric"))})
            if kind == "bond":
                params = _mapping(conf.get("parameters"))
                iface["members"] = [str(m) for m in _sequence(conf.get("interfaces"))]
                iface["mode"] = str(params.get("mode", "balance-rr"))
                iface["miimon"] = _int(params.get("mii-monitor-interval", 0))
                iface["lacp_rate"] = params.get("lacp-rate")
                iface["xmit_hash_policy"] = params.get("transmit-hash-policy")
                iface["primary"] = params.get("primary")
            if kind == "vlan":
                iface["id"] = _int(conf.get("id"))
                iface["parent"] = conf.get("link")
            ifaces.append(iface)
    return _link_members(ifaces)


def _ini(text, path=None, problems=None):
    """[(section, key, value)] of an INI-like file; keys may repeat (networkd's Address=). A line that is neither a
    comment, a [section] nor key=value, or a key before any section, is noted in ``problems`` with its line."""
    entries, section = [], None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if "=" in line and section is not None:
            key, value = line.split("=", 1)
            entries.append((section, key.strip(), value.strip()))
        elif problems is not None:
            problems.append("%s line %d: %s: %r" % (path, number, "a setting before any [section]" if "=" in line
                                                    else "neither [section] nor key=value", line[:80]))
    return entries


def parse_keyfiles(texts, paths=None, problems=None):
    """NetworkManager keyfiles (one per connection)."""
    ifaces = []
    for index, text in enumerate(texts):
        path = paths[index] if paths else "keyfile %d" % index
        values = {}
        addresses, gateways, routes = [], [], []
        for section, key, value in _ini(text, path, problems):
            values[(section, key)] = value
            if section in ("ipv4", "ipv6") and re.match(r"^address\d+$", key):
                parts = value.split(",")
                addresses.append((_int(key[7:]), section, parts[0]))
                if len(parts) > 1 and parts[1]:
                    gateways.append((section, parts[1]))
            elif section in ("ipv4", "ipv6") and key == "gateway":
                gateways.append((section, value))
            elif section in ("ipv4", "ipv6") and re.match(r"^route\d+$", key):
                parts = value.split(",") + [None, None]
                route = {"to": parts[0], "via": parts[1] or None, "metric": _int(parts[2]) if parts[2] else None}
                routes.append((_int(key[5:]), section, route))
        kind = {"ethernet": "ethernet", "802-3-ethernet": "ethernet", "bond": "bond", "vlan": "vlan"}.get(
            values.get(("connection", "type")))
        name = values.get(("connection", "interface-name"))
        if kind is None or not name:
            if problems is not None:
                problems.append("%s: no [connection] type (ethernet, bond, vlan) and interface-name; not a connection "
                                "this collection writes" % path)
            continue
        iface = _iface(name, kind)
        iface["mtu"] = _int(values.get(("ethernet", "mtu")))
        family_order = {"ipv4": 0, "ipv6": 1}
        iface["addresses"] = [a for _n, _f, a in sorted(addresses, key=lambda x: (family_order[x[1]], x[0]))]
        iface["gateways"] = [g for f, g in sorted(gateways, key=lambda x: family_order[x[0]])]
        iface["routes"] = [r for _n, _f, r in sorted(routes, key=lambda x: (family_order[x[1]], x[0]))]
        if values.get(("connection", "slave-type")) == "bond":
            iface["bond"] = values.get(("connection", "master"))
        if kind == "bond":
            iface["mode"] = values.get(("bond", "mode"), "balance-rr")
            iface["miimon"] = _int(values.get(("bond", "miimon"), 0))
            iface["lacp_rate"] = values.get(("bond", "lacp_rate"))
            iface["xmit_hash_policy"] = values.get(("bond", "xmit_hash_policy"))
            iface["primary"] = values.get(("bond", "primary"))
        if kind == "vlan":
            iface["id"] = _int(values.get(("vlan", "id")))
            iface["parent"] = values.get(("vlan", "parent"))
        ifaces.append(iface)
    by_name = dict((i["name"], i) for i in ifaces)
    for iface in ifaces:
        if iface["bond"] in by_name:
            by_name[iface["bond"]]["members"].append(iface["name"])
    return _order(ifaces)


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
        entries = _ini(files[path], path, problems)
        values = dict(((s, k), v) for s, k, v in entries)
        if path.endswith(".netdev"):
            name, kind = values.get(("NetDev", "Name")), values.get(("NetDev", "Kind"))
            if not name or kind not in ("bond", "vlan"):
                if problems is not None:
                    problems.append("%s: no [NetDev] Name= with Kind=bond or vlan" % path)
                continue
            iface = ifaces.setdefault(name, _iface(name, kind))
            iface["kind"] = kind
            iface["mtu"] = iface["mtu"] or _int(values.get(("NetDev", "MTUBytes")))
            if kind == "bond":
                iface["mode"] = values.get(("Bond", "Mode"), "balance-rr")
                iface["miimon"] = _milliseconds(values.get(("Bond", "MIIMonitorSec"), "0"))
                iface["lacp_rate"] = values.get(("Bond", "LACPTransmitRate"))
                iface["xmit_hash_policy"] = values.get(("Bond", "TransmitHashPolicy"))
                iface["primary"] = None
            else:
                iface["id"] = _int(values.get(("VLAN", "Id")))
        elif path.endswith(".network"):
            name = values.get(("Match", "Name"))
            if not name:
                if problems is not None:
                    problems.append("%s: no [Match] Name=" % path)
                continue
            iface = ifaces.setdefault(name, _iface(name, "ethernet"))
            iface["mtu"] = _int(values.get(("Link", "MTUBytes"))) or iface["mtu"]
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
                        route["metric"] = _int(value)
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
    return _order(list(ifaces.values()))


def _link_members(ifaces):
    by_name = dict((i["name"], i) for i in ifaces)
    for iface in ifaces:
        for member in iface["members"]:
            if member in by_name:
                by_name[member]["bond"] = iface["name"]
    return _order(ifaces)


def _order(ifaces):
    order = {"ethernet": 0, "bond": 1, "vlan": 2}
    return sorted(ifaces, key=lambda i: (order[i["kind"]], i["name"]))


def parse(backend, files):
    """The interfaces configured by the owned files of ``backend``: {path: {"content": ...}}. An owned file that
    its backend could not read, or that says nothing it should, raises ValueError naming each file and line: a
    broken file must not read back as an empty intent."""
    texts = dict((path, item["content"]) for path, item in files.items())
    problems = []
    if backend == "netplan":
        ifaces = []
        for path in sorted(texts):
            ifaces.extend(parse_netplan(texts[path], path, problems))
    elif backend == "networkmanager":
        paths = sorted(texts)
        ifaces = parse_keyfiles([texts[p] for p in paths], paths, problems)
    elif backend == "networkd":
        ifaces = parse_networkd(texts, problems)
    else:
        raise ValueError("unknown backend %r" % backend)
    if problems:
        raise ValueError("; ".join(problems))
    return ifaces


def to_intent(ifaces, marks):
    """Fold parsed interfaces into this host's intent. Returns (intent, unrepresented)."""
    intent = {"fabric_networks": {}, "fabric_bonds": {}, "fabric_attachments": {}, "fabric_addresses": {}}
    missing = []
    for iface in ifaces:
        if iface["kind"] != "bond":
            continue
        bond = {"members": list(iface["members"]), "mode": iface["mode"], "miimon": iface["miimon"]}
        for key in ("lacp_rate", "xmit_hash_policy", "primary", "mtu"):
            if iface.get(key):
                bond[key] = iface[key]
        intent["fabric_bonds"][iface["name"]] = bond
    for iface in ifaces:
        if iface["bond"]:
            continue
        named = marks.get(iface["name"]) or []
        if not named and not iface["addresses"] and iface["kind"] != "vlan":
            continue  # a parent that only carries VLANs: its MTU follows from them
        if named:
            network, role = named[0]
        else:
            network = "vlan%d" % iface["id"] if iface["kind"] == "vlan" else iface["name"]
            role = "management" if iface["gateways"] else "training"
            missing.append("%s: no marker comment names its network; called it %s with role %s"
                           % (iface["name"], network, role))
        net = {"role": role}
        if iface["kind"] == "vlan":
            net["vlan"] = iface["id"]
        if iface["mtu"]:
            net["mtu"] = iface["mtu"]
        address = {}
        for family, skey in (("ipv4", "subnet"), ("ipv6", "subnet6")):
            mine = [a for a in iface["addresses"] if (":" in a) == (family == "ipv6")]
            if not mine:
                continue
            try:
                parsed = ipaddress.ip_interface(mine[0])
            except ValueError:
                missing.append("%s: %r is not an address with a prefix" % (iface["name"], mine[0]))
                continue
            net[skey] = str(parsed.network)
            address[family] = str(parsed.ip)
            for extra in mine[1:]:
                missing.append("%s: a second %s address %s has no place in the intent"
                               % (iface["name"], family, extra))
        for gateway in iface["gateways"]:
            gkey = "gateway6" if ":" in gateway else "gateway"
            if role != "management":
                missing.append("%s: gateway %s on a %s network (only management networks carry one)"
                               % (iface["name"], gateway, role))
            elif gkey not in net:
                net[gkey] = gateway
        if iface["routes"]:
            net["routes"] = [dict((k, v) for k, v in r.items() if v is not None) for r in iface["routes"]]
        for extra in named[1:]:
            missing.append("%s: also carries network %s, which one interface cannot hold twice"
                           % (iface["name"], extra[0]))
        intent["fabric_networks"][network] = net
        intent["fabric_attachments"][network] = iface["parent"] if iface["kind"] == "vlan" else iface["name"]
        if address:
            intent["fabric_addresses"][network] = address
    return intent, missing


def gather_intent(backend, files):
    ifaces = parse(backend, files)
    intent, missing = to_intent(ifaces, markers(item["content"] for item in files.values()))
    intent["fabric_network_backend"] = backend
    return intent, missing
