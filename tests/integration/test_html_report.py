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
    probed = str(tmp_path / "probed.html")
    with open(probed, "w") as handle:
        handle.write(page.replace("</body>", probe + "</body>"))
    dom = dump_dom(probed, tmp_path, "--virtual-time-budget=3000")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[-2000:]
    opened, colour = found.group(1).split(",", 1)
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
