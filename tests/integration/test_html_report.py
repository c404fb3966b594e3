"""The HTML report opened in a real browser: headless Chromium runs its script and shows the findings."""

import datetime
import os
import re
import subprocess

from ansible_collections.gpuops.fabric.plugins.module_utils._audit import run_audit
from ansible_collections.gpuops.fabric.plugins.module_utils._facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._report import render_html
from conftest import require_tool

EXPECT = {"gpu": {"width": 16}, "nics": [{"name": "ens*np0", "speed_mbps": 400000, "mtu": 9000}], "rdma": True}


def dump_dom(path, tmp_path):
    chromium = require_tool("chromium")
    # Flags that keep Chromium off the network and out of the sandbox it cannot set up as root.
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--user-data-dir=" + str(tmp_path / "profile"), "--dump-dom", "file://" + path]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_failing_findings_are_in_the_rendered_page(roots, realdata, tmp_path):
    inputs = {
        "dgx8-broken": {"facts": gather(root=roots["dgx8-broken"]), "expectations": EXPECT},
        "hp-sl390": {"facts": gather(source="hwloc_xml",
                                     path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))},
    }
    report, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00")
    assert not errors
    path = str(tmp_path / "report.html")
    with open(path, "w") as handle:
        handle.write(render_html(report))
    dom = dump_dom(path, tmp_path)
    fails = [f for f in report["findings"] if f["severity"] == "fail" and not f["waived"]]
    assert fails
    for finding in fails:
        assert finding["message"] in dom.replace("&gt;", ">").replace("&lt;", "<"), finding["message"]
    # The page's script ran in the browser: it counted the rows it shows.
    shown = re.search(r'<span id="shown">(\d+)</span>', dom)
    assert shown and int(shown.group(1)) == len([f for f in report["findings"] if not f["waived"]])
    assert os.path.getsize(path) < 500000
