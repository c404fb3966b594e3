"""The network plan playbook: intent validated on the controller, addresses pinned, files rendered."""

import os
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GROUP = {
    "ansible_connection": "local",
    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
    "fabric_networks": {
        "management": {"role": "management", "subnet": "192.0.2.0/24", "gateway": "192.0.2.1"},
        "training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100, "mtu": 9000},
    },
    "fabric_bonds": {"bond1": {"members": "nics[?numa_node == `0` && speed_mbps >= `400000`].name",
                               "mode": "802.3ad", "lacp_rate": "fast"}},
    "fabric_attachments": {"management": "eno1", "training": "bond1"},
}


def run(env, tmp_path, hosts, group=None, *extra):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": group or GROUP, "hosts": hosts}}))
    return subprocess.run(["ansible-playbook", "-i", str(inventory), "gpuops.fabric.network_plan",
                           "-e", "fabric_allocation_file=" + str(tmp_path / "alloc.yml"),
                           "-e", "fabric_network_render_dir=" + str(tmp_path / "render")] + list(extra),
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                          timeout=300, cwd=REPO, check=False)


def allocations(tmp_path):
    with open(str(tmp_path / "alloc.yml")) as handle:
        return yaml.safe_load(handle)["hosts"]


def test_plan_pins_addresses_and_renders(ansible_env, roots, tmp_path):
    hosts = {"node-b": {"fabric_facts_root": roots["dgx8"]}, "node-a": {"fabric_facts_root": roots["dgx8"]}}
    first = run(ansible_env, tmp_path, hosts)
    assert first.returncode == 0, first.stdout[-3000:]
    pinned = allocations(tmp_path)
    assert sorted(pinned.values()) == [2, 3]  # .1 is the gateway
    netplan = tmp_path / "render" / "node-a" / "netplan" / "etc" / "netplan" / "60-gpuops-fabric.yaml"
    text = netplan.read_text()
    assert "interfaces: [ens1np0, ens2np0, ens3np0, ens4np0]" in text
    assert '"198.18.0.%d/22"' % pinned["node-a"] in text
    assert oct(os.stat(str(netplan)).st_mode & 0o777) == "0o600"
    keyfile = tmp_path / "render" / "node-a" / "networkmanager" / "etc" / "NetworkManager" / "system-connections"
    assert sorted(os.listdir(str(keyfile)))[0] == "gpuops-bond1.100.nmconnection"

    # Again, then with one host removed and two added: nobody is renumbered.
    assert run(ansible_env, tmp_path, hosts).returncode == 0
    assert allocations(tmp_path) == pinned
    hosts = {"node-b": hosts["node-b"], "node-c": hosts["node-a"], "node-d": hosts["node-a"]}
    assert run(ansible_env, tmp_path, hosts).returncode == 0
    grown = allocations(tmp_path)
    assert grown["node-b"] == pinned["node-b"] and grown["node-a"] == pinned["node-a"]
    assert sorted(grown.values()) == [2, 3, 4, 5]


def test_bad_intent_names_host_and_key(ansible_env, roots, tmp_path):
    group = dict(GROUP, fabric_networks=dict(GROUP["fabric_networks"],
                                             training=dict(GROUP["fabric_networks"]["training"], vlan=4095)))
    result = run(ansible_env, tmp_path, {"node-a": {"fabric_facts_root": roots["dgx8"]}}, group)
    assert result.returncode != 0
    assert "node-a: fabric_networks.training.vlan: 4095 is outside 1..4094" in result.stdout
    assert not (tmp_path / "render").exists()


def test_check_mode_writes_nothing(ansible_env, roots, tmp_path):
    result = run(ansible_env, tmp_path, {"node-a": {"fabric_facts_root": roots["dgx8"]}}, None, "--check")
    assert result.returncode == 0, result.stdout[-2000:]
    assert not (tmp_path / "alloc.yml").exists() and not (tmp_path / "render").exists()
