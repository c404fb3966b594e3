"""The module host_tuning (plugins/modules/host_tuning.py) run whole, as Ansible runs it, on temporary root trees: no
write leaves the root (real symlinks below the root that point out of it, to a folder beside it), values the kernel
would refuse are warned about and never kept for the next boot, and the options are checked with messages that name
the key and the value. A root other than / runs no command, so nothing here touches this machine."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from conftest import COLLECTIONS_ROOT
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning import sysctl_file_problem
from ansible_collections.gpuops.fabric.plugins.module_utils._tuning_node import (
    OutsideRoot, confined_path, write_file, write_value,
)
from ansible_collections.gpuops.fabric.plugins.modules.host_tuning import option_problems
from ansible_collections.gpuops.fabric.plugins.module_utils import _tuning_node

FILE = "/etc/sysctl.d/60-gpuops-fabric.conf"
DEVICE = "sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0"
SYSCTLS = {"proc/sys/net/core/rmem_max": "212992\n", "proc/sys/net/core/wmem_max": "212992\n",
           "proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
           "proc/sys/net/ipv4/tcp_wmem": "4096\t16384\t4194304\n"}


def run(args, check=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=True)
    done = subprocess.run([sys.executable, "-m", "ansible_collections.gpuops.fabric.plugins.modules.host_tuning"],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True, timeout=120,
                          check=False, env=dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT))
    assert done.stdout.strip(), done.stderr[-2000:]
    return json.loads(done.stdout)


def write(base, files):
    for path, text in files.items():
        full = os.path.join(str(base), path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as handle:
            handle.write(text)


def node(tmp_path, irqs=False, **sysctls):
    """A root with one 100 Gb/s port, ens2np0 (on NUMA node 1 with IRQ 120 off it when ``irqs``), the kernel's
    default buffers (``sysctls`` override them: {"rmem_max": "..."}), and a folder beside it, ``outside``, where
    nothing may ever be written. (root, outside)"""
    root, outside = tmp_path / "root", tmp_path / "outside"
    files = dict(SYSCTLS)
    for name, text in sysctls.items():
        [path] = [p for p in SYSCTLS if p.endswith("/" + name)]
        files[path] = text
    files[DEVICE + "/net/ens2np0/speed"] = "100000\n"
    if irqs:
        files.update({DEVICE + "/numa_node": "1\n", DEVICE + "/msi_irqs/120": "msix\n",
                      "sys/devices/system/node/node1/cpulist": "16-31\n", "proc/irq/120/smp_affinity_list": "0-63\n"})
    write(root, files)
    os.makedirs(str(root / "sys/class/net"))
    os.symlink("../../" + DEVICE[len("sys/"):] + "/net/ens2np0", str(root / "sys/class/net/ens2np0"))
    os.symlink("../..", str(root / DEVICE / "net/ens2np0/device"))
    os.makedirs(str(outside))
    return root, outside


def args(root, **extra):
    return dict({"interfaces": ["ens2np0"], "root": str(root), "rings": "keep"}, **extra)


def snapshot(folder):
    """Every file below ``folder`` with its text: what a run must leave as it was."""
    found = {}
    for base, _dirs, names in os.walk(str(folder)):
        for name in names:
            with open(os.path.join(base, name)) as handle:
                found[os.path.relpath(os.path.join(base, name), str(folder))] = handle.read()
    return found


def test_a_plain_root_is_tuned_and_the_second_run_changes_nothing(tmp_path):
    root, _outside = node(tmp_path, irqs=True)
    check = run(args(root), check=True)
    assert check["changed"] and not check.get("failed"), check
    assert not (root / "etc").exists() and (root / "proc/irq/120/smp_affinity_list").read_text() == "0-63\n"
    done = run(args(root))
    assert done["changed"] and not done.get("failed"), done
    text = (root / "etc/sysctl.d/60-gpuops-fabric.conf").read_text()
    assert "net.core.rmem_max = 33554432\n" in text and "net.ipv4.tcp_rmem = 4096 131072 33554432\n" in text
    assert (root / "proc/sys/net/core/rmem_max").read_text() == "33554432\n"
    assert (root / "proc/irq/120/smp_affinity_list").read_text() == "16-31\n"
    again = run(args(root))
    assert not again["changed"] and not again.get("failed"), again


def test_a_symlink_inside_the_root_is_followed(tmp_path):
    # an image root whose etc/sysctl.d is a link to another folder of the same root: that is still the root
    root, outside = node(tmp_path)
    os.makedirs(str(root / "etc" / "real-sysctl.d"))
    os.symlink("real-sysctl.d", str(root / "etc" / "sysctl.d"))
    done = run(args(root))
    assert done["changed"] and not done.get("failed"), done
    assert "net.core.wmem_max = 33554432" in (root / "etc/real-sysctl.d/60-gpuops-fabric.conf").read_text()
    assert snapshot(outside) == {}


@pytest.mark.parametrize("link, target", [
    ("etc", ""),                                            # the whole etc of the root is the machine's
    ("etc/sysctl.d", "sysctl.d"),                           # the folder of the sysctl file
    ("etc/sysctl.d/60-gpuops-fabric.conf", "passwd"),       # the file itself
])
def test_the_sysctl_file_never_leaves_the_root(tmp_path, link, target):
    root, outside = node(tmp_path)
    write(outside, {"passwd": "root:x:0:0::/root:/bin/bash\n", "sysctl.d/keep.conf": "kernel.x = 1\n"})
    before, values = snapshot(outside), snapshot(root / "proc")
    os.makedirs(os.path.dirname(str(root / link)), exist_ok=True)
    os.symlink(os.path.join(str(outside), target), str(root / link))
    for check in (True, False):
        done = run(args(root), check=check)
        assert done.get("failed"), done
        assert "sysctl_file: %s leads out of the root %s" % (os.path.join(str(root), FILE.lstrip("/")), root) \
            in done["msg"], done["msg"]
        assert "refused" in done["msg"]
        # nothing was written anywhere: not outside, and not the live values either (the plan stands whole first)
        assert snapshot(outside) == before and snapshot(root / "proc") == values


def test_a_proc_sys_value_never_leaves_the_root(tmp_path):
    root, outside = node(tmp_path)
    write(outside, {"rmem_max": "212992\n", "wmem_max": "212992\n"})
    os.rename(str(root / "proc/sys/net/core"), str(tmp_path / "unused"))
    os.symlink(str(outside), str(root / "proc/sys/net/core"))
    before = snapshot(outside)
    done = run(args(root))
    assert done.get("failed"), done
    path = os.path.join(str(root), "proc/sys/net/core/rmem_max")
    assert "net.core.rmem_max: %s leads out of the root" % path in done["msg"]
    assert "net.core.wmem_max: " in done["msg"]
    assert snapshot(outside) == before
    assert not (root / "etc").exists()  # the sysctl file is not written either
    assert (root / "proc/sys/net/ipv4/tcp_rmem").read_text() == SYSCTLS["proc/sys/net/ipv4/tcp_rmem"]


def test_an_irq_affinity_never_leaves_the_root(tmp_path):
    root, outside = node(tmp_path, irqs=True)
    write(outside, {"smp_affinity_list": "0-63\n"})
    os.unlink(str(root / "proc/irq/120/smp_affinity_list"))
    os.rmdir(str(root / "proc/irq/120"))
    os.symlink(str(outside), str(root / "proc/irq/120"))
    for check in (True, False):
        done = run(args(root), check=check)
        assert done.get("failed"), done
        assert "irq 120 (ens2np0): %s leads out of the root" % os.path.join(
            str(root), "proc/irq/120/smp_affinity_list") in done["msg"], done["msg"]
        assert (outside / "smp_affinity_list").read_text() == "0-63\n"
        assert not (root / "etc").exists() and (root / "proc/sys/net/core/rmem_max").read_text() == "212992\n"


def test_the_writers_refuse_on_their_own(tmp_path, monkeypatch):
    root, outside = node(tmp_path)
    write(outside, {"value": "1\n"})
    os.symlink(str(outside / "value"), str(root / "proc/sys/net/core/link"))
    os.symlink(str(outside), str(root / "proc/out"))
    # a final component that is a link out: named, refused
    error = write_value(str(root), "proc/sys/net/core/link", "net.core.link", "2")
    assert "%s leads out of the root" % (root / "proc/sys/net/core/link") in error
    with pytest.raises(OutsideRoot) as caught:
        write_file(str(root), "proc/out/new.conf", "sysctl_file", "x = 1\n")
    assert str(caught.value).startswith("sysctl_file: %s leads out" % (root / "proc/out/new.conf"))
    for bad in ("../outside/value", "proc/../../outside/value", "proc/sys/\0x"):
        with pytest.raises(OutsideRoot):
            confined_path(str(root), bad, "key")
    # a link swapped in after the path was checked (simulated: the check waved through): O_NOFOLLOW refuses the last
    # component, and what was opened is checked again before a byte is written
    monkeypatch.setattr(_tuning_node, "confined_path", lambda _root, relative, _key: os.path.join(str(root), relative))
    error = write_value(str(root), "proc/sys/net/core/link", "net.core.link", "2")
    assert "is a symbolic link; not followed" in error
    if os.path.isdir("/proc/self/fd"):
        error = write_value(str(root), "proc/out/value", "net.core.x", "2")
        assert "leads out of the root" in error and str(outside) in error
        with pytest.raises(OutsideRoot):
            write_file(str(root), "proc/out/new.conf", "sysctl_file", "x = 1\n")
    assert snapshot(outside) == {"value": "1\n"}


def test_values_the_kernel_would_refuse_are_warned_and_never_kept_for_the_next_boot(tmp_path):
    root, _outside = node(tmp_path, rmem_max="9999999999999999999\n", tcp_rmem="4096\t131072\n")
    check = run(args(root), check=True)
    assert check["changed"] and not (root / "etc").exists()
    done = run(args(root))
    assert done["changed"] and not done.get("failed"), done
    warnings = "\n".join(done.get("warnings", []))
    assert "net.core.rmem_max = '9999999999999999999'" in warnings and "outside 0..2147483647" in warnings
    assert "net.ipv4.tcp_rmem = '4096 131072' has 2 fields" in warnings
    text = (root / "etc/sysctl.d/60-gpuops-fabric.conf").read_text()
    assert "9999999999999999999" not in text and "net.core.rmem_max" not in text and "net.ipv4.tcp_rmem" not in text
    assert "net.core.wmem_max = 33554432\n" in text and "net.ipv4.tcp_wmem = 4096 16384 33554432\n" in text
    assert set(done["sysctls"]) == {"net.core.wmem_max", "net.ipv4.tcp_wmem"}
    # the bad values are not touched live either: the operator fixes them
    assert (root / "proc/sys/net/core/rmem_max").read_text() == "9999999999999999999\n"
    assert (root / "proc/sys/net/ipv4/tcp_rmem").read_text() == "4096\t131072\n"
    again = run(args(root))
    assert not again["changed"] and "net.core.rmem_max = '9999999999999999999'" in "\n".join(again["warnings"])


@pytest.mark.parametrize("value", [
    "/etc/passwd", "/etc/sysctl.d/../passwd.conf", "/etc/sysctl.d/../../etc/passwd", "/etc/sysctl.d/sub/x.conf",
    "/etc/sysctl.d//x.conf", "/etc/sysctl.d/.hidden.conf", "/etc/sysctl.d/a..conf", "/etc/sysctl.d/x.conf.bak",
    "/etc/sysctl.d/x.conf\n", "/etc/sysctl.d/x y.conf", "/etc/sysctl.d/-x.conf", "/etc/sysctl.d/.conf",
    "/etc/sysctl.d/", "etc/sysctl.d/x.conf", "/etc/sysctl.d/" + "a" * 60 + ".conf", "/etc/sysctl.d/x.conf\0",
    "/run/sysctl.d/x.conf", "/etc/sysctl.dx.conf",
])
def test_sysctl_file_refusals(value):
    problem = sysctl_file_problem(value)
    assert problem, value
    params = {"interfaces": ["eth0"], "rtt_ms": 1.0, "speed_mbps": None, "sysctl_file": value, "root": "/"}
    assert option_problems(params) == ["sysctl_file: %r %s" % (value, problem)]


@pytest.mark.parametrize("value", [FILE, "/etc/sysctl.d/99_tcp.buffers.conf", "/etc/sysctl.d/" + "a" * 59 + ".conf"])
def test_sysctl_file_accepted(value):
    assert sysctl_file_problem(value) is None


def test_options_are_refused_naming_key_and_value(tmp_path):
    root, outside = node(tmp_path)
    done = run(args(root, sysctl_file="/etc/passwd"))
    assert done.get("failed") and "sysctl_file: '/etc/passwd' is not in /etc/sysctl.d/" in done["msg"], done
    done = run(args(root, sysctl_file="/etc/sysctl.d/../passwd.conf"))
    assert done.get("failed") and "sysctl_file: '/etc/sysctl.d/../passwd.conf' is not a file name" in done["msg"]
    done = run(args(root, rtt_ms="nan", speed_mbps=0, interfaces=["a;b"]))
    assert done.get("failed")
    for part in ("rtt_ms: nan is outside 0.01..1000", "speed_mbps: 0 is outside 1..10000000", "interfaces[0]: 'a;b'"):
        assert part in done["msg"], done["msg"]
    done = run(dict(args(root), root=str(root / "none")))
    assert done.get("failed") and "root: %r is not a directory" % str(root / "none") in done["msg"]
    assert "root: 'relative' is not an absolute path" in option_problems(
        {"interfaces": ["eth0"], "rtt_ms": 1.0, "speed_mbps": None, "sysctl_file": FILE, "root": "relative"})
    assert not (root / "etc").exists() and snapshot(outside) == {}
