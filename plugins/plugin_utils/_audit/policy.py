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

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import GENERATIONS, VALID_WIDTHS
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import CATALOG
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.window import (
    ALWAYS_COUNTED, RDMA_PORT_ERRORS, RDMA_PER_HOUR, RDMA_TRANSPORT_ERRORS,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.keys import is_int, mappings_in

EXPECTATION_KEYS = ("gpu", "nics", "rdma", "roce", "rdma_counters")
ROCE_KEYS = ("ecn", "pfc", "priority")
GPU_KEYS = ("width", "generation")
NIC_KEYS = ("name", "speed_mbps", "mtu")
WAIVER_KEYS = ("rule", "hosts", "subject", "reason", "expires")
CABLING_KEYS = ("switch", "port")
MTU_RANGE = (68, 9216)


# A waiver is a decision to look again later: one that expires further ahead than this is a warning.
WAIVER_HORIZON_VARIABLE = "fabric_audit_waiver_horizon_days"
DEFAULT_WAIVER_HORIZON_DAYS = 365


def _unknown_keys(mapping, known):
    """Keys of ``mapping`` not in ``known``, sorted as text (YAML gives int, bool or None keys too)."""
    return sorted((k for k in mapping if k not in known), key=lambda k: (str(type(k)), str(k)))


def _key_name(key):
    """An unknown key as policy messages name it: text as it is, anything else (YAML's int, bool or null keys) as its
    repr. (The intent's messages use key_path's ``key[1]`` form; tests hold both.)"""
    return key if isinstance(key, str) else repr(key)


def validate_expectations(value, key="fabric_expectations"):
    """Return (normalized, errors). ``None`` means no expectations (the devices' own maxima apply)."""
    errors = []
    result = {"gpu": {"width": None, "generation": None}, "nics": [], "rdma": False,
              "roce": {"ecn": None, "pfc": None, "priority": None}, "rdma_counters": dict(RDMA_PER_HOUR)}
    if value is None:
        return result, errors
    if not isinstance(value, dict):
        return result, ["%s: expected a mapping, got %r" % (key, value)]
    for unknown in _unknown_keys(value, EXPECTATION_KEYS):
        errors.append("%s.%s: unknown key (known: %s)" % (key, _key_name(unknown), ", ".join(EXPECTATION_KEYS)))
    gpu = value.get("gpu")
    if gpu is None:
        gpu = {}
    if not isinstance(gpu, dict):
        errors.append("%s.gpu: expected a mapping, got %r" % (key, gpu))
        gpu = {}
    for unknown in _unknown_keys(gpu, GPU_KEYS):
        errors.append("%s.%s: unknown key (known: %s)" % (key + ".gpu", _key_name(unknown), ", ".join(GPU_KEYS)))
    if gpu.get("width") is not None:
        if not is_int(gpu["width"]) or gpu["width"] not in VALID_WIDTHS:
            errors.append("%s.gpu.width: %r is not a PCIe width (%s)"
                          % (key, gpu["width"], ", ".join(str(w) for w in VALID_WIDTHS)))
        else:
            result["gpu"]["width"] = gpu["width"]
    if gpu.get("generation") is not None:
        if not is_int(gpu["generation"]) or gpu["generation"] not in GENERATIONS:
            errors.append("%s.gpu.generation: %r is not a PCIe generation (1..%d)"
                          % (key, gpu["generation"], max(GENERATIONS)))
        else:
            result["gpu"]["generation"] = gpu["generation"]
    for _index, where, entry in mappings_in(value.get("nics"), key + ".nics", errors):
        for unknown in _unknown_keys(entry, NIC_KEYS):
            errors.append("%s.%s: unknown key (known: %s)" % (where, _key_name(unknown), ", ".join(NIC_KEYS)))
        if not isinstance(entry.get("name"), str) or not entry.get("name"):
            errors.append("%s.name: %r must be an interface name or pattern" % (where, entry.get("name")))
        speed = entry.get("speed_mbps")
        if speed is not None and (not is_int(speed) or speed <= 0):
            errors.append("%s.speed_mbps: %r is not a positive number of Mb/s" % (where, speed))
        mtu = entry.get("mtu")
        if mtu is not None and (not is_int(mtu) or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]):
            errors.append("%s.mtu: %r is outside %d..%d" % (where, mtu, MTU_RANGE[0], MTU_RANGE[1]))
        result["nics"].append({"name": entry.get("name"), "speed_mbps": speed, "mtu": mtu})
    rdma = value.get("rdma")
    if rdma is None:
        rdma = False
    if not isinstance(rdma, bool):
        errors.append("%s.rdma: %r must be true or false" % (key, rdma))
    else:
        result["rdma"] = rdma
    roce = value.get("roce")
    if roce is not None and not isinstance(roce, dict):
        errors.append("%s.roce: expected a mapping, got %r" % (key, roce))
    elif roce is not None:
        for unknown in _unknown_keys(roce, ROCE_KEYS):
            errors.append("%s.roce.%s: unknown key (known: %s)" % (key, _key_name(unknown), ", ".join(ROCE_KEYS)))
        ecn = roce.get("ecn")
        if ecn is not None and not isinstance(ecn, bool):
            errors.append("%s.roce.ecn: %r must be true or false" % (key, ecn))
        elif ecn is not None:
            result["roce"]["ecn"] = ecn
        pfc = roce.get("pfc")
        if pfc is not None and not isinstance(pfc, bool):
            errors.append("%s.roce.pfc: %r must be true or false" % (key, pfc))
        elif pfc is not None:
            result["roce"]["pfc"] = pfc
        priority = roce.get("priority")
        if priority is not None and (not is_int(priority) or not 0 <= priority <= 7):
            errors.append("%s.roce.priority: %r is not an 802.1p priority (0..7)" % (key, priority))
        elif priority is not None:
            result["roce"]["priority"] = priority
    _rdma_counter_limits(value.get("rdma_counters"), key + ".rdma_counters", result["rdma_counters"], errors)
    return result, errors


def _rdma_counter_limits(value, key, limits, errors):
    """``fabric_expectations.rdma_counters``: {counter: growth per hour allowed} over the defaults ``limits``."""
    if value is None:
        return
    if not isinstance(value, dict):
        errors.append("%s: expected a mapping of RDMA counter to growth per hour, got %r" % (key, value))
        return
    known = tuple(c for c in RDMA_PORT_ERRORS + RDMA_TRANSPORT_ERRORS if c not in ALWAYS_COUNTED)
    for counter in _unknown_keys(value, known):
        if counter in ALWAYS_COUNTED:
            errors.append("%s.%s: any increase is a finding (the port's link went down), it takes no threshold"
                          % (key, counter))
        else:
            errors.append("%s.%s: unknown key (known: %s)" % (key, _key_name(counter), ", ".join(known)))
    for counter in known:
        if counter not in value:
            continue
        limit = finite(value[counter], 0, 1e12)
        if limit is None:
            errors.append("%s.%s: %r is not a growth per hour from 0 to 10^12 (0: any increase is a finding)"
                          % (key, counter, value[counter]))
        else:
            limits[counter] = limit


def read_networks(value, key="fabric_networks"):
    """The parts of the network intent the checks use: {name: {"role", "subnets": [ip_network], ...}}.

    The whole intent is validated by the network role's own validator (one set of rules and messages for
    the audit and the role); the checks get stdlib networks.
    """
    if value is None:  # no intent (a captured server model, a node-local check): nothing to check, no netaddr needed
        return {}, []
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import netaddr, validate_networks
    if netaddr is None:
        return {}, ["%s: checking the networks needs the netaddr Python library on the controller "
                    "(pip install netaddr)" % key]
    errors = []
    networks = validate_networks(value, errors, key, check_overlap=False, planning=False)  # overlap is NET-006
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
        for unknown in _unknown_keys(entry, WAIVER_KEYS):
            errors.append("%s.%s: unknown key (known: %s)" % (where, _key_name(unknown), ", ".join(WAIVER_KEYS)))
        rule = entry.get("rule")
        if not isinstance(rule, str) or rule not in CATALOG:
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
            if "expires" not in entry:
                errors[-1] += "; every waiver needs one"
        result.append({"rule": rule, "hosts": hosts, "subject": subject, "reason": reason,
                       "expires": expires.isoformat() if expires else None})
    return result, errors


def apply_waivers(findings, waivers_by_host, today):
    """Mark findings covered by a waiver. An expired waiver no longer hides its finding and says so."""
    today_text = today.isoformat()
    for finding in findings:
        finding["waived"] = False
        if finding.get("internal_error"):
            continue  # a rule that could not run is not an accepted finding
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


def validate_waiver_horizon(value, key=WAIVER_HORIZON_VARIABLE):
    """Return (days, errors): how far ahead a waiver may expire before it is a warning. None: the default."""
    if value is None:
        return DEFAULT_WAIVER_HORIZON_DAYS, []
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())  # a command-line -e value arrives as text
    if not is_int(value) or value < 1:
        return DEFAULT_WAIVER_HORIZON_DAYS, ["%s: %r is not a positive number of days" % (key, value)]
    return value, []


def waiver_warnings(waivers_by_host, today, horizon_days=DEFAULT_WAIVER_HORIZON_DAYS, key="fabric_waivers"):
    """Warnings about valid waivers that do nothing or are meant to last too long; [] when all is well.

    ``waivers_by_host``: {host: the normalized list validate_waivers gave for that host's fabric_waivers};
    ``horizon_days``: an int for all hosts, or {host: int} (fabric_audit_waiver_horizon_days per host).

    A waiver only ever applies to the findings of the hosts that carry it (their fabric_waivers), so one whose host
    pattern matches none of those hosts hides nothing, silently. A waiver whose expiry lies further ahead than the
    horizon is a permanent exception in disguise. A waiver set on many hosts (a group variable) is warned about once,
    naming the first few hosts.
    """
    carriers, order = {}, []
    for host in sorted(waivers_by_host):
        for index, waiver in enumerate(waivers_by_host[host] or ()):
            ident = (index, waiver.get("rule"), waiver.get("hosts"), waiver.get("subject"), waiver.get("expires"),
                     waiver.get("reason"))
            if ident not in carriers:
                carriers[ident] = []
                order.append((ident, waiver))
            carriers[ident].append(host)
    warnings = []
    for ident, waiver in order:
        hosts = carriers[ident]
        where = "%s[%d] (rule %s, hosts %r)" % (key, ident[0], waiver.get("rule"), waiver.get("hosts"))
        named = named_hosts(hosts)
        pattern = waiver.get("hosts")
        if isinstance(pattern, str) and not any(fnmatch.fnmatchcase(h, pattern) for h in hosts):
            warnings.append("%s: the host pattern %r matches none of the hosts that carry this waiver (%s), so it "
                            "waives nothing" % (where, pattern, named))
        expires = _date(waiver.get("expires"))
        if expires is None:
            continue
        for days in sorted(set(_horizon_of(horizon_days, h) for h in hosts)):
            if (expires - today).days > days:
                on = [h for h in hosts if _horizon_of(horizon_days, h) == days]
                warnings.append("%s: expires %s, %d days from %s, beyond the %d-day horizon (%s); a waiver is a "
                                "decision to look again: set an earlier date (host %s)"
                                % (where, expires.isoformat(), (expires - today).days, today.isoformat(), days,
                                   WAIVER_HORIZON_VARIABLE, named_hosts(on)))
    return warnings


def _horizon_of(horizon_days, host):
    if isinstance(horizon_days, dict):
        value = horizon_days.get(host)
        return value if is_int(value) and value > 0 else DEFAULT_WAIVER_HORIZON_DAYS
    return horizon_days


def named_hosts(hosts):
    """The first three of ``hosts`` and how many more: a message about many hosts stays one line."""
    return ", ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else "")
