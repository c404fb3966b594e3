# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""report.html: one self-contained page (no external resources), with the cabling picture. A character XML 1.0
forbids (a control character in a host name) is written as a visible escape (model.xml_safe), so the inline SVG
reads as XML too."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from html import escape
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import finite
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.topology_svg import (
    CSS as TOPOLOGY_CSS, topology_svg,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import (
    ALLOWED_COLUMNS, NCCL_COLUMNS, RDMA_COLUMNS, STABILITY_COLUMNS, THROUGHPUT_COLUMNS, allowed_cells, allowed_rows,
    cabling_cells, group_findings, hosts_by_failures, nccl_cells, peer_label, rdma_cells, stability_cells,
    throughput_cells, worst_severity, xml_safe,
)

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
.topologies details{margin:.4rem 0}.topologies .scroll{overflow-x:auto}
""" + TOPOLOGY_CSS
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


def _table(out, title, table_id, columns, rows, cells, before=None):
    """A section of one table: ``title`` (markup, the section's own words), ``before`` the table (markup) where given,
    its rows' cells by ``cells(row, "")``, escaped; nothing where there are no rows."""
    if rows:
        heads = "".join("<th>%s</th>" % escape(c) for c in columns)
        out += ["<h2>%s</h2>" % title] + ([before] if before is not None else []) + [
            '<table id="%s"><thead><tr>%s</tr></thead><tbody>' % (table_id, heads)]
        out.extend("<tr>%s</tr>" % "".join("<td>%s</td>" % escape(cell) for cell in cells(row, "")) for row in rows)
        out.append("</tbody></table>")


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
    _table(out, "Stability: counters grown, per hour", "stability", STABILITY_COLUMNS, report.get("stability") or [],
           stability_cells)
    measured = report.get("measurements") or []
    throughput = [m for m in measured if m["kind"] == "throughput"]
    _table(out, "Measured throughput and latency under load", "throughput", THROUGHPUT_COLUMNS, throughput,
           throughput_cells, latency_svg(throughput) if throughput else None)
    _table(out, "Measured RDMA writes (perftest)", "rdma", RDMA_COLUMNS, [m for m in measured if m["kind"] == "perftest"],
           rdma_cells)
    _table(out, "What the hardware allows NCCL's all_reduce (bus bandwidth, large messages)", "allowed",
           ALLOWED_COLUMNS, allowed_rows(report), allowed_cells)
    if report.get("nccl"):
        heads = "".join("<th>%s</th>" % esc(c) for c in NCCL_COLUMNS)
        out += ["<h2>NCCL: what it chose beside what the hardware offers</h2>",
                '<table id="nccl"><thead><tr>%s</tr></thead><tbody>' % heads]
        for row in report["nccl"]:
            for cells in nccl_cells(row, ""):
                out.append("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(cell) for cell in cells))
        out.append("</tbody></table>")
    if report.get("cabling"):
        out += ["<h2>Cabling (LLDP)</h2>", cabling_svg(report["cabling"]),
                '<table id="cabling"><thead><tr><th>host</th><th>port</th><th>switch</th><th>switch port</th>'
                "<th>VLANs</th><th>aggregation</th><th>max frame</th></tr></thead><tbody>"]
        for c in report["cabling"]:
            out.append("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(cell) for cell in cabling_cells(c, "")))
        out.append("</tbody></table>")
    out += _topology_section(report)
    out += ["<h2>Rules</h2>", "<table><thead><tr><th>rule</th><th>severity</th><th>why it matters</th><th>fix</th>"
            "</tr></thead><tbody>"]
    for rule in report["rules"]:
        out.append("<tr><td>%s %s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(rule["id"]), esc(rule["title"]), esc(rule["severity"]), esc(rule["description"]),
            esc(rule["remediation"])))
    out += ["</tbody></table>", "</body></html>"]
    return xml_safe("\n".join(out) + "\n")  # every text and attribute: no character XML 1.0 forbids


MAX_TREES = 64  # hosts drawn, most fail findings first; the rest are in report.json's topology


def _topology_section(report):
    trees = report.get("topology") or {}
    hosts = [h["name"] for h in hosts_by_failures(report) if h["name"] in trees]
    if not hosts:
        return []
    out = ['<h2>PCIe and NUMA</h2><div class="topologies">']
    if len(hosts) > MAX_TREES:
        out.append('<p class="more">%d hosts, the %d with the most fail findings drawn; every tree is in report.json '
                   "(topology).</p>" % (len(hosts), MAX_TREES))
    counts = dict((h["name"], h["counts"]) for h in report["hosts"])
    for index, host in enumerate(hosts[:MAX_TREES]):
        tree = trees[host]
        bad = sum(1 for d in tree["devices"] if d["state"] in ("below", "narrower"))
        fails = (counts.get(host) or {}).get("fail", 0)
        out.append('<details%s data-host="%s"><summary>%s: %d devices, %d link(s) below their best, %d fail '
                   'finding(s)</summary><div class="scroll">%s</div></details>' % (
                       " open" if index < 3 and (fails or bad) else "", escape(host), escape(host),
                       len(tree["devices"]), bad, fails, topology_svg(host, tree)))
    out.append("</div>")
    return out


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


def _ms(value):
    return finite(value, low=0)


def latency_svg(rows):
    """Per measured pair, the ping round-trip time idle (p50, grey) beside under load (p99, orange), on one linear
    scale (inline SVG, no script); empty where no latency was measured."""
    pairs = [(r, _ms(r.get("idle_p50_ms")), _ms(r.get("loaded_p99_ms"))) for r in rows]
    pairs = [p for p in pairs if p[1] is not None or p[2] is not None]
    if not pairs:
        return ""
    top = max(max(v for v in (idle, loaded) if v is not None) for _r, idle, loaded in pairs) or 1.0
    width, label, height = 420.0, 260, 26 + 30 * len(pairs)
    parts = ['<svg class="latency" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" '
             'aria-label="ping round-trip time idle and under load">' % (label + width + 90, height),
             '<text x="%d" y="14">ping p50 idle (grey), p99 under load (orange), ms</text>' % label]
    for index, (row, idle, loaded) in enumerate(pairs):
        y = 24 + 30 * index
        name = "%s -> %s (%s)" % (row["host"], peer_label(row), row["network"])
        parts.append('<text x="4" y="%d">%s</text>' % (y + 14, escape(name)))
        for offset, value, colour in ((0, idle, "#999"), (11, loaded, "#e07b00")):
            if value is None:
                continue
            parts.append('<rect x="%d" y="%d" width="%.1f" height="10" fill="%s"><title>%s ms</title></rect>'
                         '<text x="%.1f" y="%d" font-size="10">%s</text>'
                         % (label, y + offset, max(1.0, width * value / top), colour, value,
                            label + max(1.0, width * value / top) + 4, y + offset + 9, value))
    return "".join(parts) + "</svg>"
