# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""One host's probe results as the audit reads them (``fabric_probe_results``, the ``probes`` of rules/probe.py,
rules/stab/ and rules/ncclrun/), built from what the probes role registered. The role's last task is one call
of the ``probe_results`` filter; the keys are listed once here and the rules read no others
(tests/unit/plugins/plugin_utils/_audit/test_probe_results.py holds both)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# What the rules read of fabric_probe_results, and where it comes from
KEYS = {
    "jumbo": "the full-size pings, from the rounds run or path_probe",
    "jumbo_error": "why the pings did not run or ended early",
    "throughput": "iperf3's measurements from the rounds run",
    "server_errors": "the iperf3 servers that did not start",
    "throughput_error": "why the rounds run did not start or end",
    "missing": "the peers the plan could not probe, and why",
    "nccl": "nccl_tests_probe's result: this node's, or the launcher's on the play's first host",
    "nccl_scope": "node or launcher",
    "nccl_expected_busbw": "fabric_nccl_tests_expected_busbw",
    "min_fraction": "fabric_probe_min_fraction",
    "queue_delay_ms": "fabric_probe_queue_delay_ms",
    "max_retransmit_percent": "fabric_probe_max_retransmit_percent",
    "max_goodput_spread_percent": "fabric_probe_max_goodput_spread_percent",
}
# the settings copied into the results, so that the audit judges each host by its own
SETTINGS = ("nccl_expected_busbw", "min_fraction", "queue_delay_ms", "max_retransmit_percent",
            "max_goodput_spread_percent")
ROUNDS_ENDED_EARLY = "the rounds run ended before its pings"


def _result(value):
    """A registered result: a mapping, or an empty one where the task never ran on this host."""
    return value if isinstance(value, dict) else {}


def _failed(result):
    return bool(result.get("failed")) or bool(result.get("unreachable"))


def _flag(value, name):
    """A flag the role templated: a bool, or its text where the core templates to text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("%s: expected true or false, got %r" % (name, value))


def _list(value):
    return value if isinstance(value, list) else []


def probe_results(plan, host, first_host, probes, in_rounds, rounds_job, rounds, jumbo, nccl_node, nccl_launched,
                  launcher, settings):
    """``fabric_probe_results`` of ``host``. ``plan`` is probe_plan's result; ``rounds_job`` and ``rounds`` the
    throughput_probe start and collect results, ``jumbo`` path_probe's, ``nccl_node`` and ``nccl_launched``
    nccl_tests_probe's (run on each node, or once with the site's launcher); ``probes`` the probes asked for,
    ``in_rounds`` whether this host runs rounds, ``launcher`` whether nccl-tests ran through a launcher; ``settings``
    the fabric_probe_* and fabric_nccl_tests_expected_busbw values, by the keys of SETTINGS."""
    plan, rounds_job, rounds, jumbo = _result(plan), _result(rounds_job), _result(rounds), _result(jumbo)
    probes = [p for p in probes if isinstance(p, str)] if isinstance(probes, (list, tuple)) else []
    launcher = _flag(launcher, "launcher")
    pinged_in_rounds = ("jumbo" in probes and _flag(in_rounds, "in_rounds") and not _failed(rounds_job)
                        and rounds_job.get("job") is not None)
    if pinged_in_rounds:
        pings = _list(rounds.get("probes"))
        pings_error = rounds.get("probes_error") if "probes" in rounds else (rounds.get("msg") or ROUNDS_ENDED_EARLY)
    else:
        pings = _list(jumbo.get("probes"))
        pings_error = (jumbo.get("msg") or "failed") if _failed(jumbo) else None
    if _failed(rounds_job):
        throughput_error = rounds_job.get("msg") or "failed"
    elif _failed(rounds):
        throughput_error = rounds.get("msg") or "failed"
    else:
        throughput_error = None
    missing = plan.get("missing")
    results = {
        "jumbo": pings,
        "jumbo_error": pings_error,
        "throughput": _list(rounds.get("measurements")),
        "server_errors": _list(rounds.get("server_errors")),
        "throughput_error": throughput_error,
        "missing": _list(missing.get(host)) if isinstance(missing, dict) else [],
        "nccl": (nccl_launched if host == first_host else None) if launcher else nccl_node,
        "nccl_scope": "launcher" if launcher else "node",
    }
    settings = settings if isinstance(settings, dict) else {}
    for key in SETTINGS:
        results[key] = settings.get(key)
    return results
