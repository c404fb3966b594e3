"""The audit playbook as users run it: demo inventory, policy errors, unreachable hosts, check mode."""

import difflib
import hashlib
import json
import os
import re
import subprocess

import yaml
from ansible.release import __version__ as ANSIBLE_VERSION

from conftest import REPO, ansible_playbook
GOLDEN_DEMO = os.path.join(REPO, "tests", "fixtures", "golden_demo")
GOLDEN_FILES = ("report.json", "report.md", "junit.xml", "metrics.prom")
# the day the stored copy was made: waivers are judged against it (expired, days to the horizon), so the copy holds
# on any later day
GOLDEN_DAY = "2026-12-03"
# the ansible-core running this test (and, as test_ansible_core_range checks, the one it drives)
CORE = tuple(int(n) for n in ANSIBLE_VERSION.split(".")[:2])
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)")


def playbook(env, inventory, *extra):
    return ansible_playbook(env, inventory, "gpuops.fabric.audit", *extra)


def load(report_dir):
    with open(os.path.join(report_dir, "report.json")) as handle:
        return json.load(handle)


def key(finding):
    return (finding["host"] or "", finding["id"], finding["subject"])  # inventory findings have no host


def without_facts(report):
    """report.json with each node result's facts named by their keys only."""
    for node in report.get("nodes") or []:
        if isinstance(node.get("facts"), dict):
            node["facts"] = "<facts: %s>" % ", ".join(sorted(node["facts"]))
    return report


def tree_digest(path):
    digest = hashlib.sha256()
    for current, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(current, name)
            digest.update(full.encode())
            if not os.path.islink(full):
                with open(full, "rb") as handle:
                    digest.update(handle.read())
    return digest.hexdigest()


def test_demo_audit_twice_and_in_check_mode(ansible_env, roots, tmp_path):
    inventory = os.path.join(REPO, "demo", "inventory.yml")
    first_dir, second_dir, check_dir = (str(tmp_path / n) for n in ("first", "second", "check"))
    before = tree_digest(os.path.join(REPO, ".cache", "fixtures"))
    first = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + first_dir)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    # nothing the collection does is deprecated on this core (the suite runs on the oldest and the newest)
    assert "[DEPRECATION WARNING]" not in first.stdout + first.stderr, first.stderr[-3000:]
    report = load(first_dir)
    assert report["summary"]["hosts"] == 13 and report["summary"]["audited"] == 13
    active = dict((key(f), f) for f in report["findings"] if not f["waived"])
    assert ("dgx8-broken-handwritten", "PCIE-001", "0000:19:00.0") in active
    assert ("hp-sl390-3gpu-ib", "NUMA-001", "0000:11:00.0") in active
    waived = [f for f in report["findings"] if f["waived"]]
    assert [key(f) for f in waived] == [("hp-sl390-3gpu-ib", "NUMA-001", "0000:14:00.0")]
    expired = [f for f in report["findings"] if f.get("waiver_expired")]
    assert expired and all(f["host"] == "ibm-s822lc-p100" and not f["waived"] for f in expired)
    assert not [f for f in report["findings"] if f["host"] == "dgx8-handwritten"]
    for name in ("report.json", "report.md", "junit.xml", "report.html", "metrics.prom"):
        assert os.path.getsize(os.path.join(first_dir, name)) > 0

    # the second run leaves out the machine it runs on (its live sysfs differs between machines): the rest of the
    # reports is the stored copy, timestamps aside -- what a refactoring must leave unchanged
    second = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + second_dir,
                      "-e", "fabric_hosts=all:!this-machine", "-e", "fabric_audit_today=" + GOLDEN_DAY)
    assert second.returncode == 0
    assert sorted(map(key, load(second_dir)["findings"])) == sorted(
        key(f) for f in report["findings"] if f["host"] != "this-machine")
    for name in GOLDEN_FILES:
        with open(os.path.join(second_dir, name)) as handle:
            produced = handle.read()
        if name == "report.json":  # each node result's facts are the facts tests' (the rest is this report's)
            produced = json.dumps(without_facts(json.loads(produced)), indent=2) + "\n"
        # the checkout's own path appears in facts warnings (the demo's captures live under it)
        produced = TIMESTAMP.sub("<timestamp>", produced).replace(REPO, "<repo>")
        stored = os.path.join(GOLDEN_DEMO, name)
        if os.environ.get("GPUOPS_UPDATE_GOLDEN") == "1":  # after a deliberate change to the reports only
            with open(stored, "w") as handle:
                handle.write(produced)
        with open(stored) as handle:
            expected = handle.read()
        if produced != expected:
            diff = difflib.unified_diff(expected.splitlines(), produced.splitlines(), stored, name, lineterm="", n=1)
            raise AssertionError("%s differs from the stored copy:\n%s" % (name, "\n".join(list(diff)[:60])))

    # the same hosts audited in three --limit slices (as AWX slices a job), then merged by the aggregate: the same
    # findings, inventory-wide ones included, and the same hosts
    whole = load(second_dir)
    names = [h["name"] for h in whole["hosts"]]
    slices = [names[i::3] for i in range(3)]
    for index, part in enumerate(slices):
        sliced = playbook(ansible_env, inventory, "--limit", ",".join(part), "-e", "fabric_audit_today=" + GOLDEN_DAY,
                          "-e", "fabric_report_dir=" + str(tmp_path / "slices" / str(index)),
                          "-e", "fabric_audit_fail_on=never")
        assert sliced.returncode == 0, sliced.stdout[-3000:]
    merged_dir = str(tmp_path / "merged")
    merged = ansible_playbook(ansible_env, inventory, "gpuops.fabric.aggregate", "-e", "fabric_hosts=all:!this-machine",
                              "-e", json.dumps({"fabric_aggregate_paths": [str(tmp_path / "slices")]}), "-e",
                              "fabric_report_dir=" + merged_dir, "-e", "fabric_audit_today=" + GOLDEN_DAY)
    assert merged.returncode == 0, merged.stdout[-3000:] + merged.stderr[-3000:]
    aggregate = load(merged_dir)
    assert sorted(map(key, aggregate["findings"])) == sorted(map(key, whole["findings"]))
    # NCCLRUN-007 compares the NCCL logs of hosts in different slices
    assert any(f["id"] == "NCCLRUN-007" for f in aggregate["findings"])
    assert aggregate["outcomes"] == whole["outcomes"]
    assert [(h["name"], h["status"]) for h in aggregate["hosts"]] == [(h["name"], h["status"]) for h in whole["hosts"]]
    assert [n["host"] for n in aggregate["nodes"]] == names and aggregate["summary"] == whole["summary"]
    assert printed_findings(merged.stdout)[0] == printed_findings(second.stdout)[0].replace(second_dir, merged_dir)

    check = playbook(ansible_env, inventory, "--check", "-e", "fabric_report_dir=" + check_dir)
    assert check.returncode == 0
    assert "changed=1" not in check.stdout and "changed=0" in check.stdout
    assert sorted(map(key, load(check_dir)["findings"])) == sorted(map(key, report["findings"]))
    assert tree_digest(os.path.join(REPO, ".cache", "fixtures")) == before


def write_inventory(tmp_path, hosts, group_vars=None):
    path = tmp_path / "inventory.yml"
    group = dict({"ansible_python_interpreter": "{{ ansible_playbook_python }}"}, **(group_vars or {}))
    path.write_text(yaml.safe_dump({"all": {"vars": group, "hosts": hosts}}))
    return str(path)


def printed_findings(stdout):
    """The lines the "Show the findings" task printed: the JSON list of the default result format, or the block of
    lines of the YAML one."""
    shown = stdout.split("TASK [Show the findings]", 1)[1].split("\nTASK [", 1)[0]
    body = re.split(r"ok: \[[^\]\n]+\] => ", shown, 1)[1]  # the first audited host's, run once on the controller
    if body.lstrip().startswith("{"):
        return json.loads(body[:body.index("\n}\n") + 3])["msg"]
    block = body.split("msg: |-\n", 1)[1]
    return [line[8:] for line in block.split("\n\n", 1)[0].splitlines()]


def check_failing_output(result, report_dir):
    """Every fail finding printed on its own line before the run fails, no line over 300 characters, and the last
    word one line that says where the reports are."""
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import finding_line
    report = load(report_dir)
    fails = [f for f in report["findings"] if f["severity"] == "fail" and not f["waived"]]
    assert fails
    printed = printed_findings(result.stdout)
    assert printed[0].startswith("1 host(s) audited, 0 unreachable, 0 failed: %d fail" % len(fails)), printed[0]
    for f in fails:
        assert finding_line(f) in printed, finding_line(f)
    assert len(printed) == 1 + len([f for f in report["findings"] if not f["waived"]])
    too_long = [line for line in (result.stdout + result.stderr).splitlines() if len(line) > 300]
    assert not too_long, too_long
    assert len(result.stdout) < 20000  # the whole result is no longer dumped as one JSON line
    last = result.stdout.index("TASK [Fail when findings at or above fabric_audit_fail_on remain]")
    assert result.stdout.index("TASK [Show the findings]") < last
    # the message on one line: YAML folds the fatal result at 80 columns, but ansible-core 2.19 and later also print
    # it as an error, unfolded. Older cores print only the result: folded at spaces, the reports' path (one word)
    # stays whole on one line
    tail = result.stdout[last:]
    files = os.path.join(report_dir, "report.html") + ", report.md, report.json, junit.xml"
    if CORE < (2, 19) and "msg: " in tail:  # the YAML result format on an older core
        assert "audit failed (fail_on=fail)" in " ".join(line.strip() for line in tail.splitlines()), tail
        assert [line for line in tail.splitlines() if os.path.join(report_dir, "report.html") + "," in line], tail
    else:
        assert [line for line in tail.splitlines() if "audit failed (fail_on=fail)" in line and files in line], tail


def test_fail_policy_exits_non_zero(ansible_env, roots, tmp_path):
    inventory = write_inventory(tmp_path, {"broken": {"ansible_connection": "local",
                                                      "fabric_facts_root": roots["dgx8-broken"]}})
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"))
    assert result.returncode != 0
    assert "audit failed (fail_on=fail)" in result.stdout
    assert load(str(tmp_path / "r"))["summary"]["findings"]["fail"] > 0
    check_failing_output(result, str(tmp_path / "r"))
    # the YAML result format (scripts/demo.sh uses it): the same lines, one per finding, none folded
    yaml_run = playbook(dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default",
                             ANSIBLE_CALLBACK_RESULT_FORMAT="yaml"),
                        inventory, "-e", "fabric_report_dir=" + str(tmp_path / "y"))
    assert yaml_run.returncode != 0
    assert "msg: |-" in yaml_run.stdout
    check_failing_output(yaml_run, str(tmp_path / "y"))
    never = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "n"),
                     "-e", "fabric_audit_fail_on=never")
    assert never.returncode == 0
    assert "TASK [Show the findings]" in never.stdout and "audit failed" not in never.stdout
    assert os.path.exists(str(tmp_path / "n" / "report.html"))


def test_warn_policy_fails_on_warn_findings_only(ansible_env, roots, tmp_path):
    # the Westmere capture with its one fail (PCIE-003) waived: four NUMA-003 warnings remain
    inventory = write_inventory(
        tmp_path, {"westmere": {"ansible_connection": "local", "fabric_facts_root": roots["hwloc-westmere-qib-4numa"]}},
        {"fabric_waivers": [{"rule": "PCIE-003", "hosts": "westmere", "reason": "QLogic card, 4 lanes by design",
                             "expires": "2099-12-31"}]})
    fail = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "f"))
    counts = load(str(tmp_path / "f"))["summary"]["findings"]
    assert counts["fail"] == 0 and counts["warn"] > 0, counts
    assert fail.returncode == 0, fail.stdout[-2000:]
    warn = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "w"),
                    "-e", "fabric_audit_fail_on=warn")
    assert warn.returncode != 0
    printed = printed_findings(warn.stdout)
    assert len([line for line in printed if line.startswith("[warn] westmere NUMA-003 ")]) == counts["warn"]
    assert "audit failed (fail_on=warn): 0 fail, %d warn finding(s) on 1 host(s) (NUMA-003); reports: %s" % (
        counts["warn"], os.path.join(str(tmp_path / "w"), "report.html")) in warn.stdout


def test_unreachable_host_is_listed_and_the_rest_audited(ansible_env, roots, tmp_path):
    inventory = write_inventory(tmp_path, {
        "healthy": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]},
        # Nothing listens on loopback port 1: the connection is refused at once.
        "gone": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                 "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"},
    })
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"))
    report = load(str(tmp_path / "r"))
    statuses = dict((h["name"], h["status"]) for h in report["hosts"])
    assert statuses == {"healthy": "audited", "gone": "unreachable"}, result.stdout[-2000:]
    assert result.returncode == 0, result.stdout[-2000:]


def test_every_host_unreachable_still_gives_a_report(ansible_env, tmp_path):
    """No host answers: the controller's plays still run on the controller, the report names each host as
    unreachable, and the run fails (an exit 0 would read as a clean audit)."""
    gone = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
            "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"}
    inventory = write_inventory(tmp_path, {"gone1": dict(gone), "gone2": dict(gone)})
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"))
    report = load(str(tmp_path / "r"))
    statuses = dict((h["name"], h["status"]) for h in report["hosts"])
    assert statuses == {"gone1": "unreachable", "gone2": "unreachable"}, result.stdout[-2000:]
    assert printed_findings(result.stdout)[0].startswith("0 host(s) audited, 2 unreachable, 0 failed"), \
        result.stdout[-2000:]
    # a gate that reached no host has judged nothing: the run fails (unless fabric_audit_fail_on is never)
    assert result.returncode != 0
    assert "audit failed (fail_on=fail): no host could be audited (2 unreachable, 0 failed); reports: " + str(
        tmp_path / "r") in result.stdout, result.stdout[-2000:]
    never = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "n"),
                     "-e", "fabric_audit_fail_on=never")
    assert never.returncode == 0, never.stdout[-2000:]


def test_limit_narrows_the_audit(ansible_env, roots, tmp_path):
    """--limit audits the hosts it names, and only them: the controller's plays run (no localhost in the limit) and
    a host left out is neither contacted nor reported (it was reported as failed, or nothing ran at all)."""
    inventory = write_inventory(tmp_path, {
        "healthy": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]},
        "broken": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8-broken"]},
        "gone": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                 "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"},
    })
    result = playbook(ansible_env, inventory, "--limit", "healthy,broken", "-e", "fabric_report_dir=" +
                      str(tmp_path / "r"), "-e", "fabric_audit_fail_on=never")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "[gone]" not in result.stdout, result.stdout[-3000:]
    report = load(str(tmp_path / "r"))
    assert dict((h["name"], h["status"]) for h in report["hosts"]) == {"healthy": "audited", "broken": "audited"}
    assert report["summary"]["hosts"] == 2
    assert any(f["host"] == "broken" and f["id"] == "PCIE-001" for f in report["findings"])
    assert "2 host(s) audited" in printed_findings(result.stdout)[0]
    one = playbook(ansible_env, inventory, "--limit", "broken", "-e", "fabric_report_dir=" + str(tmp_path / "one"),
                   "-e", "fabric_audit_fail_on=fail")
    assert one.returncode != 0 and "PCIE-001" in one.stdout, one.stdout[-3000:]  # the fail policy still fails the run
    assert [h["name"] for h in load(str(tmp_path / "one"))["hosts"]] == ["broken"]


def test_bad_policy_fails_before_any_host_is_contacted(ansible_env, roots, tmp_path):
    inventory = write_inventory(
        tmp_path, {"healthy": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]}},
        {"fabric_waivers": [{"rule": "PCIE-042", "hosts": "*", "reason": "", "expires": "someday"}],
         "fabric_nccl_logs": [str(tmp_path / "job" / "nccl.*.log")],
         "fabric_audit_baseline": str(tmp_path / "last-week" / "report.json")})
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"))
    assert result.returncode != 0
    for message in ("fabric_waivers[0].rule: 'PCIE-042' is not a rule id",
                    "fabric_waivers[0].reason: '' must say why",
                    "fabric_waivers[0].expires: 'someday' is not a date",
                    "fabric_nccl_logs[0]: '%s' matches no file on the controller" % (tmp_path / "job" / "nccl.*.log"),
                    "fabric_audit_baseline: '%s' does not exist on the controller"
                    % (tmp_path / "last-week" / "report.json")):
        assert message in result.stdout, result.stdout[-3000:]
    assert "TASK [Gather topology facts]" not in result.stdout
    assert not os.path.exists(str(tmp_path / "r"))


def test_an_audit_against_an_earlier_report(ansible_env, roots, tmp_path):
    """Two audits of one node, the second with fabric_audit_baseline naming the first's report.json. The node is a
    copy of the hand-written healthy one; between the audits an hour passes on it (/proc/uptime) and its ens3np0
    flaps twice and counts CRC errors (its files edited, as the kernel would count)."""
    import shutil
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    inventory = write_inventory(tmp_path, {"node": {"ansible_connection": "local", "fabric_facts_root": root}})
    first = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "first"))
    assert first.returncode == 0, first.stdout[-3000:]
    earlier = load(str(tmp_path / "first"))
    assert earlier["counters"]["node"]["interfaces"]["ens3np0"]["carrier_changes"] == 2
    assert earlier["outcomes"]["node"]["STAB-001"]["status"] == "not_applicable"

    net = os.path.realpath(os.path.join(root, "sys", "class", "net", "ens3np0"))
    for name, value in (("carrier_changes", "6"), ("carrier_up_count", "3"), ("carrier_down_count", "3"),
                        ("statistics/rx_crc_errors", "40")):
        with open(os.path.join(net, name), "w") as handle:
            handle.write(value + "\n")
    with open(os.path.join(root, "proc", "uptime"), "w") as handle:
        handle.write("90000.00 1440000.00\n")
    second = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "second"),
                      "-e", "fabric_audit_baseline=" + str(tmp_path / "first" / "report.json"),
                      "-e", "fabric_audit_fail_on=never")
    assert second.returncode == 0, second.stdout[-3000:]
    report = load(str(tmp_path / "second"))
    assert report["baseline"] == [{"path": str(tmp_path / "first" / "report.json"),
                                   "generated_at": earlier["generated_at"], "hosts": 1, "usable": True}]
    found = dict(((f["id"], f["subject"]), f) for f in report["findings"] if f["id"].startswith("STAB-"))
    assert sorted(found) == [("STAB-001", "ens3np0"), ("STAB-002", "ens3np0")]
    assert found[("STAB-001", "ens3np0")]["evidence"]["per_hour"] == 2.0  # down twice (4 changes) in 3600 s
    assert found[("STAB-002", "ens3np0")]["evidence"]["errors"] == {"rx_crc_errors": 40}
    assert "[warn] node STAB-001 ens3np0" in second.stdout


def test_an_audit_that_reads_the_counters_twice(ansible_env, roots, tmp_path):
    """fabric_audit_window: the playbook reads the counters, waits, and reads them again; the stability rules judge
    what grew in between. The node is a copy of the hand-written healthy one whose files are edited while the
    playbook waits (as the kernel would count: a flap on ens3np0, 75 s of uptime, TCP segments sent again)."""
    import shutil
    import time
    root = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], root, symlinks=True)
    inventory = write_inventory(tmp_path, {"node": {"ansible_connection": "local", "fabric_facts_root": root}})
    command = ["ansible-playbook", "-i", inventory, "gpuops.fabric.audit", "-e", "fabric_audit_window=4",
               "-e", "fabric_report_dir=" + str(tmp_path / "r"), "-e", "fabric_audit_fail_on=never"]
    log = open(str(tmp_path / "out.log"), "w+")
    process = subprocess.Popen(command, env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), cwd=REPO,
                               stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while "TASK [Wait fabric_audit_window seconds]" not in open(log.name).read():
            assert process.poll() is None and time.time() < deadline, open(log.name).read()[-3000:]
            time.sleep(0.2)
        net = os.path.realpath(os.path.join(root, "sys", "class", "net", "ens3np0"))
        for name, value in (("carrier_changes", "4"), ("carrier_up_count", "2"), ("carrier_down_count", "2")):
            with open(os.path.join(net, name), "w") as handle:
                handle.write(value + "\n")
        with open(os.path.join(root, "proc", "uptime"), "w") as handle:
            handle.write("86475.00 1382400.00\n")
        with open(os.path.join(root, "proc", "net", "snmp")) as handle:
            snmp = handle.read()
        with open(os.path.join(root, "proc", "net", "snmp"), "w") as handle:
            handle.write(snmp.replace(" 60000000 1200 ", " 61000000 21200 "))
        assert process.wait(timeout=300) == 0, open(log.name).read()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    report = load(str(tmp_path / "r"))
    found = dict(((f["id"], f["subject"]), f) for f in report["findings"] if f["id"].startswith("STAB-"))
    assert sorted(found) == [("STAB-001", "ens3np0"), ("STAB-007", "tcp")], sorted(found)
    assert "went down 1 time(s) in the 75 s since the first reading" in found[("STAB-001", "ens3np0")]["message"]
    assert found[("STAB-007", "tcp")]["evidence"]["retransmit_percent"] == 2.0
    # this report's counters are the second reading's: the next audit's baseline
    assert report["counters"]["node"]["uptime_s"] == 86475.0


def test_the_aggregate_names_what_it_leaves_out(ansible_env, roots, tmp_path):
    """The aggregate over an audit's report.json and a folder of node results, some of them bad: each bad one is a
    warning naming its file and why, the rest are judged, a host without a result is failed; wrong settings stop it
    before anything is read."""
    inventory = write_inventory(tmp_path, {
        "healthy": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]},
        "broken": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8-broken"]},
        "later": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]},
    })
    audit = playbook(ansible_env, inventory, "--limit", "healthy,broken", "-e", "fabric_audit_fail_on=never",
                     "-e", "fabric_report_dir=" + str(tmp_path / "audit"))
    assert audit.returncode == 0, audit.stdout[-3000:]
    nodes = dict((n["host"], n) for n in load(str(tmp_path / "audit"))["nodes"])
    results = tmp_path / "results"
    results.mkdir()
    (results / "cut.json").write_text(json.dumps(nodes["healthy"])[:3000])
    (results / "stale.json").write_text(json.dumps(dict(nodes["broken"], generated_at="2020-01-01T00:00:00Z")))
    (results / "stranger.json").write_text(json.dumps(dict(nodes["broken"], host="stranger", findings=[
        dict(f, host="stranger") for f in nodes["broken"]["findings"]])))
    merged = ansible_playbook(ansible_env, inventory, "gpuops.fabric.aggregate", "-e", json.dumps(
        {"fabric_aggregate_paths": [str(tmp_path / "audit" / "report.json"), str(results)]}),
        "-e", "fabric_report_dir=" + str(tmp_path / "merged"))
    output = merged.stdout + merged.stderr
    assert merged.returncode == 2, output[-3000:]  # broken's fail findings fail the run, as after an audit
    flat = "".join(output.split())  # a warning is wrapped at the terminal's width, a long path inside a word
    for name, why in (("cut.json", "not JSON, or cut short"), ("stale.json", "stale: generated_at 2020-01-01"),
                      ("stranger.json", "host stranger is not in the inventory")):
        said = "node result left out: %s: %s" % (results / name, why)
        assert "".join(said.split()) in flat, (said, output[-3000:])
    report = load(str(tmp_path / "merged"))
    assert dict((h["name"], h["status"]) for h in report["hosts"]) == {
        "healthy": "audited", "broken": "audited", "later": "failed"}
    assert any(f["host"] == "broken" and f["id"] == "PCIE-001" for f in report["findings"])
    assert report["sources"][0] == {"host": "broken", "source": str(tmp_path / "audit" / "report.json") + " (nodes[0])"}

    for extra, said in ((["-e", json.dumps({"fabric_aggregate_paths": [str(tmp_path / "nowhere")]})],
                         "does not exist on the controller"),
                        ([], "fabric_aggregate_paths: None: name the node results to merge"),
                        (["-e", "fabric_aggregate_paths=" + str(results)], "fabric_aggregate_paths: '%s' must be a "
                         "list" % results),
                        (["-e", json.dumps({"fabric_aggregate_paths": [str(results)]}), "-e",
                          "fabric_aggregate_max_age_hours=0"], "fabric_aggregate_max_age_hours: '0' must be")):
        refused = ansible_playbook(ansible_env, inventory, "gpuops.fabric.aggregate", "-e",
                                   "fabric_report_dir=" + str(tmp_path / "refused"), *extra)
        assert refused.returncode != 0 and said in refused.stdout, refused.stdout[-2000:]
        assert not os.path.exists(str(tmp_path / "refused"))
