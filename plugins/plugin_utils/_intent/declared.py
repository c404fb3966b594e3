# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Every variable the collection reads, declared once: its kind, range or choices, whether it is per host or per
run, and its default. The known-variable list, the pre-flight's checks and the roles' argument specs (held to this
table by tests/unit/plugins/plugin_utils/_intent/test_declared.py) come from here.

Scopes:
- ``host``: each host's own value is used (a node's own ``fabric_slurm_drain: false`` keeps that node out).
- ``run``: one value for the whole run (read once, on the controller or by a ``run_once`` task): given differently on
  two hosts of the run it is an error, because the run would silently take one host's value.
- ``result``: set by the collection's own playbooks (registered results, facts it sets, test and demo inventories'
  names); never read as user input, so neither typed nor checked.

Kinds say what a value may be, the way Ansible's argument specs take it (text from ``-e key=value`` included):
``bool``, ``int``, ``float`` (finite), ``str``, ``path`` (absolute), ``list`` (of text; ``choices`` bound its
elements), ``dict``, ``list_or_str``, and ``any`` for variables whose shape their own validator checks (the network
intent, expectations, waivers) -- those are typed here only at the top level."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import math
import re
import reprlib
from collections import namedtuple

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.perftest import RDMA_EXTRA_S as _RDMA_EXTRA_S
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning import SYSCTL_NAME_RULE, sysctl_file_problem

_BOOLEAN_TEXT = ("true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f")
_TRUE_TEXT = ("true", "yes", "on", "1", "y", "t")
PROGRAM_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}\Z")  # a program name: no path, no blank, no quote
HOST_PATTERN_RE = re.compile(r"^[A-Za-z0-9_.:*,!&~\[\]-]{1,1024}\Z")

Var = namedtuple("Var", "name scope kind default low high choices nullable pattern doc unit")


def _var(name, scope, kind, default=None, low=None, high=None, choices=None, nullable=False, pattern=None, doc="",
         unit=None):
    return Var(name, scope, kind, default, low, high, choices, nullable, pattern, doc, unit)


_H, _R, _X = "host", "run", "result"
PROBES = ("jumbo", "throughput", "latency", "nccl", "rdma")
PROBES_BY_DEFAULT = ("jumbo", "throughput", "latency", "nccl")  # rdma is opt-in: after TCP is stable
# with the rdma probe a round's slot grows by fabric_probe_duration (ib_write_bw) and this (ib_write_lat, the starts)
RDMA_EXTRA_S = _RDMA_EXTRA_S
_DECLARED = (
    # the network intent (roles/network; docs/network_intent.md): validated in depth by _intent/validation.py
    _var("fabric_networks", _H, "dict", nullable=True, doc="the networks (management, training, storage)"),
    _var("fabric_bonds", _H, "dict", nullable=True, doc="bonds and their members"),
    _var("fabric_attachments", _H, "dict", nullable=True, doc="which network rides on which device"),
    _var("fabric_addresses", _H, "dict", nullable=True, doc="this host's addresses, by network"),
    _var("fabric_host_index", _H, "int", low=0, high=16777215, nullable=True, doc="this host's index in the subnets"),
    _var("fabric_allocation_file", _R, "path", nullable=True, doc="the address allocation file on the controller"),
    _var("fabric_hosts", _R, "str", "all", pattern=HOST_PATTERN_RE, doc="the hosts every playbook targets"),
    # facts (every playbook's facts step)
    _var("fabric_facts_source", _H, "str", "sysfs", choices=("sysfs", "hwloc_xml", "nccl_xml")),
    _var("fabric_facts_root", _H, "path", "/"),
    _var("fabric_facts_path", _H, "path", nullable=True),
    _var("fabric_facts_nvml", _H, "str", "auto", choices=("auto", "yes", "no")),
    _var("fabric_facts_lldp_socket", _H, "path", nullable=True),
    # roles/network
    _var("fabric_network_state", _H, "str", "merged", choices=("merged", "replaced", "rendered", "gathered")),
    _var("fabric_network_backend", _H, "str", "auto", choices=("auto", "netplan", "networkmanager", "networkd")),
    _var("fabric_network_root", _H, "path", "/"),
    _var("fabric_network_rollback_timeout", _H, "int", unit="a number of seconds", default=180, low=0, high=86400),
    _var("fabric_network_confirm_timeout", _H, "int", unit="a number of seconds", default=60, low=0, high=86400),
    _var("fabric_network_allow_management", _H, "bool", False),
    _var("fabric_network_lldpd", _H, "bool", False),
    _var("fabric_network_lldpd_interfaces", _H, "str", "", unit="a string of interface patterns"),
    _var("fabric_network_render_dir", _R, "path", nullable=True),
    # roles/nccl
    _var("fabric_nccl_mode", _H, "str", "tcp", choices=("tcp", "rdma")),
    _var("fabric_nccl_interface", _H, "str", nullable=True),
    _var("fabric_nccl_env", _H, "dict", {}),
    _var("fabric_nccl_topo_file", _H, "bool", False),
    _var("fabric_nccl_topo_path", _H, "path", "/etc/nccl-topo.xml"),
    _var("fabric_nccl_root", _H, "path", "/"),
    _var("fabric_nccl_conf_path", _H, "path", "/etc/nccl.conf"),
    # roles/tuning
    _var("fabric_tuning_enabled", _H, "bool", False),
    _var("fabric_tuning_interfaces", _H, "list", []),
    _var("fabric_tuning_roles", _H, "list", ["training", "storage"], choices=("management", "training", "storage")),
    _var("fabric_tuning_rtt_ms", _H, "float", 1.0, 0.01, 1000),
    _var("fabric_tuning_buffers", _H, "bool", True),
    _var("fabric_tuning_rings", _H, "str", "max", choices=("max", "keep")),
    _var("fabric_tuning_irq_affinity", _H, "bool", True),
    _var("fabric_tuning_allow_management", _H, "bool", False),
    _var("fabric_tuning_root", _H, "path", "/"),
    _var("fabric_tuning_sysctl_file", _H, "path", "/etc/sysctl.d/60-gpuops-fabric.conf",
         pattern=sysctl_file_problem, doc=SYSCTL_NAME_RULE),  # the module's own rule
    # roles/probes: planned once for the run (probe_plan runs once), so one value per run
    _var("fabric_probes_enabled", _R, "bool", False),
    _var("fabric_probes", _R, "list", list(PROBES_BY_DEFAULT), choices=PROBES),
    _var("fabric_probe_networks", _R, "list", nullable=True),
    _var("fabric_probe_throughput_roles", _R, "list", ["training", "storage"],
         choices=("management", "training", "storage")),
    _var("fabric_probe_all_pairs_max", _R, "int", 32, 2, 100000),
    _var("fabric_probe_ping_count", _R, "int", 3, 1, 100),
    _var("fabric_probe_duration", _R, "int", 5, 1, 3600),
    _var("fabric_probe_streams", _R, "int", 1, 1, 128),
    _var("fabric_probe_port", _R, "int", 5201, 1, 65535),
    _var("fabric_probe_min_fraction", _R, "float", 0.8, 0.01, 1),
    _var("fabric_probe_latency_interval", _R, "float", 0.2, 0.002, 10),
    _var("fabric_probe_latency_idle_count", _R, "int", 10, 1, 1000),
    _var("fabric_probe_queue_delay_ms", _R, "float", None, 0.001, 60000, nullable=True),
    _var("fabric_probe_max_retransmit_percent", _R, "float", 0.1, 0, 100, unit="a percentage"),
    _var("fabric_probe_repeat", _R, "int", 1, 1, 10),
    _var("fabric_probe_max_goodput_spread_percent", _R, "float", 10, 0, 100, unit="a percentage"),
    _var("fabric_probe_server_lifetime", _R, "int", None, 3, 86400, nullable=True,
         doc="each round's slot in seconds: more than fabric_probe_duration + 1"),
    _var("fabric_probe_start_margin", _R, "float", None, 0, 3600, nullable=True),
    _var("fabric_probe_rdma_port", _R, "int", 18515, 1, 65534,
         doc="perftest's TCP ports in round 1 (this, and the next for ib_write_lat; each round two, counting up)"),
    _var("fabric_nccl_tests_binary", _R, "str", "all_reduce_perf", pattern=PROGRAM_RE),
    _var("fabric_nccl_tests_args", _R, "list", ["-b", "8M", "-e", "1G", "-f", "2"]),
    _var("fabric_nccl_tests_launcher", _R, "str", ""),
    _var("fabric_nccl_tests_timeout", _R, "int", 300, 1, 86400),
    _var("fabric_nccl_tests_expected_busbw", _R, "float", None, 0.001, 100000, nullable=True),
    # the audit (playbooks/audit.yml, drift.yml; the validate action)
    _var("fabric_expectations", _H, "dict", nullable=True),
    _var("fabric_waivers", _H, "any"),
    _var("fabric_cabling", _H, "dict", nullable=True),
    _var("fabric_switch", _H, "dict", nullable=True),
    _var("fabric_nccl_logs", _H, "any"),
    _var("fabric_audit_baseline", _H, "str", nullable=True),
    _var("fabric_audit_window", _R, "int", 0, 0, 86400, nullable=True, unit="a number of seconds"),
    _var("fabric_audit_waiver_horizon_days", _H, "int", 365, 0, 3650, nullable=True),
    _var("fabric_audit_max_tcp_retransmit_percent", _H, "float", 0.5, 0, 100, nullable=True, unit="a percentage"),
    _var("fabric_audit_fail_on", _R, "str", "fail", choices=("fail", "warn", "never")),
    _var("fabric_audit_today", _R, "str", None, nullable=True, pattern=re.compile(r"^\d{4}-\d{2}-\d{2}\Z"),
         doc="YYYY-MM-DD"),
    _var("fabric_report_dir", _R, "str", "fabric-report"),
    _var("fabric_prometheus_textfile_dir", _R, "path", nullable=True),
    _var("fabric_probe_results", _X, "any"),  # set by roles/probes for the audit
    # the aggregate (playbooks/aggregate.yml): the node results to merge, and how old one may be
    _var("fabric_aggregate_paths", _R, "list", None, nullable=True,
         doc="files or folders of node results on the controller"),
    _var("fabric_aggregate_max_age_hours", _R, "float", 24, 0.001, 87600, unit="a number of hours"),
    # the node-local audit (playbooks/node_audit.yml): where the node keeps its result, where it shares it, how much
    _var("fabric_node_state_dir", _H, "path", "/var/lib/gpuops-fabric"),
    _var("fabric_node_results_dir", _H, "path", None, nullable=True),
    _var("fabric_node_profile", _R, "str", "passive", choices=("passive", "full"),
         doc="passive: one reading, no wait (Slurm's HealthCheckProgram); full: fabric_audit_window honoured"),
    # the Slurm step: run-wide settings, and each node's own
    _var("fabric_slurm_drain", _H, "bool", False, doc="per host: false keeps that node out of the drain"),
    _var("fabric_slurm_host", _R, "str", "localhost"),
    _var("fabric_slurm_drain_max_percent", _R, "float", 10, 0.001, 100, unit="a percentage"),
    _var("fabric_slurm_conf", _R, "path", nullable=True),
    _var("fabric_slurm_node_name", _H, "any"),  # a Slurm node name or false: checked by the Slurm step's settings
    # the planner (playbooks/plan.yml)
    _var("fabric_plan_dir", _R, "str", "fabric-plan"),
    _var("fabric_plan_gradient_bytes", _R, "float", None, 1, 1e15, nullable=True),
    _var("fabric_plan_compute_seconds", _R, "float", None, 0, 86400, nullable=True),
    _var("fabric_plan_socket_gbytes_per_s", _R, "float", None, 0.001, 100000, nullable=True),
    _var("fabric_plan_nodes", _R, "int", None, 1, 100000, nullable=True),
    _var("fabric_plan_mode", _R, "str", None, choices=("tcp", "rdma"), nullable=True),
)
# set by the collection's own plays: known, never checked as input (the test scenarios' and the demo inventory's own
# variables are named scenario_* and demo_*, outside the collection's vocabulary)
_RESULTS = """
fabric_slurm_result fabric_slurm_step_failed fabric_plan
fabric_network_plan fabric_network_intent fabric_drift_result fabric_audit_result fabric_audit_gather
fabric_site_intent fabric_plan_gather fabric_audit_lines fabric_audit_yaml fabric_drift_lines fabric_drift_yaml
fabric_probe_plan fabric_audit_window_gather
""".split()
DECLARED = dict((v.name, v) for v in _DECLARED + tuple(_var(n, _X, "any") for n in _RESULTS))
KNOWN_VARIABLES = frozenset(DECLARED)
INPUTS = dict((name, v) for name, v in DECLARED.items() if v.scope != _X)
RUN_WIDE = tuple(sorted(name for name, v in DECLARED.items() if v.scope == _R))


def default(name):
    """Variable ``name``'s declared default (a copy of a list or dict): the one source of each default that an
    action's argument, a rule's fallback or a planner's parameter repeats."""
    return copy.deepcopy(DECLARED[name].default)


def is_true(value):
    """A declared bool's value (booleans, or their spellings as text or 0/1) as a bool."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_TEXT
    return bool(value)


def _number(value, integer):
    """The number a value stands for, as Ansible's argument spec would take it, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or len(text) > 64 or not text.isascii():
            return None
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            if not integer:
                return None
            try:
                value = float(text)
            except ValueError:
                return None
    if integer and isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if integer and not isinstance(value, int):
        return None
    if not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _range_words(var):
    return "%s..%s" % (var.low, var.high)


def value_problem(var, value):
    """Why ``value`` is not a value of the declared variable ``var``, or None. Nothing is converted here: the roles'
    argument specs and the actions convert; this only refuses what they would refuse or misread."""
    nullable = var.nullable or (var.kind in ("any", "str", "list", "dict") and var.default is None)
    if value is None or (value == "" and var.nullable):  # "" from -e key= is unset, as the readers take it
        return None if nullable else "must be set (null given)"
    kind = var.kind
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        return "could not be templated (an undefined variable in it?)"
    if kind == "any":
        return None
    if kind == "bool":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)) or (
                isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT):
            return None  # what Ansible's bool takes
        return "must be true or false"
    if kind in ("int", "float"):
        number = _number(value, kind == "int")
        if number is None or (var.low is not None and number < var.low) or (
                var.high is not None and number > var.high):
            return "must be %s (%s)" % (var.unit or ("a whole number" if kind == "int" else "a finite number"),
                                        _range_words(var))
        return None
    if kind in ("str", "path"):
        if isinstance(value, bool) and var.choices and "yes" in var.choices and "no" in var.choices:
            return None  # YAML's yes is true: Ansible's str turns it back into yes
        if isinstance(value, datetime.date):  # YAML's unquoted 2027-01-01: Ansible passes it on as text
            value = value.isoformat()
        if not isinstance(value, str):
            return "must be %s" % (var.unit or "text")
        if var.choices and value not in var.choices:
            return "is not one of %s" % ", ".join(var.choices)
        if any(c in value for c in "\0\n\r"):
            return "holds a NUL or a line break"
        if kind == "path" and not value.startswith("/"):
            return "is not an absolute path"
        if callable(var.pattern):  # a rule of the code that uses the value, not a pattern
            return var.pattern(value)
        if var.pattern is not None and not var.pattern.match(value):
            return "is not of the form %s" % (var.doc or var.pattern.pattern)
        return None
    if kind == "list":
        if isinstance(value, str):
            return "must be a list (on the command line: -e '{\"%s\": [...]}')" % var.name
        if not isinstance(value, (list, tuple)):
            return "must be a list"
        wrong = [v for v in value if isinstance(v, bool) or not isinstance(v, (str, int, float))
                 or (isinstance(v, float) and not math.isfinite(v))]
        if wrong:  # numbers are taken as text (nccl-tests' -f 2)
            return "must be a list of text, not %s" % _show(wrong[0])
        if len(value) > 4096:
            return "holds %d entries (at most 4096)" % len(value)
        wrong = [v for v in value if var.choices and v not in var.choices]
        if wrong:
            return "holds %s, not among %s" % (", ".join(repr(v) for v in wrong[:5]), ", ".join(var.choices))
        return None
    if kind == "dict":
        return None if isinstance(value, dict) else "must be a mapping"
    raise ValueError("declared kind %r of %s" % (kind, var.name))  # a mistake in the table above, not user input


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxlong, _REPR.maxother = 3, 200, 60, 200
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 10


def _show(value):
    """A value as an error message shows it: repr, bounded in depth and length (a value can be any YAML)."""
    return _REPR.repr(value)


def read_values(hostvars, errors, only=None):
    """{name: value} of the declared inputs a host sets. Reading a value of Ansible's hostvars templates it: one
    that cannot be templated (a group that does not exist: "{{ groups.slurm_heads[0] }}") is an error naming the
    key."""
    found = {}
    for name in sorted(INPUTS):
        if only is not None and not only(name):
            continue
        try:
            if name not in hostvars:
                continue
            found[name] = hostvars[name]
        except Exception as exc:  # pylint: disable=broad-except  # Ansible's templating errors have no common base
            errors.append("%s: cannot be read: %s" % (name, (str(exc).splitlines() or [""])[0][:300]))
    return found


def normal(var, value):
    """A declared variable's value as the collection uses it, for comparing two hosts' values (null, or "" where
    that means unset, is the default)."""
    if value is None or (value == "" and var.nullable):
        value = var.default
    if isinstance(value, datetime.date):
        return value.isoformat()
    if var.kind in ("str", "path") and isinstance(value, bool) and var.choices and "yes" in var.choices:
        return "yes" if value else "no"
    if var.kind == "bool" and value is not None:
        return is_true(value)
    if var.kind in ("int", "float") and value is not None:
        number = _number(value, var.kind == "int")
        try:
            return value if number is None else float(number)
        except OverflowError:
            return number
    if isinstance(value, tuple):
        return list(value)
    return value


def check_values(values, errors):
    """Every declared input variable in ``values`` against its declaration, and the relations between them; each
    error names the key and the value."""
    for name, value in sorted(values.items()):
        problem = value_problem(INPUTS[name], value)
        if problem:
            errors.append("%s: %s %s" % (name, _show(value), problem))
    lifetime = _number(values.get("fabric_probe_server_lifetime"), True)
    duration = _number(values.get("fabric_probe_duration", 5), True)
    if lifetime is not None and duration is not None and not lifetime > duration + 1:
        errors.append("fabric_probe_server_lifetime: %s is not more than fabric_probe_duration %s + 1 (each round's "
                      "slot must hold its measurement)" % (_show(lifetime), duration))
    elif lifetime is not None and duration is not None and "rdma" in (values.get("fabric_probes") or ()) \
            and isinstance(values.get("fabric_probes"), list) and not lifetime > 2 * duration + RDMA_EXTRA_S + 1:
        errors.append("fabric_probe_server_lifetime: %s is not more than twice fabric_probe_duration %s + %d + 1 "
                      "(with the rdma probe each round's slot holds iperf3's run and perftest's)" % (
                          _show(lifetime), duration, RDMA_EXTRA_S))
    probes = values.get("fabric_probes")
    if isinstance(probes, list) and "throughput" not in probes:
        # each of these rides on the throughput rounds: without them it would silently measure nothing
        for riding in ("latency", "rdma"):
            if riding in probes:
                errors.append("fabric_probes: %s holds %s but not throughput, which it runs inside (add throughput, "
                              "or leave %s out)" % (_show(probes), riding, riding))
    rollback = _number(values.get("fabric_network_rollback_timeout", 180), True)
    confirm = _number(values.get("fabric_network_confirm_timeout", 60), True)
    if rollback and confirm is not None and confirm >= rollback:  # a rollback timeout of 0: no timer to race
        errors.append("fabric_network_confirm_timeout: %d is not below fabric_network_rollback_timeout %d (the node "
                      "would roll back while the controller still waits to confirm)" % (confirm, rollback))


def host_word(host):
    """A host name as a message shows it: as it is, or quoted with escapes when it holds a character that would
    forge a line or hide itself (a dynamic inventory's name with a newline or a control character)."""
    text = str(host)
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def check_run_wide(values_of, errors):
    """The run-wide settings: one value for all hosts of the run (``values_of``: host -> the values check_host
    read). A setting one host gives differently from another is an error naming both (the run would take one of
    them without a word); a host leaving it unset takes the default, which is a different value too."""
    for name in RUN_WIDE:
        values = {}
        for host in sorted(values_of):
            value = values_of[host].get(name, DECLARED[name].default)
            if value_problem(DECLARED[name], value):
                continue  # already an error of that host's; a valid value is small and flat
            values.setdefault(repr(normal(DECLARED[name], value)), []).append(host)
        if len(values) > 1:
            shown = "; ".join("%s on %s" % (text if len(text) <= 80 else text[:80] + "...",
                                            ", ".join(host_word(h) for h in sorted(hs)[:3]) + (
                                                " and %d more" % (len(hs) - 3) if len(hs) > 3 else ""))
                              for text, hs in sorted(values.items(), key=lambda item: sorted(item[1])[0]))
            errors.append("%s: a run-wide setting given differently on the hosts of this run (%s): set it once, for "
                          "all of them (group_vars/all or -e)" % (name, shown))


def _cell(var):
    if var.kind in ("int", "float") and var.low is not None:
        what = "%s, %s..%s" % ({"int": "whole number", "float": "number"}[var.kind], var.low, var.high)
    elif var.choices:
        what = "%s of %s" % ("list" if var.kind == "list" else "one", ", ".join("`%s`" % c for c in var.choices))
    elif var.kind == "path":
        what = "absolute path"
    elif var.kind == "any":
        what = "checked by its own reader"
    else:
        what = {"bool": "true or false", "str": "text", "list": "list of names", "dict": "mapping"}[var.kind]
    if var.pattern is not None and var.doc:
        what += " (%s)" % var.doc
    if var.nullable:
        what += ", or null"
    return what


def markdown_table():
    """The declared inputs as docs/variables.md shows them (tests/unit keeps the page equal to this)."""
    lines = ["| variable | scope | value | default |", "|---|---|---|---|"]
    for name in sorted(INPUTS):
        var = INPUTS[name]
        default = "–" if var.default is None else "`%s`" % (
            ("true" if var.default else "false") if isinstance(var.default, bool) else
            "[%s]" % ", ".join(var.default) if isinstance(var.default, list) else
            "{}" if isinstance(var.default, dict) else var.default)
        scope = "per run" if var.scope == _R else "per host"
        lines.append("| `%s` | %s | %s | %s |" % (name, scope, _cell(var), default))
    return "\n".join(lines) + "\n"
