# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The switch side seen from the host: LLDP neighbours as lldpd reports them (``lldpctl -f json0``, the regular
JSON layout; ``-f json`` is read too).

Per local port, a list of neighbours:
``{"chassis_name", "chassis_id", "mgmt_ip": [..], "port_id", "port_id_type", "port_descr", "ttl", "pvid",
"vlans": [{"id", "name", "pvid"}], "aggregation": {"enabled", "port_id"} or None, "mfs", "autoneg":
{"supported", "enabled", "mau"} or None, "via"}``.
"""

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
        "mgmt_ip": [_value(ip) for ip in _items(chassis.get("mgmt-ip"))],
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


def parse(text):
    """{local port: [neighbour, ...]} from lldpctl's JSON (json0 or json). Raises LldpError on text that is not."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise LldpError("lldpctl printed no JSON (%s): %s" % (exc, text.strip()[:200]))
    if not isinstance(data, dict):
        raise LldpError("lldpctl JSON is not an object")
    ports = {}
    for name, body in _interfaces(data):
        ports.setdefault(name, []).append(_neighbour(body))
    return ports


def gather(run, lldpctl, socket=None):
    """The ``lldp`` facts subset on a live node: ``run(argv) -> (rc, out, err)``; ``lldpctl`` its path or None;
    ``socket`` lldpd's control socket when not the default."""
    if not lldpctl:
        return {"agent": False, "reason": "no LLDP agent: lldpctl (Debian package lldpd) is not installed",
                "ports": {}}
    rc, out, err = run([lldpctl] + (["-u", socket] if socket else []) + ["-f", "json0"])
    if rc != 0:
        said = (err or out).strip().splitlines()
        return {"agent": False, "reason": "no LLDP agent: lldpd is not running (%s)" % (said[-1] if said else rc),
                "ports": {}}
    try:
        return {"agent": True, "reason": None, "ports": parse(out)}
    except LldpError as exc:
        return {"agent": False, "reason": str(exc), "ports": {}}
