"""A real Slurm cluster on namespace hosts (tests/utils/nshosts.py): Debian's slurm-wlm and munge, nothing mocked.

The last namespace host is the head: slurmctld runs in its network namespace under its own hostname (slurmctld only
starts where the hostname is SlurmctldHost's). Each other host runs a slurmd of its own node name (``slurmd -N``) in
its network namespace; it keeps the machine's mount namespace, so the cgroup hierarchy slurmd's start-up checks for
is there (``ip netns exec`` would mount a fresh /sys without it). One munged with a key of its own serves all of them
through a socket in the work folder (``AuthInfo=socket=``); spool, state, logs and pid files are in the work folder
too, per node (``%n``). Nothing listens outside the namespaces.
"""

import os
import signal
import subprocess
import time

from nshosts import sh

SLURMCTLD_PORT = 46817
SLURMD_PORT = 46818


class SlurmBed:
    def __init__(self, hosts, work):
        """``hosts``: a NamespaceHosts already up, with at least two hosts; the last is the head."""
        self.hosts = hosts
        self.work = str(work)
        self.head = hosts.names[-1]
        self.nodes = hosts.names[:-1]
        self.conf = os.path.join(self.work, "slurm.conf")
        self.munge = os.path.join(self.work, "munge")
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def _config(self):
        lines = [
            "ClusterName=gpuopstest",
            "SlurmctldHost=%s(%s)" % (self.head, self.hosts.mgmt_address(len(self.hosts.names))),
            "SlurmctldPort=%d" % SLURMCTLD_PORT,
            "SlurmdPort=%d" % SLURMD_PORT,
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % os.path.join(self.munge, "socket"),
            "SlurmUser=root",
            "SlurmdUser=root",
            "StateSaveLocation=%s" % os.path.join(self.work, "state"),
            "SlurmdSpoolDir=%s" % os.path.join(self.work, "spool", "%n"),
            "SlurmctldPidFile=%s" % os.path.join(self.work, "slurmctld.pid"),
            "SlurmdPidFile=%s" % os.path.join(self.work, "slurmd-%n.pid"),
            "SlurmctldLogFile=%s" % os.path.join(self.work, "slurmctld.log"),
            "SlurmdLogFile=%s" % os.path.join(self.work, "slurmd-%n.log"),
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/linear",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "ReturnToService=2",
        ]
        for index, name in enumerate(self.nodes, 1):
            lines.append("NodeName=%s NodeAddr=%s CPUs=1 RealMemory=100 State=UNKNOWN" % (
                name, self.hosts.mgmt_address(index)))
        lines.append("PartitionName=gpu Nodes=ALL Default=YES State=UP")
        return "\n".join(lines) + "\n"

    def up(self, timeout=60):
        for folder in ("state", "spool", "munge"):
            os.makedirs(os.path.join(self.work, folder), mode=0o700, exist_ok=True)
        for name in self.nodes:
            os.makedirs(os.path.join(self.work, "spool", name), exist_ok=True)
        with open(self.conf, "w") as handle:
            handle.write(self._config())
        key = os.path.join(self.munge, "munge.key")
        with open(key, "wb") as handle:
            handle.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sh("munged", "--force", "--key-file=" + key, "--socket=" + os.path.join(self.munge, "socket"),
           "--pid-file=" + os.path.join(self.munge, "munged.pid"), "--log-file=" + os.path.join(self.munge, "log"),
           "--seed-file=" + os.path.join(self.munge, "seed"))
        netns = "--net=/run/netns/%s"
        # the head's hostname must be SlurmctldHost's; the names are the test's own, not an inventory's
        subprocess.run(["nsenter", netns % self.head, "unshare", "--uts", "sh", "-c",
                        "hostname %s && exec slurmctld -i" % self.head], env=self.env, check=True)
        for name in self.nodes:
            subprocess.run(["nsenter", netns % name, "slurmd", "-N", name], env=self.env, check=True)
        deadline = time.time() + timeout
        while True:
            states = self.states()
            if states and all(states.get(n, "").split("+")[0] == "IDLE" for n in self.nodes):
                return self
            if time.time() > deadline:
                raise RuntimeError("Slurm nodes did not come up: %r; slurmctld log: %s" % (
                    states, self.log("slurmctld.log")[-2000:]))
            time.sleep(0.5)

    def log(self, name):
        try:
            with open(os.path.join(self.work, name)) as handle:
                return handle.read()
        except OSError:
            return ""

    def scontrol(self, *args, check=True):
        return subprocess.run(["nsenter", "--net=/run/netns/%s" % self.head, "scontrol"] + list(args),
                              env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def states(self):
        """node -> (State, Reason without its stamp or None), from sinfo of the head."""
        done = subprocess.run(["nsenter", "--net=/run/netns/%s" % self.head, "sinfo", "--Node", "--noheader",
                               "--format=%N|%T"], env=self.env, capture_output=True, text=True, check=False,
                              timeout=60)
        states = {}
        for line in done.stdout.splitlines():
            if "|" in line:
                name, state = line.split("|", 1)
                states[name] = state.upper()
        return states

    def node(self, name):
        """(State, Reason) of ``name`` as scontrol shows them (the reason without its [user@time] stamp)."""
        text = self.scontrol("show", "node", name).stdout
        state = reason = None
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("State="):
                state = line.split()[0][len("State="):]
            if line.startswith("Reason="):
                reason = line[len("Reason="):].rsplit(" [", 1)[0]
        return state, reason

    def settled(self, name, timeout=60):
        """(State, Reason) of ``name`` once slurmctld has heard from its slurmd: a resumed node is IDLE+NOT_RESPONDING
        until the ping slurmctld sends on RESUME is answered (a moment)."""
        deadline = time.time() + timeout
        while True:
            state, reason = self.node(name)
            if "NOT_RESPONDING" not in (state or "") or time.time() > deadline:
                return state, reason
            time.sleep(0.5)

    def down(self):
        pids = [os.path.join(self.work, "slurmd-%s.pid" % n) for n in self.nodes]
        pids += [os.path.join(self.work, "slurmctld.pid"), os.path.join(self.munge, "munged.pid")]
        for pidfile in pids:
            try:
                with open(pidfile) as handle:
                    os.kill(int(handle.read().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
