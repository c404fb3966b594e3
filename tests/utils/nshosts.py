"""Many test hosts on one machine: one network namespace per host, each with its own sshd, reached by Ansible over
real SSH. Used by the probe tests and by benchmarks/audit_scale_bench.py.

Every host has two links into two bridges in the root namespace:
- eth0, management, <mgmt /24>.<i> (bridge <prefix>m, .254): what Ansible connects to.
- eth1, training, <train /24>.<i> at MTU 9000 (bridge <prefix>t, no address): what probes measure.
The prefix and the /24s carry this run's test-bed slot (tests/utils/testbed.py): prefix "gftu" becomes "gftua" in
slot 0, octet 16 the /24 198.18.16 there and 198.18.80 in slot 1, so two runs on one machine never collide.
  A link is shaped with ``tc tbf`` on both of its ends (the host's eth1 and the bridge's port towards it).

The hosts share the machine's filesystem, processes and Python; only the network stack and the hostname are their
own. No default route. Run as root. Addresses are in the benchmark range 198.18.0.0/15 only.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import testbed

SSHD = "/usr/sbin/sshd"
NETNS_ETC = "/etc/netns"


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


class NamespaceHosts:
    def __init__(self, work, count, prefix="gfns", mgmt_octet=0, train_octet=1, train_mtu=9000, private_etc=()):
        """``private_etc``: folders of /etc each host has its own empty copy of (``ip netns exec`` binds
        /etc/netns/<host>/<folder> over /etc/<folder> for the host's sshd and all it starts), e.g. ("sysctl.d",) so
        that what a module writes there stays in the test."""
        if not 1 <= count <= 250:
            raise ValueError("count %r: 1..250 hosts" % count)
        self.private_etc = tuple(private_etc)
        self.work = str(work)
        self.count = count
        self.prefix = testbed.name(prefix)
        self.mgmt_net = testbed.net(mgmt_octet)
        self.train_net = testbed.net(train_octet)
        self.train_mtu = train_mtu
        self.names = ["%s%d" % (self.prefix, i) for i in range(1, count + 1)]
        self.key = os.path.join(self.work, "id_ed25519")

    # -- addresses -------------------------------------------------------------------------------------------
    def mgmt_address(self, index):
        return "%s.%d" % (self.mgmt_net, index)

    def train_address(self, index):
        return "%s.%d" % (self.train_net, index)

    def train_subnet(self):
        return "%s.0/24" % self.train_net

    # -- life cycle ------------------------------------------------------------------------------------------
    def up(self):
        self.down()  # a run that was killed may have left its namespaces
        os.makedirs(self.work, exist_ok=True)
        os.makedirs("/run/sshd", exist_ok=True)
        if not os.path.exists(self.key):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key)
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.work, "host_key"))
        shutil.copy(self.key + ".pub", os.path.join(self.work, "authorized_keys"))
        mbr, tbr = self.prefix + "m", self.prefix + "t"
        sh("ip", "link", "add", mbr, "type", "bridge")
        sh("ip", "addr", "add", self.mgmt_address(254) + "/24", "dev", mbr)
        sh("ip", "link", "set", mbr, "up")
        sh("ip", "link", "add", tbr, "type", "bridge")
        sh("ip", "link", "set", tbr, "mtu", str(self.train_mtu), "up")
        for index, name in enumerate(self.names, 1):
            sh("ip", "netns", "add", name)
            sh("ip", "-n", name, "link", "set", "lo", "up")
            for kind, bridge, address, mtu in (("m", mbr, self.mgmt_address(index), 1500),
                                               ("t", tbr, self.train_address(index), self.train_mtu)):
                outer, inner = "%s%s%d" % (self.prefix, kind, index), "eth0" if kind == "m" else "eth1"
                sh("ip", "link", "add", outer, "mtu", str(mtu), "type", "veth", "peer", "name", inner,
                   "mtu", str(mtu), "netns", name)
                sh("ip", "link", "set", outer, "master", bridge, "up")
                sh("ip", "-n", name, "addr", "add", address + "/24", "dev", inner)
                sh("ip", "-n", name, "link", "set", inner, "up")
            for folder in self.private_etc:
                os.makedirs(os.path.join(NETNS_ETC, name, folder), exist_ok=True)
            self._sshd(index, name)
        self.wait_ssh()
        return self

    def _sshd(self, index, name):
        conf = os.path.join(self.work, "sshd_%s.conf" % name)
        with open(conf, "w") as handle:
            handle.write("\n".join([
                "ListenAddress %s" % self.mgmt_address(index),
                "HostKey %s" % os.path.join(self.work, "host_key"),
                "PidFile %s" % os.path.join(self.work, "sshd_%s.pid" % name),
                "AuthorizedKeysFile %s" % os.path.join(self.work, "authorized_keys"),
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "UsePAM no", "StrictModes no", "UseDNS no",
                "MaxStartups 200:30:400", "MaxSessions 50",
                "Subsystem sftp internal-sftp", ""]))
        sh("ip", "netns", "exec", name, "unshare", "--uts", "sh", "-c", "hostname %s; exec %s -f %s" % (name, SSHD, conf))

    def wait_ssh(self, timeout=30):
        deadline = time.time() + timeout
        for index in range(1, self.count + 1):
            while True:
                try:
                    socket.create_connection((self.mgmt_address(index), 22), timeout=1).close()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError("sshd of %s did not come up" % self.names[index - 1])
                    time.sleep(0.1)

    def down(self):
        for name in self._existing():
            pidfile = os.path.join(self.work, "sshd_%s.pid" % name)
            try:
                with open(pidfile) as handle:
                    os.kill(int(handle.read().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
            # whatever still runs in the namespace (an sshd from a run whose work directory is gone)
            pids = sh("ip", "netns", "pids", name, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            sh("ip", "netns", "del", name, check=False)
        # Deleting one end of a veth pair removes both at once. Left to the namespace's teardown, the bridge-side
        # ends linger until the kernel gets round to it (seen: minutes), and a test bed reusing the names fails.
        for line in sh("ip", "-o", "link", "show", check=False).stdout.splitlines():
            link = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
            rest = link[len(self.prefix) + 1:]
            if link.startswith(self.prefix) and link[len(self.prefix):len(self.prefix) + 1] in ("m", "t") and rest.isdigit():
                sh("ip", "link", "del", link, check=False)
        for bridge in (self.prefix + "m", self.prefix + "t"):
            sh("ip", "link", "del", bridge, check=False)
        for name in self.names:
            shutil.rmtree(os.path.join(NETNS_ETC, name), ignore_errors=True)
        try:
            os.rmdir(NETNS_ETC)  # only when nothing else keeps files there
        except OSError:
            pass

    def _existing(self):
        listed = sh("ip", "netns", "list", check=False).stdout.split("\n")
        names = [line.split()[0] for line in listed if line.strip()]
        return [n for n in names if n.startswith(self.prefix) and n[len(self.prefix):].isdigit()]

    # -- faults ----------------------------------------------------------------------------------------------
    def shape(self, index, rate, latency="50ms", host_side=True, burst="256kb"):
        """Shape host ``index``'s training link to ``rate`` (tc syntax, e.g. '1gbit') in both directions, with a
        queue of ``latency`` at that rate (plus the ``burst``, which tbf's limit includes) in front of each end. ``host_side=False`` shapes
        only the bridge's port towards the host, as a switch port's queue: the sender's own qdisc is bounded by TCP
        small queues, so only a queue past the sender fills up (bufferbloat)."""
        name = self.names[index - 1]
        for args in (("ip", "netns", "exec", name, "tc"), ("tc",)):
            dev = "eth1" if len(args) > 1 else "%st%d" % (self.prefix, index)
            if len(args) > 1 and not host_side:
                sh(*(args + ("qdisc", "del", "dev", dev, "root")), check=False)
                continue
            sh(*(args + ("qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", burst,
                         "latency", latency)))

    def forward_lldp(self):
        """Let the training bridge pass LLDP frames (01:80:c2:00:00:0e; a bridge keeps them by default), so the hosts
        see each other as LLDP neighbours, as a node sees its switch."""
        sh("ip", "link", "set", self.prefix + "t", "type", "bridge", "group_fwd_mask", "0x4000")

    def start_lldpd(self, index, interfaces="eth1", switch=None):
        """lldpd in host ``index``'s namespace with its own control socket (returned), sending every second.

        ``switch`` makes the host advertise what a switch port does and lldpd on Linux does not send by itself:
        ``{"name": chassis name, "port": port id and description, "pvid": id, "vlans": [id, ...], "mfs": bytes}``.
        The TLVs are real IEEE 802.1 (PVID, VLAN name) and 802.3 (maximum frame size) TLVs on the wire, sent as
        lldpd custom TLVs; the receiving lldpd decodes them as it would a switch's."""
        name = self.names[index - 1]
        # lldpcli connects as lldpd's unprivileged user: the socket's directories must be open to it (pytest's
        # temporary directories are not)
        directory = os.path.join("/run", "gpuops-fabric-tests", self.prefix)
        os.makedirs(directory, exist_ok=True)
        for path in (os.path.dirname(directory), directory):
            os.chmod(path, 0o755)
        socket_path = os.path.join(directory, "lldpd-%s.sock" % name)
        # The configuration goes in at start (-O, instead of the machine's /etc/lldpd.d): a tx-interval set later
        # through lldpcli left lldpd here sending one LLDPDU and then none (tx counter stuck at 1).
        config = os.path.join(directory, "lldpd-%s.conf" % name)
        lines = ["configure lldp tx-interval 1"] + switch_port_config(switch or {})
        with open(config, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        hostname = (switch or {}).get("name") or name
        sh("ip", "netns", "exec", name, "unshare", "--uts", "sh", "-c",
           "hostname %s; exec lldpd -O %s -u %s -I %s" % (hostname, config, socket_path, interfaces))
        deadline = time.time() + 10
        while time.time() < deadline:
            if sh("ip", "netns", "exec", name, "lldpcli", "-u", socket_path, "show", "configuration",
                  check=False).returncode == 0:
                return socket_path
            time.sleep(0.2)
        raise RuntimeError("lldpd of %s did not answer on %s" % (name, socket_path))

    def stop_lldpd(self, index):
        """Stop host ``index``'s lldpd (its processes rename themselves, so they are found by namespace and name)."""
        def running():
            found = []
            for pid in sh("ip", "netns", "pids", self.names[index - 1], check=False).stdout.split():
                try:
                    with open("/proc/%s/comm" % pid) as handle:
                        if handle.read().strip() == "lldpd":
                            found.append(int(pid))
                except OSError:
                    pass
            return found
        for pid in running():
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.time() + 10
        while running():
            if time.time() > deadline:
                raise RuntimeError("lldpd of %s did not stop" % self.names[index - 1])
            time.sleep(0.2)

    def lldp_update(self, index, socket_path):
        """Make host ``index``'s lldpd send now (a new tx-interval only counts from the next frame, up to 30 s away)."""
        sh("ip", "netns", "exec", self.names[index - 1], "lldpcli", "-u", socket_path, "update", check=False)

    def set_mtu(self, index, mtu):
        """The host's own training interface at ``mtu`` (the bridge side stays as it is)."""
        sh("ip", "-n", self.names[index - 1], "link", "set", "eth1", "mtu", str(mtu))

    # -- Ansible ---------------------------------------------------------------------------------------------
    def hostvars(self):
        return dict((name, {"ansible_host": self.mgmt_address(index)}) for index, name in enumerate(self.names, 1))

    def connection_vars(self):
        return {
            "ansible_user": "root",
            "ansible_ssh_private_key_file": self.key,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                                       "-o LogLevel=ERROR",
            "ansible_python_interpreter": "/usr/bin/python3",
        }

    def write_inventory(self, path, group_vars=None, hosts=None, host_vars=None):
        """An Ansible inventory of the hosts (all, or the names in ``hosts``) with the SSH settings and
        ``group_vars``, and ``host_vars`` ({host: its own variables}) on top of each host's address, written to
        ``path`` as JSON (which Ansible's YAML inventory reads); returns ``path``."""
        group = dict(self.connection_vars(), **(group_vars or {}))
        chosen = dict((n, dict(v, **(host_vars or {}).get(n, {}))) for n, v in self.hostvars().items()
                      if hosts is None or n in hosts)
        with open(str(path), "w") as handle:
            json.dump({"all": {"vars": group, "hosts": chosen}}, handle, indent=1)
        return str(path)


def _hex(data):
    return ",".join("%02x" % b for b in data)


def switch_port_config(switch):
    """lldpcli lines that make lldpd advertise a switch port: its port id/description, PVID, VLANs and maximum frame
    size (IEEE 802.1 OUI 00-80-C2 subtypes 1 and 3, IEEE 802.3 OUI 00-12-0F subtype 4)."""
    lines = []
    if switch.get("port"):
        port = switch["port"]
        lines.append("configure ports eth1 lldp portidsubtype local %s description %s" % (port, port))
    if switch.get("pvid") is not None:
        lines.append("configure lldp custom-tlv oui 00,80,c2 subtype 1 oui-info %s" % _hex(
            switch["pvid"].to_bytes(2, "big")))
    for vid in switch.get("vlans") or []:
        label = ("vlan%d" % vid).encode()
        lines.append("configure lldp custom-tlv oui 00,80,c2 subtype 3 oui-info %s" % _hex(
            vid.to_bytes(2, "big") + bytes([len(label)]) + label))
    if switch.get("mfs") is not None:
        lines.append("configure lldp custom-tlv oui 00,12,0f subtype 4 oui-info %s" % _hex(
            switch["mfs"].to_bytes(2, "big")))
    return lines


def iperf3_processes():
    """PIDs and command lines of every iperf3 process on the machine (the hosts share one process table)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0].decode(errors="replace")) == "iperf3":
            found.append((int(pid), b" ".join(argv).decode(errors="replace").strip()))
    return found


def main(argv=None):
    """Command line for molecule's create/destroy playbooks and for trying things by hand:
    nshosts.py up --work DIR --count N [--prefix P] [--mgmt-octet A] [--train-octet B] --inventory FILE [--vars FILE]
                  [--roots DIR --root-dir PATH ...]
    nshosts.py down --work DIR [--prefix P]
    The test-bed slot (tests/utils/testbed.py) comes from GPUOPS_TESTBED_SLOT, else up leases a free one and keeps its
    number in DIR/slot for down."""
    import argparse
    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--work", required=True)
    parser.add_argument("--count", type=int, default=2)
    parser.add_argument("--prefix", default="gfns")
    parser.add_argument("--mgmt-octet", type=int, default=0)
    parser.add_argument("--train-octet", type=int, default=1)
    parser.add_argument("--inventory", help="write an Ansible inventory (YAML) of the hosts here")
    parser.add_argument("--vars", help="a YAML (or JSON) file of group variables to add to the inventory")
    parser.add_argument("--roots", help="a folder with a directory per host (its stand-in /)")
    parser.add_argument("--root-dir", action="append", default=[], help="a folder to make in each host's root")
    args = parser.parse_args(argv)
    kept = os.path.join(args.work, "slot")
    if args.action == "down" and not os.environ.get(testbed.ENV) and os.path.exists(kept):
        with open(kept) as handle:
            os.environ[testbed.ENV] = handle.read().strip()
    bed = NamespaceHosts(args.work, args.count, prefix=args.prefix, mgmt_octet=args.mgmt_octet,
                         train_octet=args.train_octet)
    if args.action == "down":
        bed.down()
        return
    bed.up()
    with open(kept, "w") as handle:
        handle.write("%d\n" % testbed.slot())
    for name in bed.names:
        for folder in args.root_dir:
            os.makedirs(os.path.join(args.roots, name, folder), exist_ok=True)
    if args.inventory:
        group = {"scenario_subnet": bed.train_subnet()}
        if args.vars:
            import yaml
            with open(args.vars) as handle:
                group.update(yaml.safe_load(handle) or {})
        bed.write_inventory(args.inventory, group)


if __name__ == "__main__":
    main()
