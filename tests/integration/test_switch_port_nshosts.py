"""The switch side's faults found by the audit over real SSH, on real LLDP frames: a namespace host (the node) and a
second one that advertises what a switch port does (tests/utils/nshosts.py ``switch=``: chassis leaf01, its port id, PVID,
VLAN list and maximum frame size as IEEE 802.1/802.3 TLVs, sent by lldpd as custom TLVs and decoded by the node's
lldpd as it decodes a switch's).

First the switch port is wrong three ways: it carries VLANs 100 and 300 but the intent tags training with 200, it
takes 1518-byte frames (a 1500 port) under a 9000 network, and the node's eth1 is in swp1 where the cabling plan says
swp7. The audit must report LLDP-001, LLDP-003 and LLDP-004 for the node. Then the "switch" is put right and the
same audit passes all three."""

import json
import os
import subprocess
import time

import pytest

from conftest import REPO
from nshosts import NamespaceHosts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (CI runs as root)")

WRONG = {"name": "leaf01", "port": "swp1", "pvid": 1, "vlans": [100, 300], "mfs": 1518}
RIGHT = {"name": "leaf01", "port": "swp7", "pvid": 1, "vlans": [100, 200], "mfs": 9216}


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    hosts = NamespaceHosts(str(tmp_path_factory.mktemp("switchport")), 2, prefix="gfsp", mgmt_octet=14,
                           train_octet=15)
    hosts.up()
    hosts.forward_lldp()
    node_socket = hosts.start_lldpd(1)
    hosts.start_lldpd(2, switch=WRONG)
    yield hosts, node_socket
    hosts.down()


def node_view(hosts, socket, fmt="json0"):
    return subprocess.run(["ip", "netns", "exec", hosts.names[0], "lldpctl", "-u", socket, "-f", fmt],
                          capture_output=True, text=True, check=True).stdout


def wait_for(hosts, socket, switch):
    """Until the node's lldpd shows the switch port as ``switch`` describes it (each frame is sent every second)."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.lldp import parse
    deadline = time.time() + 30
    while True:
        seen = parse(node_view(hosts, socket)).get("eth1") or []
        if any(n["port_id"] == switch["port"] and n["mfs"] == switch["mfs"] for n in seen):
            return seen
        assert time.time() < deadline, seen
        time.sleep(1)


def audit(env, hosts, socket, tmp_path):
    group = {
        "fabric_networks": {"training": {"role": "training", "subnet": hosts.train_subnet(), "mtu": 9000,
                                         "vlan": 200}},
        "fabric_attachments": {"training": "eth1"},
        "fabric_cabling": {"eth1": {"switch": "leaf01", "port": "swp7"}},
        "fabric_facts_lldp_socket": socket,
        "fabric_audit_fail_on": "never",
        "fabric_report_dir": str(tmp_path / "report"),
    }
    node = hosts.names[0]
    tmp_path.mkdir()
    inventory = hosts.write_inventory(tmp_path / "inventory.yml", group, hosts=[node])
    done = subprocess.run(["ansible-playbook", "-i", inventory, os.path.join(REPO, "playbooks", "audit.yml")],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    with open(str(tmp_path / "report" / "report.json")) as handle:
        report = json.load(handle)
    return report["outcomes"][node], [f for f in report["findings"] if f["host"] == node], report["cabling"]


def test_switch_port_tlvs_read_as_a_switch_sends_them(bed):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.lldp import parse, parse_keyvalue
    hosts, socket = bed
    [port] = wait_for(hosts, socket, WRONG)
    assert port["chassis_name"] == "leaf01" and port["port_id_type"] == "local" and port["port_descr"] == "swp1"
    assert port["mfs"] == 1518 and port["pvid"] == 1
    assert [v["id"] for v in port["vlans"]] == [1, 100, 300]  # sorted: the frame carries 100, 300, then 1
    keyvalue = node_view(hosts, socket, "keyvalue")
    assert parse_keyvalue(keyvalue) == parse(node_view(hosts, socket))
    capture = os.environ.get("GPUOPS_CAPTURE_DIR")
    if capture:  # how tests/fixtures/lldp/ns-switch-port.* were made
        for fmt in ("json0", "keyvalue"):
            with open(os.path.join(capture, "ns-switch-port.%s" % fmt), "w") as handle:
                handle.write(node_view(hosts, socket, fmt))


def test_audit_names_the_wrong_switch_port_then_passes_when_fixed(ansible_env, bed, tmp_path):
    hosts, socket = bed
    wait_for(hosts, socket, WRONG)
    outcomes, findings, cabling = audit(ansible_env, hosts, socket, tmp_path / "wrong")
    for rule in ("LLDP-001", "LLDP-003", "LLDP-004"):
        assert outcomes[rule]["status"] == "findings", (rule, outcomes[rule])
    said = dict((f["id"], f["message"]) for f in findings)
    assert "leaf01 swp1 does not carry VLAN 200 (it advertises 1, 100, 300)" in said["LLDP-001"], said
    assert "leaf01 swp1 takes frames up to 1518 bytes; network training (MTU 9000, VLAN 200) needs 9022" in \
        said["LLDP-003"], said
    assert "eth1 should go to leaf01 swp7 but is cabled to leaf01 swp1" in said["LLDP-004"], said
    assert [(c["port"], c["switch"], c["switch_port"], c["mfs"]) for c in cabling] == [("eth1", "leaf01", "swp1", 1518)]

    hosts.stop_lldpd(2)  # the switch is put right: VLAN 200 added, jumbo frames, the cable in swp7
    hosts.start_lldpd(2, switch=RIGHT)
    wait_for(hosts, socket, RIGHT)
    outcomes, findings, _cabling = audit(ansible_env, hosts, socket, tmp_path / "right")
    for rule in ("LLDP-001", "LLDP-003", "LLDP-004"):
        assert outcomes[rule]["status"] == "pass", (rule, outcomes[rule], findings)
