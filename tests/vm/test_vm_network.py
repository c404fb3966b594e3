"""A real kernel: the network role on two Debian VMs (qemu, TCG) joined back to back by two links.

Each test runs once per kind of node: netplan (rendering to systemd-networkd) and NetworkManager (the VMs
boot with NetworkManager managing every NIC, the management NIC included). 802.3ad bond + two VLANs at MTU
9000; the kernel's own view (/proc/net/bonding) shows both ports in one aggregator with the other VM as LACP
partner; a don't-fragment ping of 8972 bytes crosses each VLAN; a second run and a --check run change
nothing; the files gathered back into the intent and used as the inventory change nothing; a hand edit is
reported by the drift playbook and gone after the role runs again; the audit's bond rules pass on the live
facts; a change that cuts the controller off is refused, then, allowed, rolled back by the node (with
NetworkManager: by its own checkpoint first, then the files). Soft-RoCE (rdma_rxe) over the bond, on the netplan
nodes: the facts against the verbs tools, the nccl role's rdma mode against the kernel's GID table and its drift
when the training address moves, and the RDMA transport counters with and without loss on the link (issue 35).
"""

import json
import os
import subprocess

import pytest

import testbed

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import parse_proc_bonding
from rdma_tools import expand_gid, ibv_devinfo
from conftest import REPO

VMCTL = os.path.join(REPO, "tests", "vm", "vmctl.sh")
INVENTORY = os.path.join(REPO, "tests", "vm", "inventory.yml")


def vm(n, command, check=True):
    result = subprocess.run(["bash", VMCTL, "ssh", str(n), command], capture_output=True, text=True, timeout=120,
                            check=False)
    if check:
        assert result.returncode == 0, (command, result.stdout, result.stderr)
    return result


# What each kind of node keeps: the file a hand edit goes into, and how its MTU line reads.
KINDS = {
    "netplan": {"file": "/etc/netplan/60-gpuops-fabric.yaml", "mtu": "      mtu: %d"},
    "networkmanager": {"file": "/etc/NetworkManager/system-connections/gpuops-bond0.100.nmconnection",
                       "mtu": "mtu=%d"},
}


def inventory_data(kind):
    import yaml
    with open(INVENTORY) as handle:
        data = yaml.safe_load(handle)
    group = data["all"]["children"]["vms"]["vars"]
    group["ansible_ssh_private_key_file"] = os.path.join(os.environ.get("GPUOPS_VM_DIR") or
                                                         os.path.join(REPO, ".cache", "vm"), "id_ed25519")
    group["fabric_network_backend"] = kind
    # the SSH ports vmctl.sh forwards for this run's test-bed slot (tests/utils/testbed.py)
    for number, host in enumerate(("vm1", "vm2"), 1):
        data["all"]["children"]["vms"]["hosts"][host]["ansible_port"] = 2220 + 10 * testbed.slot() + number
    return data


def write_inventory(data, path):
    import yaml
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(scope="module", params=sorted(KINDS))
def vms(request, tmp_path_factory):
    """Two fresh VMs of one kind, and an inventory for them: {"kind", "inventory"}."""
    for tool in ("qemu-system-x86_64", "mmdebstrap", "qemu-img", "mkfs.ext4", "ssh"):
        assert subprocess.run(["which", tool], capture_output=True, check=False).returncode == 0, \
            "%s is not installed; scripts/setup.sh installs it" % tool
    kind = request.param
    start = subprocess.run(["bash", VMCTL, "start", kind], capture_output=True, text=True, timeout=900,
                           check=False)
    assert start.returncode == 0, start.stdout[-2000:] + start.stderr[-2000:]
    inventory = write_inventory(inventory_data(kind), tmp_path_factory.mktemp(kind) / "inventory.yml")
    yield {"kind": kind, "inventory": inventory}
    subprocess.run(["bash", VMCTL, "stop"], capture_output=True, timeout=120, check=False)


def playbook(env, inventory, name, *extra):
    # Pipelining: one SSH exec per task instead of five (a quarter off each run under TCG). The namespace hosts of
    # tests/integration run without it, so both ways of shipping modules stay tested.
    return subprocess.run(["ansible-playbook", "-i", inventory, name] + list(extra),
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_TIMEOUT="60", ANSIBLE_PIPELINING="1"),
                          capture_output=True, text=True, timeout=900, cwd=REPO, check=False)


def changed(output, host):
    line = [x for x in output.splitlines() if x.startswith(host + " ")][-1]
    return int(dict(kv.split("=") for kv in line.split(":", 1)[1].split())["changed"])


def console_tail(n, lines=60):
    """The last lines of VM n's serial console (the kernel's messages, the rollback's own notes): what a failure
    shows when the VM cannot be reached."""
    path = os.path.join(os.environ.get("GPUOPS_VM_DIR") or os.path.join(REPO, ".cache", "vm"), "vm%d.console" % n)
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError as error:
        return "(no console: %s)" % error


def monitor(n, command):
    """One command to VM n's qemu monitor (a unix socket): set_link takes a virtual cable down or up."""
    import socket
    import time
    path = os.path.join(os.environ.get("GPUOPS_VM_DIR") or os.path.join(REPO, ".cache", "vm"), "vm%d.mon" % n)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(path)
        sock.recv(4096)  # the banner and prompt
        sock.sendall(command.encode() + b"\n")
        time.sleep(0.5)
        answer = sock.recv(4096).decode(errors="replace")
    assert "Error" not in answer and "unknown" not in answer.lower(), answer
    return answer


def wait_for_lacp(n, partner_count=2, tries=30):
    import time
    for _try in range(tries):
        bond = parse_proc_bonding("bond0", vm(n, "cat /proc/net/bonding/bond0").stdout)
        if len([m for m in bond.members if m.partner_mac and m.partner_mac != "00:00:00:00:00:00"]) == partner_count:
            return bond
        time.sleep(2)
    return bond


def owned_files(n, kind):
    """md5 sums of the owned files on VM n: what a --check or a no-change run must leave alone."""
    pattern = {"netplan": "/etc/netplan/60-gpuops-*", "networkmanager":
               "/etc/NetworkManager/system-connections/gpuops-*"}[kind]
    return vm(n, "md5sum %s" % pattern).stdout


def test_bond_vlan_mtu_on_a_real_kernel(vms, ansible_env, tmp_path):
    inventory = vms["inventory"]
    first = playbook(ansible_env, inventory, "gpuops.fabric.network")
    assert first.returncode == 0, first.stdout[-4000:]
    assert changed(first.stdout, "vm1") == 1 and changed(first.stdout, "vm2") == 1

    bond1, bond2 = wait_for_lacp(1), wait_for_lacp(2)
    system_mac = dict((n, vm(n, "cat /sys/class/net/bond0/address").stdout.strip()) for n in (1, 2))
    assert bond1.mode == "802.3ad" and bond1.lacp_rate == "fast"
    assert len(set(m.aggregator_id for m in bond1.members)) == 1 and len(bond1.members) == 2
    assert bond1.active_aggregator_id == bond1.members[0].aggregator_id
    assert set(m.partner_mac for m in bond1.members) == {system_mac[2]}
    assert set(m.partner_mac for m in bond2.members) == {system_mac[1]}
    assert vm(1, "cat /sys/class/net/bond0.100/mtu").stdout.strip() == "9000"
    for address in ("198.18.4.2", "198.18.5.2"):
        ping = vm(1, "ping -M do -s 8972 -c 3 -W 3 %s" % address, check=False)
        assert ping.returncode == 0 and "0% packet loss" in ping.stdout, ping.stdout
    if vms["kind"] == "networkmanager":
        devices = vm(1, "nmcli -t -f DEVICE,STATE,CONNECTION device").stdout
        for name in ("bond0", "bond0.100", "bond0.200", "enp0s4", "enp0s5"):
            assert "%s:connected:gpuops-%s" % (name, name) in devices, devices

    second = playbook(ansible_env, inventory, "gpuops.fabric.network")
    assert second.returncode == 0 and changed(second.stdout, "vm1") == 0 and changed(second.stdout, "vm2") == 0
    before = owned_files(2, vms["kind"])
    check = playbook(ansible_env, inventory, "gpuops.fabric.network", "--check")
    assert check.returncode == 0 and changed(check.stdout, "vm1") == 0 and changed(check.stdout, "vm2") == 0
    assert owned_files(2, vms["kind"]) == before

    # The live facts of a VM: the audit's bond rules see an aggregated bond with a partner.
    audit = playbook(ansible_env, inventory, "gpuops.fabric.audit",
                     "-e", "fabric_report_dir=%s" % (tmp_path / "audit"), "-e", "fabric_audit_fail_on=never")
    assert audit.returncode == 0, audit.stdout[-3000:]
    with open(str(tmp_path / "audit" / "report.json")) as handle:
        report = json.load(handle)
    assert report["summary"]["audited"] == 2
    for host in ("vm1", "vm2"):
        outcomes = report["outcomes"][host]
        assert all(outcomes[r]["status"] == "pass" for r in ("BOND-001", "BOND-002", "BOND-003", "BOND-004")), outcomes


def test_gathered_intent_round_trip(vms, ansible_env, tmp_path):
    """What state=gathered reads back, used as the whole intent of an inventory, changes nothing."""
    import yaml
    inventory = vms["inventory"]
    assert playbook(ansible_env, inventory, "gpuops.fabric.network").returncode == 0
    gathered = playbook(ansible_env, inventory, os.path.join(REPO, "tests", "vm", "gather_intent.yml"),
                        "-e", "gathered_dir=%s" % tmp_path)
    assert gathered.returncode == 0, gathered.stdout[-3000:]
    with open(inventory) as handle:
        data = yaml.safe_load(handle)
    group = data["all"]["children"]["vms"]
    for key in ("fabric_networks", "fabric_bonds", "fabric_attachments"):
        del group["vars"][key]
    for host in ("vm1", "vm2"):
        with open(str(tmp_path / ("%s.yml" % host))) as handle:
            intent = yaml.safe_load(handle)
        assert intent["fabric_bonds"]["bond0"]["members"] == ["enp0s4", "enp0s5"]
        assert intent["fabric_networks"]["training"] == {"role": "training", "subnet": "198.18.4.0/24", "vlan": 100,
                                                         "mtu": 9000}
        assert intent["fabric_attachments"] == {"training": "bond0", "storage": "bond0"}
        assert intent["fabric_network_backend"] == vms["kind"]
        group["hosts"][host].update(intent)
        del group["hosts"][host]["fabric_host_index"]  # the addresses come back explicit
    again = playbook(ansible_env, write_inventory(data, tmp_path / "gathered-inventory.yml"), "gpuops.fabric.network")
    assert again.returncode == 0, again.stdout[-3000:]
    assert changed(again.stdout, "vm1") == 0 and changed(again.stdout, "vm2") == 0


def test_drift_is_reported_and_repaired(vms, ansible_env, tmp_path):
    inventory, kind = vms["inventory"], vms["kind"]
    edited, mtu = KINDS[kind]["file"], KINDS[kind]["mtu"]
    assert playbook(ansible_env, inventory, "gpuops.fabric.network").returncode == 0
    vm(2, "sed -i 's/%s/%s/' %s" % (mtu % 9000, mtu % 1500, edited))
    drift = playbook(ansible_env, inventory, "gpuops.fabric.drift", "-e", "fabric_report_dir=%s" % (tmp_path / "drift"))
    assert drift.returncode != 0
    with open(str(tmp_path / "drift" / "report.json")) as handle:
        report = json.load(handle)
    found = [f for f in report["findings"] if f["id"] == "DRIFT-001"]
    assert [(f["host"], f["subject"]) for f in found] == [("vm2", edited)]
    assert "-" + mtu % 1500 in found[0]["evidence"]["diff"] and "+" + mtu % 9000 in found[0]["evidence"]["diff"]
    repair = playbook(ansible_env, inventory, "gpuops.fabric.network")
    assert repair.returncode == 0 and changed(repair.stdout, "vm2") == 1 and changed(repair.stdout, "vm1") == 0
    assert playbook(ansible_env, inventory, "gpuops.fabric.drift", "-e", "fabric_report_dir=%s" % (tmp_path / "again")
                    ).returncode == 0


# site.yml and lldpd behave alike whichever backend wrote the bond (the network role's part of site.yml is a
# no-change run by then, on both kinds in the tests above): they run on the netplan nodes only, which keeps the VM
# tests inside CI's time.
@pytest.mark.parametrize("vms", ["netplan"], indirect=True)
def test_site_end_to_end(vms, ansible_env, tmp_path):
    """site.yml: pre-flight, network, tuning, NCCL (tcp) and audit; the repeat run changes nothing."""
    data = inventory_data(vms["kind"])
    group = data["all"]["children"]["vms"]["vars"]
    group["fabric_nccl_mode"] = "tcp"
    group["fabric_tuning_enabled"] = True  # socket buffers for the virtio ports' 100000 Mb/s at 1 ms: 32 MiB
    # the audit evaluates on the controller (localhost), which sees the 'all' group's vars
    data["all"].setdefault("vars", {}).update({"fabric_audit_fail_on": "never",
                                               "fabric_report_dir": str(tmp_path / "report")})
    inventory = write_inventory(data, tmp_path / "site-inventory.yml")
    first = playbook(ansible_env, inventory, os.path.join(REPO, "site.yml"))
    assert first.returncode == 0, first.stdout[-4000:]
    conf = vm(1, "cat /etc/nccl.conf").stdout
    assert "NCCL_SOCKET_IFNAME==bond0.100\n" in conf and "NCCL_IB_DISABLE=1\n" in conf
    assert vm(1, "stat -c %a:%U /etc/nccl.conf").stdout.strip() == "644:root"
    # the tuning role on a real kernel: raised live (the VM's own defaults are 208 KiB and 6 MiB) and kept for boot
    for index in (1, 2):
        assert vm(index, "cat /proc/sys/net/core/rmem_max /proc/sys/net/core/wmem_max").stdout.split() == [
            "33554432", "33554432"]
        assert vm(index, "cat /proc/sys/net/ipv4/tcp_rmem").stdout.split()[2] == "33554432"
        assert "net.ipv4.tcp_wmem = 4096 16384 33554432" in vm(index, "cat /etc/sysctl.d/60-gpuops-fabric.conf").stdout
    check = playbook(ansible_env, inventory, "gpuops.fabric.tuning", "--check")
    assert check.returncode == 0 and changed(check.stdout, "vm1") == 0 and changed(check.stdout, "vm2") == 0
    # The repeat run with the probes: DF pings at 8972 bytes and iperf3 over the real bond and VLANs. The "cables" are
    # qemu sockets under software emulation, not the 100G the virtio NICs report: a few hundred Mbit/s on an idle
    # machine, but under 80 Mbit/s on a busy CI machine (PROBE-003 failed there against 100 Mb/s declared). So the
    # networks are declared 10 Mb/s, a floor emulation clears with room: the judgement runs on the real path, and
    # PROBE-003's arithmetic against a link that is really that slow is the namespace tests' (tc tbf).
    for net in group["fabric_networks"].values():
        net["speed_mbps"] = 10
    inventory = write_inventory(data, tmp_path / "site-inventory.yml")
    # the first run's report is the repeat's baseline: nothing flapped or counted errors in between
    baseline = str(tmp_path / "first-report.json")
    os.rename(str(tmp_path / "report" / "report.json"), baseline)
    again = playbook(ansible_env, inventory, os.path.join(REPO, "site.yml"), "-e", "fabric_probes_enabled=true",
                     "-e", "fabric_probe_duration=3", "-e", "fabric_audit_baseline=%s" % baseline)
    assert again.returncode == 0, again.stdout[-4000:]
    assert changed(again.stdout, "vm1") == 0 and changed(again.stdout, "vm2") == 0
    with open(str(tmp_path / "report" / "report.json")) as handle:
        report = json.load(handle)
    for host in ("vm1", "vm2"):
        outcomes = report["outcomes"][host]
        assert outcomes["NCCL-002"]["status"] == "pass" and outcomes["NCCL-003"]["status"] == "pass", outcomes
        for rule in ("PROBE-002", "PROBE-003", "PROBE-004"):
            assert outcomes[rule]["status"] == "pass", (rule, outcomes[rule], report["measurements"])
        for rule in ("STAB-001", "STAB-002"):  # judged against the first run's counters (the probes' traffic counts)
            assert outcomes[rule]["status"] == "pass", (rule, outcomes[rule], [
                f for f in report["findings"] if f["id"] == rule])
    assert report["baseline"] == [{"path": baseline, "generated_at": report["baseline"][0]["generated_at"],
                                   "hosts": 2, "usable": True}]
    assert report["outcomes"]["inventory"]["PROBE-001"]["status"] == "pass"
    measured = report["measurements"]
    print("VM probes (%s): %s" % (vms["kind"], measured))
    jumbo = sorted((m["network"], m["payload"], m["status"]) for m in measured if m["kind"] == "jumbo")
    assert jumbo == [("storage", 8972, "ok"), ("training", 8972, "ok")]
    assert sorted(m["network"] for m in measured if m["kind"] == "throughput" and m["gbps"]) == ["storage", "training"]
    for index in (1, 2):
        assert vm(index, "pgrep -c iperf3 || true").stdout.strip() == "0"


@pytest.mark.parametrize("vms", ["netplan"], indirect=True)
def test_lldp_neighbours_on_the_bond_legs(vms, ansible_env, tmp_path):
    """lldpd on both VMs (image: data links only, every second): vm1 sees vm2 on each bond leg, both legs in one
    aggregation (vm2's bond), carrying VLANs 100 and 200; the audit's LLDP rules pass on the live facts."""
    import time
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.lldp import parse
    for index in (1, 2):  # the image runs lldpd; here the network role's option must bring it up
        vm(index, "systemctl disable --now lldpd")
    lldpd = ("-e", "fabric_network_lldpd=true", "-e", "fabric_network_lldpd_interfaces=enp0s4,enp0s5")
    first = playbook(ansible_env, vms["inventory"], "gpuops.fabric.network", *lldpd)
    assert first.returncode == 0, first.stdout[-3000:]
    for index in (1, 2):
        assert vm(index, "systemctl is-active lldpd; systemctl is-enabled lldpd").stdout.split() == ["active", "enabled"]
        assert "interface pattern enp0s4,enp0s5" in vm(index, "cat /etc/lldpd.d/gpuops-fabric.conf").stdout
    again = playbook(ansible_env, vms["inventory"], "gpuops.fabric.network", *lldpd)
    assert again.returncode == 0 and changed(again.stdout, "vm1") == 0 and changed(again.stdout, "vm2") == 0
    wait_for_lacp(1)
    deadline, ports = time.time() + 240, {}
    while time.time() < deadline:
        for index in (1, 2):  # both re-read their interfaces and send now (the VLANs came after lldpd started)
            vm(index, "lldpcli update", check=False)
        ports = parse(vm(1, "lldpctl -f json0").stdout)
        legs = [ports.get(leg) or [] for leg in ("enp0s4", "enp0s5")]
        if all(n and n[0]["aggregation"] and {100, 200} <= set(v["id"] for v in n[0]["vlans"]) for n in legs):
            break
        time.sleep(2)
    capture = os.environ.get("GPUOPS_CAPTURE_DIR")
    if capture:  # how tests/fixtures/lldp/vm-*.json0 were made
        for fmt in ("json0", "json", "keyvalue"):
            with open(os.path.join(capture, "vm-%s-bond-legs.%s" % (vms["kind"], fmt)), "w") as handle:
                handle.write(vm(1, "lldpctl -f %s" % fmt).stdout)
    ifindex = vm(2, "cat /sys/class/net/bond0/ifindex").stdout.strip()
    # vm2 by name: as booted ("vm2"), or as NetworkManager's DHCP left it when lldpd (re)started
    names = {"vm2", vm(2, "hostname").stdout.strip()}
    for leg in ("enp0s4", "enp0s5"):
        [neighbour] = ports[leg]
        assert neighbour["chassis_name"] in names, (names, neighbour)
        assert neighbour["aggregation"] == {"enabled": True, "port_id": int(ifindex)}, neighbour
        assert [v["id"] for v in neighbour["vlans"]] == [100, 200], neighbour
    report = tmp_path / "report"
    audit = playbook(ansible_env, vms["inventory"], "gpuops.fabric.audit", "-e", "fabric_report_dir=%s" % report,
                     "-e", "fabric_audit_fail_on=never")
    assert audit.returncode == 0, audit.stdout[-3000:]
    with open(str(report / "report.json")) as handle:
        outcomes = json.load(handle)["outcomes"]["vm1"]
    assert outcomes["LLDP-001"]["status"] == "pass" and outcomes["LLDP-002"]["status"] == "pass", outcomes
    # virtio NICs report a speed (qemu's speed=100000) but no link modes: the facts carry what ethtool says, and the
    # link-mode rules say they cannot judge rather than fail or pass
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ethtool import parse as parse_ethtool
    text = vm(1, "ethtool enp0s4").stdout
    if capture:  # how tests/fixtures/ethtool/virtio-net-100g.txt was made
        with open(os.path.join(capture, "virtio-net-100g.txt"), "w") as handle:
            handle.write(text)
    modes = parse_ethtool(text)
    assert modes["name"] == "enp0s4" and modes["speed_mbps"] == 100000 and modes["duplex"] == "full", modes
    assert modes["supported_modes"] == [] and modes["max_supported_mbps"] is None, modes
    for rule in ("LINK-001", "LINK-002", "LINK-003"):
        assert outcomes[rule]["status"] == "not_applicable", (rule, outcomes[rule])
        assert "reports its link modes" in outcomes[rule]["reason"], outcomes[rule]

    # The bond the "switch" never aggregated: vm2's enp0s5 leaves its bond, so vm1's enp0s5 faces a port that says
    # it is not aggregated; the audit names that leg. Then vm2's port goes back.
    if vms["kind"] == "networkmanager":  # NetworkManager would put its port straight back into the bond
        vm(2, "nmcli device set enp0s5 managed no")
    # A flap the kernel counts for real: qemu takes vm1's enp0s5 "cable" down and up (its monitor's set_link).
    flap(1)
    vm(2, "ip link set enp0s5 nomaster; ip link set enp0s5 up")  # a released port is left down
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            vm(2, "lldpcli update", check=False)
            ports = parse(vm(1, "lldpctl -f json0").stdout)
            if ports.get("enp0s5") and ports["enp0s5"][0]["aggregation"] is None:
                break
            time.sleep(2)
        assert ports["enp0s5"][0]["aggregation"] is None and ports["enp0s4"][0]["aggregation"], ports
        if capture:  # how tests/fixtures/lldp/vm-*-leg-not-aggregated.json0 were made
            with open(os.path.join(capture, "vm-%s-leg-not-aggregated.json0" % vms["kind"]), "w") as handle:
                handle.write(vm(1, "lldpctl -f json0").stdout)
        fault = tmp_path / "fault"
        audit = playbook(ansible_env, vms["inventory"], "gpuops.fabric.audit", "-e", "fabric_report_dir=%s" % fault,
                         "-e", "fabric_audit_fail_on=never", "-e", "fabric_audit_baseline=%s" % (report / "report.json"))
        assert audit.returncode == 0, audit.stdout[-3000:]
        with open(str(fault / "report.json")) as handle:
            report = json.load(handle)
        assert report["outcomes"]["vm1"]["LLDP-002"]["status"] == "findings", report["outcomes"]["vm1"]["LLDP-002"]
        said = [(f["subject"], f["message"]) for f in report["findings"] if f["host"] == "vm1" and f["id"] == "LLDP-002"]
        assert [s for s, _m in said] == ["enp0s5"], said
        assert "enp0s5 is a member of bond0 (802.3ad) but its switch port" in said[0][1], said
        assert "does not say it is aggregated" in said[0][1], said
        # the earlier audit is the baseline: vm1's enp0s5 flapped (the toggle), its enp0s4 did not
        flapped = [f for f in report["findings"] if f["id"] == "STAB-001" and f["host"] == "vm1"]
        assert [f["subject"] for f in flapped] == ["enp0s5"], flapped
        assert flapped[0]["evidence"]["flaps"] >= 1 and flapped[0]["evidence"]["since_boot"] is False
    finally:
        if vms["kind"] == "networkmanager":
            vm(2, "nmcli device set enp0s5 managed yes; nmcli connection up gpuops-enp0s5", check=False)
        else:
            vm(2, "ip link set enp0s5 down; ip link set enp0s5 master bond0; ip link set enp0s5 up", check=False)
    bond = wait_for_lacp(2)
    assert sorted(m.name for m in bond.members if m.partner_mac not in (None, "00:00:00:00:00:00")) == [
        "enp0s4", "enp0s5"], bond  # both legs back in the aggregation, each with vm1 as LACP partner


def flap(n, link="d2", interface="enp0s5"):
    """qemu takes VM n's virtual cable down and up (its monitor's set_link); returns once the guest's kernel has
    counted both carrier changes."""
    import time
    before = int(vm(n, "cat /sys/class/net/%s/carrier_changes" % interface).stdout)
    monitor(n, "set_link %s off" % link)
    time.sleep(2)
    monitor(n, "set_link %s on" % link)
    for _try in range(15):  # the guest takes the link interrupts in its own time (TCG, one CPU)
        if int(vm(n, "cat /sys/class/net/%s/carrier_changes" % interface).stdout) >= before + 2:
            return
        time.sleep(1)
    raise AssertionError("%s of vm%d did not count the flap" % (interface, n))


def windowed_audit(vms, ansible_env, report_dir, during, window):
    """The audit with a counters window of ``window`` seconds, ``during()`` run once, when both VMs' first reading is
    done and the audit waits: (the report, what ``during`` returned, the playbook's output)."""
    import threading
    audit = subprocess.Popen(
        ["ansible-playbook", "-i", vms["inventory"], "gpuops.fabric.audit", "-e", "fabric_report_dir=%s" % report_dir,
         "-e", "fabric_audit_fail_on=never", "-e", "fabric_audit_window=%d" % window],
        env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_TIMEOUT="60", ANSIBLE_PIPELINING="1",
                 PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    watchdog = threading.Timer(900, audit.kill)
    watchdog.start()
    lines, ran = [], None
    try:
        for line in audit.stdout:
            lines.append(line)
            if ran is None and line.startswith("TASK [Wait fabric_audit_window seconds]"):
                ran = during()
        audit.wait()
    finally:
        watchdog.cancel()
    output = "".join(lines)
    assert audit.returncode == 0 and ran is not None, output[-3000:]
    with open(str(report_dir / "report.json")) as handle:
        return json.load(handle), ran, output


@pytest.mark.parametrize("vms", ["netplan"], indirect=True)  # the kernel counts the flap, whatever wrote the bond
def test_a_flap_inside_the_audit_window(vms, ansible_env, tmp_path):
    """fabric_audit_window on a real kernel: one audit reads the counters, waits, reads them again. While it waits,
    qemu flaps vm1's enp0s5: STAB-001 names that leg, judged over the window (not since boot), and no other
    interface, although every counter was read twice."""
    import time

    def flapped_at():
        flap(1)  # the first reading is done on both VMs; the second comes 30 s after the wait began
        return time.time()
    report, _when, output = windowed_audit(vms, ansible_env, tmp_path / "window", flapped_at, 30)
    assert "TASK [Gather topology facts again]" in output
    flapped = [f for f in report["findings"] if f["id"] == "STAB-001"]
    assert [(f["host"], f["subject"]) for f in flapped] == [("vm1", "enp0s5")], flapped
    evidence = flapped[0]["evidence"]
    assert evidence["flaps"] >= 1 and evidence["since_boot"] is False, evidence
    assert evidence["baseline"] == "fabric_audit_window" and 25 <= evidence["window_s"] < 600, evidence
    if vm(1, "test -e /proc/net/bonding/bond0", check=False).returncode == 0:  # the earlier tests' bond (not alone)
        bond = wait_for_lacp(1)
        assert sorted(m.name for m in bond.members if m.partner_mac not in (None, "00:00:00:00:00:00")) == [
            "enp0s4", "enp0s5"], bond  # the leg is back in the aggregation for the tests after this one


def _inventory_with_management_change(vms, tmp_path, allow):
    data = inventory_data(vms["kind"])
    group = data["all"]["children"]["vms"]["vars"]
    group["fabric_networks"]["management"] = {"role": "management", "subnet": "198.18.9.0/24"}
    group["fabric_attachments"]["management"] = "enp0s3"  # the NIC the controller comes in on
    group["fabric_network_allow_management"] = allow
    group["fabric_network_rollback_timeout"] = 45
    group["fabric_network_confirm_timeout"] = 15
    data["all"]["children"]["vms"]["hosts"] = {"vm1": data["all"]["children"]["vms"]["hosts"]["vm1"]}
    return write_inventory(data, tmp_path / ("inventory-%s.yml" % allow))


def test_change_to_the_controllers_path_is_refused_then_rolled_back(vms, ansible_env, tmp_path):
    import time
    assert playbook(ansible_env, vms["inventory"], "gpuops.fabric.network").returncode == 0
    before = owned_files(1, vms["kind"])

    refused = playbook(ansible_env, _inventory_with_management_change(vms, tmp_path, False), "gpuops.fabric.network")
    assert refused.returncode != 0
    assert "enp0s3 carries this connection from the controller" in refused.stdout
    assert owned_files(1, vms["kind"]) == before

    # Allowed: the change takes enp0s3 off DHCP, the controller loses the node, the node undoes it.
    start = time.time()
    cut = playbook(ansible_env, _inventory_with_management_change(vms, tmp_path, True), "gpuops.fabric.network")
    assert cut.returncode != 0
    # Either the controller could not reach the node after the apply, or (NetworkManager activating the
    # connections one by one under TCG) it reached it first and found the change already rolled back: by
    # NetworkManager's checkpoint, or by the node's own timer when that fired before the confirmation looked (seen
    # once in a clean-clone CI run). Each says the node undid the change; the checks below see that it did.
    # Or its confirmation arrived while the node's own restore was running (the restore brings the management NIC
    # back before it writes its marker: seen in a clean-clone CI run), and was refused.
    assert ("was not reachable within 15 s after its network" in cut.stdout or
            "the change was rolled back on the node by NetworkManager's checkpoint" in cut.stdout or
            "the controller did not confirm it in time" in cut.stdout or
            "the rollback timer fired before the confirmation arrived" in cut.stdout), cut.stdout[-3000:]
    back = None
    while time.time() - start < 240:
        back = vm(1, "cat /var/lib/gpuops-fabric/rollback/rolled-back", check=False)
        if back.returncode == 0:
            break
        time.sleep(5)
    said = "the node did not come back; the play said:\n%s\nvm1's console ends:\n%s" % (
        cut.stdout[-2500:], console_tail(1))
    assert back is not None and back.returncode == 0, said
    assert owned_files(1, vms["kind"]) == before
    assert "10.0.2.15" in vm(1, "ip -4 -o addr show enp0s3").stdout
    if vms["kind"] == "networkmanager":
        log = vm(1, "journalctl -u NetworkManager --no-pager -o cat").stdout
        assert "rollback of /org/freedesktop/NetworkManager/Checkpoint/" in log, log[-3000:]
    # The bond and VLANs survived the round trip.
    ping = vm(1, "ping -M do -s 8972 -c 2 -W 3 198.18.4.2", check=False)
    assert ping.returncode == 0, ping.stdout


def test_restore_stops_an_apply_still_running(vms):
    """On a slow node the change's deferred apply can outlast a short rollback timer: the restore stops it (its
    service and everything in it, or its timer not yet fired) before putting the files back, as systemd does it."""
    import base64
    from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import restore_script
    script = restore_script(vms["kind"], "/tmp/gpuops-restore-test", [], [], [["true"]])
    vm(2, "rm -rf /tmp/gpuops-restore-test && mkdir /tmp/gpuops-restore-test && echo %s | base64 -d > "
          "/tmp/gpuops-restore-test/restore.sh" % base64.b64encode(script.encode()).decode())
    vm(2, "systemd-run --quiet --unit=gpuops-fabric-apply-7 /bin/sleep 600; "
          "systemd-run --quiet --unit=gpuops-fabric-apply-8 --on-active=600s /bin/true")
    assert vm(2, "systemctl is-active gpuops-fabric-apply-7.service gpuops-fabric-apply-8.timer").stdout.split() == [
        "active", "active"]
    vm(2, "sh /tmp/gpuops-restore-test/restore.sh")
    states = vm(2, "systemctl is-active gpuops-fabric-apply-7.service gpuops-fabric-apply-8.timer", check=False)
    assert [s for s in states.stdout.split() if s == "active"] == [], states.stdout
    assert vm(2, "pgrep -x sleep", check=False).returncode == 1  # the service's process is gone with it
    assert vm(2, "test -s /tmp/gpuops-restore-test/rolled-back", check=False).returncode == 0
    assert "gpuops-fabric: restore: true exited 0" in vm(2, "dmesg").stdout


def lspci_express(text):
    """What ``lspci -vvv`` (pciutils) says of one device's PCI Express and ACS capabilities: None without them."""
    import re
    if not re.search(r"Capabilities: \[[0-9a-f]+\] Express", text):
        return None
    devctl = text.split("DevCtl:", 1)[1].split("DevSta:", 1)[0]
    sizes = re.search(r"MaxPayload (\d+) bytes, MaxReadReq (\d+) bytes", devctl)
    said = {"readable": True, "mps_supported": int(re.search(r"DevCap:\s+MaxPayload (\d+) bytes", text).group(1)),
            "mps": int(sizes.group(1)), "mrrs": int(sizes.group(2)),
            "relaxed_ordering": "RlxdOrd+" in devctl, "no_snoop": "NoSnoop+" in devctl}
    acs = re.search(r"ACSCtl:\s+(.*)", text)
    said["acs"] = None if acs is None else dict((flag[:-1], flag[-1] == "+") for flag in acs.group(1).split())
    return said


def test_gpudirect_prerequisites_read_from_a_real_kernel(vms, ansible_env):
    """The files GPUDirect's prerequisites are read from, as a live kernel serves them: the kernel command line and
    release, IOMMU groups and their domain types (vm2 boots with an emulated Intel IOMMU and intel_iommu=on, vm1
    without one), and config space read as root (a PCI Express root port's capabilities against lspci; the
    conventional virtio NICs have none)."""
    hosts = live_facts(vms, ansible_env, ["pci", "rdma"])
    for index, host in ((1, "vm1"), (2, "vm2")):
        facts = hosts[host]
        gdr, pci = facts["gpudirect"], dict((d["address"], d) for d in facts["pci"])
        assert gdr["kernel_release"] == vm(index, "uname -r").stdout.strip()
        assert gdr["dmabuf"]["kernel"] is True and gdr["nvidia_driver"] is None and gdr["dmabuf"]["possible"] is None
        assert gdr["peermem"] is None and gdr["peermem_known"] is True
        iommu = gdr["iommu"]
        assert iommu["cmdline_read"] is True
        assert iommu["options"] == ({} if index == 1 else {"intel_iommu": "on"}), iommu
        groups = vm(index, "ls /sys/kernel/iommu_groups | wc -l").stdout.strip()
        assert iommu["groups"] == int(groups), (iommu, groups)
        nics = ("0000:00:03.0", "0000:00:04.0", "0000:00:05.0")
        if index == 1:
            assert iommu["groups"] == 0 and iommu["mode"] == "off" and all(pci[a]["iommu"] is None for a in nics)
        else:
            kernel_says = {}
            for address in nics:
                group = vm(2, "basename $(readlink /sys/bus/pci/devices/%s/iommu_group)" % address).stdout.strip()
                kind = vm(2, "cat /sys/kernel/iommu_groups/%s/type" % group).stdout.strip()
                kernel_says[address] = {"group": int(group), "type": kind}
            assert dict((a, pci[a]["iommu"]) for a in nics) == kernel_says
            types = set(k["type"] for k in kernel_says.values())
            expected = "translated" if all(t.startswith("DMA") for t in types) else \
                "passthrough" if types == {"identity"} else None
            assert expected and iommu["mode"] == expected, (iommu, kernel_says)
        # config space as root, against pciutils
        for address in ("0000:00:06.0", "0000:00:04.0"):
            said = lspci_express(vm(index, "lspci -vvv -s %s" % address[5:]).stdout)
            fact = pci[address]
            if said is None:
                assert fact["pcie_control"] is None, fact
                continue
            acs = said.pop("acs")
            assert fact["pcie_control"] == said, (fact["pcie_control"], said)
            assert fact["acs"]["readable"] is True and fact["acs"]["present"] == (acs is not None), (fact["acs"], acs)
            if acs is not None:
                names = {"source_validation": "SrcValid", "translation_blocking": "TransBlk",
                         "request_redirect": "ReqRedir", "completion_redirect": "CmpltRedir",
                         "upstream_forwarding": "UpstreamFwd", "egress_control": "EgressCtrl",
                         "direct_translated": "DirectTrans"}
                assert dict((n, fact["acs"][n]) for n in names) == dict((n, acs[f]) for n, f in names.items())
        assert pci["0000:00:06.0"]["kind"] == "root_port" and pci["0000:00:06.0"]["pcie_control"]["readable"] is True


def live_facts(vms, ansible_env, subsets):
    """Both VMs' facts as the module reads them over SSH, only ``subsets``: {host: ansible_facts.gpuops_fabric}."""
    result = subprocess.run(["ansible", "-i", vms["inventory"], "vms", "-m", "gpuops.fabric.topology_facts",
                             "-a", json.dumps({"gather_subset": subsets})],
                            env=dict(ansible_env, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="oneline",
                                     ANSIBLE_PIPELINING="1"),
                            capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    hosts = {}
    for line in result.stdout.splitlines():  # oneline: "vm1 | SUCCESS => {...}"
        name, _sep, answer = line.partition(" | SUCCESS => ")
        if answer:
            hosts[name] = json.loads(answer)["ansible_facts"]["gpuops_fabric"]
    assert sorted(hosts) == ["vm1", "vm2"], result.stdout[-3000:]
    return hosts


def soft_roce_up(n, netdev="bond0"):
    """Soft-RoCE on VM n over ``netdev``, as an administrator brings it up (once: again is a no-op). Over the bond,
    not its VLAN: rdma_rxe refuses a VLAN ("rxe creation allowed on top of a real device only", EPERM); the VLANs'
    addresses are GIDs of the bond's device, each naming its VLAN."""
    vm(n, "modprobe rdma_rxe && (rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev %s)"
       % netdev)


def soft_roce_ready(vms, ansible_env):
    """The bond and its VLANs (the network role, unless an earlier test of this boot applied it), rxe0 on both VMs."""
    if vm(1, "test -e /sys/class/net/bond0.100", check=False).returncode != 0:
        applied = playbook(ansible_env, vms["inventory"], "gpuops.fabric.network")
        assert applied.returncode == 0, applied.stdout[-4000:]
    for n in (1, 2):
        soft_roce_up(n)


@pytest.mark.parametrize("vms", ["netplan"], indirect=True)  # one boot: the RDMA stack does not depend on the backend
def test_soft_roce_read_live(vms, ansible_env):
    """Soft-RoCE over the bond that carries the training VLAN, on a real kernel (issue 35): the facts read the rxe
    device as the kernel serves it, and agree with `ibv_devinfo -v` (port state, active MTU, link layer, the GID
    table), `rdma link show` (the netdev) and the GID files, field by field; the training address is a RoCE v2 GID
    that names the VLAN."""
    soft_roce_ready(vms, ansible_env)
    hosts = live_facts(vms, ansible_env, ["nic", "rdma", "counters"])
    for index, host in ((1, "vm1"), (2, "vm2")):
        facts = hosts[host]
        assert facts["kernel_modules"]["rdma_rxe"] is True and facts["kernel_modules"]["siw"] is False
        (device,) = [d for d in facts["rdma"] if d["name"] == "rxe0"]
        assert (device["software"], device["address"], device["numa_node"], device["netdevs"]) == (
            "rxe", None, None, ["bond0"])
        (port,) = device["ports"]
        # rdma link show: "link rxe0/1 state ACTIVE physical_state LINK_UP netdev bond0"
        link = vm(index, "rdma link show rxe0/1").stdout.split()
        assert link[link.index("netdev") + 1] == port["netdev"] == "bond0", link
        assert link[link.index("state") + 1] == port["state"] == "ACTIVE", link
        said = ibv_devinfo(vm(index, "ibv_devinfo -v -d rxe0").stdout)["rxe0"][1]
        assert said["state"] == "PORT_ACTIVE" and said["link_layer"] == port["link_layer"] == "Ethernet", said
        mtu = int(vm(index, "cat /sys/class/net/bond0/mtu").stdout)
        assert int(said["active_mtu"]) == port["active_mtu"] == 4096 and mtu == 9000, (said, port)
        # the GID table: every entry ibv_devinfo lists, with its type, and nothing else
        assert dict((g["index"], (g["gid"], g["type"])) for g in port["gids"]) == dict(
            (i, (expand_gid(gid), kind)) for i, (gid, kind) in said["gids"].items()), (port["gids"], said["gids"])
        for gid in port["gids"]:
            on_disk = vm(index, "cat /sys/class/infiniband/rxe0/ports/1/gids/%d "
                                "/sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/%d" % (gid["index"], gid["index"]))
            assert on_disk.stdout.split() == [gid["gid"], gid["netdev"]], (gid, on_disk.stdout)
        # the training and storage VLANs' addresses, each a RoCE v2 GID naming its VLAN
        for vlan, subnet in (("bond0.100", 4), ("bond0.200", 5)):
            (entry,) = [g for g in port["gids"] if g["ipv4"] == "198.18.%d.%d" % (subnet, index)]
            assert (entry["netdev"], entry["type"]) == (vlan, "RoCE v2"), port["gids"]
        assert port["roce_v2_ipv4"] in ("198.18.4.%d" % index, "198.18.5.%d" % index)
        assert facts["counters"]["roce_ports"]["rxe0/1"] == "bond0"
        assert set(facts["counters"]["rdma"]["rxe0/1"]) >= {"out_of_seq_request", "rcvd_seq_err",
                                                            "completer_retry_err", "retry_exceeded_err", "link_downed"}
    # GPUOPS_RDMA_CAPTURE=DIR: what the unit tests' capture (tests/fixtures/realdata/soft-roce-vm) is made with
    keep = os.environ.get("GPUOPS_RDMA_CAPTURE")
    if keep:
        with open(os.path.join(REPO, "tests", "vm", "capture_rdma.py")) as handle:
            script = handle.read()
        for index in (1, 2):
            made = subprocess.run(["bash", VMCTL, "ssh", str(index), "python3 - /tmp/capture.tar.gz"], input=script,
                                  capture_output=True, text=True, timeout=300, check=False)
            assert made.returncode == 0, made.stderr
            with open(os.path.join(keep, "vm%d.tar.gz" % index), "wb") as sink:
                subprocess.run(["bash", VMCTL, "ssh", str(index), "cat /tmp/capture.tar.gz"], stdout=sink,
                               timeout=120, check=True)


def kernel_gid_index(n, netdev, address):
    """The index of the RoCE v2 GID VM n's kernel holds for ``address`` on ``netdev`` (rxe0 port 1), read from sysfs
    without the collection: the populated slots' netdevs, then their types and GIDs."""
    import ipaddress
    port = "/sys/class/infiniband/rxe0/ports/1"
    named = vm(n, "grep -H . %s/gid_attrs/ndevs/* 2>/dev/null || true" % port).stdout.split()
    slots = [line.rpartition(":")[0].rsplit("/", 1)[1] for line in named if line.rpartition(":")[2] == netdev]
    wanted = ipaddress.IPv6Address("::ffff:%s" % address).exploded
    found = []
    for slot in slots:
        kind, gid = vm(n, "cat %s/gid_attrs/types/%s %s/gids/%s" % (port, slot, port, slot)).stdout.splitlines()
        if kind == "RoCE v2" and gid == wanted:
            found.append(int(slot))
    assert len(found) == 1, (n, netdev, address, named, found)
    return found[0]


def nccl_conf(n):
    said = vm(n, "cat /etc/nccl.conf").stdout
    return dict(line.split("=", 1) for line in said.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize("vms", ["netplan"], indirect=True)
def test_nccl_rdma_mode_follows_the_kernels_gid_table(vms, ansible_env, tmp_path):
    """The nccl role in rdma mode on Soft-RoCE (issue 35): NCCL_IB_HCA names the live rxe port and NCCL_IB_GID_INDEX
    the RoCE v2 GID of the training VLAN's address as the kernel's table holds it (read here from sysfs, not by the
    collection). When the address is removed and added back it takes another slot of
    the table: the drift playbook names /etc/nccl.conf on that VM only (NCCL-001, the index's old and new value in
    its diff), the role rewrites it there only, and drift is quiet again: the role in check mode, on both VMs, would
    change nothing."""
    soft_roce_ready(vms, ansible_env)
    inventory, rdma = vms["inventory"], ("-e", "fabric_nccl_mode=rdma")
    wrote = playbook(ansible_env, inventory, "gpuops.fabric.nccl", *rdma)
    assert wrote.returncode == 0, wrote.stdout[-4000:]
    for n in (1, 2):
        conf = nccl_conf(n)
        assert (conf["NCCL_IB_DISABLE"], conf["NCCL_IB_HCA"], conf["NCCL_SOCKET_IFNAME"]) == (
            "0", "=rxe0:1", "=bond0.100"), conf
        assert int(conf["NCCL_IB_GID_INDEX"]) == kernel_gid_index(n, "bond0.100", "198.18.4.%d" % n), conf
    # vm2's training address leaves and comes back while another address holds its old slot
    before = kernel_gid_index(2, "bond0.100", "198.18.4.2")
    vm(2, "ip addr del 198.18.4.2/24 dev bond0.100 && ip addr add 198.18.6.2/32 dev bond0.200 && "
          "ip addr add 198.18.4.2/24 dev bond0.100 && ip addr del 198.18.6.2/32 dev bond0.200")
    after = kernel_gid_index(2, "bond0.100", "198.18.4.2")
    assert after != before
    drift = playbook(ansible_env, inventory, "gpuops.fabric.drift", *(rdma + ("-e", "fabric_report_dir=%s" % (
        tmp_path / "drift"))))
    assert drift.returncode != 0, drift.stdout[-3000:]
    with open(str(tmp_path / "drift" / "report.json")) as handle:
        found = [f for f in json.load(handle)["findings"] if f["id"] in ("NCCL-001", "DRIFT-001")]
    assert [(f["id"], f["host"], f["subject"]) for f in found] == [("NCCL-001", "vm2", "/etc/nccl.conf")], found
    diff = found[0]["evidence"]["diff"]
    assert "-NCCL_IB_GID_INDEX=%d" % before in diff and "+NCCL_IB_GID_INDEX=%d" % after in diff, diff
    repair = playbook(ansible_env, inventory, "gpuops.fabric.nccl", *rdma)
    assert repair.returncode == 0 and changed(repair.stdout, "vm2") == 1 and changed(repair.stdout, "vm1") == 0
    assert int(nccl_conf(2)["NCCL_IB_GID_INDEX"]) == after
    quiet = playbook(ansible_env, inventory, "gpuops.fabric.drift", *(rdma + ("-e", "fabric_report_dir=%s" % (
        tmp_path / "again"))))
    assert quiet.returncode == 0, quiet.stdout[-3000:]


RXE_TRANSPORT = ("out_of_seq_request", "rcvd_seq_err", "completer_retry_err", "retry_exceeded_err")


def rxe_counters(n):
    said = vm(n, "grep -H . /sys/class/infiniband/rxe0/ports/1/hw_counters/*").stdout.splitlines()
    return dict((line.rsplit(":", 1)[0].rsplit("/", 1)[1], int(line.rsplit(":", 1)[1])) for line in said)


def rdma_write(seconds, keep=None):
    """ib_write_bw from vm1 to vm2 over the training VLAN's GIDs for ``seconds``, then ib_write_lat (perftest, as
    an operator runs it): the client's outputs. The server starts first, detached, bounded by timeout."""
    import time
    said = {}
    for tool, extra in (("ib_write_bw", "-D %d --report_gbits" % seconds), ("ib_write_lat", "-n 200")):
        server = "%s -d rxe0 -x %d -F %s" % (tool, kernel_gid_index(2, "bond0.100", "198.18.4.2"), extra)
        vm(2, "setsid -f sh -c 'exec timeout 90 %s >/tmp/%s-server.txt 2>&1 </dev/null'" % (server, tool))
        time.sleep(2)
        client = vm(1, "timeout 90 %s -d rxe0 -x %d -F %s 198.18.4.2" % (
            tool, kernel_gid_index(1, "bond0.100", "198.18.4.1"), extra), check=False)
        assert client.returncode == 0, (tool, client.stdout[-2000:], client.stderr[-2000:],
                                        vm(2, "cat /tmp/%s-server.txt" % tool).stdout[-2000:])
        said[tool] = client.stdout
        if keep:
            for side, text in (("client", client.stdout), ("server", vm(2, "cat /tmp/%s-server.txt" % tool).stdout)):
                with open(os.path.join(keep, "%s-%s.txt" % (tool, side)), "w") as sink:
                    sink.write(text)
    return said


@pytest.mark.parametrize("vms", ["netplan"], indirect=True)
def test_rdma_counters_grow_under_loss_and_stay_quiet_without(vms, ansible_env, tmp_path):
    """Soft-RoCE's transport counters between two readings of one audit (fabric_audit_window), on a real kernel
    (issue 35): RDMA writes from vm1 to vm2 while the audit waits leave STAB-004 quiet on a clean link; with netem
    dropping 5% of vm1's frames on both bond legs the same writes are retried, and STAB-004 names the rxe port and
    the counters that grew, each by no more than the kernel's own count grew around the audit. Rates are not judged:
    under TCG Soft-RoCE moves a few hundred Mbit/s at most."""
    soft_roce_ready(vms, ansible_env)
    keep = os.environ.get("GPUOPS_RDMA_CAPTURE")
    report, said, _output = windowed_audit(vms, ansible_env, tmp_path / "clean", lambda: rdma_write(5, keep), 20)
    assert "Gb/sec" in said["ib_write_bw"] and "usec" in said["ib_write_lat"], said
    assert [f for f in report["findings"] if f["id"] == "STAB-004"] == []
    before = dict((n, rxe_counters(n)) for n in (1, 2))
    vm(1, "modprobe sch_netem && for leg in enp0s4 enp0s5; do tc qdisc replace dev $leg root netem loss 5%; done")
    try:
        report, _said, _output = windowed_audit(vms, ansible_env, tmp_path / "lossy", lambda: rdma_write(5), 20)
    finally:
        vm(1, "for leg in enp0s4 enp0s5; do tc qdisc del dev $leg root 2>/dev/null || true; done")
    grown = dict((n, dict((c, rxe_counters(n)[c] - before[n][c]) for c in RXE_TRANSPORT)) for n in (1, 2))
    named = [f for f in report["findings"] if f["id"] == "STAB-004"]
    assert named and all(f["subject"] == "rxe0/1" for f in named), (named, grown)
    for finding in named:
        judged = finding["evidence"]["counters"]
        assert set(judged) <= set(RXE_TRANSPORT) and judged, finding
        host = int(finding["host"][2:])
        assert all(0 < count <= grown[host][c] for c, count in judged.items()), (finding, grown)


@pytest.mark.parametrize("vms", ["netplan"], indirect=True)
def test_rdma_probe_between_the_vms(vms, ansible_env, tmp_path):
    """The rdma probe in the audit's probes (issue 35): after iperf3 in each round, perftest between the VMs' rxe
    ports, each end on the GID index the kernel holds for its own address on that network (checked here from sysfs).
    Soft-RoCE under TCG moves a fraction of a percent of the 100 Gbit/s its ports say: PROBE-006 names the training
    pair as software RoCE below its ports' rate, with the latency percentiles. The storage pair cannot reach its peer
    (a blackhole route on each VM to the other's storage address, for this audit): PROBE-006 fails it with the cause
    the client sees, no route, and only the storage pair's servers waited in vain; none is left running."""
    soft_roce_ready(vms, ansible_env)
    report_dir = tmp_path / "probes"
    for n in (1, 2):
        vm(n, "ip route add blackhole 198.18.5.%d/32" % (3 - n))
    try:
        audit = playbook(ansible_env, vms["inventory"], "gpuops.fabric.audit", "-e", "fabric_probes_enabled=true",
                         "-e", json.dumps({"fabric_probes": ["throughput", "rdma"]}), "-e", "fabric_probe_duration=3",
                         "-e", "fabric_audit_fail_on=never", "-e", "fabric_report_dir=%s" % report_dir)
    finally:
        for n in (1, 2):
            vm(n, "ip route del blackhole 198.18.5.%d/32" % (3 - n), check=False)
    assert audit.returncode == 0, audit.stdout[-4000:]
    with open(str(report_dir / "report.json")) as handle:
        report = json.load(handle)
    found = dict((f["evidence"]["network"], f) for f in report["findings"] if f["id"] == "PROBE-006")
    assert sorted(found) == ["storage", "training"], found
    finding = found["training"]
    evidence, n = finding["evidence"], int(finding["host"][2:])
    assert evidence["gid_index"] == kernel_gid_index(n, "bond0.100", "198.18.4.%d" % n), evidence
    assert evidence["peer_gid_index"] == kernel_gid_index(3 - n, "bond0.100", "198.18.4.%d" % (3 - n))
    assert finding["severity"] == "fail" and evidence["expected_gbps"] == 96.0, finding
    assert 0 < evidence["gbps"] < 0.8 * 96.0 and "(software RoCE: rxe, rxe)" in finding["message"], finding
    # ib_write_lat has the rest of the slot, and 200 writes on software RoCE: on this machine, busy, 1000 writes took
    # 8 s and more (22 ms each once, just after the VMs booted), and a fixed 10 s bound cut about half of them (the
    # server then waited for the slot's end: no stall of rxe)
    assert evidence["latency"]["iterations"] == 200, evidence
    assert evidence["latency"]["p99_us"] >= evidence["latency"]["t_typical_us"] > 0, finding
    assert "latency (us) typical" in finding["message"], finding
    finding = found["storage"]
    peer = 3 - int(finding["host"][2:])
    assert finding["severity"] == "fail" and finding["evidence"].get("gbps") is None, finding
    assert "no TCP connection to the peer's perftest" in finding["message"] and \
        "no route to 198.18.5.%d (Invalid argument)" % peer in finding["message"], finding
    waited = [f for f in report["findings"] if f["id"] == "PROBE-004"]
    assert waited and all(" on storage " in f["message"] for f in waited), waited
    for index in (1, 2):
        assert vm(index, "pgrep -c 'ib_write_(bw|lat)' || true").stdout.strip() == "0"
