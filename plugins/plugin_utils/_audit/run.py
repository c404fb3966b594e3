# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""An audit from the inventory's point of view: validate policy, evaluate every rule, apply waivers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.lldp import switch_name, switch_port_name
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import node_result
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.allowed import allowed
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.baseline import (
    WINDOW_KEY, baseline_path, baseline_warnings, check_counters, percent_budget, read_baseline, window_seconds,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import (
    CATALOG, evaluate_host, evaluate_inventory,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.links import link_rows
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.topology import topology_trees
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.policy import (
    apply_waivers, named_hosts, read_cabling, read_networks, validate_expectations, validate_waiver_horizon,
    validate_waivers, waiver_warnings,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import build_report
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.nccl_views import nccl_choices
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.measurements import measurements
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.stability import stability_row
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.validation import read_attachments
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.logs import log_paths, read_log

HOST_STATES = node_result.STATUSES


def validate_inputs(inputs):
    """``inputs``: {host: {"expectations": raw, "waivers": raw, ...}}.

    Returns ({host: (expectations, waivers)}, errors). Each error starts with the host it was found on;
    an error shared by many hosts (a group variable) is listed once with the first few host names.
    """
    normalized, seen = {}, {}
    for host in sorted(inputs):
        expect, errors = validate_expectations(inputs[host].get("expectations"))
        waivers, waiver_errors = validate_waivers(inputs[host].get("waivers"))
        networks, network_errors = read_networks(inputs[host].get("networks"))
        cabling, cabling_errors = read_cabling(inputs[host].get("cabling"))
        network_errors += cabling_errors
        horizon, horizon_errors = validate_waiver_horizon(inputs[host].get("waiver_horizon_days"))
        waiver_errors += horizon_errors
        attachments = read_attachments(inputs[host].get("attachments"), network_errors)
        log_files, log_errors = log_paths(inputs[host].get("nccl_logs"))
        network_errors += log_errors
        baseline_file, baseline_errors = baseline_path(inputs[host].get("baseline"))
        network_errors += baseline_errors
        window, window_errors = window_seconds(inputs[host].get("window"))
        network_errors += window_errors
        if window and baseline_file:
            network_errors.append("%s and fabric_audit_baseline are both set (%r, %r): the stability rules judge "
                                  "growth against one earlier reading; set one of them" % (
                                      WINDOW_KEY, inputs[host].get("window"), inputs[host].get("baseline")))
        tcp_budget, budget_errors = percent_budget(inputs[host].get("tcp_retransmit_budget"))
        network_errors += budget_errors
        expect = dict(expect, networks=networks, attachments=attachments, drift=inputs[host].get("drift"),
                      nccl_drift=inputs[host].get("nccl_drift"), nccl_mode=inputs[host].get("nccl_mode"),
                      probes=inputs[host].get("probes"), cabling=cabling, nccl_log_files=log_files, nccl_logs=None,
                      baseline_file=baseline_file, baseline=None, window_s=window, tcp_retransmit_budget=tcp_budget)
        normalized[host] = (expect, waivers, horizon)
        for error in errors + waiver_errors + network_errors:
            seen.setdefault(error, []).append(host)
    windows = sorted(set(normalized[h][0]["window_s"] or 0 for h in normalized))
    if len(windows) > 1:  # the playbook waits once for all hosts
        named = [h for h in sorted(normalized) if (normalized[h][0]["window_s"] or 0) != windows[-1]]
        seen.setdefault("%s: %s seconds on some hosts, %s on others: the playbook waits once for all of them; set "
                        "one value for the whole play (-e %s=N)" % (
                            WINDOW_KEY, windows[-1], " or ".join(str(w or "unset") for w in windows[:-1]),
                            WINDOW_KEY), named)
    messages = []
    for error, hosts in sorted(seen.items()):
        messages.append("%s (host %s)" % (error, named_hosts(hosts)))
    return normalized, messages


def policy_warnings(normalized, today):
    """Legal policy that is likely a mistake: waivers that waive nothing, or that expire beyond the horizon."""
    return waiver_warnings(dict((h, normalized[h][1]) for h in normalized), today,
                           dict((h, normalized[h][2]) for h in normalized))


def run_audit(inputs, today, generated_at, version=None, producer=None):
    """``inputs``: {host: {"facts", "expectations", "waivers", "status", "reason", "previous"}} (``previous``: the
    node's own last result as node_result.previous_reading gives it). Returns (report, errors); the
    report's ``policy_warnings`` lists what policy_warnings found. Each host is judged into its node result
    (node_result.py), and the report is made from those results alone (``combine``), as the aggregate makes it."""
    normalized, errors = validate_inputs(inputs)
    if errors:
        return None, errors
    docs = {}
    logs = {}  # path -> what it holds: a log several hosts name (one multi-node run) is read once
    named_by = {}
    baselines, baseline_hosts = {}, {}  # path -> read_baseline(path); path -> hosts that name it
    baseline_checks = {}  # path -> {host: check_counters(its entry, its counters now)}: what of it the rules can use
    window_missing = []  # (host, why) where fabric_audit_window has no first reading to compare with
    for host in sorted(inputs):
        for path in normalized[host][0]["nccl_log_files"]:
            named_by[path] = named_by.get(path, 0) + 1
    for host in sorted(inputs):
        item = inputs[host]
        status = item.get("status") or ("audited" if item.get("facts") else "failed")
        facts = item.get("facts")
        if status == "audited" and not facts:
            status, item = "failed", dict(item, reason=item.get("reason") or "no gpuops_fabric facts")
        facts_warnings = [str(w) for w in (facts or {}).get("warnings") or []] if isinstance(facts, dict) else []
        if status != "audited":
            docs[host] = node_result.build(host, status, item.get("reason"), None, item, {}, [], {}, generated_at,
                                           version, producer, facts_warnings)
            continue
        expect = normalized[host][0]
        if expect["nccl_log_files"]:
            for path in expect["nccl_log_files"]:
                if path not in logs:
                    logs[path] = read_log(path)
            expect["nccl_logs"] = [dict(logs[path], named_by=named_by[path]) for path in expect["nccl_log_files"]]
        path = expect["baseline_file"]
        previous = item.get("previous")  # a node-local audit's own last result, read as read_baseline reads a file
        if not path and not expect["window_s"] and isinstance(previous, dict):
            path = previous["path"]
            baselines.setdefault(path, previous)
        if path:
            if path not in baselines:
                baselines[path] = read_baseline(path, generated_at)
            baseline_hosts.setdefault(path, []).append(host)
            earlier = baselines[path]["counters"].get(host)
            if earlier is not None and isinstance(facts, dict) and isinstance(facts.get("counters"), dict):
                baseline_checks.setdefault(path, {})[host] = check_counters(earlier, facts["counters"])
            if earlier is not None:
                expect["baseline"] = {"counters": earlier, "generated_at": baselines[path]["generated_at"]}
        elif expect["window_s"]:
            first = item.get("window_counters")
            if isinstance(first, dict):
                expect["baseline"] = {"counters": first, "generated_at": None, "window_s": expect["window_s"]}
            else:
                window_missing.append((host, item.get("window_error") or "the first gather read no counters, or this "
                                       "playbook reads them once (playbooks/audit.yml reads them twice)"))
        host_findings, host_outcomes = evaluate_host(host, facts, expect)
        apply_waivers(host_findings, {host: normalized[host][1]}, today)
        docs[host] = node_result.build(host, status, None, facts, item, expect, host_findings, host_outcomes,
                                       generated_at, version, producer, facts_warnings)
    report, _rejected = combine(docs, today, generated_at, version)
    report["policy_warnings"] = (policy_warnings(normalized, today)
                                 + baseline_warnings(baselines, baseline_hosts, baseline_checks)
                                 + window_warnings(window_missing) + report["policy_warnings"])
    report["baseline"] = [{"path": p, "generated_at": baselines[p]["generated_at"], "hosts": len(baseline_hosts[p]),
                           "usable": not baselines[p]["problem"]} for p in sorted(baselines)]
    return report, []


def combine(docs, today, generated_at, version=None, missing=None):
    """The report of node results: ``docs`` {host: node result}, each checked (node_result.check). The host rules'
    findings and outcomes are the results' own; the inventory rules run over the audited hosts' facts and policy
    (checked again here: a result whose policy is invalid is left out, its host failed, with a line in the returned
    list) and their findings are waived by each host's waivers. ``missing``: hosts of the run without a result
    {host: why}: hosts of the run without a result (failed, for that reason). Returns (report, lines)."""
    findings, outcomes, hosts, audited, waivers, lines = [], {}, {}, {}, {}, []
    for host, why in sorted((missing or {}).items()):
        hosts[host] = {"status": "failed", "reason": why, "facts_warnings": []}
    for host in sorted(docs):
        doc = docs[host]
        hosts[host] = {"status": doc["status"], "reason": doc["reason"], "facts_warnings": doc["facts_warnings"]}
        if doc["status"] != "audited":
            continue
        normalized, errors = validate_inputs({host: doc["inputs"]})
        if errors:
            why = "its node result holds a policy that is invalid: %s" % "; ".join(errors)[:600]
            hosts[host].update(status="failed", reason=why)
            lines.append("%s: %s" % (host, why))
            continue
        expect, waivers[host] = normalized[host][0], normalized[host][1]
        expect.update((key, doc["observed"].get(key)) for key in node_result.OBSERVED_KEYS)
        # a result judged by another version of the collection may name rules this one does not have: left out, named
        unknown = sorted(set(rid for rid in doc["outcomes"] if rid not in CATALOG)
                         | set(f["id"] for f in doc["findings"] if f["id"] not in CATALOG))
        if unknown:
            lines.append("%s: its node result names rules this gpuops.fabric does not have (%s%s): left out" % (
                host, ", ".join(unknown[:5]), " and %d more" % (len(unknown) - 5) if len(unknown) > 5 else ""))
        findings.extend(f for f in doc["findings"] if f["id"] in CATALOG)
        outcomes[host] = dict((rid, (o["status"], o.get("reason"))) for rid, o in doc["outcomes"].items()
                              if rid in CATALOG)
        audited[host] = (doc["facts"], expect)
    lines.extend(shared_log_lines(audited))
    row_errors = []
    if audited:
        inventory_findings, outcomes["inventory"] = evaluate_inventory(audited)
        apply_waivers(inventory_findings, waivers, today)
        findings.extend(inventory_findings)
    report = build_report(hosts, findings, outcomes, generated_at, version,
                          measurements(dict((h, audited[h][1]) for h in audited)),
                          cabling(dict((h, audited[h][0]) for h in audited)),
                          nccl_rows(audited, row_errors), stability_rows(audited, row_errors))
    report["policy_warnings"] = lines + row_errors
    # each host's counters as read now: this report is the next audit's baseline
    report["counters"] = dict((h, audited[h][0].get("counters")) for h in sorted(audited)
                              if isinstance(audited[h][0].get("counters"), dict))
    # the key link facts, per GPU and interface (the Prometheus metrics are made from them)
    report["links"] = link_rows(dict((h, audited[h][0]) for h in audited))
    # what the hardware allows NCCL's all_reduce, per host and for the audited hosts together (_audit/allowed.py)
    report["allowed"] = allowed(audited)
    # each host's PCIe/NUMA tree with its links' states and the findings on each device (report.html draws them)
    report["topology"] = topology_trees(dict((h, audited[h][0]) for h in audited), findings)
    report["baseline"] = []
    # each host's node result (node_result.py): any report.json is an aggregate's input
    report["nodes"] = [docs[h] for h in sorted(docs)]
    return report, lines


def shared_log_lines(audited):
    """One line per NCCL log that several hosts name but that each judged as named by fewer hosts (judged in separate
    runs: slices, node-local audits). A run that names a multi-node log on every host judges each host's part of it;
    a host that judged it alone took a log without its own lines for its own (nccl_views.nccl_logs)."""
    named, counted = {}, {}
    for host in sorted(audited):
        for entry in audited[host][1].get("nccl_logs") or []:
            if entry.get("kind") == "log":
                named.setdefault(entry["path"], []).append(host)
                count = entry.get("named_by")
                counted[entry["path"]] = max(counted.get(entry["path"], 0), count if isinstance(count, int) else 1)
    return ["the NCCL log %s is named by %d hosts (%s) that judged it in separate runs as named by %d: an audit of them "
            "together judges each host's part of it" % (path, len(hosts), named_hosts(hosts), counted[path])
            for path, hosts in sorted(named.items()) if len(hosts) > counted[path]]


def nccl_rows(audited, errors):
    """The NCCL section's rows; a host whose logs, as its node result holds them, cannot be viewed is left out, with a
    line in ``errors`` (its NCCLRUN rules judged them where it was audited)."""
    rows = []
    for host in sorted(audited):
        try:
            rows.extend(nccl_choices(host, audited[host][0], audited[host][1]))
        except (ArithmeticError, TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            errors.append("the NCCL section leaves out %s: its NCCL logs cannot be read (%s: %s)" % (
                host, type(exc).__name__, str(exc)[:200]))
    return rows


def stability_rows(audited, errors):
    """The stability section's rows; a host whose counters the row cannot be computed from (a corrupt reading the
    rules already named) is left out, with a line in ``errors``."""
    rows = []
    for host in sorted(audited):
        try:
            row = stability_row(host, audited[host][0], audited[host][1])
        except (ArithmeticError, TypeError, ValueError, AttributeError, KeyError) as exc:
            errors.append("the stability section leaves out %s: its counters cannot be read (%s: %s)" % (
                host, type(exc).__name__, str(exc)[:200]))
            continue
        if row is not None:
            rows.append(row)
    return rows


def window_warnings(missing):
    """One warning for the hosts fabric_audit_window could not read twice, naming the first few and why."""
    if not missing:
        return []
    named = named_hosts(["%s (%s)" % (h, " ".join(str(why).split())[:160]) for h, why in missing])
    return ["%s: %d host(s) were not read twice: %s; they are judged without a baseline"
            % (WINDOW_KEY, len(missing), named)]


def cabling(facts_by_host):
    """Node port to switch port, from each host's LLDP facts: [{host, port, switch, switch_port, vlans, aggregation,
    mfs}], one row per neighbour."""
    rows = []
    for host in sorted(facts_by_host):
        facts = facts_by_host[host] if isinstance(facts_by_host[host], dict) else {}
        lldp = facts.get("lldp") if isinstance(facts.get("lldp"), dict) else {}
        ports = lldp.get("ports") if isinstance(lldp.get("ports"), dict) else {}
        for port, neighbours in sorted(ports.items()):
            for n in neighbours if isinstance(neighbours, list) else []:
                if not isinstance(n, dict):
                    continue
                vlans = n.get("vlans") if isinstance(n.get("vlans"), list) else []
                aggregation = n.get("aggregation") if isinstance(n.get("aggregation"), dict) else {}
                try:
                    switch, switch_port = switch_name(n), switch_port_name(n)
                except (TypeError, ValueError, AttributeError, KeyError, IndexError):
                    switch = switch_port = None  # a neighbour the facts could not have held (a hand-edited result)
                rows.append({"host": host, "port": str(port), "switch": switch, "switch_port": switch_port,
                             "vlans": [v.get("id") for v in vlans if isinstance(v, dict)],
                             "aggregation": aggregation.get("port_id"), "mfs": n.get("mfs")})
    return rows


def exceeds_policy(report, fail_on):
    """Whether the report should fail the run: ``fail`` (default), ``warn`` or ``never``."""
    counts = report["summary"]["findings"]
    if fail_on == "never":
        return False
    if nothing_audited(report):  # a gate that reached no host has judged nothing: it does not pass
        return True
    if fail_on == "warn":
        return counts["fail"] + counts["warn"] > 0
    return counts["fail"] > 0


def nothing_audited(report):
    """Whether the report names hosts and audited none of them (every one unreachable or failed)."""
    summary = report["summary"]
    return summary["hosts"] > 0 and summary["audited"] == 0


def failure_message(report, fail_on, report_dir, files=()):
    """The one line a failing audit ends with: the policy, what remains (its rule ids, the first three) and where the
    reports are; the findings themselves are in the lines printed before it and in the reports."""
    counts = report["summary"]["findings"]
    if nothing_audited(report):
        summary = report["summary"]
        return "audit failed (fail_on=%s): no host could be audited (%d unreachable, %d failed); reports: %s" % (
            fail_on, summary["unreachable"], summary["failed"], report_dir)
    judged = ("fail", "warn") if fail_on == "warn" else ("fail",)
    remaining = [f for f in report["findings"] if f["severity"] in judged and not f.get("waived")]
    rules = sorted(set(f["id"] for f in remaining))
    shown = ", ".join(rules[:3]) + (" +%d more" % (len(rules) - 3) if len(rules) > 3 else "")
    names = [os.path.basename(f) for f in files] or ["report.json", "report.md", "junit.xml", "report.html"]
    preferred = ("report.html", "report.md", "report.json", "junit.xml")
    names = [n for n in names if n in preferred] or names  # the ones people read (metrics.prom is for Prometheus)
    names.sort(key=lambda n: preferred.index(n) if n in preferred else len(preferred))
    hosts = len(set(f["host"] for f in remaining if f["host"]))
    return "audit failed (fail_on=%s): %d fail, %d warn finding(s) on %d host(s)%s; reports: %s%s" % (
        fail_on, counts["fail"], counts["warn"], hosts, " (%s)" % shown if shown else "",
        os.path.join(report_dir, names[0]), "".join(", " + n for n in names[1:]))
