# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Audit reports: one report model rendered as JSON, Markdown, JUnit XML and a self-contained HTML page."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from html import escape
from xml.etree import ElementTree

from ansible_collections.gpuops.fabric.plugins.module_utils._rules import CATALOG, SEVERITY_RANK

REPORT_SCHEMA_VERSION = 1
FORMATS = ("json", "md", "junit", "html")
FILENAMES = {"json": "report.json", "md": "report.md", "junit": "junit.xml", "html": "report.html"}
LINE_WIDTH = 280  # the longest console line of a finding (printed, with its indent, under 300); reports: full text
ELLIPSIS = "\u2026"


def clip(text, width=LINE_WIDTH):
    """``text`` on one line (runs of whitespace, newlines included, become one space), cut to ``width`` characters
    with an ellipsis when longer."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:max(width - 1, 0)].rstrip() + ELLIPSIS


def finding_line(finding, width=LINE_WIDTH):
    """One console line for a finding: ``[severity] host RULE subject: message``, at most ``width`` characters."""
    return clip("[%s] %s %s %s: %s" % (finding["severity"], finding["host"] or "inventory", finding["id"],
                                       finding["subject"], finding["message"]), width)


def finding_lines(report, width=LINE_WIDTH):
    """One line per finding not waived, in the report's order (most severe first, then host, rule, subject)."""
    return [finding_line(f, width) for f in report["findings"] if not f.get("waived")]


def group_findings(findings):
    """Findings not waived, grouped by (severity, host, rule) in the report's order: [{"severity", "host", "id",
    "title", "remediation", "findings": [...]}]; a rule that fires on many subjects of one host is one group."""
    groups, index = [], {}
    for f in findings:
        if f.get("waived"):
            continue
        key = (f["severity"], f["host"], f["id"])
        if key not in index:
            index[key] = dict(severity=f["severity"], host=f["host"], id=f["id"], title=f.get("title"),
                              remediation=f.get("remediation"), findings=[])
            groups.append(index[key])
        index[key]["findings"].append(f)
    return groups


def worst_severity(host):
    """A host row's worst active severity: fail, warn, info, ``ok`` (audited, nothing found) or ``unknown``
    (unreachable or failed: not audited)."""
    if host["status"] != "audited":
        return "unknown"
    return next((sev for sev in ("fail", "warn", "info") if host["counts"][sev]), "ok")


def hosts_by_failures(report):
    """The report's host rows, most fail findings first, then by name."""
    return sorted(report["hosts"], key=lambda h: (-h["counts"]["fail"], h["name"]))


def build_report(hosts, findings, outcomes, generated_at, collection_version=None, measurements=None, cabling=None):
    """``hosts``: {name: {"status": audited|unreachable|failed, "reason": str|None}};
    ``outcomes``: {host: {rule id: (status, reason)}} for audited hosts, inventory rules under "inventory";
    ``measurements``: what the probes measured (see _audit.measurements), listed whether or not they are findings."""
    findings = sorted(findings, key=lambda f: (SEVERITY_RANK[f["severity"]], f["host"] or "", f["id"],
                                               str(f["subject"])))
    active = [f for f in findings if not f.get("waived")]
    counts = dict((name, {"fail": 0, "warn": 0, "info": 0, "waived": 0}) for name in hosts)
    for f in findings:
        if f["host"] in counts:
            counts[f["host"]]["waived" if f.get("waived") else f["severity"]] += 1
    host_rows = []
    for name in sorted(hosts):
        mine = counts[name]
        host_rows.append({
            "name": name,
            "status": hosts[name]["status"],
            "reason": hosts[name].get("reason"),
            # what the readers could not read or did not believe (a FIFO, an absurd number): bounded by the readers
            "facts_warnings": list(hosts[name].get("facts_warnings") or []),
            "counts": {"fail": mine["fail"], "warn": mine["warn"], "info": mine["info"]},
            "waived": mine["waived"],
        })
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": generated_at,
        "tool": {"name": "gpuops.fabric", "version": collection_version},
        "summary": {
            "hosts": len(hosts),
            "audited": sum(1 for h in hosts.values() if h["status"] == "audited"),
            "unreachable": sum(1 for h in hosts.values() if h["status"] == "unreachable"),
            "failed": sum(1 for h in hosts.values() if h["status"] == "failed"),
            "findings": dict((sev, sum(1 for f in active if f["severity"] == sev)) for sev in ("fail", "warn", "info")),
            "waived": len(findings) - len(active),
        },
        "hosts": host_rows,
        "rules": [dict((k, getattr(r, k)) for k in ("id", "title", "severity", "description", "remediation", "scope"))
                  for r in sorted(CATALOG.values(), key=lambda r: r.id)],
        "findings": findings,
        "outcomes": dict((host, dict((rid, {"status": st, "reason": why}) for rid, (st, why) in sorted(out.items())))
                         for host, out in sorted(outcomes.items())),
        "measurements": measurements or [],
        "cabling": cabling or [],
    }


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report):
    s = report["summary"]
    lines = [
        "# gpuops.fabric audit",
        "",
        "Generated %s. %d host(s): %d audited, %d unreachable, %d failed. Findings: %d fail, %d warn, %d info; "
        "%d waived." % (report["generated_at"], s["hosts"], s["audited"], s["unreachable"], s["failed"],
                        s["findings"]["fail"], s["findings"]["warn"], s["findings"]["info"], s["waived"]),
        "",
        "| host | status | fail | warn | info | waived |",
        "|---|---|---|---|---|---|",
    ]
    for host in hosts_by_failures(report):
        lines.append("| %s | %s | %d | %d | %d | %d |" % (
            _md(host["name"]), host["status"] + (" (%s)" % _md(host["reason"]) if host["reason"] else ""),
            host["counts"]["fail"], host["counts"]["warn"], host["counts"]["info"], host["waived"]))
    lines += ["", "## Findings", ""]
    active = [f for f in report["findings"] if not f.get("waived")]
    if not active:
        lines.append("No findings.")
    else:
        lines += ["| severity | host | rule | subject | message | remediation |", "|---|---|---|---|---|---|"]
        for group in group_findings(active):
            # findings of one rule on one host that say the same thing share a row, their subjects listed
            rows = []
            for f in group["findings"]:
                if rows and rows[-1][0]["message"] == f["message"] and rows[-1][0]["remediation"] == f["remediation"]:
                    rows[-1].append(f)
                else:
                    rows.append([f])
            for same in rows:
                f = same[0]
                lines.append("| %s | %s | %s %s | %s | %s | %s |" % (
                    f["severity"], _md(f["host"]), f["id"], _md(f["title"]),
                    ", ".join(_md(x["subject"]) for x in same), _md(f["message"]), _md(f["remediation"])))
    waived = [f for f in report["findings"] if f.get("waived")]
    if waived:
        lines += ["", "## Waived", "", "| host | rule | subject | reason | expires |", "|---|---|---|---|---|"]
        for f in waived:
            cells = (_md(f["host"]), f["id"], _md(f["subject"]), _md(f["waiver"]["reason"]), f["waiver"]["expires"])
            lines.append("| %s | %s | %s | %s | %s |" % cells)
    throughput = [m for m in report.get("measurements") or [] if m["kind"] == "throughput"]
    if throughput:
        lines += ["", "## Measured throughput", "", "| host | peer | network | Gbit/s | expected | basis |",
                  "|---|---|---|---|---|---|"]
        for m in throughput:
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                _md(m["host"]), _md(m["peer"]), _md(m["network"]),
                "%.3g" % m["gbps"] if m["gbps"] is not None else "failed: %s" % _md(m["error"]),
                "%.3g" % m["expected_gbps"] if m["expected_gbps"] is not None else "-", _md(m["basis"] or "")))
    if report.get("cabling"):
        lines += ["", "## Cabling (LLDP)", "", "| host | port | switch | switch port | VLANs | aggregation | max frame |",
                  "|---|---|---|---|---|---|---|"]
        for c in report["cabling"]:
            lines.append("| %s |" % " | ".join(_md(cell) for cell in _cabling_cells(c, "-")))
    lines += ["", "## Rules", ""]
    for rule in report["rules"]:
        lines += ["### %s %s (%s)" % (rule["id"], rule["title"], rule["severity"]), "", rule["description"], "",
                  "Fix: " + rule["remediation"], ""]
    return "\n".join(lines) + "\n"


def render_junit(report):
    """One testsuite per host, one testcase per host x rule: fail findings fail the case."""
    suites = ElementTree.Element("testsuites", name="gpuops.fabric audit")
    by_case = {}
    for f in report["findings"]:
        by_case.setdefault((f["host"], f["id"]), []).append(f)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for host in report["hosts"]:
        suite = ElementTree.SubElement(suites, "testsuite", name=host["name"], timestamp=report["generated_at"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if host["status"] != "audited":
            case = ElementTree.SubElement(suite, "testcase", classname=host["name"], name="facts gathered")
            ElementTree.SubElement(case, "error", message="host %s: %s" % (host["status"], host["reason"] or ""),
                                   type=host["status"])
            counts["tests"] += 1
            counts["errors"] += 1
        else:
            for rule_id, outcome in sorted(report["outcomes"].get(host["name"], {}).items()):
                rule = CATALOG[rule_id]
                case = ElementTree.SubElement(suite, "testcase", classname=host["name"],
                                              name="%s %s" % (rule_id, rule.title))
                counts["tests"] += 1
                found = by_case.get((host["name"], rule_id), [])
                failing = [f for f in found if f["severity"] == "fail" and not f.get("waived")]
                if failing:
                    failure = ElementTree.SubElement(case, "failure", message="; ".join(f["message"] for f in failing),
                                                     type=rule_id)
                    failure.text = "\n".join("%s: %s\nFix: %s" % (f["subject"], f["message"], f["remediation"])
                                             for f in failing)
                    counts["failures"] += 1
                elif outcome["status"] == "not_applicable":
                    ElementTree.SubElement(case, "skipped", message=outcome["reason"] or "not applicable")
                    counts["skipped"] += 1
                other = [f for f in found if f not in failing]
                if other:
                    out = ElementTree.SubElement(case, "system-out")
                    out.text = "\n".join("%s%s %s: %s" % (f["severity"], " (waived)" if f.get("waived") else "",
                                                          f["subject"], f["message"]) for f in other)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    inventory = report["outcomes"].get("inventory")
    if inventory:
        suite = ElementTree.SubElement(suites, "testsuite", name="inventory", timestamp=report["generated_at"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for rule_id, outcome in sorted(inventory.items()):
            case = ElementTree.SubElement(suite, "testcase", classname="inventory",
                                          name="%s %s" % (rule_id, CATALOG[rule_id].title))
            counts["tests"] += 1
            found = [f for f in report["findings"] if f["id"] == rule_id]
            failing = [f for f in found if f["severity"] == "fail" and not f.get("waived")]
            if failing:
                failure = ElementTree.SubElement(case, "failure", message="; ".join(
                    "%s %s" % (f["host"], f["message"]) for f in failing), type=rule_id)
                failure.text = "\n".join("%s %s: %s" % (f["host"], f["subject"], f["message"]) for f in failing)
                counts["failures"] += 1
            elif outcome["status"] == "not_applicable":
                ElementTree.SubElement(case, "skipped", message=outcome["reason"] or "not applicable")
                counts["skipped"] += 1
            if found and not failing:
                out = ElementTree.SubElement(case, "system-out")
                out.text = "\n".join("%s %s %s: %s" % (f["severity"], f["host"], f["subject"], f["message"])
                                     for f in found)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #ccc;border-radius:6px;padding:.6rem 1rem}
.card b{display:block;font-size:1.4rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{border:1px solid #ddd;padding:.3rem .5rem;
text-align:left;vertical-align:top}th{background:#f3f3f3}
.fail{color:#b00020;font-weight:bold}.warn{color:#a05a00;font-weight:bold}.info{color:#205080}
.unreachable,.failed{color:#b00020}.filters{margin:.6rem 0;display:flex;gap:.6rem}
#findings td:nth-child(3){white-space:nowrap}
#hosts tr.worst-fail td{background:#fde4e7}#hosts tr.worst-warn td{background:#fff1dc}
#hosts tr.worst-info td{background:#e7eff9}#hosts tr.worst-ok td{background:#e6f4e6}
#hosts tr.worst-unknown td{background:#ececec}
details summary{cursor:pointer}details ul{margin:.3rem 0;padding-left:1.2rem}.more{color:#666}
"""

_JS = """
function applyFilters(){
  var sev=document.getElementById('f-severity').value, host=document.getElementById('f-host').value.toLowerCase(),
      text=document.getElementById('f-text').value.toLowerCase(), shown=0, rows=0;
  document.querySelectorAll('#findings tbody tr').forEach(function(row){
    var ok=(!sev||row.dataset.severity===sev)&&(!host||row.dataset.host.toLowerCase().indexOf(host)>=0)&&
           (!text||row.textContent.toLowerCase().indexOf(text)>=0);
    row.style.display=ok?'':'none'; if(ok){shown+=parseInt(row.dataset.count,10);rows++;}
  });
  document.getElementById('shown').textContent=shown;
  document.getElementById('shown-rows').textContent=rows;
}
document.addEventListener('DOMContentLoaded',function(){
  ['f-severity','f-host','f-text'].forEach(function(id){document.getElementById(id).addEventListener('input',applyFilters);});
  // a grouped row's subjects and messages open and close together
  document.querySelectorAll('#findings details').forEach(function(d){
    d.addEventListener('toggle',function(){
      d.closest('tr').querySelectorAll('details').forEach(function(o){if(o.open!==d.open){o.open=d.open;}});
    });
  });
  applyFilters();
});
"""


def render_html(report):
    s = report["summary"]
    esc = escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>gpuops.fabric audit</title><style>%s</style><script>%s</script></head><body>" % (_CSS, _JS),
           "<h1>gpuops.fabric audit</h1>", "<p>Generated %s</p>" % esc(report["generated_at"]), '<div class="cards">']
    for label, value, cls in (("hosts", s["hosts"], ""), ("audited", s["audited"], ""),
                              ("unreachable", s["unreachable"], "unreachable"), ("fail", s["findings"]["fail"], "fail"),
                              ("warn", s["findings"]["warn"], "warn"), ("info", s["findings"]["info"], "info"),
                              ("waived", s["waived"], "")):
        out.append('<div class="card %s"><b id="count-%s">%d</b>%s</div>' % (cls, label, value, label))
    out += ["</div>", "<h2>Hosts</h2>", '<table id="hosts"><thead><tr><th>host</th><th>status</th><th>fail</th>'
            "<th>warn</th><th>info</th><th>waived</th></tr></thead><tbody>"]
    for host in hosts_by_failures(report):
        worst = worst_severity(host)
        out.append('<tr class="worst-%s" data-host="%s" data-worst="%s"><td>%s</td><td class="%s">%s</td><td>%d</td>'
                   "<td>%d</td><td>%d</td><td>%d</td></tr>" % (
                       worst, esc(host["name"]), worst, esc(host["name"]), esc(host["status"]),
                       esc(host["status"] + (": " + host["reason"] if host["reason"] else "")),
                       host["counts"]["fail"], host["counts"]["warn"], host["counts"]["info"], host["waived"]))
    out += ["</tbody></table>", '<h2>Findings (<span id="shown">0</span> shown in <span id="shown-rows">0</span> '
            "rows)</h2>", '<div class="filters">',
            '<label>severity <select id="f-severity"><option value="">all</option><option>fail</option>'
            "<option>warn</option><option>info</option></select></label>",
            '<label>host <input id="f-host" type="search"></label>',
            '<label>text <input id="f-text" type="search"></label></div>',
            '<table id="findings"><thead><tr><th>severity</th><th>host</th><th>rule</th><th>subject</th>'
            "<th>message</th><th>remediation</th></tr></thead><tbody>"]
    for group in group_findings(report["findings"]):
        out.append('<tr data-severity="%s" data-host="%s" data-rule="%s" data-count="%d"><td class="%s">%s</td>'
                   '<td>%s</td><td title="%s">%s</td>%s<td>%s</td></tr>' % (
                       esc(group["severity"]), esc(group["host"] or ""), esc(group["id"]), len(group["findings"]),
                       esc(group["severity"]), esc(group["severity"]), esc(group["host"] or ""),
                       esc(group["title"] or ""), esc(group["id"]), _html_group_cells(group),
                       esc(group["remediation"] or "")))
    out.append("</tbody></table>")
    waived = [f for f in report["findings"] if f.get("waived")]
    if waived:
        out += ["<h2>Waived</h2>", "<table><thead><tr><th>host</th><th>rule</th><th>subject</th><th>reason</th>"
                "<th>expires</th></tr></thead><tbody>"]
        for f in waived:
            out.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                esc(f["host"]), esc(f["id"]), esc(str(f["subject"])), esc(f["waiver"]["reason"]),
                esc(f["waiver"]["expires"])))
        out.append("</tbody></table>")
    if report.get("cabling"):
        out += ["<h2>Cabling (LLDP)</h2>", cabling_svg(report["cabling"]),
                '<table id="cabling"><thead><tr><th>host</th><th>port</th><th>switch</th><th>switch port</th>'
                "<th>VLANs</th><th>aggregation</th><th>max frame</th></tr></thead><tbody>"]
        for c in report["cabling"]:
            out.append("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(cell) for cell in _cabling_cells(c, "")))
        out.append("</tbody></table>")
    out += ["<h2>Rules</h2>", "<table><thead><tr><th>rule</th><th>severity</th><th>why it matters</th><th>fix</th>"
            "</tr></thead><tbody>"]
    for rule in report["rules"]:
        out.append("<tr><td>%s %s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(rule["id"]), esc(rule["title"]), esc(rule["severity"]), esc(rule["description"]),
            esc(rule["remediation"])))
    out += ["</tbody></table>", "</body></html>"]
    return "\n".join(out) + "\n"


def _html_group_cells(group):
    """The subject and message cells of a findings row: one finding as it is; several (one rule on one host) as
    the count of subjects and the first message, each expanding (<details>) to every subject and message."""
    esc = escape
    found = group["findings"]
    if len(found) == 1:
        return "<td>%s</td><td>%s</td>" % (esc(str(found[0]["subject"])), esc(found[0]["message"]))
    subjects = '<td><details class="subjects"><summary>%d subjects</summary><ul>%s</ul></details></td>' % (
        len(found), "".join("<li>%s</li>" % esc(str(f["subject"])) for f in found))
    messages = sorted(set(f["message"] for f in found))
    if len(messages) == 1:
        return subjects + "<td>%s</td>" % esc(messages[0])
    rest = "".join("<li>%s: %s</li>" % (esc(str(f["subject"])), esc(f["message"])) for f in found[1:])
    return subjects + ('<td><details class="messages"><summary>%s <span class="more">(+%d more)</span></summary>'
                       "<ul>%s</ul></details></td>" % (esc(found[0]["message"]), len(found) - 1, rest))


def _cabling_cells(row, missing):
    """A cabling row's table cells as text, ``missing`` where the neighbour said nothing."""
    aggregation = row["aggregation"] if row["aggregation"] is not None else missing
    return [str(cell) for cell in (row["host"], row["port"], row["switch"], row["switch_port"],
                                   ", ".join(str(v) for v in row["vlans"]) or missing, aggregation,
                                   row["mfs"] or missing)]


def cabling_svg(rows):
    """Nodes on the left, switches on the right, one line per node port to switch port (inline SVG, no script)."""
    hosts = sorted(set(r["host"] for r in rows))
    switches = sorted(set(str(r["switch"]) for r in rows))
    height = 40 + 36 * max(len(hosts), len(switches))
    left = dict((h, 30 + 36 * i) for i, h in enumerate(hosts))
    right = dict((s, 30 + 36 * i) for i, s in enumerate(switches))
    parts = ['<svg class="cabling" xmlns="http://www.w3.org/2000/svg" width="640" height="%d" role="img" '
             'aria-label="node ports to switch ports">' % height]
    for r in rows:
        parts.append('<line x1="170" y1="%d" x2="470" y2="%d" stroke="#4a6fa5"><title>%s %s - %s %s</title></line>' % (
            left[r["host"]], right[str(r["switch"])], escape(r["host"]), escape(r["port"]), escape(str(r["switch"])),
            escape(str(r["switch_port"]))))
    for name, y in sorted(left.items()):
        parts.append('<rect x="10" y="%d" width="160" height="24" fill="#eef"/><text x="16" y="%d">%s</text>'
                     % (y - 12, y + 5, escape(name)))
    for name, y in sorted(right.items()):
        parts.append('<rect x="470" y="%d" width="160" height="24" fill="#efe"/><text x="476" y="%d">%s</text>'
                     % (y - 12, y + 5, escape(name)))
    return "".join(parts) + "</svg>"


RENDERERS = {"json": render_json, "md": render_markdown, "junit": render_junit, "html": render_html}
