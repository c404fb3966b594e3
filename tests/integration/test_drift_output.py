"""gpuops.fabric.drift on a node whose network files were edited by hand: the DRIFT-001 lines are printed, one per
file, before the run fails with one line that says where the reports are."""

import os
import subprocess

from test_audit import load, printed_findings
from test_network_role import REPO, inventory, play


def test_drift_lines_are_printed_before_the_run_fails(ansible_env, roots, tmp_path):
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import finding_line
    inv = inventory(tmp_path, roots, backend="networkd")
    assert play(ansible_env, inv).returncode == 0
    netdir = tmp_path / "node-b" / "etc" / "systemd" / "network"
    (netdir / "60-gpuops-bond1.network").write_text((netdir / "60-gpuops-bond1.network").read_text()
                                                    .replace("MTUBytes=9000", "MTUBytes=1500"))
    report_dir = str(tmp_path / "report")
    textfile = tmp_path / "textfile"  # node_exporter's: the drift run's findings are not the audit's
    textfile.mkdir()
    drift = subprocess.run(["ansible-playbook", "-i", inv, "gpuops.fabric.drift", "-e", "fabric_report_dir=" + report_dir,
                            "-e", "fabric_prometheus_textfile_dir=" + str(textfile)],
                           env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                           timeout=300, cwd=REPO, check=False)
    assert drift.returncode != 0
    assert os.listdir(str(textfile)) == []
    drifted = [f for f in load(report_dir)["findings"] if f["id"] == "DRIFT-001"]
    assert [(f["host"], f["subject"]) for f in drifted] == [("node-b", "/etc/systemd/network/60-gpuops-bond1.network")]
    printed = printed_findings(drift.stdout)
    for f in drifted:
        assert finding_line(f) in printed
    assert [line for line in drift.stdout.splitlines() if len(line) > 300] == []
    tail = drift.stdout[drift.stdout.index("TASK [Fail when a node drifted"):]
    assert "audit failed (fail_on=fail)" in tail and "(DRIFT-001)" in tail
    assert os.path.join(report_dir, "report.html") in tail
    # --limit: node-a alone has not drifted, and node-b (left out) is neither checked nor reported
    limited_dir = str(tmp_path / "limited")
    limited = subprocess.run(["ansible-playbook", "-i", inv, "gpuops.fabric.drift", "--limit", "node-a",
                              "-e", "fabric_report_dir=" + limited_dir],
                             env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                             timeout=300, cwd=REPO, check=False)
    assert limited.returncode == 0, limited.stdout[-3000:]
    assert [h["name"] for h in load(limited_dir)["hosts"]] == ["node-a"]
    assert "[node-b]" not in limited.stdout
