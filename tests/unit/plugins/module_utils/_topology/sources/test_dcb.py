"""PFC of the RoCE ports (module_utils/_topology/sources/dcb.py): ``dcb pfc show`` and ``mlnx_qos`` output from real
machines (tests/fixtures/realdata/*, each with PROVENANCE.md) and the example of the dcb-pfc(8) manual page; this
machine's own dcb against its own interfaces (no DCB driver here: it says "Operation not supported", and the port is
left out); junk. Where a DCB-capable NIC is needed (cannot run here), the tool's output is a real capture fed through
``run``, the module's boundary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.dcb import (
    gather, parse_dcb_pfc, parse_mlnx_qos,
)

REAL = os.path.join(REPO, "tests", "fixtures", "realdata")
DCB_PATCH = os.path.join(REAL, "iproute2-dcb-pfc-show-stats-mlxsw-patch", "dcb-pfc-show-eni1np1.txt")
# dcb-pfc(8), iproute2 6.1 (Debian 12), EXAMPLE & USAGE: what "dcb pfc show dev eth0" printed after a set
MAN_EXAMPLE = "pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 7:on\n"


def real(*parts):
    with open(os.path.join(REAL, *parts)) as handle:
        return handle.read()


def test_dcb_pfc_show_with_its_pause_counters():
    """mlxsw's output in the patch that added the counters (its map line still spelled pg-pfc)."""
    with open(DCB_PATCH) as handle:
        parsed = parse_dcb_pfc(handle.read())
    assert parsed == {"enabled": [1, 7], "capability": 8,
                      "requests": {"0": 0, "1": 217, "2": 0, "3": 0, "4": 0, "5": 0, "6": 0, "7": 28},
                      "indications": {"0": 0, "1": 179, "2": 0, "3": 0, "4": 0, "5": 0, "6": 0, "7": 18}}
    assert parse_dcb_pfc(MAN_EXAMPLE) == {"enabled": [6, 7], "capability": 8, "requests": None, "indications": None}


@pytest.mark.parametrize("capture, enabled", [
    (("att-netarbiter-mlnx_qos-dscp-pfc3", "mlnx_qos-eth4-after-pfc.txt"), [3]),
    (("cn-3fs-notes-cx7-mlnx_qos-pfc5-custom-dscp", "mlnx_qos-ens4np0.txt"), [5]),
    # a script's report that indents mlnx_qos's table and adds the ecn files' lines between
    (("spiderpool-rdma-qos-query-ecn-all-prios-pfc5", "rdma-qos-q-output.txt"), [5]),
])
def test_mlnx_qos_of_real_nodes(capture, enabled):
    text = real(*capture)
    assert parse_mlnx_qos(text) == {"enabled": enabled, "trust": "dscp"}
    assert parse_dcb_pfc(text) is None  # not dcb's output


@pytest.mark.parametrize("junk", [
    None, "", "Attribute read: Operation not supported\n", "prio-pfc 0:off 1:on\n",          # seven missing
    "prio-pfc 0:off 1:on 2:off 3:off 4:off 5:off 6:off 7:maybe\n",                           # not on/off
    "prio-pfc 0:off 1:on 2:off 3:off 4:off 5:off 6:off 9:on\n",                              # no priority 9
    "prio-pfc 0:off 0:on 2:off 3:off 4:off 5:off 6:off 7:on\n",                              # 1 missing
    "x" * 3000000, "prio-pfc " + "0:on " * 100000,
])
def test_dcb_junk_is_none(junk):
    assert parse_dcb_pfc(junk) is None


def test_dcb_counters_that_are_not_counts_are_left_out():
    text = MAN_EXAMPLE + "requests 0:0 1:x 2:0 3:0 4:0 5:0 6:0 7:0\nindications 0:1 1:1 2:1 3:1 4:1 5:1 6:1 7:%d\n" % (
        2 ** 64)
    assert parse_dcb_pfc(text)["requests"] is None and parse_dcb_pfc(text)["indications"] is None


@pytest.mark.parametrize("junk", [
    None, "", "PFC configuration:\n priority 0 1 2 3 4 5 6 7\n",                     # no enabled row
    "PFC configuration:\n priority 0 1 2 3 4 5 6\n enabled 0 0 0 1 0 0 0\n",        # seven
    "PFC configuration:\n priority 0 1 2 3 4 5 6 7\n enabled 0 0 0 2 0 0 0 0\n",    # not 0/1
    "priority 0 1 2 3 4 5 6 7\n" * 300000,
])
def test_mlnx_qos_junk_is_none(junk):
    assert parse_mlnx_qos(junk) is None


def test_this_machine_s_dcb_says_its_interfaces_have_no_dcb():
    """Real dcb against this machine's own interfaces (veth, loopback, virtio: no DCB operations): each fails and
    is left out; no mlnx_qos here."""
    dcb = shutil.which("dcb")
    if dcb is None:
        pytest.fail("iproute2's dcb is missing: scripts/setup.sh installs iproute2")
    names = sorted(os.listdir("/sys/class/net"))

    def run(argv):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        return done.returncode, done.stdout, done.stderr
    assert gather(run, dcb, None, names) == {}


def test_gather_prefers_dcb_falls_back_to_mlnx_qos_and_never_passes_an_odd_name():
    with open(DCB_PATCH) as handle:
        dcb_text = handle.read()
    qos_text = real("cn-3fs-notes-cx7-mlnx_qos-pfc5-custom-dscp", "mlnx_qos-ens4np0.txt")
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[0] == "/usr/sbin/dcb":
            return (0, dcb_text, "") if argv[-1] == "eni1np1" else (1, "", "Attribute read: Operation not supported")
        return (0, qos_text, "") if argv[-1] == "ens4np0" else (1, "", "")
    found = gather(run, "/usr/sbin/dcb", "/usr/bin/mlnx_qos", ["ens4np0", "eni1np1", "-i", "eth0;reboot", "ens9"])
    assert found == {"eni1np1": dict(parse_dcb_pfc(dcb_text), source="dcb"),
                     "ens4np0": {"enabled": [5], "source": "mlnx_qos", "trust": "dscp"}}
    assert all(isinstance(a, list) for a in calls)
    assert sorted(set(a[-1] for a in calls)) == ["eni1np1", "ens4np0", "ens9"]  # "-i", "eth0;reboot": never run
    assert ["/usr/sbin/dcb", "pfc", "show", "dev", "ens4np0"] in calls and ["/usr/bin/mlnx_qos", "-i", "ens9"] in calls
    assert gather(run, None, None, ["ens4np0"]) == {}


def test_the_module_asks_for_the_roce_interfaces_and_a_lag_s_legs():
    """merge_switch_side (the module's live-node step) asks dcb about each interface behind a RoCE port, a RoCE LAG
    by its legs (a bond has no PFC of its own), and nothing else."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import merge_switch_side
    with open(DCB_PATCH) as handle:
        dcb_text = handle.read()
    asked = []

    def run(argv):
        asked.append(argv[-1])
        return (0, dcb_text, "") if argv[0] == "/usr/sbin/dcb" else (1, "", "")
    facts = {"nics": [], "counters": {"roce_ports": {"mlx5_bond_0/1": "bond0", "mlx5_2/1": "ens3np0"},
                                      "roce_lag": {"bond0": ["ens1f0np0", "ens1f1np1"]}, "nic_stats": None,
                                      "roce_pfc": None}}
    merge_switch_side(facts, run, {"dcb": "/usr/sbin/dcb"}.get, {"counters"})
    assert sorted(asked) == ["ens1f0np0", "ens1f1np1", "ens3np0"]
    assert sorted(facts["counters"]["roce_pfc"]) == ["ens1f0np0", "ens1f1np1", "ens3np0"]
    assert facts["counters"]["roce_pfc"]["ens3np0"]["source"] == "dcb"
