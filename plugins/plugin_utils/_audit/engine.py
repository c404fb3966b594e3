# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The rule engine: the catalog, how a rule is registered, the context a rule sees, and evaluation with rule crashes
turned into findings.

Adding a rule is one function and one decorator in the family's file under rules/: ``@host_rule(...)`` for a
rule evaluated on one host's facts, ``@inventory_rule(...)`` for one evaluated once over all hosts. A rule yields
findings through ``ctx.finding(...)``; raising ``NotApplicable`` says it cannot be judged here. Rule ids never
change meaning once released; a retired id is not reused."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

SEVERITIES = ("fail", "warn", "info")
SEVERITY_RANK = {"fail": 0, "warn": 1, "info": 2}
Rule = namedtuple("Rule", "id title severity description remediation scope check")
CATALOG = {}


class NotApplicable(Exception):
    """The rule cannot be judged on this host (the reason is reported, not a pass)."""


def _register(scope, rule_id, title, severity, description, remediation):
    if severity not in SEVERITIES:
        raise ValueError("%s: severity %r" % (rule_id, severity))

    def register(func):
        if rule_id in CATALOG:
            raise ValueError("rule id %s registered twice" % rule_id)
        CATALOG[rule_id] = Rule(rule_id, title, severity, " ".join(description.split()),
                                " ".join(remediation.split()), scope, func)
        return func
    return register


def host_rule(rule_id, title, severity, description, remediation):
    return _register("host", rule_id, title, severity, description, remediation)


def inventory_rule(rule_id, title, severity, description, remediation):
    return _register("inventory", rule_id, title, severity, description, remediation)


# Keys of a host's audit input that are observations -- what the probes measured, what the network and nccl roles
# would change, what NCCL logged, the counters of an earlier audit -- rather than expectations; rules read them as ctx.observed.
OBSERVATIONS = ("drift", "nccl_drift", "probes", "nccl_logs", "baseline")


def observed(expect, key):
    """One observation of a host's audit input (see OBSERVATIONS), for inventory rules that walk all hosts."""
    if key not in OBSERVATIONS:
        raise KeyError("%r is not an observation (%s)" % (key, ", ".join(OBSERVATIONS)))
    return expect.get(key)


class HostContext:
    """What a host rule sees: the host's facts, its expectations (``expect``: what the policy and the intent say),
    its observations (``observed``: probe results and drift), and a way to report."""

    def __init__(self, host, facts, expect):
        self.host = host
        self.facts = facts
        expect = expect if isinstance(expect, dict) else {}  # None for an inventory rule's context
        self.expect = dict((k, v) for k, v in expect.items() if k not in OBSERVATIONS)
        self.observed = dict((k, expect.get(k)) for k in OBSERVATIONS)
        self.rule = None
        self.findings = []

    def finding(self, subject, message, evidence, severity=None, host=None):
        rule = self.rule
        self.findings.append({
            "id": rule.id,
            "title": rule.title,
            "severity": severity or rule.severity,
            "host": host or self.host,
            "subject": subject,
            "message": message,
            "evidence": evidence,
            "remediation": rule.remediation,
        })

    # Small helpers rules share.
    def pci(self):
        if "_pci_index" not in self.__dict__:
            self._pci_index = dict((p["address"], p) for p in self.facts.get("pci") or [])
        return self._pci_index

    def need(self, *keys):
        for key in keys:
            if self.facts.get(key) is None:
                raise NotApplicable("facts subset %r was not gathered" % key)


# An exception in a rule is a finding for that host, never the end of the audit: one host with odd facts (a
# 400-digit speed, a string where a number belongs) must not cost every other host its report. The finding keeps
# the rule's own id (so the report's per-rule outcome and JUnit case show it) and the rule's severity, raised to
# warn for info rules: a check that could not run cannot vouch for what it guards, so a fail-level check that
# crashed must not let the gate pass. Such findings are marked ``internal_error`` and are never waived.
INTERNAL_ERROR_MIN_SEVERITY = "warn"


def _error_severity(rule):
    if SEVERITY_RANK[rule.severity] > SEVERITY_RANK[INTERNAL_ERROR_MIN_SEVERITY]:
        return INTERNAL_ERROR_MIN_SEVERITY
    return rule.severity


def _exception_text(exc):
    try:
        text = str(exc)
    except Exception:  # pylint: disable=broad-except
        text = "(unprintable)"
    if len(text) > 300:
        text = text[:300] + "..."
    return "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__


def _where(exc):
    """The innermost frame of the traceback, as file:line in function (for whoever fixes the rule)."""
    import traceback
    frames = traceback.extract_tb(exc.__traceback__) if getattr(exc, "__traceback__", None) else []
    if not frames:
        return None
    last = frames[-1]
    return "%s:%s in %s" % (last[0].rsplit("/", 1)[-1], last[1], last[2])


def _internal_error(ctx, rule, exc, host=None):
    text = _exception_text(exc)
    message = ("rule %s (%s) could not be evaluated%s: %s; the facts have a value this rule did not expect, or the "
               "rule has a bug; the other rules ran" % (rule.id, rule.title, " on host %s" % host if host else "",
                                                        text))
    ctx.findings.append({
        "id": rule.id,
        "title": rule.title,
        "severity": _error_severity(rule),
        "host": host,
        "subject": "internal error",
        "message": message,
        "evidence": {"rule": rule.id, "exception": type(exc).__name__, "error": text, "where": _where(exc)},
        "remediation": "Report this with the host's gpuops_fabric facts; check the facts for odd values (a number "
                       "out of range, a string where a number belongs, a missing value).",
        "internal_error": True,
    })
    return ("error", text)


def evaluate_host(host, facts, expect):
    """Run every host rule; return (findings, outcomes) where outcomes maps rule id -> (status, reason).

    status is ``pass``, ``findings``, ``not_applicable`` (reason: why) or ``error`` (reason: the exception; the
    findings then hold an internal-error finding for the rule)."""
    ctx = HostContext(host, facts if isinstance(facts, dict) else {}, expect if isinstance(expect, dict) else {})
    outcomes = {}
    for rule in CATALOG.values():
        if rule.scope != "host":
            continue
        ctx.rule = rule
        before = len(ctx.findings)
        try:
            for _item in rule.check(ctx) or ():
                pass
            outcomes[rule.id] = ("findings" if len(ctx.findings) > before else "pass", None)
        except NotApplicable as exc:
            outcomes[rule.id] = ("not_applicable", str(exc))
        except Exception as exc:  # pylint: disable=broad-except
            outcomes[rule.id] = _internal_error(ctx, rule, exc, host)
        ctx.__dict__.pop("_pci_index", None)  # a rule may have left a half-built index behind
    return ctx.findings, outcomes


def evaluate_inventory(hosts):
    """``hosts``: {name: (facts, expect)} of audited hosts. Returns (findings, {rule id: status}).

    An exception in an inventory rule is one internal-error finding without a host (see evaluate_host)."""
    findings, outcomes = [], {}
    for rule in CATALOG.values():
        if rule.scope != "inventory":
            continue
        ctx = HostContext(None, None, None)
        ctx.rule = rule
        try:
            rule.check(ctx, hosts)
            outcomes[rule.id] = ("findings" if ctx.findings else "pass", None)
        except NotApplicable as exc:
            outcomes[rule.id] = ("not_applicable", str(exc))
        except Exception as exc:  # pylint: disable=broad-except
            outcomes[rule.id] = _internal_error(ctx, rule, exc)
        findings.extend(ctx.findings)
    return findings, outcomes
