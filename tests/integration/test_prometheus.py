"""The audit's metrics as Prometheus users get them: promtool (Debian's prometheus package) checks the file the
audit writes, and a real prometheus-node-exporter's textfile collector, on loopback, serves it; a textfile folder
that is not one fails the audit before any host is contacted."""

import os
import socket
import subprocess
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import require_tool
from test_audit import load, playbook, write_inventory


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape(url, deadline_s=30):
    """The text of ``url`` once it answers (the exporter takes a moment to listen)."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return answer.read().decode("utf-8")
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def by_name(text):
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return found


@pytest.fixture(scope="module")
def audited(ansible_env, roots, tmp_path_factory):
    work = tmp_path_factory.mktemp("prometheus")
    textfile = work / "textfile"
    textfile.mkdir()
    inventory = write_inventory(work, {
        "healthy": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]},
        "broken": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8-broken"]},
    })
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(work / "r"),
                      "-e", "fabric_prometheus_textfile_dir=" + str(textfile), "-e", "fabric_audit_fail_on=never")
    assert result.returncode == 0, result.stdout[-3000:]
    return work, textfile, result


def test_promtool_accepts_what_the_audit_writes(audited):
    require_tool("promtool")
    work, textfile, _result = audited
    written = (textfile / "gpuops_fabric.prom").read_text()
    assert written == (work / "r" / "metrics.prom").read_text()
    assert sorted(os.listdir(str(textfile))) == ["gpuops_fabric.prom"]  # no temporary file left
    check = subprocess.run(["promtool", "check", "metrics"], input=written, capture_output=True, text=True,
                           check=False, timeout=60)
    assert check.returncode == 0 and not (check.stdout + check.stderr).strip(), check.stdout + check.stderr


def test_node_exporter_serves_the_audit(audited):
    exporter = require_tool("prometheus-node-exporter")
    work, textfile, _result = audited
    port = free_port()
    process = subprocess.Popen([exporter, "--collector.disable-defaults", "--collector.textfile",
                                "--collector.textfile.directory=" + str(textfile),
                                "--web.listen-address=127.0.0.1:%d" % port],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        served = by_name(scrape("http://127.0.0.1:%d/metrics" % port))
    finally:
        process.terminate()
        _out, said = process.communicate(timeout=30)
    assert served.get("node_textfile_scrape_error") == {frozenset(): 0.0}, said.decode("utf-8", "replace")[-2000:]
    written = by_name((textfile / "gpuops_fabric.prom").read_text())
    for name, samples in written.items():
        assert served.get(name) == samples, name  # every sample, as the audit wrote it
    report = load(str(work / "r"))
    fails = dict((h["name"], h["counts"]["fail"]) for h in report["hosts"])
    assert fails["broken"] > 0 and fails["healthy"] == 0
    for host, count in fails.items():
        assert served["gpuops_fabric_host_findings"][frozenset({("host", host), ("severity", "fail")})] == count
    # the broken node's GPU at x8 in an x16 slot, as an alert would see it
    narrow = [k for k, v in served["gpuops_fabric_pcie_link_width"].items() if ("host", "broken") in k and
              v < served["gpuops_fabric_pcie_link_max_width"][k]]
    assert ("kind", "gpu") in [kv for k in narrow for kv in k]


@pytest.mark.parametrize("folder", ["missing", "relative", "symlink"])
def test_a_textfile_folder_that_is_not_one_fails_before_any_host(ansible_env, roots, tmp_path, folder):
    inventory = write_inventory(tmp_path, {"healthy": {"ansible_connection": "local",
                                                       "fabric_facts_root": roots["dgx8"]}})
    value = str(tmp_path / "nowhere") if folder == "missing" else "textfile"
    if folder == "symlink":  # a link to a folder elsewhere (/etc, say): never written through
        (tmp_path / "elsewhere").mkdir()
        os.symlink(str(tmp_path / "elsewhere"), str(tmp_path / "link"))
        value = str(tmp_path / "link")
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"),
                      "-e", "fabric_prometheus_textfile_dir=" + value)
    assert result.returncode != 0
    said = "is a symbolic link" if folder == "symlink" else "is not"
    assert "fabric_prometheus_textfile_dir: %r %s" % (value, said) in result.stdout, result.stdout[-3000:]
    assert "TASK [Gather topology facts]" not in result.stdout
    assert not os.path.exists(str(tmp_path / "r"))
    assert not os.path.exists(str(tmp_path / "elsewhere" / "gpuops_fabric.prom"))


def test_a_directory_at_the_textfile_name_fails_before_any_host(ansible_env, roots, tmp_path):
    textfile = tmp_path / "textfile"
    (textfile / "gpuops_fabric.prom").mkdir(parents=True)
    inventory = write_inventory(tmp_path, {"healthy": {"ansible_connection": "local",
                                                       "fabric_facts_root": roots["dgx8"]}})
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"),
                      "-e", "fabric_prometheus_textfile_dir=" + str(textfile))
    assert result.returncode != 0
    assert "fabric_prometheus_textfile_dir: %r holds a directory named gpuops_fabric.prom" % str(textfile) in \
        result.stdout, result.stdout[-3000:]
    assert "TASK [Gather topology facts]" not in result.stdout


def test_check_mode_writes_the_reports_but_not_the_textfile(ansible_env, roots, tmp_path):
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    inventory = write_inventory(tmp_path, {"healthy": {"ansible_connection": "local",
                                                       "fabric_facts_root": roots["dgx8"]}})
    result = playbook(ansible_env, inventory, "--check", "-e", "fabric_report_dir=" + str(tmp_path / "r"),
                      "-e", "fabric_prometheus_textfile_dir=" + str(textfile))
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp_path / "r" / "metrics.prom").exists()
    assert os.listdir(str(textfile)) == []


def test_the_option_is_checked_like_the_variable(tmp_path):
    """The action's own check of O(prometheus_textfile_dir), which wins over the variable."""
    from ansible_collections.gpuops.fabric.plugins.action.validate import ActionModule
    check = ActionModule._textfile_dir  # pylint: disable=protected-access
    (tmp_path / "a-file").write_text("")
    good = str(tmp_path)
    assert check({"prometheus_textfile_dir": None}, {}) == (None, None)
    assert check({"prometheus_textfile_dir": None}, {"fabric_prometheus_textfile_dir": good}) == (good, None)
    assert check({"prometheus_textfile_dir": good + "/"}, {"fabric_prometheus_textfile_dir": "rel"}) == (good, None)
    for bad, why in (("rel", "is not an absolute path"), (str(tmp_path / "a-file"), "is not a directory"),
                     (str(tmp_path / "none"), "is not a directory"), ("/tmp/\0x", "is not an absolute path")):
        folder, error = check({"prometheus_textfile_dir": bad}, {})
        assert folder is None and error.startswith("prometheus_textfile_dir: %r %s" % (bad, why)), error
    folder, error = check({"prometheus_textfile_dir": None}, {"fabric_prometheus_textfile_dir": ["/x"]})
    assert folder is None and error.startswith("fabric_prometheus_textfile_dir: ['/x'] is not"), error
