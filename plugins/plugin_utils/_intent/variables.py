# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The fabric_* host variables: which exist, which decide what is written, and the check that catches typos and
wrong types."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem, lldpd_pattern_problem
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import (
    KNOWN_VARIABLES, check_run_wide, check_values, host_word, read_values,
)

# The variables that decide what the network role writes: a near miss of one of these is an error.
SHAPING_VARIABLES = frozenset(("fabric_networks", "fabric_bonds", "fabric_attachments", "fabric_addresses",
                               "fabric_host_index", "fabric_network_state", "fabric_network_backend"))


def _did_you_mean(name, known, prefix="fabric_"):
    """A known name close to ``name``, compared without the shared prefix (which would make every pair look alike:
    a site's own fabric_site_owner is no typo of fabric_site_intent)."""
    cut = len(prefix)
    close = difflib.get_close_matches(str(name)[cut:], sorted(k[cut:] for k in known), n=1, cutoff=0.8)
    return " (did you mean %s%s?)" % (prefix, close[0]) if close else ""


def network_variable(name):
    """Whether the network role reads ``name`` (what network_intent checks of a host; the pre-flight checks all)."""
    return name.startswith(("fabric_network_", "fabric_facts_")) or name in SHAPING_VARIABLES or name in (
        "fabric_allocation_file", "fabric_hosts")


def check_variables(hostvars, errors, warnings, only=None):
    """One host's variables: every declared one against its declaration (_intent/declared.py), the relations
    between them, and top-level fabric_* variables the collection does not know: an error when one is close to a
    known name (a typo, almost surely), a warning otherwise. ``only`` (a test of a name) limits the declared
    variables checked. Returns the declared values read."""
    for name in sorted(k for k in hostvars if isinstance(k, str) and k.startswith("fabric_")):
        if name not in KNOWN_VARIABLES:
            hint = _did_you_mean(name, KNOWN_VARIABLES)
            # An error only where the typo silently changes what is written to the nodes (fabric_attachment: bonds
            # that carry nothing); elsewhere a site's own fabric_ variable or registered result is only named.
            shaping = hint and _did_you_mean(name, SHAPING_VARIABLES)
            (errors if shaping else warnings).append("%s: not a variable gpuops.fabric reads%s" % (name, hint))
    values = read_values(hostvars, errors, only)
    check_values(values, errors)
    pattern = values.get("fabric_network_lldpd_interfaces", "")
    problem = isinstance(pattern, str) and lldpd_pattern_problem(pattern)
    if problem:
        errors.append("fabric_network_lldpd_interfaces: %r %s" % (pattern, problem))
    tuning = values.get("fabric_tuning_interfaces") or []
    for index, name in enumerate(v for v in (tuning if isinstance(tuning, list) else []) if isinstance(v, str)):
        problem = ifname_problem(name)
        if problem:
            errors.append("fabric_tuning_interfaces[%d]: %r %s" % (index, name, problem))
    return values


SHOWN_HOSTS = 3  # a message that holds for more hosts than this names these and counts the rest


def _by_message(found):
    """[(host, message)] as lines, each message once, with the hosts it holds for (an -e value is every host's)."""
    hosts_of, order = {}, []
    for host, message in found:
        if message not in hosts_of:
            order.append(message)
        hosts_of.setdefault(message, []).append(host_word(host))
    lines = []
    for message in order:
        hosts = hosts_of[message]
        named = ", ".join(hosts[:SHOWN_HOSTS]) + (" and %d more" % (len(hosts) - SHOWN_HOSTS)
                                                  if len(hosts) > SHOWN_HOSTS else "")
        lines.append("%s: %s" % (named, message))
    return lines


def preflight(hosts, hostvars_of):
    """(errors, warnings) of every host's variables and of the run-wide settings: the one pre-flight, before any
    host is touched. Each message starts with the hosts it is about (at most SHOWN_HOSTS named)."""
    errors, warnings, values_of = [], [], {}
    for host in sorted(hosts):
        own = hostvars_of(host)
        host_errors, host_warnings = [], []
        values_of[host] = check_variables(own if hasattr(own, "__contains__") else {}, host_errors, host_warnings)
        errors.extend((host, e) for e in host_errors)
        warnings.extend((host, w) for w in host_warnings)
    errors = _by_message(errors)
    check_run_wide(values_of, errors)
    return errors, _by_message(warnings)
