"""LLDP facts over real SSH: two namespace hosts (tests/utils/nshosts.py) whose training links meet on a bridge that passes
LLDP, lldpd in each; topology_facts on one host reports the other as the neighbour on eth1, and says "no LLDP agent"
where lldpd does not run."""

import json
import os
import subprocess

import pytest
import yaml

from nshosts import NamespaceHosts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (CI runs as root)")


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    hosts = NamespaceHosts(str(tmp_path_factory.mktemp("lldp")), 3, prefix="gfll", mgmt_octet=12, train_octet=13)
    hosts.up()
    hosts.forward_lldp()
    sockets = {hosts.names[0]: hosts.start_lldpd(1), hosts.names[1]: hosts.start_lldpd(2)}  # the third runs none
    yield hosts, sockets
    hosts.down()


def facts(env, hosts, sockets, tmp_path, host):
    inventory = hosts.write_inventory(tmp_path / "inventory.yml")
    out = tmp_path / ("%s.json" % host)
    playbook = tmp_path / "facts.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": host, "gather_facts": False,
        "tasks": [
            {"gpuops.fabric.topology_facts": {"gather_subset": ["nic", "lldp", "link_modes"],
                                              "lldp_socket": sockets.get(host, "/run/lldpd.socket")}},
            {"ansible.builtin.copy": {"content": "{{ ansible_facts.gpuops_fabric | to_json }}", "dest": str(out),
                                      "mode": "0600"}, "delegate_to": "localhost"},
        ]}]))
    done = subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return json.loads(out.read_text())


def test_neighbour_seen_over_lldp(ansible_env, bed, tmp_path):
    import time
    hosts, sockets = bed
    first, second = hosts.names[0], hosts.names[1]
    deadline = time.time() + 20
    while True:
        hosts.lldp_update(2, sockets[second])
        lldp = facts(ansible_env, hosts, sockets, tmp_path, first)["lldp"]
        if lldp["ports"].get("eth1") or time.time() > deadline:
            break
        time.sleep(1)
    assert lldp["agent"] is True and lldp["reason"] is None
    names = sorted(n["chassis_name"] for n in lldp["ports"]["eth1"])
    assert second in names  # the other host with lldpd, through the bridge
    neighbour = [n for n in lldp["ports"]["eth1"] if n["chassis_name"] == second][0]
    assert neighbour["port_descr"] == "eth1" and neighbour["via"] == "LLDP" and neighbour["ttl"] >= 1
    assert any(ip.startswith(hosts.mgmt_net + ".") for ip in neighbour["mgmt_ip"]), neighbour  # its management address
    assert "eth0" not in lldp["ports"]  # lldpd listens on the training link only (-I eth1)


def test_no_agent_is_said_not_failed(ansible_env, bed, tmp_path):
    hosts, sockets = bed
    lldp = facts(ansible_env, hosts, sockets, tmp_path, hosts.names[2])["lldp"]
    assert lldp["agent"] is False and lldp["reason"].startswith("no LLDP agent") and lldp["ports"] == {}
