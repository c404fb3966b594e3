"""The NCCL role on hosts whose / is a directory of the test (fabric_nccl_root), with facts from the
hand-written 8-GPU node and the real captures: /etc/nccl.conf written root-owned 0644 with the golden content,
second run unchanged, --check writes nothing (the directory's hash), --diff shows a hand edit, and errors
name the node and what is missing."""

import os
import stat
import subprocess

import yaml

from conftest import REPO, ansible_playbook, recap, tree_hash

GOLDEN = os.path.join(REPO, "tests", "fixtures", "golden_nccl")


def inventory(tmp_path, roots, mode="tcp", hosts=None, extra=None):
    hosts = hosts or {"node-a": "dgx8", "node-b": "dgx8-broken"}
    entries = {}
    for name, root in hosts.items():
        (tmp_path / name / "etc").mkdir(parents=True, exist_ok=True)  # as on any node
        entries[name] = {"fabric_facts_root": roots[root], "fabric_nccl_root": str(tmp_path / name)}
    group = {
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "fabric_nccl_mode": mode,
        "fabric_networks": {"training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100, "mtu": 9000}},
        "fabric_attachments": {"training": "bond0"},
    }
    group.update(extra or {})
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"vars": group, "hosts": entries}}))
    return str(path)


def play(env, inventory_path, *extra):
    return ansible_playbook(env, inventory_path, "gpuops.fabric.nccl", *extra, timeout=300)


def golden(name):
    with open(os.path.join(GOLDEN, name + ".conf")) as handle:
        return handle.read()


def test_tcp_idempotent_check_and_diff(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots)
    # --check on empty nodes first: nothing is written
    before = tree_hash(tmp_path)
    check = play(ansible_env, inv, "--check")
    assert check.returncode == 0, check.stdout[-3000:]
    assert recap(check.stdout, "node-a")["changed"] == "1"
    assert tree_hash(tmp_path) == before

    first = play(ansible_env, inv)
    assert first.returncode == 0, first.stdout[-3000:]
    assert recap(first.stdout, "node-a")["changed"] == "1"
    conf = tmp_path / "node-a" / "etc" / "nccl.conf"
    assert conf.read_text() == golden("dgx8-tcp")  # the interface came from the intent: bond0 + VLAN 100
    info = os.stat(str(conf))
    assert stat.S_IMODE(info.st_mode) == 0o644 and info.st_uid == 0 and info.st_gid == 0

    second = play(ansible_env, inv)
    assert recap(second.stdout, "node-a")["changed"] == "0" and recap(second.stdout, "node-b")["changed"] == "0"

    conf.write_text(conf.read_text().replace("NCCL_SOCKET_IFNAME==bond0.100", "NCCL_SOCKET_IFNAME=bond0"))
    before = tree_hash(tmp_path)
    diff = play(ansible_env, inv, "--check", "--diff")
    assert recap(diff.stdout, "node-a")["changed"] == "1" and recap(diff.stdout, "node-b")["changed"] == "0"
    assert "-NCCL_SOCKET_IFNAME=bond0\n" in diff.stdout and "+NCCL_SOCKET_IFNAME==bond0.100\n" in diff.stdout
    assert tree_hash(tmp_path) == before


def test_rdma_golden_and_warnings(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, mode="rdma", extra={"fabric_nccl_env": {"NCCL_DEBUG": "WARN",
                                                                             "NCCL_IB_HCAS": "mlx5"}})
    run = play(ansible_env, inv)
    assert run.returncode == 0, run.stdout[-3000:]
    text = (tmp_path / "node-a" / "etc" / "nccl.conf").read_text()
    expected = golden("dgx8-rdma")
    for line in expected.splitlines():
        if not line.startswith("#"):
            assert line + "\n" in text
    assert "NCCL_DEBUG=WARN\n" in text
    combined = run.stdout + run.stderr
    assert "fabric_nccl_env.NCCL_IB_HCAS: not a variable NCCL documents" in combined
    assert "node-b: NCCL_NET_GDR_LEVEL: LOC (GPUDirect RDMA off)" in combined


def test_errors_name_the_node(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, mode="rdma", hosts={"node-c": "prometheus-procfs-pci-fragments"},
                    extra={"fabric_nccl_interface": "bond9"})
    run = play(ansible_env, inv)
    assert run.returncode != 0
    assert "node-c: the training interface bond9 does not exist on this node" in run.stdout
    assert "node-c: fabric_nccl_mode is rdma but the node has no active RDMA port" in run.stdout
    assert os.listdir(str(tmp_path / "node-c" / "etc")) == []


def test_drift_reports_a_hand_edited_conf(ansible_env, roots, tmp_path):
    """gpuops.fabric.drift runs the nccl role in check mode: a hand edit is NCCL-001 with its diff, and nothing
    on the node changes."""
    import json
    inv = inventory(tmp_path, roots, hosts={"node-a": "dgx8"},
                    extra={"fabric_network_root": str(tmp_path / "node-a"), "fabric_network_backend": "netplan",
                           "fabric_host_index": 5,
                           # the drift playbook runs the network role too: the intent owns the bond it attaches to
                           "fabric_bonds": {"bond0": {"members": ["eno1", "eno2"], "mode": "802.3ad"}}})
    assert play(ansible_env, inv).returncode == 0
    conf = tmp_path / "node-a" / "etc" / "nccl.conf"
    conf.write_text(conf.read_text().replace("NCCL_SOCKET_IFNAME==bond0.100", "NCCL_SOCKET_IFNAME=bond0"))
    before = tree_hash(tmp_path / "node-a")
    drift = subprocess.run(["ansible-playbook", "-i", inv, "gpuops.fabric.drift",
                            "-e", "fabric_report_dir=%s" % (tmp_path / "report")],
                           env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                           timeout=300, cwd=REPO, check=False)
    assert drift.returncode != 0
    assert tree_hash(tmp_path / "node-a") == before
    with open(str(tmp_path / "report" / "report.json")) as handle:
        report = json.load(handle)
    nccl = [f for f in report["findings"] if f["id"] == "NCCL-001"]
    assert len(nccl) == 1 and nccl[0]["host"] == "node-a"
    assert "-NCCL_SOCKET_IFNAME=bond0\n" in nccl[0]["evidence"]["diff"]
    assert "+NCCL_SOCKET_IFNAME==bond0.100\n" in nccl[0]["evidence"]["diff"]


def test_topology_file_is_opt_in(ansible_env, roots, tmp_path):
    inv = inventory(tmp_path, roots, hosts={"node-a": "dgx8"}, extra={"fabric_nccl_topo_file": True})
    first = play(ansible_env, inv)
    assert first.returncode == 0, first.stdout[-3000:]
    topo = tmp_path / "node-a" / "etc" / "nccl-topo.xml"
    assert topo.read_text().startswith('<system version="1">')
    assert "NCCL_TOPO_FILE=/etc/nccl-topo.xml\n" in (tmp_path / "node-a" / "etc" / "nccl.conf").read_text()
    assert recap(play(ansible_env, inv).stdout, "node-a")["changed"] == "0"


def test_a_link_out_of_the_root_is_refused(ansible_env, roots, tmp_path):
    """node-a's etc is a symbolic link to a folder outside its root (an image root linking to the build machine's
    /etc): nccl.conf is not written through it, and the message names the root and where the link leads."""
    inv = inventory(tmp_path, roots, hosts={"node-a": "dgx8"})
    outside = tmp_path / "outside-etc"
    outside.mkdir()
    (tmp_path / "node-a" / "etc").rmdir()
    os.symlink(str(outside), str(tmp_path / "node-a" / "etc"))
    result = play(ansible_env, inv)
    assert result.returncode != 0
    assert "fabric_nccl_root: a symbolic link below %s leads the NCCL files to %s" % (tmp_path / "node-a", outside) \
        in result.stdout, result.stdout[-3000:]
    assert os.listdir(str(outside)) == []
