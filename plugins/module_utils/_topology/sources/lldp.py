# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The switch side seen from the host: LLDP neighbours as lldpd reports them (``lldpctl -f json0``, the regular
JSON layout; ``-f json`` is read too, and ``-f keyvalue`` where lldpctl was built without JSON output).

Per local port, a list of neighbours:
``{"chassis_name", "chassis_id", "mgmt_ip": [..], "port_id", "port_id_type", "port_descr", "ttl", "pvid",
"vlans": [{"id", "name", "pvid"}], "aggregation": {"enabled", "port_id"} or None, "mfs", "autoneg":
{"supported", "enabled", "mau"} or None, "via"}``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


class LldpError(ValueError):
    pass


def _first(node):
    return node[0] if isinstance(node, list) and node else node


def _value(node):
    """A scalar from either layout: json0 wraps values as [{"value": v}], json gives v (or {"value": v})."""
    node = _first(node)
    if isinstance(node, dict):
        return node.get("value")
    return node


def _items(node):
    if node is None:
        return []
    return node if isinstance(node, list) else [node]


def _int(text):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _bool(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("yes", "on", "true", "1")


def _interfaces(data):
    """[(name, body)] from either layout."""
    lldp = _first(data.get("lldp"))
    if not isinstance(lldp, dict):
        return []
    found = []
    for entry in _items(lldp.get("interface")):
        if not isinstance(entry, dict):
            continue
        if "name" in entry and isinstance(entry.get("name"), str):      # json0
            found.append((entry["name"], entry))
        else:                                                            # json: {name: body}
            for name, body in entry.items():
                if isinstance(body, dict):
                    found.append((name, body))
    return found


def _chassis(node):
    """(name, body) of the chassis: json0 carries the name inside, json keys the body by the name."""
    node = _first(node) or {}
    if "id" in node or "name" in node and isinstance(node.get("name"), list):
        return _value(node.get("name")), node
    if len(node) == 1:
        name, body = list(node.items())[0]
        if isinstance(body, dict):
            return name, body
    return None, node


def _neighbour(body):
    chassis_name, chassis = _chassis(body.get("chassis"))
    chassis_id = _first(chassis.get("id")) or {}
    port = _first(body.get("port")) or {}
    port_id = _first(port.get("id")) or {}
    vlans = []
    for vlan in _items(body.get("vlan")):
        if not isinstance(vlan, dict):
            continue
        vid = _int(vlan.get("vlan-id"))
        vlans.append({"id": vid, "name": vlan.get("value"), "pvid": _bool(vlan.get("pvid", False))})
    # lldpd lists a port's VLANs in the order the frame carried them, which is not always the same (200, 100 once
    # in a VM test): facts never depend on it.
    vlans.sort(key=lambda v: (v["id"] is None, v["id"] or 0, str(v["name"])))
    pvid = _int(_value(body.get("pvid")))
    if pvid is None:
        tagged = [v["id"] for v in vlans if v["pvid"]]
        pvid = tagged[0] if tagged else None
    aggregation = None
    if port.get("aggregation") is not None:
        # lldpd shows the aggregation port id only when the neighbour says the port is aggregated
        aggregation = {"enabled": True, "port_id": _int(_value(port.get("aggregation")))}
    autoneg = None
    auto = _first(port.get("auto-negotiation"))
    if isinstance(auto, dict):
        autoneg = {"supported": _bool(auto.get("supported")), "enabled": _bool(auto.get("enabled")),
                   "mau": _value(auto.get("current"))}
    return {
        "via": _value(body.get("via")),
        "chassis_name": chassis_name,
        "chassis_id": chassis_id.get("value") if isinstance(chassis_id, dict) else None,
        "mgmt_ip": sorted(str(_value(ip)) for ip in _items(chassis.get("mgmt-ip")) if _value(ip) is not None),
        "port_id": port_id.get("value") if isinstance(port_id, dict) else None,
        "port_id_type": port_id.get("type") if isinstance(port_id, dict) else None,
        "port_descr": _value(port.get("descr")),
        "ttl": _int(_value(port.get("ttl"))),
        "pvid": pvid,
        "vlans": vlans,
        "aggregation": aggregation,
        "mfs": _int(_value(port.get("mfs"))),
        "autoneg": autoneg,
    }


MAX_BYTES = 16 * 1024 * 1024  # of lldpctl's output: a node's neighbours are a few KiB each


def _bounded(text):
    if len(text) > MAX_BYTES:
        raise LldpError("lldpctl printed more than %d MiB" % (MAX_BYTES >> 20))
    return text


def parse(text):
    """{local port: [neighbour, ...]} from lldpctl's JSON (json0 or json). Raises LldpError on text that is not, or
    that is larger than MAX_BYTES."""
    text = _bounded(text)
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise LldpError("lldpctl printed no JSON (%s): %s" % (exc, text.strip()[:200]))
    if not isinstance(data, dict):
        raise LldpError("lldpctl JSON is not an object")
    ports = {}
    for name, body in _interfaces(data):
        ports.setdefault(name, []).append(_neighbour(body))
    return _sorted_neighbours(ports)


def _sorted_neighbours(ports):
    """Several neighbours on one port (a hub, a misconfigured switch) in a fixed order."""
    for name in ports:
        ports[name].sort(key=lambda n: (str(n.get("chassis_name")), str(n.get("chassis_id")), str(n.get("port_id"))))
    return ports


# keyvalue: one "lldp.<port>.<key path>=<value>" line per value, a neighbour's lines in a row starting with "via";
# repeated keys (mgmt-ip, vlan) repeat the line. A port name may hold dots (eth0.100), so the port ends before the
# first of these.
_KV_TOP = ("via", "rid", "age", "chassis", "port", "vlan", "pvid", "ppvid", "pi", "unknown-tlvs", "lldp-med", "dcbx",
           "power", "custom")
_KV_ID_TYPES = ("mac", "ifname", "local", "ip", "ifalias")


def _kv_lines(text):
    for raw in _bounded(text).splitlines():
        key, sep, value = raw.partition("=")
        if not sep or not key.startswith("lldp."):
            if raw.strip():
                raise LldpError("not lldpctl keyvalue output: %s" % raw.strip()[:200])
            continue
        parts = key.split(".")[1:]
        cut = next((i for i in range(1, len(parts)) if parts[i] in _KV_TOP), None)
        if cut is None:
            raise LldpError("lldpctl keyvalue line without a known key: %s" % raw.strip()[:200])
        yield ".".join(parts[:cut]), parts[cut:], value


def parse_keyvalue(text):
    """The same {local port: [neighbour, ...]} as ``parse`` from ``lldpctl -f keyvalue``."""
    ports = {}
    body = None
    for port, path, value in _kv_lines(text):
        if path == ["via"]:  # a neighbour starts
            body = {"via": value, "chassis": {"mgmt-ip": []}, "port": {}, "vlan": []}
            ports.setdefault(port, []).append(body)
            continue
        if body is None:
            raise LldpError("lldpctl keyvalue output does not start a neighbour with 'via': %s" % ".".join(path))
        top, rest = path[0], path[1:]
        if top == "chassis" and len(rest) == 1:
            if rest[0] in _KV_ID_TYPES:
                body["chassis"]["id"] = {"type": rest[0], "value": value}
            elif rest[0] == "mgmt-ip":
                body["chassis"]["mgmt-ip"].append(value)
            elif rest[0] in ("name", "descr"):
                body["chassis"][rest[0]] = value
        elif top == "port" and rest:
            if len(rest) == 1 and rest[0] in _KV_ID_TYPES:
                body["port"]["id"] = {"type": rest[0], "value": value}
            elif rest[0] == "auto-negotiation" and len(rest) == 2:
                body["port"].setdefault("auto-negotiation", {})[rest[1]] = value
            elif len(rest) == 1:
                body["port"][rest[0]] = value
        elif top == "vlan":
            if not body["vlan"] or rest == ["vlan-id"]:  # each VLAN's lines start with its id
                body["vlan"].append({})
            body["vlan"][-1][rest[0] if rest else "value"] = value
        elif top == "pvid" and not rest:
            body["pvid"] = value
    return _sorted_neighbours(dict((port, [_neighbour_kv(b) for b in found]) for port, found in ports.items()))


def _neighbour_kv(body):
    """A keyvalue neighbour in the json layout, read by the one reader of both."""
    chassis = dict(body["chassis"], id=body["chassis"].get("id"))  # with "id" it reads as json0's chassis
    shaped = {"via": body["via"], "chassis": chassis, "port": body["port"], "vlan": body["vlan"]}
    if "pvid" in body:
        shaped["pvid"] = body["pvid"]
    return _neighbour(shaped)


def gather(run, lldpctl, socket=None):
    """The ``lldp`` facts subset on a live node: ``run(argv) -> (rc, out, err)``; ``lldpctl`` its path or None;
    ``socket`` lldpd's control socket when not the default."""
    if not lldpctl:
        return {"agent": False, "reason": "no LLDP agent: lldpctl (Debian package lldpd) is not installed",
                "ports": {}}
    base = [lldpctl] + (["-u", socket] if socket else [])
    rc, out, err = run(base + ["-f", "json0"])
    if rc == 0:
        try:
            return {"agent": True, "reason": None, "format": "json0", "ports": parse(out)}
        except LldpError:
            pass  # an lldpctl built without JSON output: ask for keyvalue
    krc, kout, kerr = run(base + ["-f", "keyvalue"])
    if krc == 0:
        try:
            return {"agent": True, "reason": None, "format": "keyvalue", "ports": parse_keyvalue(kout)}
        except LldpError as exc:
            return {"agent": False, "reason": str(exc), "ports": {}}
    said = (err or out or kerr or kout).strip().splitlines()
    return {"agent": False, "reason": "no LLDP agent: lldpd is not running (%s)" % (said[-1] if said else rc),
            "ports": {}}


def switch_name(neighbour):
    """The name a neighbour's switch goes by: its system name, else its chassis id (None when it sent neither)."""
    return neighbour.get("chassis_name") or neighbour.get("chassis_id")


def switch_port_name(neighbour):
    """The name of the switch port: its description (what operators label ports with), else its port id."""
    return neighbour.get("port_descr") or neighbour.get("port_id")
