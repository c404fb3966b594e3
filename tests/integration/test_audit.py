"""The audit playbook as users run it: demo inventory, policy errors, unreachable hosts, check mode."""

import hashlib
import json
import os
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def playbook(env, inventory, *extra):
    env = dict(env, ANSIBLE_STDOUT_CALLBACK="default")
    return subprocess.run(["ansible-playbook", "-i", inventory, "gpuops.fabric.audit"] + list(extra), env=env,
                          capture_output=True, text=True, timeout=600, cwd=REPO, check=False)


def load(report_dir):
    with open(os.path.join(report_dir, "report.json")) as handle:
        return json.load(handle)


def key(finding):
    return (finding["host"], finding["id"], finding["subject"])


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
    for name in ("report.json", "report.md", "junit.xml", "report.html"):
        assert os.path.getsize(os.path.join(first_dir, name)) > 0

    second = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + second_dir)
    assert second.returncode == 0
    assert sorted(map(key, load(second_dir)["findings"])) == sorted(map(key, report["findings"]))

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


def test_fail_policy_exits_non_zero(ansible_env, roots, tmp_path):
    inventory = write_inventory(tmp_path, {"broken": {"ansible_connection": "local",
                                                      "fabric_facts_root": roots["dgx8-broken"]}})
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"))
    assert result.returncode != 0
    assert "audit failed (fail_on=fail)" in result.stdout
    assert load(str(tmp_path / "r"))["summary"]["findings"]["fail"] > 0
    never = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "n"),
                     "-e", "fabric_audit_fail_on=never")
    assert never.returncode == 0


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


def test_bad_policy_fails_before_any_host_is_contacted(ansible_env, roots, tmp_path):
    inventory = write_inventory(
        tmp_path, {"healthy": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8"]}},
        {"fabric_waivers": [{"rule": "PCIE-042", "hosts": "*", "reason": "", "expires": "someday"}]})
    result = playbook(ansible_env, inventory, "-e", "fabric_report_dir=" + str(tmp_path / "r"))
    assert result.returncode != 0
    for message in ("fabric_waivers[0].rule: 'PCIE-042' is not a rule id",
                    "fabric_waivers[0].reason: '' must say why",
                    "fabric_waivers[0].expires: 'someday' is not a date"):
        assert message in result.stdout, result.stdout[-3000:]
    assert "TASK [Gather topology facts]" not in result.stdout
    assert not os.path.exists(str(tmp_path / "r"))
