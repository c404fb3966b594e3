"""site.yml on hosts whose / is a directory of the test (the hand-written node's facts): a new cluster is
configured (network files, /etc/nccl.conf) and audited; a repeat run changes nothing; a bad NCCL setting stops
the run before any host is touched."""

import os

import yaml

from conftest import REPO, ansible_playbook, fact_reads as reads, recap, tree_hash


def inventory(tmp_path, roots, nccl_env=None, host_vars=None):
    hosts = {}
    for index, name in enumerate(("node-a", "node-b"), 1):
        (tmp_path / name / "etc" / "netplan").mkdir(parents=True, exist_ok=True)
        hosts[name] = {"fabric_facts_root": roots["dgx8"], "fabric_network_root": str(tmp_path / name),
                       "fabric_nccl_root": str(tmp_path / name), "fabric_host_index": index}
        hosts[name].update((host_vars or {}).get(name, {}))
    group = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "fabric_network_backend": "netplan",
        "fabric_networks": {"training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 300, "mtu": 9000}},
        "fabric_bonds": {"bond1": {"members": ["ens1np0", "ens2np0"], "mode": "802.3ad"}},
        "fabric_attachments": {"training": "bond1"},
        "fabric_nccl_mode": "tcp",
        "fabric_nccl_env": nccl_env or {},
        "fabric_audit_fail_on": "never",
        "fabric_report_dir": str(tmp_path / "report"),
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"vars": group, "hosts": hosts}}))
    return str(path)


def site(env, inventory_path, *args):
    return ansible_playbook(env, inventory_path, os.path.join(REPO, "site.yml"), *args)


def planned(stdout):
    """How many network_intent tasks of a run planned the network (site.yml's pre-flight, the network role's)."""
    count = 0
    for section in stdout.split("\nTASK [")[1:]:
        title, body = section.split("]", 1)
        if "network intent" in title and "Validate" in title:
            count += "ok: [" in body or "changed: [" in body
    return count


def test_new_cluster_then_repeat(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots)
    first = site(ansible_env, inv)
    assert first.returncode == 0, first.stdout[-4000:]
    assert recap(first.stdout, "node-a")["changed"] == "2"  # the netplan file and /etc/nccl.conf
    # bond1.300 did not exist before the run: the pre-flight took it from the plan
    assert "NCCL_SOCKET_IFNAME==bond1.300" in (tmp_path / "node-a" / "etc" / "nccl.conf").read_text()
    assert "bond1.300:" in (tmp_path / "node-b" / "etc" / "netplan" / "60-gpuops-fabric.yaml").read_text()
    assert (tmp_path / "report" / "report.json").exists()
    again = site(ansible_env, inv, "-v")
    assert again.returncode == 0
    assert recap(again.stdout, "node-a")["changed"] == "0" and recap(again.stdout, "node-b")["changed"] == "0"
    # nothing changed: the node is read once, by the pre-flight; the network role, the nccl role and the audit keep it
    assert reads(again.stdout, "node-a") == [True, False, False, False], again.stdout[-3000:]
    # the plan is made once, by the pre-flight; the network role writes that plan and the nccl role counts it
    assert planned(first.stdout) == planned(again.stdout) == 1, again.stdout[-3000:]


def test_facts_are_read_again_where_a_role_changed_the_host(ansible_env, roots, tmp_path):
    """node-a's network files change (so its nccl role and audit read it again); node-b already has them and gets
    only a new /etc/nccl.conf (so only its audit reads it again)."""
    inv = inventory(tmp_path, roots)
    assert site(ansible_env, inv).returncode == 0
    (tmp_path / "node-a" / "etc" / "netplan" / "60-gpuops-fabric.yaml").unlink()
    (tmp_path / "node-b" / "etc" / "nccl.conf").unlink()
    again = site(ansible_env, inv, "-v")
    assert again.returncode == 0, again.stdout[-4000:]
    assert recap(again.stdout, "node-a")["changed"] == "1" and recap(again.stdout, "node-b")["changed"] == "1"
    assert reads(again.stdout, "node-a") == [True, False, True, True]
    assert reads(again.stdout, "node-b") == [True, False, False, True]


def test_bad_nccl_setting_stops_before_any_host_is_touched(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, nccl_env={"nccl_debug": "WARN"})
    before = tree_hash(tmp_path / "node-a")
    result = site(ansible_env, inv)
    assert result.returncode != 0
    assert "fabric_nccl_env.nccl_debug: not an NCCL variable name" in result.stdout
    assert tree_hash(tmp_path / "node-a") == before
    assert not (tmp_path / "report").exists()


def test_one_bad_host_stops_the_run_before_any_host_is_touched(ansible_env, roots, tmp_path):
    """A bad NCCL setting on node-b only: the pre-flight fails node-b, and node-a is not configured either."""
    inv = inventory(tmp_path, roots, host_vars={"node-b": {"fabric_nccl_env": {"nccl_debug": "WARN"}}})
    before = dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b"))
    result = site(ansible_env, inv)
    assert result.returncode != 0
    assert "fabric_nccl_env.nccl_debug: not an NCCL variable name" in result.stdout
    assert dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b")) == before
    assert "PLAY [Configure the networks]" not in result.stdout
    assert not (tmp_path / "report").exists()


def test_one_unreadable_host_stops_the_run(ansible_env, roots, tmp_path):
    """node-b's facts cannot be read (its capture is missing): nothing is configured on node-a."""
    inv = inventory(tmp_path, roots, host_vars={"node-b": {"fabric_facts_source": "hwloc_xml",
                                                           "fabric_facts_path": str(tmp_path / "missing.xml")}})
    before = tree_hash(tmp_path / "node-a")
    result = site(ansible_env, inv)
    assert result.returncode != 0
    assert tree_hash(tmp_path / "node-a") == before
    assert "PLAY [Configure the networks]" not in result.stdout


def test_every_setting_is_checked_before_any_host_is_touched(ansible_env, roots, tmp_path):
    """One site.yml run with every role on (tuning and probes too) and a bad value of each kind the pre-flight must
    catch, on one host or the other: the run stops in the first play, each message names the key, the host and the
    value, and neither host's files changed (no network file, no tuning, no /etc/nccl.conf, no report)."""
    bad = {
        "node-a": {"fabric_tuning_sysctl_file": "/etc/passwd", "fabric_tuning_interfaces": ["ens9np0"],
                   "fabric_probe_duration": "five", "fabric_slurm_drain": "maybe"},
        "node-b": {"fabric_probe_repeat": 0, "fabric_probe_max_retransmit_percent": 1000,
                   "fabric_probe_server_lifetime": 1, "fabric_probes": ["jumbo", "thruput"]},
    }
    for name in ("node-a", "node-b"):
        bad[name].update(fabric_tuning_enabled=True, fabric_tuning_root=str(tmp_path / name),
                         fabric_probes_enabled=True)
        (tmp_path / name / "etc" / "sysctl.d").mkdir(parents=True)
    inv = inventory(tmp_path, roots, host_vars=bad)
    before = dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b"))
    result = site(ansible_env, inv)
    assert result.returncode != 0
    for message in (
            "node-a: fabric_tuning_sysctl_file: '/etc/passwd' is not in /etc/sysctl.d/",
            "node-a: fabric_tuning_interfaces: 'ens9np0' is not an interface of this host",
            "node-a: fabric_probe_duration: 'five' must be a whole number (1..3600)",
            "node-a: fabric_slurm_drain: 'maybe' must be true or false",
            "node-b: fabric_probe_repeat: 0 must be a whole number (1..10)",
            "node-b: fabric_probe_max_retransmit_percent: 1000 must be a percentage (0..100)",
            "node-b: fabric_probe_server_lifetime: 1 must be a whole number (3..86400)",
            "node-b: fabric_probes: ['jumbo', 'thruput'] holds 'thruput', not among jumbo, throughput, latency, nccl"):
        assert message in result.stdout, (message, result.stdout[-5000:])
    assert dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b")) == before
    assert "PLAY [Configure the networks]" not in result.stdout
    assert not (tmp_path / "report").exists()


def test_a_run_wide_setting_given_differently_stops_the_run(ansible_env, roots, tmp_path):
    """The probes are planned once for the run: a duration given differently on the two hosts would silently be
    one host's. The pre-flight names the setting and both values, and nothing is touched."""
    inv = inventory(tmp_path, roots, host_vars={"node-a": {"fabric_probe_duration": 5},
                                                "node-b": {"fabric_probe_duration": 60}})
    before = dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b"))
    result = site(ansible_env, inv)
    assert result.returncode != 0
    assert ("fabric_probe_duration: a run-wide setting given differently on the hosts of this run (5.0 on node-a; "
            "60.0 on node-b)") in result.stdout, result.stdout[-3000:]
    assert dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b")) == before


def playbook(env, inventory_path, name, *extra):
    return ansible_playbook(env, inventory_path, os.path.join(REPO, "playbooks", name), *extra)


def test_the_tuning_playbook_checks_every_host_first(ansible_env, roots, tmp_path):
    """node-b names a tuning interface it does not have: the tuning playbook's pre-flight (facts gathered, then every
    host's settings) stops before node-a is tuned, naming the host, the key and the value."""
    tuning = dict(fabric_tuning_enabled=True, fabric_tuning_interfaces=["ens1np0"])
    inv = inventory(tmp_path, roots, host_vars={
        "node-a": dict(tuning, fabric_tuning_root=str(tmp_path / "node-a")),
        "node-b": dict(tuning, fabric_tuning_root=str(tmp_path / "node-b"), fabric_tuning_interfaces=["ens9np9"])})
    before = dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b"))
    result = playbook(ansible_env, inv, "tuning.yml")
    assert result.returncode != 0
    assert "node-b: fabric_tuning_interfaces: 'ens9np9' is not an interface of this host" in result.stdout, \
        result.stdout[-3000:]
    assert "node-a: fabric_tuning_interfaces" not in result.stdout
    assert "PLAY [Tune GPU nodes' TCP path]" not in result.stdout
    assert dict((name, tree_hash(tmp_path / name)) for name in ("node-a", "node-b")) == before


def test_the_audit_refuses_bad_probe_settings_before_any_host(ansible_env, roots, tmp_path):
    """A probe setting of the wrong type stopped the audit after the gather with "unable to convert" and no report;
    out of range, the audit exited 0 with no probe run. Now the first play refuses them, before any host."""
    inv = inventory(tmp_path, roots)
    result = playbook(ansible_env, inv, "audit.yml", "-e", "fabric_probes_enabled=true",
                      "-e", "fabric_probe_duration=five", "-e", "fabric_probe_max_retransmit_percent=1000",
                      "-e", "fabric_audit_fail_on=fail")
    assert result.returncode != 0
    # an -e value is every host's: one line each, naming the hosts
    assert "node-a, node-b: fabric_probe_duration: 'five' must be a whole number (1..3600)" in result.stdout
    assert "node-a, node-b: fabric_probe_max_retransmit_percent: '1000' must be a percentage (0..100)" in result.stdout
    assert "TASK [Gather topology facts]" not in result.stdout
    assert not (tmp_path / "report").exists()


def test_the_tuning_playbook_tries_every_node_before_tuning_any(ansible_env, roots, tmp_path):
    """node-b's etc/sysctl.d is a symbolic link out of its fabric_tuning_root: the tuning playbook's pre-flight runs
    the tuning role in check mode on every host, so node-b's refusal stops the run before node-a is tuned."""
    import shutil
    tuning = dict(fabric_tuning_enabled=True, fabric_tuning_interfaces=["ens1np0"])
    for name in ("node-a", "node-b"):  # each node's / for the tuning: a copy of the hand-written node's tree
        shutil.copytree(roots["dgx8"], str(tmp_path / ("tune-" + name)), symlinks=True)
        (tmp_path / ("tune-" + name) / "etc").mkdir(exist_ok=True)
    (tmp_path / "tune-node-a" / "etc" / "sysctl.d").mkdir(exist_ok=True)
    shutil.rmtree(str(tmp_path / "tune-node-b" / "etc" / "sysctl.d"), ignore_errors=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(str(tmp_path / "elsewhere"), str(tmp_path / "tune-node-b" / "etc" / "sysctl.d"))
    inv = inventory(tmp_path, roots, host_vars={
        "node-a": dict(tuning, fabric_tuning_root=str(tmp_path / "tune-node-a")),
        "node-b": dict(tuning, fabric_tuning_root=str(tmp_path / "tune-node-b"))})
    written = [tmp_path / "tune-node-a" / "etc", tmp_path / "tune-node-a" / "proc", tmp_path / "elsewhere"]
    before = [tree_hash(path) for path in written]
    result = playbook(ansible_env, inv, "tuning.yml")
    assert result.returncode != 0
    assert "leads out of the root" in result.stdout, result.stdout[-3000:]
    assert "PLAY [Tune GPU nodes' TCP path]" not in result.stdout
    assert [tree_hash(path) for path in written] == before
