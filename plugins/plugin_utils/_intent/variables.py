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
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.keys import is_int
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import NETWORK_STATES

# Every top-level variable the collection reads (and the results its playbooks register), so that a typo such as
# fabric_attachment is named instead of silently planning bonds that carry nothing.
KNOWN_VARIABLES = frozenset("""
fabric_networks fabric_bonds fabric_attachments fabric_host_index fabric_addresses fabric_allocation_file
fabric_hosts fabric_facts_source fabric_facts_root fabric_facts_path fabric_facts_nvml fabric_facts_lldp_socket
fabric_network_state fabric_network_backend fabric_network_root fabric_network_rollback_timeout
fabric_network_confirm_timeout fabric_network_allow_management fabric_network_lldpd fabric_network_lldpd_interfaces
fabric_network_render_dir fabric_nccl_mode fabric_nccl_interface fabric_nccl_env fabric_nccl_root
fabric_nccl_conf_path fabric_nccl_topo_file fabric_nccl_topo_path fabric_nccl_tests_launcher
fabric_nccl_tests_expected_busbw fabric_nccl_tests_timeout fabric_nccl_tests_binary fabric_nccl_tests_args
fabric_nccl_logs fabric_expectations fabric_waivers fabric_audit_fail_on fabric_report_dir
fabric_audit_baseline fabric_audit_window fabric_prometheus_textfile_dir fabric_audit_waiver_horizon_days
fabric_audit_today
fabric_cabling fabric_switch fabric_probes_enabled fabric_probes fabric_probe_networks fabric_probe_duration
fabric_probe_min_fraction fabric_probe_server_lifetime fabric_probe_start_margin fabric_probe_all_pairs_max fabric_probe_throughput_roles
fabric_probe_port fabric_probe_streams fabric_probe_ping_count fabric_probe_results fabric_probe_plan
fabric_probe_latency_interval fabric_probe_latency_idle_count fabric_probe_queue_delay_ms
fabric_probe_max_retransmit_percent fabric_audit_window_counters fabric_audit_window_gather
fabric_audit_max_tcp_retransmit_percent fabric_probe_repeat fabric_probe_max_goodput_spread_percent
fabric_tuning_enabled fabric_tuning_interfaces fabric_tuning_roles fabric_tuning_rtt_ms fabric_tuning_buffers
fabric_tuning_rings fabric_tuning_irq_affinity fabric_tuning_allow_management fabric_tuning_root
fabric_tuning_sysctl_file
fabric_slurm_drain fabric_slurm_host fabric_slurm_node_name fabric_slurm_drain_max_percent fabric_slurm_conf
fabric_slurm_result fabric_slurm_step_failed fabric_test_subnet
fabric_plan_dir fabric_plan_gradient_bytes fabric_plan_compute_seconds fabric_plan_socket_gbytes_per_s
fabric_plan_nodes fabric_plan_mode fabric_plan fabric_demo_xml fabric_demo_roots
fabric_network_plan fabric_network_intent fabric_drift_result fabric_audit_result fabric_audit_gather
fabric_site_intent fabric_plan_gather fabric_audit_lines fabric_audit_yaml fabric_drift_lines fabric_drift_yaml
fabric_molecule_conf fabric_molecule_dir fabric_molecule_iperf3 fabric_molecule_netplan fabric_molecule_plan
fabric_molecule_project fabric_molecule_hosts fabric_molecule_device fabric_molecule_files fabric_molecule_read
fabric_molecule_text fabric_molecule_mib32
""".split())


# The variables that decide what the network role writes: a near miss of one of these is an error.
SHAPING_VARIABLES = frozenset(("fabric_networks", "fabric_bonds", "fabric_attachments", "fabric_addresses",
                               "fabric_host_index", "fabric_network_state", "fabric_network_backend"))
_BOOLEAN_TEXT = ("true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f")


def _did_you_mean(name, known, prefix="fabric_"):
    """A known name close to ``name``, compared without the shared prefix (which would make every pair look alike:
    a site's own fabric_site_owner is no typo of fabric_site_intent)."""
    cut = len(prefix)
    close = difflib.get_close_matches(str(name)[cut:], sorted(k[cut:] for k in known), n=1, cutoff=0.8)
    return " (did you mean %s%s?)" % (prefix, close[0]) if close else ""


def check_variables(hostvars, errors, warnings):
    """Top-level fabric_* variables the collection does not know: an error when one is close to a known name (a
    typo, almost surely), a warning otherwise. The role variables' values are checked here too, for every host,
    so that a bad value on one host stops the run before any host is changed."""
    for name in sorted(k for k in hostvars if isinstance(k, str) and k.startswith("fabric_")):
        if name not in KNOWN_VARIABLES:
            hint = _did_you_mean(name, KNOWN_VARIABLES)
            # An error only where the typo silently changes what is written to the nodes (fabric_attachment: bonds
            # that carry nothing); elsewhere a site's own fabric_ variable or registered result is only named.
            shaping = hint and _did_you_mean(name, SHAPING_VARIABLES)
            (errors if shaping else warnings).append("%s: not a variable gpuops.fabric reads%s" % (name, hint))
    state = hostvars.get("fabric_network_state", "merged")
    if state not in NETWORK_STATES:
        errors.append("fabric_network_state: %r is not one of %s" % (state, ", ".join(NETWORK_STATES)))
    seconds = {}
    for key, default in (("fabric_network_rollback_timeout", 180), ("fabric_network_confirm_timeout", 60)):
        value = hostvars.get(key, default)
        # -e key=value gives text; the role's argument spec takes "180" as 180, so does this check
        number = int(value) if isinstance(value, str) and value.strip().isdigit() and value.isascii() else value
        if not is_int(number) or not 0 <= number <= 86400:
            errors.append("%s: %r must be a number of seconds (0..86400)" % (key, value))
        else:
            seconds[key] = number
    rollback, confirm = seconds.get("fabric_network_rollback_timeout"), seconds.get("fabric_network_confirm_timeout")
    if rollback and confirm is not None and confirm >= rollback:
        errors.append("fabric_network_confirm_timeout: %d is not below fabric_network_rollback_timeout %d (the node "
                      "would roll back while the controller still waits to confirm)" % (confirm, rollback))
    for key in ("fabric_network_allow_management", "fabric_network_lldpd"):
        value = hostvars.get(key, False)
        if not _boolean(value):
            errors.append("%s: %r must be true or false" % (key, value))
    pattern = hostvars.get("fabric_network_lldpd_interfaces", "")
    problem = lldpd_pattern_problem(pattern)
    if problem:
        errors.append("fabric_network_lldpd_interfaces: %r %s" % (pattern, problem))
    _check_root(hostvars, "fabric_network_root", errors)
    check_tuning(hostvars, errors)


def _boolean(value):
    """What a role's argument spec (type bool) takes: booleans, and their spellings as text from -e."""
    return isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXT)


def _check_root(hostvars, key, errors):
    root = hostvars.get(key, "/")
    if not isinstance(root, str) or not root.startswith("/") or "\0" in root or any(c in root for c in "\n\r"):
        errors.append("%s: %r must be an absolute path" % (key, root))


def check_tuning(hostvars, errors):
    """The tuning role's variables (roles/tuning), checked for every host before any is touched."""
    for key in ("fabric_tuning_enabled", "fabric_tuning_buffers", "fabric_tuning_irq_affinity",
                "fabric_tuning_allow_management"):
        if key in hostvars and not _boolean(hostvars[key]):
            errors.append("%s: %r must be true or false" % (key, hostvars[key]))
    rtt = hostvars.get("fabric_tuning_rtt_ms", 1.0)
    try:
        number = float(rtt) if isinstance(rtt, str) else rtt
    except ValueError:
        number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0.01 <= number <= 1000:
        errors.append("fabric_tuning_rtt_ms: %r must be a round trip in milliseconds (0.01..1000)" % (rtt,))
    rings = hostvars.get("fabric_tuning_rings", "max")
    if rings not in ("max", "keep"):
        errors.append("fabric_tuning_rings: %r is not one of max, keep" % (rings,))
    for key in ("fabric_tuning_interfaces", "fabric_tuning_roles"):
        value = hostvars.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            errors.append("%s: %r must be a list of names" % (key, value))
    for index, name in enumerate(v for v in hostvars.get("fabric_tuning_interfaces") or [] if isinstance(v, str)):
        problem = ifname_problem(name)
        if problem:
            errors.append("fabric_tuning_interfaces[%d]: %r %s" % (index, name, problem))
    _check_root(hostvars, "fabric_tuning_root", errors)
