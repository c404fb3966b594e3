# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The baseline of the stability rules: an earlier audit's report.json, named by ``fabric_audit_baseline`` on the
controller. The path is checked before any host is touched (a typo stops the run); what the file holds is not: a
broken file, another schema, a file from the future or other hosts are one warning each, and the audit goes on
without the baseline.

What the file holds is checked field by field before any rule compares with it (``check_counters``): a host entry
whose uptime or boot time is not a number, or that comes from after this audit's own reading, is not used at all (the
host is judged as without a baseline: uncorrectable PCIe errors since boot, growth not judged); a counter that is not
an integer from 0 to 2**64 - 1 is left out (not compared, as without a baseline). A damaged baseline never judges
more leniently than none, and never makes a rule pass that compared nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import re
import stat

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import MAX_COUNTER, finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.node_result import (
    MAX_BYTES as NODE_RESULT_MAX_BYTES, parse_time, read_json,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import default

KEY = "fabric_audit_baseline"
WINDOW_KEY = "fabric_audit_window"
WINDOW_MAX_S = 86400  # a day: longer than that is what an earlier audit's report is for
TCP_BUDGET_KEY = "fabric_audit_max_tcp_retransmit_percent"
DEFAULT_TCP_RETRANSMIT_PERCENT = default("fabric_audit_max_tcp_retransmit_percent")
# report.json holds each host's node result, its facts with it (a few hundred KiB for an 8-GPU node): the node
# results' own limit
MAX_BYTES = NODE_RESULT_MAX_BYTES
SCHEMA_VERSION = 1  # report.json's (reports/model.py REPORT_SCHEMA_VERSION)
# A boot time that moved by more than this between readings is another boot (the clock's own steps are smaller); a
# reading or a report time later than now by more than this comes from the future (another clock, a hand edit).
BOOT_TIME_SLACK_S = 600
MAX_UPTIME_S = 100 * 366 * 86400  # a century: more is no uptime
MAX_EPOCH_S = 253402300799  # 9999-12-31T23:59:59Z: a boot time past it is no time
# the sections of a counters reading the stability rules compare, each {key: {counter: int}}; aer is one level deeper
COUNTER_SECTIONS = ("interfaces", "rdma", "nic_stats")
AER_KINDS = ("correctable", "nonfatal", "fatal")
TCP_COUNTERS = ("out_segs", "retrans_segs")
SHOWN_PROBLEMS = 3  # per host, in its warning
SHOWN_HOSTS = 20  # per file, one warning each; the rest in one line


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
    if finite(number, 0, 100) is None:
        return default, ["%s: %r is not a percentage from 0 to 100" % (key, value)]
    return float(number), []


def read_baseline(path, now=None):
    """{"path", "generated_at", "counters": {host: counters}, "problem"}: ``problem`` is None, or what makes the
    file unusable as a baseline (then ``counters`` is empty). ``now``: this audit's time (ISO 8601): a report
    generated after it comes from the future. Each host's counters are as the file holds them: check_counters says
    what of them can be used."""
    result = {"path": path, "generated_at": None, "counters": {}, "problem": None}
    report, result["problem"] = read_json(path, MAX_BYTES, follow=True)
    if result["problem"]:
        return result
    if not isinstance(report, dict) or "summary" not in report or "outcomes" not in report:
        result["problem"] = "not an audit report (report.json)"
        return result
    if report.get("schema_version") != SCHEMA_VERSION:
        result["problem"] = "report schema %s, this audit reads %d" % (
            shown(report.get("schema_version")), SCHEMA_VERSION)
        return result
    counters = report.get("counters")
    if not isinstance(counters, dict):
        result["problem"] = "a report without counters (written before the counters were kept, or without them)"
        return result
    generated = report.get("generated_at")
    when = parse_time(generated)
    if when is None:
        result["problem"] = "a report whose generated_at %s is not a time (ISO 8601): when it was taken is unknown" % (
            shown(generated))
        return result
    audit_time = parse_time(now)
    if audit_time is not None and (when - audit_time).total_seconds() > BOOT_TIME_SLACK_S:
        result["problem"] = "from the future: generated_at %s is after this audit's time (%s)" % (generated, now)
        return result
    result["generated_at"] = generated
    result["counters"] = dict((str(h), c) for h, c in counters.items())
    return result


def shown(value):
    """``value`` as a warning names it: short whatever it is (a 10**400 integer, a string of a megabyte, a list of a
    million items or nested a thousand deep), in JSON's words (the file is JSON)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -10 ** 24 < value < 10 ** 24:
            return str(value)
        return "<%s%d-digit integer>" % ("negative " if value < 0 else "", int(value.bit_length() * math.log10(2) + 1))
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value[:40]) + ("... (%d characters)" % len(value) if len(value) > 40 else "")
    if isinstance(value, (list, tuple)):
        return "<list of %d item%s>" % (len(value), "" if len(value) == 1 else "s")
    if isinstance(value, dict):
        return "<object of %d key%s>" % (len(value), "" if len(value) == 1 else "s")
    return "<%s>" % type(value).__name__


def _counter(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNTER else None


def _key(key):
    """A section's key (an interface, a PCI address, an RDMA port) as a field path names it."""
    key = key if isinstance(key, str) else str(key)
    return key if len(key) <= 64 else key[:64] + "..."


NOT_A_COUNTER = "is not a counter (an integer from 0 to 2**64-1)"
BOOT_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def boot_id(reading):
    """A reading's boot id (the kernel's random UUID of the boot it was read in), else None."""
    value = reading.get("boot_id") if isinstance(reading, dict) else None
    return value if isinstance(value, str) and BOOT_ID.match(value) else None


def same_boot(before, now):
    """Whether two readings come from the same boot: by their boot ids where both have one (a reboot makes a new
    one; the clock's steps, which move the boot time /proc/stat reports, do not), else by boot times at most
    BOOT_TIME_SLACK_S apart; None where neither tells (the caller then takes a lower uptime for a reboot)."""
    ids = boot_id(before), boot_id(now)
    if None not in ids:
        return ids[0] == ids[1]
    times = [finite(r.get("boot_time"), 0, MAX_EPOCH_S) if isinstance(r, dict) else None for r in (before, now)]
    if None not in times:
        return abs(times[0] - times[1]) <= BOOT_TIME_SLACK_S
    return None


def _boot_named(before, now):
    if boot_id(before) and boot_id(now):
        return "boot_id %s" % boot_id(now)
    return "boot_time %s" % shown(before.get("boot_time"))


def check_counters(before, now):
    """What of one host's baseline counters ``before`` can be compared with this audit's ``now``.

    Returns {"counters": the usable part (None: nothing, the host is judged as without a baseline), "host": [why the
    host entry cannot be used], "fields": [a counter or section left out, and why]}. Each problem is text that names
    the field and its value. Only what the stability rules read is kept; a value is looked at, never walked into, so
    a deep or huge one costs nothing."""
    result = {"counters": None, "host": [], "fields": []}
    if not isinstance(before, dict):
        result["host"].append("the host's entry %s is not an object of counters" % shown(before))
        return result
    up_before = finite(before.get("uptime_s"), 0, MAX_UPTIME_S)
    if up_before is None:
        result["host"].append("uptime_s %s is not a number of seconds from 0 to %d" % (
            shown(before.get("uptime_s")), MAX_UPTIME_S))
    boot_before = before.get("boot_time")
    if boot_before is not None and finite(boot_before, 0, MAX_EPOCH_S) is None:
        result["host"].append("boot_time %s is not a time in seconds since 1970 (0 to %d)" % (
            shown(boot_before), MAX_EPOCH_S))
    now = now if isinstance(now, dict) else {}
    up = finite(now.get("uptime_s"), 0, MAX_UPTIME_S)
    boot = finite(now.get("boot_time"), 0, MAX_EPOCH_S)
    if up is None:
        result["host"].append("this audit's own uptime_s %s is not a number of seconds: there is no window to judge "
                              "growth over" % shown(now.get("uptime_s")))
    if result["host"]:
        return result
    same = same_boot(before, now)
    if boot is not None and boot_before is not None and boot_before - boot > BOOT_TIME_SLACK_S and same is not True:
        result["host"].append("boot_time %s is after this boot's (%s): the baseline comes from the future (a boot "
                              "that had not happened yet)" % (shown(boot_before), shown(boot)))
    elif same and up_before > up:
        result["host"].append("uptime_s %s is larger than now (%s) on the same boot (%s): the baseline comes from the "
                              "future" % (shown(up_before), shown(up), _boot_named(before, now)))
    elif (same is False and boot is not None and boot_before is not None
          and (boot_before + up_before) - (boot + up) > BOOT_TIME_SLACK_S):
        result["host"].append("its reading (boot_time %s + uptime_s %s) is after this audit's (%s + %s): the "
                              "baseline comes from the future" % (shown(boot_before), shown(up_before),
                                                                  shown(boot), shown(up)))
    if not result["host"] and up_before == up and same is not False:
        result["host"].append("the baseline holds the same reading as now (uptime_s %s): no time between them"
                              % shown(up))
    if result["host"]:
        return result
    clean = {"uptime_s": up_before, "boot_time": boot_before, "boot_id": boot_id(before)}
    if before.get("boot_id") is not None and clean["boot_id"] is None:
        result["fields"].append("boot_id %s is not a boot id (a UUID, /proc/sys/kernel/random/boot_id): a reboot is "
                                "told by the boot time and uptime" % shown(before.get("boot_id")))
    fields = result["fields"]
    for name in COUNTER_SECTIONS:
        section = before.get(name)
        clean[name] = {}
        if section is None:
            continue
        if not isinstance(section, dict):
            fields.append("%s %s is not an object" % (name, shown(section)))
            continue
        for key, entry in section.items():
            if entry is None:
                continue
            if not isinstance(entry, dict):
                fields.append("%s.%s %s is not an object of counters" % (name, _key(key), shown(entry)))
                continue
            kept = {}
            for counter, value in entry.items():
                if name == "interfaces" and counter == "kind" or value is None:
                    continue  # the kind is now's; a counter the kernel did not expose is not there
                if _counter(value) is None:
                    fields.append("%s.%s.%s %s %s" % (name, _key(key), _key(counter), shown(value), NOT_A_COUNTER))
                    continue
                kept[counter] = value
            clean[name][key] = kept
    clean["aer"] = {}
    aer = before.get("aer")
    if aer is not None and not isinstance(aer, dict):
        fields.append("aer %s is not an object" % shown(aer))
    for address, entry in (aer.items() if isinstance(aer, dict) else ()):
        if entry is None:
            continue
        if not isinstance(entry, dict):
            fields.append("aer.%s %s is not an object" % (_key(address), shown(entry)))
            continue
        kept = {}
        for kind in AER_KINDS:
            part = entry.get(kind)
            if part is None:
                continue
            if not isinstance(part, dict):
                fields.append("aer.%s.%s %s is not an object with a total" % (_key(address), kind, shown(part)))
                continue
            total = part.get("total")
            if total is None:
                continue
            if _counter(total) is None:
                fields.append("aer.%s.%s.total %s %s" % (_key(address), kind, shown(total), NOT_A_COUNTER))
                continue
            kept[kind] = {"total": total}
        clean["aer"][address] = kept
    tcp = before.get("tcp")
    clean["tcp"] = None
    if tcp is not None and not isinstance(tcp, dict):
        fields.append("tcp %s is not an object" % shown(tcp))
    elif isinstance(tcp, dict):
        clean["tcp"] = {}
        for counter in TCP_COUNTERS:
            value = tcp.get(counter)
            if value is not None and _counter(value) is None:
                fields.append("tcp.%s %s %s" % (counter, shown(value), NOT_A_COUNTER))
            elif value is not None:
                clean["tcp"][counter] = value
    result["counters"] = clean
    return result


def _listed(problems):
    shown_ = problems[:SHOWN_PROBLEMS]
    more = len(problems) - len(shown_)
    return "; ".join(shown_) + (" (and %d more)" % more if more else "")


def baseline_warnings(baselines, wanted, checked=None):
    """One warning per baseline file that cannot serve (unusable, or without some of the hosts that name it), and
    one per host whose entry or some of whose counters cannot be used (the first SHOWN_HOSTS of a file; the rest in
    one line). ``baselines``: {path: read_baseline(path)}; ``wanted``: {path: [hosts that name it]}; ``checked``:
    {path: {host: check_counters(...)}}."""
    warnings = []
    checked = checked or {}
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
        damaged = [(h, c) for h, c in sorted((checked.get(path) or {}).items()) if c["host"] or c["fields"]]
        for host, check in damaged[:SHOWN_HOSTS]:
            if check["host"]:
                warnings.append("%s: %s, host %s: %s; %s is judged as without a baseline (uncorrectable PCIe errors "
                                "since boot, growth not judged)" % (KEY, path, host, _listed(check["host"]), host))
            else:
                warnings.append("%s: %s, host %s: %s; these are judged as without a baseline (not compared; "
                                "uncorrectable PCIe errors since boot)" % (KEY, path, host, _listed(check["fields"])))
        rest = [h for h, _c in damaged[SHOWN_HOSTS:]]
        if rest:
            named = ", ".join(rest[:3]) + (" and %d more" % (len(rest) - 3) if len(rest) > 3 else "")
            warnings.append("%s: %s holds fields that cannot be used for %d more host(s) (%s); each is judged as "
                            "without a baseline where its fields cannot be used" % (KEY, path, len(rest), named))
    return warnings
