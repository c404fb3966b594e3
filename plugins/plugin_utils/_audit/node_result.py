# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The node result: one JSON document per node per audit, the contract between whoever judges a node (the audit
playbook on a controller, the node-local audit) and whoever merges nodes (the audit itself, the aggregate).

It holds what the host rules judged (the facts, the host's policy as written, what was observed: the NCCL logs read,
the baseline counters) and their verdict (findings with waivers applied, and each rule's outcome). report.json's
``nodes`` list holds one per host; a node-local audit writes one file. ``check`` is what every reader runs first: a
document of another schema, from the future, too old, cut short or not shaped as here is named and left out, never
judged. The fields are in docs/validation.md ("Node results")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import gc
import json
import os
import stat

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.build import SCHEMA_VERSION as FACTS_SCHEMA_VERSION

SCHEMA = "gpuops.fabric/node-result"
SCHEMA_VERSION = 1
STATUSES = ("audited", "unreachable", "failed")
SEVERITIES = ("fail", "warn", "info")
OUTCOMES = ("pass", "findings", "not_applicable", "error")
# The host's audit inputs a node result keeps as written (its policy, checked again by whoever reads the result; what
# the probes measured and what the roles would change), and the observations made while judging it: the NCCL logs as
# read and the earlier counters compared with, which stand for the paths they were read from (fabric_nccl_logs,
# fabric_audit_baseline, fabric_audit_window name files and times of the judging run, not of whoever reads it).
INPUT_KEYS = ("expectations", "waivers", "networks", "attachments", "nccl_mode", "probes", "cabling",
              "waiver_horizon_days", "tcp_retransmit_budget", "drift", "nccl_drift")
OBSERVED_KEYS = ("nccl_logs", "baseline")
# A result is read whole: a file over these is refused, and one aggregate reads at most BUDGET_BYTES in all (a node's
# result is a few hundred KiB, its facts most of it; report.json holds one per host of its run; in memory a document
# takes several times its size)
MAX_BYTES = 1024 * 1024 * 1024  # report.json
NODE_MAX_BYTES = 64 * 1024 * 1024  # a node's own result file
BUDGET_BYTES = 4 * 1024 * 1024 * 1024
SHOWN_SOURCES = 3
MAX_HOST_CHARS = 255
CLOCK_SKEW_S = 600  # a result stamped later than now by more than this comes from another clock or a hand edit
MAX_FILES = 100000  # one folder's files read, at most


def plain(value, depth=0):
    """``value`` as JSON holds it: tuples as lists, dates as ISO text, keys as text, anything else as its text.
    What a node result keeps must read back the same from the file as it was judged in memory."""
    if depth > 64:
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return str(value) if type(value) not in (bool, int, float, str) and isinstance(value, str) else value
    if isinstance(value, dict):
        return dict((k if isinstance(k, str) else str(k), plain(v, depth + 1)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return str(value)


def build(host, status, reason, facts, inputs, observed, findings, outcomes, generated_at, version=None,
          producer=None, facts_warnings=()):
    """One node's result. ``findings`` are the host rules' with waivers applied; ``outcomes`` {rule id: (status,
    reason)}; ``producer`` says what made it ({"mode": "controller" | "node-local", "profile": ...})."""
    counters = facts.get("counters") if isinstance(facts, dict) else None
    boot = counters.get("boot_id") if isinstance(counters, dict) else None
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "host": host,
        "generated_at": generated_at,
        "tool": {"name": "gpuops.fabric", "version": version},
        "producer": plain(producer or {"mode": "controller", "profile": "full"}),
        "boot_id": boot if isinstance(boot, str) else None,
        "status": status,
        "reason": None if reason is None else str(reason),
        "facts_warnings": [str(w) for w in facts_warnings],
        "facts": facts if status == "audited" else None,
        "inputs": dict((k, plain((inputs or {}).get(k))) for k in INPUT_KEYS),
        "observed": dict((k, plain((observed or {}).get(k))) for k in OBSERVED_KEYS),
        "findings": plain(findings),
        "outcomes": dict((rid, {"status": st, "reason": why}) for rid, (st, why) in sorted((outcomes or {}).items())),
    }


def parse_time(text):
    """An ISO 8601 time as an aware datetime (UTC when it names no zone), else None."""
    if not isinstance(text, str) or not 10 <= len(text) <= 40:
        return None
    try:
        value = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.timezone.utc)


def _short(value, width=60):
    text = value if isinstance(value, str) else json.dumps(value, default=str)[:width + 1]
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[:width] + "...")


def host_problem(host):
    """Why ``host`` is no host name a node result can carry, else None."""
    if not isinstance(host, str) or not host:
        return "host %s is not a name" % _short(host)
    if len(host) > MAX_HOST_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in host):
        return "host %s is not a name (control characters, or longer than %d)" % (_short(host), MAX_HOST_CHARS)
    return None


def _finding_problem(finding, host):
    if not isinstance(finding, dict):
        return "a finding is not an object"
    for key in ("id", "severity", "subject", "message"):
        if key not in finding:
            return "a finding has no %s" % key
    if not isinstance(finding["id"], str) or finding["severity"] not in SEVERITIES:
        return "a finding's id %s or severity %s is not one" % (_short(finding["id"]), _short(finding["severity"]))
    for key in ("subject", "message", "title", "remediation"):
        if not isinstance(finding.get(key), str):
            return "a finding's %s (%s) is not text" % (key, finding["id"])
    if finding.get("waived") and not (isinstance(finding.get("waiver"), dict) and all(
            isinstance(finding["waiver"].get(k), str) for k in ("rule", "hosts", "subject", "reason", "expires"))):
        return "a finding (%s) is waived without its waiver" % finding["id"]
    if finding.get("host") != host:
        return "a finding (%s) names host %s, not %s" % (finding["id"], _short(finding.get("host")), host)
    if not isinstance(finding.get("waived", False), bool):
        return "a finding's waived is not true or false"
    return None


def check(doc, now=None, max_age_s=None, facts_schema=True):
    """Why ``doc`` cannot be used as a node result, else None: another schema or version, a host that is no name, a
    time that is none, from the future (after ``now``, an aware datetime, by more than the clock's skew) or older
    than ``max_age_s``, a field not shaped as build() makes it, or (``facts_schema``) facts of another schema."""
    if not isinstance(doc, dict):
        return "not a node result (a JSON object)"
    if doc.get("schema") != SCHEMA:
        return "schema %s, not %s" % (_short(doc.get("schema")), SCHEMA)
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return "schema_version %s is not a number" % _short(version)
    if version != SCHEMA_VERSION:
        return "schema version %d, this collection reads %d (%s)" % (
            version, SCHEMA_VERSION, "written by a newer gpuops.fabric" if version > SCHEMA_VERSION else "an older one")
    problem = host_problem(doc.get("host"))
    if problem:
        return problem
    when = parse_time(doc.get("generated_at"))
    if when is None:
        return "generated_at %s is not a time (ISO 8601)" % _short(doc.get("generated_at"))
    if now is not None and (when - now).total_seconds() > CLOCK_SKEW_S:
        return "from the future: generated_at %s is after now (%s)" % (doc["generated_at"], now.isoformat())
    if now is not None and max_age_s is not None and (now - when).total_seconds() > max_age_s:
        return "stale: generated_at %s is more than %s old" % (doc["generated_at"], _age(max_age_s))
    if doc.get("status") not in STATUSES:
        return "status %s is not one of %s" % (_short(doc.get("status")), ", ".join(STATUSES))
    if not isinstance(doc.get("reason"), (str, type(None))):
        return "reason %s is not text" % _short(doc.get("reason"))
    facts = doc.get("facts")
    if doc["status"] == "audited" and not (isinstance(facts, dict) and facts):
        return "audited, but without facts"
    if facts_schema and isinstance(facts, dict) and facts and facts.get("schema_version") != FACTS_SCHEMA_VERSION:
        version = facts.get("schema_version")
        return "facts of schema version %s, this collection reads %d" % (
            version if isinstance(version, int) else _short(version), FACTS_SCHEMA_VERSION)
    for key in ("inputs", "observed", "outcomes", "tool", "producer"):
        if not isinstance(doc.get(key), dict):
            return "%s is not an object" % key
    if not isinstance(doc.get("findings"), list) or not isinstance(doc.get("facts_warnings"), list):
        return "findings or facts_warnings is not a list"
    for finding in doc["findings"]:
        problem = _finding_problem(finding, doc["host"])
        if problem:
            return problem
    for rid, outcome in doc["outcomes"].items():
        if not isinstance(outcome, dict) or outcome.get("status") not in OUTCOMES:
            return "the outcome of %s is not one of %s" % (_short(rid), ", ".join(OUTCOMES))
        if not isinstance(outcome.get("reason"), (str, type(None))):
            return "the outcome of %s has a reason that is not text" % _short(rid)
    if not all(isinstance(w, str) for w in doc["facts_warnings"]):
        return "a facts warning is not text"
    return _observed_problem(doc["observed"])


def _observed_problem(observed):
    """Why what a node result observed is not shaped as the judging run keeps it (_nccl/logs.read_log's entries, a
    baseline reading), else None."""
    logs = observed.get("nccl_logs")
    if logs is not None:
        if not isinstance(logs, list):
            return "observed nccl_logs is not a list"
        for entry in logs:
            if not isinstance(entry, dict) or entry.get("kind") not in ("log", "topology_dump") or not isinstance(
                    entry.get("path"), str) or not isinstance(entry.get("error"), (str, type(None))):
                return "observed nccl_logs holds an entry that is not a log as read"
            if not all(isinstance(entry.get(k), (dict, type(None))) for k in ("parsed", "facts")):
                return "observed nccl_logs holds an entry whose parse is not an object"
    baseline = observed.get("baseline")
    if baseline is not None and not (isinstance(baseline, dict) and isinstance(baseline.get("counters"), dict)):
        return "observed baseline is not a reading with counters"
    return None


def _age(seconds):
    return "%g hours" % (seconds / 3600.0) if seconds >= 3600 else "%d seconds" % seconds


def read_json(path, max_bytes=MAX_BYTES, follow=False):
    """(value, problem) of a JSON file, read whole, at most ``max_bytes``: a link is not followed (unless
    ``follow``), a FIFO is not opened for long (a non-blocking open, then a check that it is a regular file), bad
    JSON is a problem."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | (
            0 if follow else getattr(os, "O_NOFOLLOW", 0))
        fd = os.open(path, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, "not a regular file"
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(max_bytes + 1)
        finally:
            os.close(fd)
    except (IOError, OSError) as exc:
        return None, "unreadable (%s)" % ("a symbolic link, not followed" if not follow and os.path.islink(path)
                                          else exc.strerror or exc)
    if len(data) > max_bytes:
        return None, "larger than %d MiB" % (max_bytes >> 20)
    try:
        return json.loads(data.decode("utf-8")), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, "not JSON, or cut short (%s)" % str(exc)[:120]
    except RecursionError:
        return None, "not JSON (nested too deeply)"


def documents(value):
    """The node results a file holds: itself (a node result), or report.json's ``nodes``; (docs, problem)."""
    if isinstance(value, dict) and "nodes" in value and "summary" in value:
        nodes = value["nodes"]
        if not isinstance(nodes, list):
            return [], "report.json whose nodes is not a list"
        return nodes, None
    if isinstance(value, dict) and "summary" in value:
        return [], "report.json without node results (written by a gpuops.fabric before they were kept)"
    return [value], None


def files(paths):
    """[(path, problem)] of the files ``paths`` name: a file as itself, a folder's *.json files and each of its
    subfolders' report.json (an audit's report folder per slice), sorted; links are named, not followed."""
    found = []
    for path in paths:
        if os.path.islink(path):
            found.append((path, "a symbolic link, not followed"))
        elif os.path.isdir(path):
            found.extend(_folder(path))
        elif os.path.exists(path):
            found.append((path, None))
        else:
            found.append((path, "does not exist"))
    return found


def _folder(path):
    found = []
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        return [(path, "unreadable folder (%s)" % (exc.strerror or exc))]
    for name in names:
        full = os.path.join(path, name)
        if len(found) >= MAX_FILES:
            return found + [(path, "more than %d files: the rest were not read" % MAX_FILES)]
        if name.endswith(".json") and not name.startswith("."):
            found.append((full, "a symbolic link, not followed" if os.path.islink(full) else None))
        elif os.path.isdir(full) and not os.path.islink(full) and os.path.lexists(os.path.join(full, "report.json")):
            inner = os.path.join(full, "report.json")
            found.append((inner, "a symbolic link, not followed" if os.path.islink(inner) else None))
    return found


def collect(paths, hosts, now, max_age_s=None, budget=None):
    """_collect, with Python's cycle collector paused: parsed JSON holds no cycles (reference counting frees it), and
    each collection pass walks every document read so far, so with it on the reading grew faster than the documents
    (benchmarks/aggregate_bench.py's results, this step alone: 5,000 read and checked in 23.9 s with it, 10.5 s
    without)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _collect(paths, hosts, now, max_age_s, budget)
    finally:
        if was_enabled:
            gc.enable()


def _collect(paths, hosts, now, max_age_s=None, budget=None):
    """Read the node results under ``paths`` for ``hosts`` (the inventory's; a result for another host is named and
    left out). Returns ({host: doc}, {host: source}, lines): one result per host, the newest where there are several
    (each older one named), none where two differ and bear the same newest time (both named); each file or document
    that cannot be used is one line, and never stops the rest. A node's own file must be named after its host
    (HOST.json): in a shared folder one node cannot stand in for another. At most ``budget`` bytes are read in all
    (BUDGET_BYTES); the files past it are named, not read."""
    wanted = set(hosts)
    budget = BUDGET_BYTES if budget is None else budget
    found, lines = {}, []  # host -> [(time, source, doc)]
    for path, problem in files(paths):
        report = os.path.basename(path) == "report.json"
        if problem is None:
            try:
                size = os.lstat(path).st_size
            except OSError:
                size = 0
            if size > budget:
                problem = "not read: the aggregate reads at most %d MiB in all, and that is spent" % (
                    BUDGET_BYTES >> 20)
            else:
                budget -= size
                value, problem = read_json(path, MAX_BYTES if report else NODE_MAX_BYTES)
        docs = []
        if problem is None:
            docs, problem = documents(value)
        if problem:
            lines.append("%s: %s" % (path, problem))
            continue
        for index, doc in enumerate(docs):
            where = path if docs[0] is value else "%s (nodes[%d])" % (path, index)
            problem = check(doc, now, max_age_s)
            if problem is None and doc["host"] not in wanted:
                problem = "host %s is not in the inventory (or outside --limit)" % doc["host"]
            if problem is None and docs[0] is value and os.path.basename(path) != doc["host"] + ".json":
                problem = "holds the result of host %s: a node's result file is named HOST.json" % doc["host"]
            if problem:
                lines.append("%s: %s" % (where, problem))
                continue
            found.setdefault(doc["host"], []).append((parse_time(doc["generated_at"]), where, doc))
    chosen, source = {}, {}
    for host in sorted(found):
        results = sorted(found[host], key=lambda item: (item[0], item[1]))
        newest = [r for r in results if r[0] == results[-1][0]]
        distinct, seen = [], set()
        for item in newest:  # the same document twice (a node's file and its slice's report.json) is one
            text = json.dumps(item[2], sort_keys=True, default=str)
            if text not in seen:
                seen.add(text)
                distinct.append(item)
        older = results[:len(results) - len(newest)]
        for item in older[:SHOWN_SOURCES]:
            lines.append("%s: a duplicate for %s, older than %s (left out)" % (item[1], host, newest[0][1]))
        if len(older) > SHOWN_SOURCES:
            lines.append("%s: %d more older duplicates left out" % (host, len(older) - SHOWN_SOURCES))
        if len(distinct) > 1:
            named = ", ".join(item[1] for item in distinct[:SHOWN_SOURCES])
            lines.append("%s: %d results that differ, stamped at the same time (%s%s): none is used" % (
                host, len(distinct), named, " and more" if len(distinct) > SHOWN_SOURCES else ""))
            continue
        chosen[host], source[host] = newest[0][2], newest[0][1]
    return chosen, source, lines


# A node's name as the file of its result: an inventory name a file system takes as it is (no separator, no leading
# dot, nothing a shell or a glob would read otherwise)
FILE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def file_name_problem(host):
    """Why ``host`` cannot name its result's file (HOST.json), else None."""
    problem = host_problem(host)
    if problem:
        return problem
    if host.startswith((".", "-")) or not set(host) <= FILE_NAME_CHARS or len(host) > 200:
        return "host %s cannot name a file: letters, digits, '.', '_' and '-' only, not first '.' or '-', at most " \
               "200" % _short(host)
    return None


def previous_reading(path, host, now):
    """A node's last result (a node result file, or report.json holding it) as the baseline of its next audit:
    {"path", "generated_at", "counters": {host: counters}, "problem"} (as baseline.read_baseline gives a report),
    or None where there is no file yet (the first run). A result that cannot be used says why in ``problem``."""
    if not os.path.lexists(path):
        return None
    reading = {"path": path, "generated_at": None, "counters": {}, "problem": None}
    value, problem = read_json(path)
    docs = []
    if problem is None:
        docs, problem = documents(value)
    mine = [d for d in docs if isinstance(d, dict) and d.get("host") == host]
    if problem is None and not mine:
        problem = "a file without a result for %s" % host
    if problem is None:  # only its counters are read: they are alike in facts of schema 1 and 2
        problem = check(mine[0], now, facts_schema=False)
        problem = problem and "a result that cannot be used (%s)" % problem
    if problem is None:
        counters = mine[0]["facts"].get("counters") if isinstance(mine[0].get("facts"), dict) else None
        if not isinstance(counters, dict):
            problem = "a result without counters (%s)" % mine[0]["status"]
        else:
            reading.update(generated_at=mine[0]["generated_at"], counters={host: counters})
    reading["problem"] = problem
    return reading
