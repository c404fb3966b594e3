"""The HTML report opened in a real browser: headless Chromium runs its script and shows the findings."""

import datetime
import os
import re
import subprocess

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import group_findings
from conftest import require_tool

EXPECT = {"gpu": {"width": 16}, "nics": [{"name": "ens*np0", "speed_mbps": 400000, "mtu": 9000}], "rdma": True}


def chromium(tmp_path, *args):
    browser = require_tool("chromium")
    # Flags that keep Chromium off the network and out of the sandbox it cannot set up as root.
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--user-data-dir=" + str(tmp_path / "profile")] + list(args)
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def dump_dom(path, tmp_path, *args):
    return chromium(tmp_path, *(list(args) + ["--dump-dom", "file://" + path]))


def probed(page, probe, tmp_path):
    """(the DOM as Chromium left it, the answer) of ``page`` with ``probe``, a script that leaves its answer in
    body's data-probe."""
    path = str(tmp_path / "probed.html")
    with open(path, "w") as handle:
        handle.write(page.replace("</body>", probe + "</body>"))
    text = dump_dom(path, tmp_path, "--virtual-time-budget=3000")
    found = re.search(r'data-probe="([^"]*)"', text)
    assert found, text[-2000:]
    return text, found.group(1)


def audited(roots, realdata):
    inputs = {
        "dgx8-broken": {"facts": gather(root=roots["dgx8-broken"]), "expectations": EXPECT},
        "hp-sl390": {"facts": gather(source="hwloc_xml",
                                     path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))},
        "a-healthy": {"facts": gather(root=roots["dgx8"])},
    }
    report, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert not errors
    return report


def test_failing_findings_are_in_the_rendered_page(roots, realdata, tmp_path):
    report = audited(roots, realdata)
    path = str(tmp_path / "report.html")
    with open(path, "w") as handle:
        handle.write(render_html(report))
    dom = dump_dom(path, tmp_path)
    fails = [f for f in report["findings"] if f["severity"] == "fail" and not f["waived"]]
    assert fails
    for finding in fails:
        assert finding["message"] in dom.replace("&gt;", ">").replace("&lt;", "<"), finding["message"]
    # The page's script ran in the browser: it counted the findings and the rows it shows.
    shown = re.search(r'<span id="shown">(\d+)</span>', dom)
    assert shown and int(shown.group(1)) == len([f for f in report["findings"] if not f["waived"]])
    rows = re.search(r'<span id="shown-rows">(\d+)</span>', dom)
    assert rows and int(rows.group(1)) == len(group_findings(report["findings"]))
    # one row per rule and host: dgx8-broken's eight GDR-002 subjects share one, listed in a closed <details>
    gdr = re.findall(r'<tr data-severity="fail" data-host="dgx8-broken" data-rule="GDR-002" data-count="(\d+)"', dom)
    assert gdr == [str(len([f for f in fails if f["host"] == "dgx8-broken" and f["id"] == "GDR-002"]))]
    assert int(gdr[0]) > 1 and '<details class="subjects"><summary>%s subjects</summary>' % gdr[0] in dom
    # hosts: most failures first, then by name; coloured by the worst severity
    hosts = re.findall(r'<tr class="worst-(\w+)" data-host="([\w-]+)"', dom)
    counts = dict((h["name"], h["counts"]["fail"]) for h in report["hosts"])
    assert [h for _worst, h in hosts] == sorted(counts, key=lambda h: (-counts[h], h))
    assert hosts[-1] == ("ok", "a-healthy") and hosts[0][0] == "fail"
    assert os.path.getsize(path) < 500000


def test_grouped_row_opens_as_one_and_colours_show(roots, realdata, tmp_path):
    """In the browser: opening a grouped row's subjects opens its messages too (the page's script), and the host
    table's colours are painted, the failing hosts' band above the healthy one's (a screenshot)."""
    report = audited(roots, realdata)
    page = render_html(report)
    probe = ("<script>document.addEventListener('DOMContentLoaded',function(){"
             "var row=document.querySelector('#findings tr[data-rule=\"GDR-002\"]');"
             "row.querySelector('details.subjects').open=true;"
             "setTimeout(function(){var m=row.querySelector('details.messages');"
             "document.body.setAttribute('data-probe',(m?m.open:'none')+','+"
             "getComputedStyle(document.querySelector('#hosts tbody tr td')).backgroundColor);},200);});</script>")
    opened, colour = probed(page, probe, tmp_path)[1].split(",", 1)
    assert opened == "true"  # the GDR-002 messages differ per subject: a second <details> that followed the first
    assert colour.replace(" ", "") == "rgb(253,228,231)"  # #fde4e7, the worst-fail row colour

    from PIL import Image
    path = str(tmp_path / "report.html")
    with open(path, "w") as handle:
        handle.write(page)
    shot = str(tmp_path / "shot.png")
    chromium(tmp_path, "--hide-scrollbars", "--window-size=1280,1400", "--screenshot=" + shot, "file://" + path)
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    pixels = image.load()
    bands = {"fail": (253, 228, 231), "ok": (230, 244, 230)}
    first = {}
    for y in range(height):
        for x in range(0, width, 4):
            for name, rgb in bands.items():
                if name not in first and pixels[x, y] == rgb:
                    first[name] = y
    assert set(first) == {"fail", "ok"}, first
    assert first["fail"] < first["ok"]


def test_the_pcie_pictures_hold_the_devices_of_the_facts_and_render(roots, realdata, tmp_path):
    """Each host's PCIe/NUMA tree in the page as the browser sees it: one box per GPU and NIC of the facts (and the
    bridges above them), the x8 GPU's link and the Gen3 x8 card's below their best with the finding ids on those
    boxes, the NCCL pairs drawn; in the rendered page no two boxes overlap and every label and finding id fits its box, beside each other (measured
    by Chromium in its own fonts); a screenshot shows the colours of a bad link, a healthy one and the pairs."""
    report = audited(roots, realdata)
    page = render_html(report)
    probe = ("<script>document.addEventListener('DOMContentLoaded',function(){"
             "document.querySelectorAll('.topologies details').forEach(function(d){d.open=true;});"
             "setTimeout(function(){var out=[];document.querySelectorAll('svg.topology').forEach(function(svg){"
             "var boxes=[],overlaps=0,overflows=0;svg.querySelectorAll('g').forEach(function(g){"
             "var r=g.querySelector('rect');if(!r)return;var b=r.getBoundingClientRect();"
             "var texts=[];g.querySelectorAll('text').forEach(function(t){var c=t.getBoundingClientRect();"
             "if(c.left<b.left-0.5||c.right>b.right+0.5)overflows++;"
             "texts.forEach(function(o){if(c.left<o.right-0.5&&o.left<c.right-0.5)overflows++;});texts.push(c);});"
             "boxes.forEach(function(o){if(b.left<o.right&&o.left<b.right&&b.top<o.bottom&&o.top<b.bottom)overlaps++;});"
             "boxes.push(b);});out.push(svg.dataset.host+':'+boxes.length+':'+overlaps+':'+overflows);});"
             "document.body.setAttribute('data-probe',out.join(' '));},300);});</script>")
    dom, found = probed(page, probe, tmp_path)
    measured = dict((p.split(":")[0], [int(v) for v in p.split(":")[1:]]) for p in found.split())
    assert sorted(measured) == sorted(report["topology"]) == ["a-healthy", "dgx8-broken", "hp-sl390"]
    for host, (boxes, overlaps, overflows) in measured.items():
        tree = report["topology"][host]
        bridges_and_numa = len(tree["bridges"]) + len(set(b["numa"] for b in tree["bridges"]))
        assert boxes == len(tree["devices"]) + bridges_and_numa, host
        assert overlaps == 0 and overflows == 0, (host, overlaps, overflows)

    for host, facts in (("dgx8-broken", gather(root=roots["dgx8-broken"])), ("a-healthy", gather(root=roots["dgx8"]))):
        svg = re.search(r'<svg class="topology"[^>]*data-host="%s".*?</svg>' % host, dom, re.S).group(0)
        drawn = dict((a, (k, s, f)) for a, k, s, f in re.findall(
            r'<g class="device[^"]*" data-address="([^"]+)" data-kind="([^"]+)" data-state="([^"]+)" '
            r'data-findings="([^"]*)"', svg))
        assert set(g["address"] for g in facts["gpus"]) | set(n["address"] for n in facts["nics"] if n["address"]) \
            <= set(drawn)
        assert len(re.findall(r'<path class="nccl"', svg)) == 1 + len(report["topology"][host]["pairs"])  # + legend
        if host == "dgx8-broken":
            assert drawn["0000:19:00.0"][1] == "below" and drawn["0000:19:00.0"][2].startswith("PCIE-001")
            assert drawn["0000:c1:00.0"][1] == "below" and "PCIE-005" in drawn["0000:c1:00.0"][2]
        else:
            assert set(s for _k, s, _f in drawn.values()) == {"ok", "unknown"}

    from PIL import Image
    broken = re.search(r'<svg class="topology"[^>]*data-host="dgx8-broken".*?</svg>', page, re.S).group(0)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    alone = str(tmp_path / "tree.html")
    with open(alone, "w") as handle:
        handle.write("<!DOCTYPE html><html><head><style>%s</style></head><body>%s</body></html>" % (style, broken))
    shot = str(tmp_path / "tree.png")
    chromium(tmp_path, "--hide-scrollbars", "--window-size=1900,800", "--screenshot=" + shot, "file://" + alone)
    image = Image.open(shot).convert("RGB")
    colours = {"below": (0xb0, 0x00, 0x20), "ok": (0x3a, 0x8a, 0x3a), "nccl": (0x24, 0x56, 0xc8)}
    counts = dict((name, 0) for name in colours)
    for pixel in image.getdata():
        for name, rgb in colours.items():
            if all(abs(a - b) < 12 for a, b in zip(pixel, rgb)):
                counts[name] += 1
    assert all(n > 50 for n in counts.values()), counts
