"""The network role on hosts whose / is a directory of the test (fabric_network_root): files written,
second run unchanged, --check writes nothing, replaced removes only our stale files, netplan reads the result."""

import os
import subprocess

import yaml

from conftest import REPO, ansible_playbook, recap, require_tool


def inventory(tmp_path, roots, state="merged", backend="netplan", vlan=100):
    hosts = {}
    for name in ("node-a", "node-b"):
        node_root = tmp_path / name
        (node_root / "etc" / "netplan").mkdir(parents=True, exist_ok=True)
        hosts[name] = {"fabric_facts_root": roots["dgx8"], "fabric_network_root": str(node_root)}
    group = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "fabric_network_state": state,
        "fabric_network_backend": backend,
        "fabric_allocation_file": str(tmp_path / "alloc.yml"),
        "fabric_networks": {
            "management": {"role": "management", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1"},
            "training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": vlan, "mtu": 9000},
        },
        "fabric_bonds": {"bond1": {"members": ["ens1np0", "ens2np0"], "mode": "802.3ad", "lacp_rate": "fast"}},
        "fabric_attachments": {"management": "eno1", "training": "bond1"},
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"vars": group, "hosts": hosts}}))
    return str(path)


def play(env, inventory_path, *extra):
    return ansible_playbook(env, inventory_path, "gpuops.fabric.network", *extra, timeout=300)


def test_networkd_files_idempotent_and_check(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, backend="networkd")
    first = play(ansible_env, inv)
    assert first.returncode == 0, first.stdout[-3000:]
    assert recap(first.stdout, "node-a")["changed"] == "1"
    netdir = tmp_path / "node-a" / "etc" / "systemd" / "network"
    names = sorted(os.listdir(str(netdir)))
    assert "60-gpuops-bond1.100.netdev" in names and "60-gpuops-eno1.network" in names
    second = play(ansible_env, inv)
    assert recap(second.stdout, "node-a")["changed"] == "0" and recap(second.stdout, "node-b")["changed"] == "0"

    # A hand edit on the node: --check --diff shows it and writes nothing; a run puts it back.
    edited = netdir / "60-gpuops-bond1.100.netdev"
    edited.write_text(edited.read_text().replace("MTUBytes=9000", "MTUBytes=1500"))
    check = play(ansible_env, inv, "--check", "--diff")
    assert recap(check.stdout, "node-a")["changed"] == "1" and recap(check.stdout, "node-b")["changed"] == "0"
    assert "-MTUBytes=1500" in check.stdout and "+MTUBytes=9000" in check.stdout
    assert "MTUBytes=1500" in edited.read_text()
    play(ansible_env, inv)
    assert "MTUBytes=9000" in edited.read_text()


def test_replaced_removes_only_our_stale_files(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, backend="networkd")
    assert play(ansible_env, inv).returncode == 0
    netdir = tmp_path / "node-a" / "etc" / "systemd" / "network"
    foreign = netdir / "10-mgmt.network"
    foreign.write_text("[Match]\nName=eno3\n")
    inv = inventory(tmp_path, roots, backend="networkd", state="replaced", vlan=300)  # the VLAN moves
    result = play(ansible_env, inv)
    assert result.returncode == 0, result.stdout[-2000:]
    names = sorted(os.listdir(str(netdir)))
    assert "60-gpuops-bond1.300.netdev" in names and "60-gpuops-bond1.100.netdev" not in names
    assert foreign.exists()


def test_netplan_files_are_read_by_netplan(ansible_env, roots, tmp_path):
    netplan = require_tool("netplan")
    inv = inventory(tmp_path, roots, backend="netplan")
    result = play(ansible_env, inv)
    assert result.returncode == 0, result.stdout[-2000:]
    node = tmp_path / "node-b"
    written = node / "etc" / "netplan" / "60-gpuops-fabric.yaml"
    assert oct(os.stat(str(written)).st_mode & 0o777) == "0o600"
    generate = subprocess.run([netplan, "generate", "--root-dir", str(node)], capture_output=True, text=True,
                              timeout=60, check=False)
    assert generate.returncode == 0, generate.stderr
    netdev = (node / "run" / "systemd" / "network" / "10-netplan-bond1.netdev").read_text()
    assert "Mode=802.3ad" in netdev and "MTUBytes=9000" in netdev


def test_invalid_intent_touches_no_host(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, backend="networkd", vlan=5000)
    result = play(ansible_env, inv)
    assert result.returncode != 0
    assert "fabric_networks.training.vlan: 5000 is outside 1..4094" in result.stdout
    assert not (tmp_path / "node-a" / "etc" / "systemd").exists()


def test_drift_playbook_reports_hand_edits(ansible_env, roots, tmp_path):
    import json
    inv = inventory(tmp_path, roots, backend="networkd")
    assert play(ansible_env, inv).returncode == 0
    env = dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default")

    def drift(report_dir):
        return subprocess.run(["ansible-playbook", "-i", inv, "gpuops.fabric.drift", "-e", "fabric_report_dir=" +
                               str(report_dir)], env=env, capture_output=True, text=True, timeout=300, cwd=REPO,
                              check=False)

    clean = drift(tmp_path / "clean")
    assert clean.returncode == 0, clean.stdout[-3000:]
    # A hand edit on one node: an MTU lowered, a VLAN removed.
    netdir = tmp_path / "node-b" / "etc" / "systemd" / "network"
    (netdir / "60-gpuops-bond1.network").write_text((netdir / "60-gpuops-bond1.network").read_text()
                                                    .replace("MTUBytes=9000", "MTUBytes=1500"))
    (netdir / "60-gpuops-bond1.100.netdev").unlink()
    drifted = drift(tmp_path / "drifted")
    assert drifted.returncode != 0
    with open(str(tmp_path / "drifted" / "report.json")) as handle:
        report = json.load(handle)
    found = sorted((f["host"], f["subject"]) for f in report["findings"] if f["id"] == "DRIFT-001")
    assert found == [("node-b", "/etc/systemd/network/60-gpuops-bond1.100.netdev"),
                     ("node-b", "/etc/systemd/network/60-gpuops-bond1.network")]
    diff = [f for f in report["findings"] if f["id"] == "DRIFT-001"][0]["evidence"]["diff"]
    assert "-MTUBytes=1500" in diff and "+MTUBytes=9000" in diff
    assert (netdir / "60-gpuops-bond1.100.netdev").exists() is False  # check mode wrote nothing
    # After re-applying the intent no drift remains.
    assert play(ansible_env, inv).returncode == 0
    assert drift(tmp_path / "again").returncode == 0
