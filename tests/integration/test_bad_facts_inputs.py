"""Hostile facts inputs and bad policy through the real audit playbook, many hosts in one run: each bad input is
named on its own host (reported failed, with the path and why), never a traceback, a hang or a blown-up
controller, and the healthy host beside them is audited as usual. Inputs that only hold odd values (a 400-digit
NIC speed) are read with a warning and audited.

The hostile files are made here (hand-written); the healthy node and the copy with planted values come from
the hand-written dgx8 tree (tests/fixtures/handwritten)."""

import json
import os
import shutil
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _audit(env, tmp_path, hosts, *extra):
    inventory = tmp_path / "inventory.yml"
    group = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
             "fabric_audit_fail_on": "never"}
    inventory.write_text(yaml.safe_dump({"all": {"vars": group, "hosts": hosts}}))
    return subprocess.run(["ansible-playbook", "-i", str(inventory), "gpuops.fabric.audit", "--forks", "8",
                           "-e", "fabric_report_dir=%s" % (tmp_path / "report")] + list(extra),
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                          timeout=600, cwd=REPO, check=False)


def _hostile_files(folder):
    """{name: path} of files no capture should ever be."""
    folder.mkdir()
    paths = {}
    fifo = folder / "fifo.xml"
    os.mkfifo(str(fifo))
    paths["fifo"] = str(fifo)
    paths["directory"] = str(folder)
    deep = folder / "deep.xml"
    deep.write_text('<?xml version="1.0"?><topology version="2.0">' + "<object type=\"Group\">" * 20000 +
                    "</object>" * 20000 + "</topology>")
    paths["deep"] = str(deep)
    laughs = folder / "laughs.xml"
    entities = ['<!ENTITY a0 "lol">'] + ['<!ENTITY a%d "%s">' % (i, ("&a%d;" % (i - 1)) * 10) for i in range(1, 10)]
    laughs.write_text('<?xml version="1.0"?>\n<!DOCTYPE topology [%s]>\n<topology>&a9;</topology>'
                      % "".join(entities))
    paths["laughs"] = str(laughs)
    junk = folder / "junk.xml"
    junk.write_bytes(bytes(range(256)) * 64)
    paths["junk"] = str(junk)
    empty = folder / "empty.xml"
    empty.write_text("")
    paths["empty"] = str(empty)
    root_fifo = folder / "root-fifo"
    os.mkfifo(str(root_fifo))
    paths["root-fifo"] = str(root_fifo)
    root_file = folder / "root-file"
    root_file.write_text("not a tree\n")
    paths["root-file"] = str(root_file)
    paths["missing"] = str(folder / "no-such-capture")
    return paths


# host: (host vars builder, text the failure reason must hold)
CASES = {
    "hwloc-fifo": ({"fabric_facts_source": "hwloc_xml", "fabric_facts_path": "fifo"}, "fifo.xml"),
    "hwloc-directory": ({"fabric_facts_source": "hwloc_xml", "fabric_facts_path": "directory"}, "hostile"),
    "hwloc-deep": ({"fabric_facts_source": "hwloc_xml", "fabric_facts_path": "deep"}, "deep.xml"),
    "hwloc-laughs": ({"fabric_facts_source": "hwloc_xml", "fabric_facts_path": "laughs"}, "laughs.xml"),
    "hwloc-junk": ({"fabric_facts_source": "hwloc_xml", "fabric_facts_path": "junk"}, "junk.xml"),
    "hwloc-empty": ({"fabric_facts_source": "hwloc_xml", "fabric_facts_path": "empty"}, "empty.xml"),
    "nccl-fifo": ({"fabric_facts_source": "nccl_xml", "fabric_facts_path": "fifo"}, "fifo.xml"),
    "nccl-deep": ({"fabric_facts_source": "nccl_xml", "fabric_facts_path": "deep"}, "deep.xml"),
    "nccl-laughs": ({"fabric_facts_source": "nccl_xml", "fabric_facts_path": "laughs"}, "laughs.xml"),
    "nccl-junk": ({"fabric_facts_source": "nccl_xml", "fabric_facts_path": "junk"}, "junk.xml"),
    "sysfs-root-fifo": ({"fabric_facts_root": "root-fifo"}, "root-fifo"),
    "sysfs-root-file": ({"fabric_facts_root": "root-file"}, "root-file"),
    "sysfs-root-missing": ({"fabric_facts_root": "missing"}, "no-such-capture"),
}


@pytest.fixture(scope="module")
def hostile_run(ansible_env, roots, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bad-facts")
    paths = _hostile_files(tmp_path / "hostile")
    # A copy of the healthy node with a 400-digit speed and an MTU of 10**30 planted: odd values, not a bad file.
    odd = tmp_path / "odd-node"
    shutil.copytree(roots["dgx8"], str(odd), symlinks=True)
    net = odd / "sys" / "class" / "net" / "ens1np0"
    speed, mtu = os.path.realpath(str(net / "speed")), os.path.realpath(str(net / "mtu"))
    with open(speed, "w") as handle:
        handle.write("9" * 400 + "\n")
    with open(mtu, "w") as handle:
        handle.write(str(10 ** 30) + "\n")
    hosts = {"good-node": {"fabric_facts_root": roots["dgx8"]}, "odd-node": {"fabric_facts_root": str(odd)}}
    for host, (hostvars, _expected) in CASES.items():
        hosts[host] = dict((k, paths.get(v, v)) for k, v in hostvars.items())
        if "fabric_facts_root" not in hosts[host]:
            hosts[host]["fabric_facts_root"] = "/"
    result = _audit(ansible_env, tmp_path, hosts)
    with open(str(tmp_path / "report" / "report.json")) as handle:
        report = json.load(handle)
    return result, report


def test_the_audit_finishes_and_reports_every_host(hostile_run):
    result, report = hostile_run
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    statuses = dict((h["name"], h["status"]) for h in report["hosts"])
    assert statuses["good-node"] == "audited" and statuses["odd-node"] == "audited"
    assert sorted(h for h, s in statuses.items() if s == "failed") == sorted(CASES)


@pytest.mark.parametrize("host", sorted(CASES))
def test_each_hostile_input_is_named_on_its_host(hostile_run, host):
    _result, report = hostile_run
    entry = [h for h in report["hosts"] if h["name"] == host][0]
    assert entry["status"] == "failed"
    assert CASES[host][1] in (entry.get("reason") or ""), entry


def test_odd_values_are_warned_and_audited(hostile_run):
    result, report = hostile_run
    assert not [f for f in report["findings"] if f["host"] == "odd-node" and "internal error" in f["subject"]]
    odd = [h for h in report["hosts"] if h["name"] == "odd-node"][0]
    planted = [w for w in odd["facts_warnings"] if "ens1np0/speed" in w or "ens1np0/mtu" in w]
    assert len(planted) == 2 and all("(400 characters)" in w or "is outside" in w for w in planted), planted
    assert "odd-node: 2 warning(s) reading its facts" in " ".join((result.stdout + result.stderr).split())
    good = [h for h in report["hosts"] if h["name"] == "good-node"][0]
    assert good["facts_warnings"] == []


# Bad policy: every host's error in one validate run, before any host is contacted.
POLICY = {
    "waiver-list-rule": ({"fabric_waivers": [{"rule": ["PCIE-001"], "hosts": "*", "reason": "x",
                                              "expires": "2027-01-01"}]}, "fabric_waivers[0].rule"),
    "waiver-no-expiry": ({"fabric_waivers": [{"rule": "PCIE-001", "hosts": "*", "reason": "x"}]},
                         "fabric_waivers[0].expires"),
    "waiver-bad-date": ({"fabric_waivers": [{"rule": "PCIE-001", "hosts": "*", "reason": "x",
                                             "expires": "next year"}]}, "'next year'"),
    "waiver-unknown-rule": ({"fabric_waivers": [{"rule": "PCIE-999", "hosts": "*", "reason": "x",
                                                 "expires": "2027-01-01"}]}, "PCIE-999"),
    "waiver-not-list": ({"fabric_waivers": "PCIE-001"}, "fabric_waivers"),
    "expect-width": ({"fabric_expectations": {"gpu": {"width": 7}}}, "fabric_expectations.gpu.width: 7"),
    "expect-unknown": ({"fabric_expectations": {"gpus": {}}}, "fabric_expectations.gpus"),
    "horizon": ({"fabric_audit_waiver_horizon_days": "soon"}, "fabric_audit_waiver_horizon_days: 'soon'"),
}


def test_bad_policy_named_per_host_before_any_host(ansible_env, roots, tmp_path):
    hosts = dict((h, dict(v, fabric_facts_root=roots["dgx8"])) for h, (v, _e) in POLICY.items())
    hosts["good-node"] = {"fabric_facts_root": roots["dgx8"]}
    result = _audit(ansible_env, tmp_path, hosts)
    assert result.returncode != 0
    out = result.stdout
    for host, (_vars, expected) in sorted(POLICY.items()):
        lines = [line for line in out.replace("\\n", "\n").splitlines() if expected in line and host in line]
        assert lines, (host, expected, out[-3000:])
    assert "TASK [Gather topology facts]" not in out  # no host contacted
    assert not (tmp_path / "report").exists()
