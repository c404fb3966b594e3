# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The baseline of the stability rules: an earlier audit's report.json, named by ``fabric_audit_baseline`` on the
controller. The path is checked before any host is touched (a typo stops the run); what the file holds is not: a
broken file, another schema or other hosts are one warning each, and the audit goes on without the baseline."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

KEY = "fabric_audit_baseline"
WINDOW_KEY = "fabric_audit_window"
WINDOW_MAX_S = 86400  # a day: longer than that is what an earlier audit's report is for
TCP_BUDGET_KEY = "fabric_audit_max_tcp_retransmit_percent"
DEFAULT_TCP_RETRANSMIT_PERCENT = 0.5
MAX_BYTES = 64 * 1024 * 1024  # report.json of a thousand hosts with their counters and findings fits many times over
SCHEMA_VERSION = 1  # report.json's (reports/model.py REPORT_SCHEMA_VERSION)


def baseline_path(value, key=KEY):
    """(absolute path or None, errors): ``value`` must name an existing regular file on the controller."""
    if value is None or value == "":
        return None, []
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None, ["%s: %r is not a path" % (key, value)]
    path = os.path.abspath(os.path.expanduser(value))
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None, ["%s: %r does not exist on the controller" % (key, value)]
    if not stat.S_ISREG(mode):
        return None, ["%s: %r is not a regular file on the controller" % (key, value)]
    return path, []


def window_seconds(value, key=WINDOW_KEY):
    """(seconds or None, errors): how long after the first gather the audit reads the counters again; None, 0 or an
    empty value: no second reading. Text of digits is a number (a command-line ``-e`` value arrives as text)."""
    if isinstance(value, str) and value.strip().isdecimal() and value.strip().isascii():
        value = int(value.strip())
    if value is None or (isinstance(value, str) and not value.strip()) or (value == 0 and not isinstance(value, bool)):
        return None, []
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= WINDOW_MAX_S:
        return None, ["%s: %r is not a number of seconds from 1 to %d (0: no second reading)"
                      % (key, value, WINDOW_MAX_S)]
    return value, []


def percent_budget(value, key=TCP_BUDGET_KEY, default=DEFAULT_TCP_RETRANSMIT_PERCENT):
    """(percent, errors): a share from 0 to 100; None: ``default``. Text of a number is a number."""
    if value is None:
        return default, []
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number <= 100:
        return default, ["%s: %r is not a percentage from 0 to 100" % (key, value)]
    return float(number), []


def read_baseline(path):
    """{"path", "generated_at", "counters": {host: counters}, "problem"}: ``problem`` is None, or what makes the
    file unusable as a baseline (then ``counters`` is empty)."""
    result = {"path": path, "generated_at": None, "counters": {}, "problem": None}
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                result["problem"] = "not a regular file"
                return result
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        finally:
            os.close(fd)
    except (IOError, OSError) as exc:
        result["problem"] = "unreadable (%s)" % (exc.strerror or exc)
        return result
    if len(data) > MAX_BYTES:
        result["problem"] = "larger than %d MiB" % (MAX_BYTES >> 20)
        return result
    try:
        report = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        result["problem"] = "not JSON (%s)" % str(exc)[:120]
        return result
    except RecursionError:
        result["problem"] = "not JSON (nested too deeply)"
        return result
    if not isinstance(report, dict) or "summary" not in report or "outcomes" not in report:
        result["problem"] = "not an audit report (report.json)"
        return result
    if report.get("schema_version") != SCHEMA_VERSION:
        result["problem"] = "report schema %r, this audit reads %d" % (report.get("schema_version"), SCHEMA_VERSION)
        return result
    counters = report.get("counters")
    if not isinstance(counters, dict):
        result["problem"] = "a report without counters (written before the counters were kept, or without them)"
        return result
    generated = report.get("generated_at")
    result["generated_at"] = generated if isinstance(generated, str) else None
    result["counters"] = dict((str(h), c) for h, c in counters.items() if isinstance(c, dict))
    return result


def baseline_warnings(baselines, wanted):
    """One warning per baseline file that cannot serve: unusable, or without some of the hosts that name it.
    ``baselines``: {path: read_baseline(path)}; ``wanted``: {path: [hosts that name it]}."""
    warnings = []
    for path in sorted(baselines):
        entry = baselines[path]
        if entry["problem"]:
            warnings.append("%s: %s is %s; the stability rules judge without a baseline" % (
                KEY, path, entry["problem"]))
            continue
        missing = sorted(h for h in wanted.get(path, ()) if h not in entry["counters"])
        if missing:
            named = ", ".join(missing[:3]) + (" and %d more" % (len(missing) - 3) if len(missing) > 3 else "")
            warnings.append("%s: %s has no counters for %d host(s) (%s); they are judged without a baseline" % (
                KEY, path, len(missing), named))
    return warnings
