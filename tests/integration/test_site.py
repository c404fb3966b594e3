"""site.yml on hosts whose / is a directory of the test (the hand-written node's facts): a new cluster is
configured (network files, /etc/nccl.conf) and audited; a repeat run changes nothing; a bad NCCL setting stops
the run before any host is touched."""

import os
import subprocess

import yaml

from conftest import REPO, recap, tree_hash


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


def site(env, inventory_path):
    return subprocess.run(["ansible-playbook", "-i", inventory_path, os.path.join(REPO, "site.yml")],
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                          timeout=600, cwd=REPO, check=False)


def test_new_cluster_then_repeat(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots)
    first = site(ansible_env, inv)
    assert first.returncode == 0, first.stdout[-4000:]
    assert recap(first.stdout, "node-a")["changed"] == "2"  # the netplan file and /etc/nccl.conf
    # bond1.300 did not exist before the run: the pre-flight took it from the plan
    assert "NCCL_SOCKET_IFNAME==bond1.300" in (tmp_path / "node-a" / "etc" / "nccl.conf").read_text()
    assert "bond1.300:" in (tmp_path / "node-b" / "etc" / "netplan" / "60-gpuops-fabric.yaml").read_text()
    assert (tmp_path / "report" / "report.json").exists()
    again = site(ansible_env, inv)
    assert again.returncode == 0
    assert recap(again.stdout, "node-a")["changed"] == "0" and recap(again.stdout, "node-b")["changed"] == "0"


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
