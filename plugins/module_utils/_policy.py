# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Expectations and waivers from the inventory: validation (errors name the key) and application."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import fnmatch
import ipaddress

from ansible_collections.gpuops.fabric.plugins.module_utils._pcie import GENERATIONS, VALID_WIDTHS
from ansible_collections.gpuops.fabric.plugins.module_utils._rules import CATALOG

EXPECTATION_KEYS = ("gpu", "nics", "rdma")
GPU_KEYS = ("width", "generation")
NIC_KEYS = ("name", "speed_mbps", "mtu")
WAIVER_KEYS = ("rule", "hosts", "subject", "reason", "expires")
CABLING_KEYS = ("switch", "port")
MTU_RANGE = (68, 9216)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def validate_expectations(value, key="fabric_expectations"):
    """Return (normalized, errors). ``None`` means no expectations (the devices' own maxima apply)."""
    errors = []
    result = {"gpu": {"width": None, "generation": None}, "nics": [], "rdma": False}
    if value is None:
        return result, errors
    if not isinstance(value, dict):
        return result, ["%s: expected a mapping, got %r" % (key, value)]
    for unknown in sorted(set(value) - set(EXPECTATION_KEYS)):
        errors.append("%s.%s: unknown key (known: %s)" % (key, unknown, ", ".join(EXPECTATION_KEYS)))
    gpu = value.get("gpu") or {}
    if not isinstance(gpu, dict):
        errors.append("%s.gpu: expected a mapping, got %r" % (key, gpu))
        gpu = {}
    for unknown in sorted(set(gpu) - set(GPU_KEYS)):
        errors.append("%s.gpu.%s: unknown key (known: %s)" % (key, unknown, ", ".join(GPU_KEYS)))
    if gpu.get("width") is not None:
        if not _is_int(gpu["width"]) or gpu["width"] not in VALID_WIDTHS:
            errors.append("%s.gpu.width: %r is not a PCIe width (%s)"
                          % (key, gpu["width"], ", ".join(str(w) for w in VALID_WIDTHS)))
        else:
            result["gpu"]["width"] = gpu["width"]
    if gpu.get("generation") is not None:
        if not _is_int(gpu["generation"]) or gpu["generation"] not in GENERATIONS:
            errors.append("%s.gpu.generation: %r is not a PCIe generation (1..%d)"
                          % (key, gpu["generation"], max(GENERATIONS)))
        else:
            result["gpu"]["generation"] = gpu["generation"]
    nics = value.get("nics") or []
    if not isinstance(nics, list):
        errors.append("%s.nics: expected a list, got %r" % (key, nics))
        nics = []
    for index, entry in enumerate(nics):
        where = "%s.nics[%d]" % (key, index)
        if not isinstance(entry, dict):
            errors.append("%s: expected a mapping, got %r" % (where, entry))
            continue
        for unknown in sorted(set(entry) - set(NIC_KEYS)):
            errors.append("%s.%s: unknown key (known: %s)" % (where, unknown, ", ".join(NIC_KEYS)))
        if not isinstance(entry.get("name"), str) or not entry.get("name"):
            errors.append("%s.name: %r must be an interface name or pattern" % (where, entry.get("name")))
        speed = entry.get("speed_mbps")
        if speed is not None and (not _is_int(speed) or speed <= 0):
            errors.append("%s.speed_mbps: %r is not a positive number of Mb/s" % (where, speed))
        mtu = entry.get("mtu")
        if mtu is not None and (not _is_int(mtu) or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]):
            errors.append("%s.mtu: %r is outside %d..%d" % (where, mtu, MTU_RANGE[0], MTU_RANGE[1]))
        result["nics"].append({"name": entry.get("name"), "speed_mbps": speed, "mtu": mtu})
    rdma = value.get("rdma", False)
    if not isinstance(rdma, bool):
        errors.append("%s.rdma: %r must be true or false" % (key, rdma))
    else:
        result["rdma"] = rdma
    return result, errors


NETWORK_ROLES = ("management", "training", "storage")


def read_networks(value, key="fabric_networks"):
    """The parts of the network intent the checks use: {name: {"role", "subnets": [ip_network], ...}}.

    The whole intent is validated by the network role's own validator (one set of rules and messages for
    the audit and the role); the checks get stdlib networks.
    """
    from ansible_collections.gpuops.fabric.plugins.module_utils._intent import netaddr, validate_networks
    if netaddr is None:
        return {}, ["%s: checking the networks needs the netaddr Python library on the controller "
                    "(pip install netaddr)" % key]
    errors = []
    networks = validate_networks(value, errors, key, check_overlap=False)  # overlap is finding NET-006
    result = {}
    for name, net in networks.items():
        subnets = [ipaddress.ip_network(str(net[field])) for field in ("subnet", "subnet6") if net[field] is not None]
        result[name] = {"role": net["role"], "subnets": subnets, "allow_on_management": net["allow_on_management"],
                        "vlan": net["vlan"], "mtu": net["mtu"], "speed_mbps": net["speed_mbps"]}
    return result, errors


def read_cabling(value, key="fabric_cabling"):
    """The cabling plan: {local port: {"switch": name, "port": switch port}}; errors name the key and value."""
    plan, errors = {}, []
    if value is None:
        return plan, errors
    if not isinstance(value, dict):
        return plan, ["%s: expected a mapping of local port to {switch, port}, got %r" % (key, value)]
    for port in sorted(value, key=str):
        entry = value[port]
        where = "%s.%s" % (key, port)
        if not isinstance(entry, dict):
            errors.append("%s: expected a mapping with switch and port, got %r" % (where, entry))
            continue
        before = len(errors)
        for name in sorted(set(entry) - set(CABLING_KEYS), key=str):
            errors.append("%s.%s: unknown key (known: %s)" % (where, name, ", ".join(CABLING_KEYS)))
        for name in CABLING_KEYS:
            if not isinstance(entry.get(name), str) or not entry.get(name):
                errors.append("%s.%s: %r must be a non-empty string" % (where, name, entry.get(name)))
        if len(errors) == before:
            plan[str(port)] = {"switch": entry["switch"], "port": entry["port"]}
    return plan, errors


def _date(value):
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.datetime.strptime(value.strip(), "%Y-%m-%d").date()
        except ValueError:
            return None
    return None


def validate_waivers(value, key="fabric_waivers"):
    """Return (normalized list, errors)."""
    errors, result = [], []
    if value is None:
        return result, errors
    if not isinstance(value, list):
        return result, ["%s: expected a list, got %r" % (key, value)]
    for index, entry in enumerate(value):
        where = "%s[%d]" % (key, index)
        if not isinstance(entry, dict):
            errors.append("%s: expected a mapping, got %r" % (where, entry))
            continue
        for unknown in sorted(set(entry) - set(WAIVER_KEYS)):
            errors.append("%s.%s: unknown key (known: %s)" % (where, unknown, ", ".join(WAIVER_KEYS)))
        rule = entry.get("rule")
        if rule not in CATALOG:
            errors.append("%s.rule: %r is not a rule id (known: %s)" % (where, rule, ", ".join(sorted(CATALOG))))
        hosts = entry.get("hosts")
        if not isinstance(hosts, str) or not hosts.strip():
            errors.append("%s.hosts: %r must be a host name or pattern" % (where, hosts))
        subject = entry.get("subject", "*")
        if not isinstance(subject, str) or not subject:
            errors.append("%s.subject: %r must be a subject or pattern" % (where, subject))
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            errors.append("%s.reason: %r must say why the finding is accepted" % (where, reason))
        expires = _date(entry.get("expires"))
        if expires is None:
            errors.append("%s.expires: %r is not a date (YYYY-MM-DD)" % (where, entry.get("expires")))
        result.append({"rule": rule, "hosts": hosts, "subject": subject, "reason": reason,
                       "expires": expires.isoformat() if expires else None})
    return result, errors


def apply_waivers(findings, waivers_by_host, today):
    """Mark findings covered by a waiver. An expired waiver no longer hides its finding and says so."""
    today_text = today.isoformat()
    for finding in findings:
        finding["waived"] = False
        for waiver in waivers_by_host.get(finding["host"], ()):
            if waiver["rule"] != finding["id"]:
                continue
            if not fnmatch.fnmatchcase(finding["host"], waiver["hosts"]):
                continue
            if not fnmatch.fnmatchcase(str(finding["subject"]), waiver["subject"]):
                continue
            if waiver["expires"] < today_text:
                finding["waiver_expired"] = dict(waiver)
                finding["message"] += " (waiver expired %s: %s)" % (waiver["expires"], waiver["reason"])
                continue
            finding["waived"] = True
            finding["waiver"] = dict(waiver)
            break
    return findings
