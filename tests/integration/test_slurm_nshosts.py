"""The audit drains the Slurm nodes it fails and resumes them once clean (fabric_slurm_drain), against a real Slurm:
Debian's slurmctld on a head namespace host and one slurmd per node namespace host (tests/utils/slurmbed.py), reached
over real SSH (the head is fabric_slurm_host, so its own scontrol does it).

The fault is real: a node's training link at MTU 1500 where the expectations say 9000 (NET-004). Check mode says
what it would drain and drains nothing; the second run changes nothing; a drain of someone else is never resumed nor
overwritten; a hostlist as a node name, a misspelt head, or more drains at once than allowed change nothing."""

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import COLLECTIONS_ROOT, REPO, recap
from nshosts import NamespaceHosts, sh
from slurmbed import SlurmBed

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (CI runs as root)")

PREFIX = "gfsl"
MGMT, TRAIN = 40, 41
TASK = "Drain the Slurm nodes with fail findings, resume the clean ones this collection drained"


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    work = tmp_path_factory.mktemp("slurm")
    hosts = NamespaceHosts(str(work / "hosts"), 3, prefix=PREFIX, mgmt_octet=MGMT, train_octet=TRAIN)
    hosts.up()
    slurm = SlurmBed(hosts, work / "slurm")
    try:
        slurm.up()
        yield hosts, slurm
    finally:
        slurm.down()
        hosts.down()


def write_inventory(hosts, slurm, path, **extra):
    group = dict(hosts.connection_vars(), **{
        "fabric_expectations": {"nics": [{"name": "eth1", "mtu": 9000}]},
        "fabric_slurm_drain": True,
        # templated, as inventories often name it: checked as delegate_to will see it
        "fabric_slurm_host": "{{ groups.heads[0] }}",
        "fabric_slurm_conf": slurm.conf,
        "fabric_slurm_drain_max_percent": 50,
    })
    group.update(extra)
    hostvars = hosts.hostvars()
    inventory = {"all": {"vars": group, "children": {
        "heads": {"hosts": {slurm.head: hostvars[slurm.head]}},
        "gpu": {"hosts": dict((n, hostvars[n]) for n in slurm.nodes)}}}}
    with open(str(path), "w") as handle:
        json.dump(inventory, handle, indent=1)
    return str(path)


def audit(env, inventory, tmp_path, *args):
    return subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "audit.yml"),
                           "-e", "fabric_report_dir=%s" % (tmp_path / "report"), "-e", "fabric_hosts=gpu"] + list(args),
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                          timeout=400, check=False)


def task_block(output, name=TASK):
    """The lines ansible-playbook printed for the task ``name`` (up to the next TASK or PLAY RECAP)."""
    lines, inside = [], False
    for line in output.splitlines():
        if line.startswith("TASK [") or line.startswith("PLAY RECAP"):
            inside = name in line
            continue
        if inside:
            lines.append(line)
    return "\n".join(lines)


def set_mtu(hosts, index, mtu):
    sh("ip", "-n", hosts.names[index - 1], "link", "set", "eth1", "mtu", str(mtu))


def test_a_failing_node_is_drained_with_its_rules_and_resumed_once_fixed(ansible_env, bed, tmp_path):
    hosts, slurm = bed
    first, second = slurm.nodes
    inventory = write_inventory(hosts, slurm, tmp_path / "inventory.json")
    set_mtu(hosts, 1, 1500)
    try:
        check = audit(ansible_env, inventory, tmp_path, "--check", "--diff")
        assert check.returncode == 2, check.stdout[-4000:] + check.stderr[-2000:]
        block = task_block(check.stdout)
        assert "changed: [%s -> %s(" % (first, slurm.head) in block, block
        assert "+%s: IDLE+DRAIN (gpuops.fabric: fail NET-004)" % first in block, block
        assert slurm.node(first) == ("IDLE", None) and slurm.node(second) == ("IDLE", None)  # check mode: nothing

        done = audit(ansible_env, inventory, tmp_path, "--diff")
        # the audit still fails on its finding (after the drain: the drain is not left out by the failure)
        assert done.returncode == 2, done.stdout[-4000:] + done.stderr[-2000:]
        assert "eth1 has MTU 1500, expected 9000" in done.stdout
        assert slurm.node(first) == ("IDLE+DRAIN", "gpuops.fabric: fail NET-004")
        assert slurm.node(second) == ("IDLE", None)
        assert "changed: [%s -> %s(" % (first, slurm.head) in task_block(done.stdout)

        again = audit(ansible_env, inventory, tmp_path)
        assert again.returncode == 2
        assert "ok: [%s -> %s(" % (first, slurm.head) in task_block(again.stdout), task_block(again.stdout)
        assert slurm.node(first) == ("IDLE+DRAIN", "gpuops.fabric: fail NET-004")

        # an administrator drains the other node for a reason of theirs: a clean audit leaves it so
        slurm.scontrol("update", "NodeName=%s" % second, "State=DRAIN", "Reason=bad DIMM, ticket 4711")
    finally:
        set_mtu(hosts, 1, 9000)

    fixed = audit(ansible_env, inventory, tmp_path, "--diff")
    assert fixed.returncode == 0, fixed.stdout[-4000:] + fixed.stderr[-2000:]
    block = task_block(fixed.stdout)
    assert "-%s: IDLE+DRAIN (gpuops.fabric: fail NET-004)" % first in block and "+%s: IDLE" % first in block, block
    assert slurm.settled(first) == ("IDLE", None)
    assert slurm.node(second) == ("IDLE+DRAIN", "bad DIMM, ticket 4711")

    clean = audit(ansible_env, inventory, tmp_path)
    assert clean.returncode == 0 and "ok: [%s -> %s(" % (first, slurm.head) in task_block(clean.stdout)
    assert slurm.node(second) == ("IDLE+DRAIN", "bad DIMM, ticket 4711")
    slurm.scontrol("update", "NodeName=%s" % second, "State=RESUME")
    assert slurm.settled(second) == ("IDLE", None)


def test_a_fault_on_more_nodes_than_allowed_drains_none(ansible_env, bed, tmp_path):
    hosts, slurm = bed
    inventory = write_inventory(hosts, slurm, tmp_path / "inventory.json")
    for index in (1, 2):
        set_mtu(hosts, index, 1500)
    try:
        done = audit(ansible_env, inventory, tmp_path)
    finally:
        for index in (1, 2):
            set_mtu(hosts, index, 9000)
    assert done.returncode == 2
    assert ("would drain 2 node(s) (%s, %s), and 2 would then be drained by this collection, more than 50%% of the 2 "
            "nodes Slurm lists (1;" % tuple(slurm.nodes)) in done.stdout
    # the audit's own verdict and the Slurm step's failure, both in the last message
    assert "the Slurm step failed: slurm_drain: would drain 2" in done.stdout
    assert "audit failed" in done.stdout or "fail finding(s)" in done.stdout
    for node in slurm.nodes:
        assert slurm.node(node) == ("IDLE", None)


@pytest.mark.parametrize("extra, message", [
    ({"fabric_slurm_host": "gfslhead"}, "fabric_slurm_host: 'gfslhead' is not a host of the inventory (nor localhost)"),
    ({"fabric_slurm_drain_max_percent": "all"}, "fabric_slurm_drain_max_percent: 'all' must be a percentage"),
])
def test_bad_settings_stop_before_any_host_is_contacted(ansible_env, bed, tmp_path, extra, message):
    hosts, slurm = bed
    set_mtu(hosts, 1, 1500)
    try:
        done = audit(ansible_env, write_inventory(hosts, slurm, tmp_path / "inventory.json", **extra), tmp_path)
    finally:
        set_mtu(hosts, 1, 9000)
    assert done.returncode == 2 and message in done.stdout, done.stdout[-3000:]
    assert "TASK [Gather topology facts]" not in done.stdout
    assert slurm.node(slurm.nodes[0]) == ("IDLE", None)


def test_a_hostlist_as_node_name_is_refused_not_expanded(ansible_env, bed, tmp_path):
    hosts, slurm = bed
    inventory = write_inventory(hosts, slurm, tmp_path / "inventory.json")
    with open(inventory) as handle:
        data = json.load(handle)
    data["all"]["children"]["gpu"]["hosts"][slurm.nodes[0]]["fabric_slurm_node_name"] = "%s[1-2]" % hosts.prefix
    with open(inventory, "w") as handle:
        json.dump(data, handle)
    set_mtu(hosts, 1, 1500)
    try:
        done = audit(ansible_env, inventory, tmp_path)
    finally:
        set_mtu(hosts, 1, 9000)
    assert done.returncode == 2
    assert "fabric_slurm_node_name: '%s[1-2]' is not one Slurm node name" % hosts.prefix in done.stdout
    assert "(host %s)" % slurm.nodes[0] in done.stdout
    assert "TASK [Gather topology facts]" not in done.stdout
    for node in slurm.nodes:
        assert slurm.node(node) == ("IDLE", None)
    assert recap(done.stdout, slurm.nodes[0])["ok"] == "0"


def test_a_failed_update_does_not_stop_the_others(bed, tmp_path):
    """The drain of one of two nodes fails (scontrol refuses it: a wrapper in front of the real scontrol turns down
    that one node's update, as slurmctld would a node it lost meanwhile): the other node is still drained (a drain is
    the safe side, each node stands alone), and the module fails naming the node and scontrol's words."""
    hosts, slurm = bed
    real = subprocess.run(["which", "scontrol"], capture_output=True, text=True, check=True).stdout.strip()
    folder = tmp_path / "bin"
    folder.mkdir()
    wrapper = folder / "scontrol"
    wrapper.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = NodeName=%s ] && { echo 'slurm_update error: Invalid "
                       "node name specified' >&2; exit 1; }; done\nexec %s \"$@\"\n" % (slurm.nodes[1], real))
    wrapper.chmod(0o755)
    args = {"ANSIBLE_MODULE_ARGS": {"drain": dict((n, ["NET-004"]) for n in slurm.nodes), "slurm_conf": slurm.conf}}
    env = dict(slurm.env, PYTHONPATH=COLLECTIONS_ROOT, PATH="%s:%s" % (folder, os.environ["PATH"]))
    try:
        done = subprocess.run(["nsenter", "--net=/run/netns/%s" % slurm.head, sys.executable, "-m",
                               "ansible_collections.gpuops.fabric.plugins.modules.slurm_drain"],
                              input=json.dumps(args), capture_output=True, text=True, timeout=120, check=False, env=env)
        result = json.loads(done.stdout)
        assert result["failed"] and result["drained"] == [slurm.nodes[0]], result
        assert result["failed_nodes"] == {slurm.nodes[1]: "drain failed (rc 1): slurm_update error: Invalid node name "
                                                          "specified"}
        assert result["msg"].startswith("slurm_drain: %s: drain failed (rc 1)" % slurm.nodes[1])
        assert result["msg"].endswith("the other changes stand (did: drain %s)" % slurm.nodes[0])
        assert slurm.node(slurm.nodes[0]) == ("IDLE+DRAIN", "gpuops.fabric: fail NET-004")
        assert slurm.node(slurm.nodes[1]) == ("IDLE", None)
    finally:
        slurm.scontrol("update", "NodeName=%s" % slurm.nodes[0], "State=RESUME", check=False)
    assert slurm.settled(slurm.nodes[0]) == ("IDLE", None)


def own_sysfs_playbook(folder):
    """An ansible-playbook for GPUOPS_FABRIC_PLAYBOOK that reads its node's own interfaces. slurmd keeps the machine's
    mount namespace (slurmbed.py), so its tasks see the machine's /sys: this mounts a sysfs of the task's network
    namespace in a mount namespace of its own, as ip netns exec does (the test bed's part; on a real node the audit
    reads /sys as it is)."""
    playbook = folder / "ansible-playbook"
    playbook.write_text("#!/bin/sh\nexec unshare --mount --propagation private sh -c 'mount -t sysfs sysfs /sys && "
                        "exec \"$0\" \"$@\"' %s \"$@\"\n" % os.path.join(os.path.dirname(sys.executable),
                                                                         "ansible-playbook"))
    playbook.chmod(0o755)
    return playbook


def test_node_local_audits_in_a_slurm_job_then_the_aggregate_drains(ansible_env, bed, tmp_path):
    """Issue 34 against the real Slurm: deploy/slurm/node-audit-sweep.sbatch runs the node-local audit (full profile)
    on every node of its allocation, one task per node, each writing its result to a shared folder; the aggregate
    over that folder drains the node with the planted fault (NET-004: MTU 1500 where 9000 is expected) through the
    head, as an audit from the controller would."""
    hosts, slurm = bed
    first, second = slurm.nodes
    shared = tmp_path / "results"
    shared.mkdir()
    node_inventory = tmp_path / "nodes.json"
    node_inventory.write_text(json.dumps({"all": {"vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "fabric_expectations": {"nics": [{"name": "eth1", "mtu": 9000}]},
        "fabric_node_results_dir": str(shared)}, "hosts": dict(
            (n, {"fabric_node_state_dir": str(tmp_path / "state" / n)}) for n in slurm.nodes)}}))
    playbook = own_sysfs_playbook(tmp_path)
    env = dict(ansible_env, SLURM_CONF=slurm.conf, GPUOPS_FABRIC_INVENTORY=str(node_inventory),
               GPUOPS_FABRIC_NODE_AUDIT=os.path.join(REPO, "deploy", "bin", "gpuops-fabric-node-audit"),
               GPUOPS_FABRIC_RESULTS=str(shared), GPUOPS_FABRIC_WINDOW="1", GPUOPS_FABRIC_PLAYBOOK=str(playbook))
    set_mtu(hosts, 1, 1500)
    try:
        job = subprocess.run(["nsenter", "--net=/run/netns/%s" % slurm.head, "sbatch", "--wait", "--nodes=2",
                              "--chdir=%s" % tmp_path, os.path.join(REPO, "deploy", "slurm", "node-audit-sweep.sbatch")],
                             env=env, capture_output=True, text=True, timeout=400, check=False)
    finally:
        set_mtu(hosts, 1, 9000)
    outputs = "".join(p.read_text() for p in tmp_path.glob("gpuops-fabric-sweep-*.out"))
    assert sorted(os.listdir(str(shared))) == ["%s.json" % n for n in sorted(slurm.nodes)], (
        job.stdout + job.stderr + outputs[-4000:])
    with open(str(shared / ("%s.json" % first))) as handle:
        result = json.load(handle)
    assert result["producer"] == {"mode": "node-local", "profile": "full"}
    assert any(f["id"] == "NET-004" and f["subject"] == "eth1" for f in result["findings"]), result["findings"]
    with open(str(shared / ("%s.json" % second))) as handle:
        assert not [f for f in json.load(handle)["findings"] if f["id"] == "NET-004"]

    inventory = write_inventory(hosts, slurm, tmp_path / "inventory.json")
    try:
        merged = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "aggregate.yml"),
                                 "-e", "fabric_hosts=gpu", "-e", "fabric_report_dir=%s" % (tmp_path / "merged"),
                                 "-e", json.dumps({"fabric_aggregate_paths": [str(shared)]})],
                                env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True,
                                text=True, timeout=400, check=False)
        assert merged.returncode == 2, merged.stdout[-4000:] + merged.stderr[-2000:]
        assert slurm.node(first) == ("IDLE+DRAIN", "gpuops.fabric: fail NET-004")
        assert slurm.node(second) == ("IDLE", None)
    finally:
        slurm.scontrol("update", "NodeName=%s" % first, "State=RESUME", check=False)
    assert slurm.settled(first) == ("IDLE", None)


def test_the_health_check_runs_the_passive_audit_within_its_limit(ansible_env, bed, tmp_path):
    """deploy/slurm/healthcheck.sh as slurmd's HealthCheckProgram (issue 34): slurmd runs it on each node, it runs the
    passive profile and finishes well inside the 60 s slurmd allows, the node with the planted fault drains itself
    (fabric_slurm_drain; scontrol on the head)."""
    hosts, slurm = bed
    first, second = slurm.nodes
    inventory = tmp_path / "inventory.json"
    group = dict(hosts.connection_vars(), **{
        "ansible_python_interpreter": sys.executable, "fabric_expectations": {"nics": [{"name": "eth1", "mtu": 9000}]},
        "fabric_slurm_drain": True, "fabric_slurm_host": slurm.head, "fabric_slurm_conf": slurm.conf,
        "fabric_slurm_drain_max_percent": 50})
    hostvars = hosts.hostvars()
    inventory.write_text(json.dumps({"all": {"vars": group, "hosts": dict(
        [(n, {"ansible_connection": "local", "fabric_node_state_dir": str(tmp_path / "state" / n)})
         for n in slurm.nodes] + [(slurm.head, hostvars[slurm.head])])}}))
    playbook = own_sysfs_playbook(tmp_path)
    check = tmp_path / "healthcheck"
    environment = dict((k, ansible_env[k]) for k in ("PATH", "ANSIBLE_COLLECTIONS_PATH"))
    environment.update(GPUOPS_FABRIC_INVENTORY=str(inventory), GPUOPS_FABRIC_PLAYBOOK=str(playbook),
                       GPUOPS_FABRIC_NODE_AUDIT=os.path.join(REPO, "deploy", "bin", "gpuops-fabric-node-audit"),
                       GPUOPS_FABRIC_LOG=str(tmp_path / "healthcheck.log"), SLURM_CONF=slurm.conf, HOME="/root")
    exports = "\n".join("export %s='%s'" % kv for kv in sorted(environment.items()))
    check.write_text("#!/bin/sh\n%s\nexec %s\n" % (exports, os.path.join(REPO, "deploy", "slurm", "healthcheck.sh")))
    check.chmod(0o755)
    with open(slurm.conf) as handle:
        conf = handle.read()
    set_mtu(hosts, 1, 1500)
    try:
        with open(slurm.conf, "a") as handle:
            handle.write("HealthCheckProgram=%s\nHealthCheckInterval=5\nHealthCheckNodeState=ANY\n" % check)
        slurm.scontrol("reconfigure")
        deadline = time.time() + 150
        while time.time() < deadline:
            log = (tmp_path / "healthcheck.log").read_text() if (tmp_path / "healthcheck.log").exists() else ""
            if log.count("== exit status") >= 2 and slurm.node(first)[0] == "IDLE+DRAIN":
                break
            time.sleep(2)
    finally:
        with open(slurm.conf, "w") as handle:
            handle.write(conf)
        slurm.scontrol("reconfigure", check=False)
        set_mtu(hosts, 1, 9000)
    try:
        assert "health check of %s" % first in log and "health check of %s" % second in log, log[-4000:]
        assert "ran past" not in log, log[-4000:]
        assert slurm.node(first) == ("IDLE+DRAIN", "gpuops.fabric: fail NET-004"), log[-4000:]
        assert slurm.node(second)[0] == "IDLE"
    finally:
        slurm.scontrol("update", "NodeName=%s" % first, "State=RESUME", check=False)
    assert slurm.settled(first) == ("IDLE", None)
