"""The tuning role (gpuops.fabric.tuning) on two namespace hosts over real SSH (tests/utils/nshosts.py): the kernel's
own per-namespace TCP buffer sysctls are raised for real, the net.core maxima (read-only inside a network namespace,
as in a container) are named and left, and the sysctl file lands in each host's own /etc/sysctl.d (ip netns exec
binds /etc/netns/<host>/sysctl.d over it). --check first changes nothing, the second run changes nothing, and a bad
interface name stops the play before anything is written."""

import json
import os
import subprocess

import pytest

from conftest import REPO, recap
from nshosts import NETNS_ETC, NamespaceHosts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root (CI runs as root)")

PREFIX = "gftu"
MGMT, TRAIN = 16, 17
FILE = "60-gpuops-fabric.conf"


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    hosts = NamespaceHosts(str(tmp_path_factory.mktemp("tuning")), 2, prefix=PREFIX, mgmt_octet=MGMT, train_octet=TRAIN,
                           private_etc=("sysctl.d",))
    hosts.up()
    yield hosts
    hosts.down()


def inventory(bed, tmp_path, **extra):
    group = {"fabric_networks": {"training": {"role": "training", "subnet": bed.train_subnet(), "mtu": 9000}},
             "fabric_attachments": {"training": "eth1"},
             # 50 ms: a path between sites; at the veth's 10000 Mb/s, 2 x BDP is 125 MB, so 128 MiB
             "fabric_tuning_rtt_ms": 50}
    group.update(extra)
    return bed.write_inventory(tmp_path / "inventory.yml", group)


def tuning(env, inv, *args):
    return subprocess.run(["ansible-playbook", "-i", inv, os.path.join(REPO, "playbooks", "tuning.yml")] + list(args),
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                          timeout=300, check=False)


def in_host(name, path):
    return subprocess.run(["ip", "netns", "exec", name, "cat", path], capture_output=True, text=True,
                          check=True).stdout.split()


def test_buffers_raised_for_real_idempotent_and_check_mode_safe(ansible_env, bed, tmp_path):
    inv = inventory(bed, tmp_path)
    machine = open("/proc/sys/net/ipv4/tcp_rmem").read().split()
    before = dict((n, in_host(n, "/proc/sys/net/ipv4/tcp_rmem")) for n in bed.names)
    files = dict((n, os.path.join(NETNS_ETC, n, "sysctl.d", FILE)) for n in bed.names)

    check = tuning(ansible_env, inv, "--check", "--diff")
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
    for name in bed.names:
        assert recap(check.stdout, name)["changed"] == "1"
        assert in_host(name, "/proc/sys/net/ipv4/tcp_rmem") == before[name] and not os.path.exists(files[name])
    assert "+net.ipv4.tcp_rmem = %s %s 134217728" % tuple(before[bed.names[0]][:2]) in check.stdout

    done = tuning(ansible_env, inv, "--diff")
    assert done.returncode == 0, done.stdout[-3000:]
    for name in bed.names:
        assert recap(done.stdout, name)["changed"] == "1"
        for sysctl in ("tcp_rmem", "tcp_wmem"):
            assert in_host(name, "/proc/sys/net/ipv4/" + sysctl)[2] == "134217728"
        text = open(files[name]).read()
        assert "net.ipv4.tcp_rmem = %s %s 134217728\n" % tuple(before[name][:2]) in text
        assert "net.core.rmem_max" not in text  # read-only in a namespace: not the host's to set from here
        # what the kernel would load at boot: sysctl reads the file back as the values now live
        loaded = subprocess.run(["ip", "netns", "exec", name, "sysctl", "-p", "/etc/sysctl.d/" + FILE],
                                capture_output=True, text=True, check=False)
        assert loaded.returncode == 0, loaded.stderr
    assert "net.core.rmem_max: read-only here" in done.stdout
    assert "eth1: no PCI function" in done.stdout
    assert open("/proc/sys/net/ipv4/tcp_rmem").read().split() == machine  # the machine's own stack is untouched

    again = tuning(ansible_env, inv)
    check_again = tuning(ansible_env, inv, "--check")
    for run in (again, check_again):
        assert run.returncode == 0, run.stdout[-3000:]
        for name in bed.names:
            assert recap(run.stdout, name)["changed"] == "0"


def test_a_bad_interface_name_stops_before_anything_is_written(ansible_env, bed, tmp_path):
    for name in bed.names:
        for leftover in os.listdir(os.path.join(NETNS_ETC, name, "sysctl.d")):
            os.unlink(os.path.join(NETNS_ETC, name, "sysctl.d", leftover))
    inv = inventory(bed, tmp_path, fabric_tuning_interfaces=["eth1", "eth1;reboot"])
    done = tuning(ansible_env, inv)
    assert done.returncode != 0
    assert "interfaces[1]: 'eth1;reboot' has characters outside the interface name rule" in done.stdout
    for name in bed.names:
        assert os.listdir(os.path.join(NETNS_ETC, name, "sysctl.d")) == []
    missing = tuning(ansible_env, inventory(bed, tmp_path, fabric_tuning_interfaces=["eth7"]))
    assert missing.returncode != 0 and "interfaces: eth7 not on this node (eth0, eth1, lo)" in missing.stdout
    print(json.dumps(recap(missing.stdout, bed.names[0])))
