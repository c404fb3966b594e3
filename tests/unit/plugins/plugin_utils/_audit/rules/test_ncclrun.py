"""Rule family NCCLRUN: what NCCL decided, checked against the facts. The facts are the hand-written DGX-like node
(tests/fixtures/handwritten) and real NCCL dumps; the logs are real ones (tests/fixtures/realdata/nccl-logs) and, where a
log must name this node's own devices, short logs written here by hand (marked HAND-WRITTEN)."""

import datetime
import os
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.nccl_views import pci_of_bus_id
from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.logs import read_log
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

LOGS = os.path.join(REPO, "tests", "fixtures", "realdata", "nccl-logs")
TODAY = datetime.date(2026, 12, 1)

# HAND-WRITTEN: an NCCL 2.21-style log of the hand-written node: GPU 0000:15:00.0 sends through mlx5_3 (NODE) although
# mlx5_0 sits beside it (PIX), and NCCL disabled GPUDirect RDMA for mlx5_0.
DISTANT = """\
gpu-a:100:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu-a:100:200 [0] NCCL INFO cudaDriverVersion 12040
gpu-a:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]mlx5_2:1/RoCE [3]mlx5_3:1/RoCE [RO]; OOB bond0.100:198.18.100.11<0>
gpu-a:100:200 [0] NCCL INFO Using network IB
gpu-a:100:200 [0] NCCL INFO comm 0x5555 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 15000 commId 0x1 - Init START
gpu-a:100:201 [1] NCCL INFO comm 0x5556 rank 1 nranks 16 cudaDev 1 nvmlDev 1 busId 19000 commId 0x1 - Init START
gpu-a:100:200 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 0[15000] -> 8[15000] [send] via NET/IB/3/GDRDMA
gpu-a:100:201 [1] NCCL INFO Channel 00/0 : 1[19000] -> 9[19000] [send] via NET/IB/1/GDRDMA
gpu-a:100:202 [2] NCCL INFO Channel 01/0 : 2[35000] -> 10[35000] [send] via NET/IB/0(0)
gpu-a:100:200 [0] NCCL INFO comm 0x5555 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 15000 commId 0x1 - Init COMPLETE
"""
# HAND-WRITTEN: the same node as it should be: each GPU through the NIC beside it, GPUDirect RDMA on.
HEALTHY = """\
gpu-a:100:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu-a:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB bond0.100:198.18.100.11<0>
gpu-a:100:200 [0] NCCL INFO Using network IB
gpu-a:100:200 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 0[15000] -> 8[15000] [send] via NET/IB/0/GDRDMA
gpu-a:100:201 [1] NCCL INFO Channel 00/0 : 1[19000] -> 9[19000] [send] via NET/IB/1/GDRDMA
gpu-a:100:200 [0] NCCL INFO comm 0x5555 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 15000 commId 0x1 - Init COMPLETE
"""
# HAND-WRITTEN: sockets through the management bond (192.0.2.0/24 is the demo's management network).
ON_MANAGEMENT = """\
gpu-a:100:200 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
gpu-a:100:200 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to bond
gpu-a:100:200 [0] NCCL INFO NET/Socket : Using [0]bond0:192.0.2.11<0> [1]bond0.100:198.18.100.11<0>
gpu-a:100:200 [0] NCCL INFO Using network Socket
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 0[15000] -> 8[15000] [send] via NET/Socket/0
"""
NETWORKS = {"management": {"role": "management", "subnet": "192.0.2.0/24"},
            "training": {"role": "training", "subnet": "198.18.0.0/22"}}


@pytest.fixture(scope="module")
def dgx8(healthy):
    return healthy


@pytest.fixture(scope="module")
def dgx8_broken(broken):
    return broken


def audit(hosts):
    """run_audit over {host: (facts, input)}; returns (findings by rule id, outcomes by host, report)."""
    inputs = dict((h, dict(item, facts=facts, status="audited")) for h, (facts, item) in hosts.items())
    report, errors = run_audit(inputs, TODAY, "2026-12-01T00:00:00+00:00")
    assert errors == []
    found = {}
    for f in report["findings"]:
        if f["id"].startswith("NCCLRUN"):
            found.setdefault(f["id"], []).append(f)
    return found, report["outcomes"], report


def log_file(tmp_path, text, name="nccl.log"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def real(name, filename="nccl.log"):
    return os.path.join(LOGS, name, filename)


def test_bus_ids_become_pci_addresses():
    assert pci_of_bus_id("1b000") == "0000:1b:00.0"
    assert pci_of_bus_id("10001c010") == "1000:1c:01.0"  # domain 0x1000 (VMD)
    assert pci_of_bus_id("30") == "0000:00:03.0"  # a VM's GPU on bus 0
    assert pci_of_bus_id("zz") is None and pci_of_bus_id(None) is None
    assert pci_of_bus_id("1b00f") is None  # function 15 is no PCI function


def test_distant_nic_and_gdr_disabled_on_a_near_nic(dgx8, tmp_path):
    found, outcomes, report = audit({"gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, DISTANT)], "nccl_mode": "rdma"})})
    distant = found["NCCLRUN-002"]
    assert [f["subject"] for f in distant] == ["0000:15:00.0->mlx5_3"]  # the PXN route (NET/IB/0(0)) is not judged
    assert distant[0]["evidence"]["nearest"] == "mlx5_0" and distant[0]["evidence"]["nic_path"] == "NODE"
    gdr = found["NCCLRUN-004"]
    assert [f["subject"] for f in gdr] == ["mlx5_0"]
    assert "0000:15:00.0" in gdr[0]["message"] and "GPU Direct RDMA Disabled" in gdr[0]["evidence"]["gdr_disabled"]
    assert outcomes["gpu-a"]["NCCLRUN-001"]["status"] == "pass"  # IB, not sockets
    # the report shows what NCCL chose beside the nearest NIC
    row = report["nccl"][0]
    assert (row["version"], row["network"], row["gdr"]) == ("2.21.5", "IB", "mixed")
    gpu = [g for g in row["gpus"] if g["gpu"] == "0000:15:00.0"][0]
    assert gpu["nccl_nics"] == [{"nic": "mlx5_3", "path": "NODE", "transport": "NET/IB/GDRDMA"}]
    assert gpu["nearest_path"] == "PIX"


def test_healthy_log_passes(dgx8, tmp_path):
    found, outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, HEALTHY)], "nccl_mode": "rdma",
                                                       "networks": NETWORKS})})
    assert found == {}
    for rule in ("NCCLRUN-001", "NCCLRUN-002", "NCCLRUN-003", "NCCLRUN-004", "NCCLRUN-005", "NCCLRUN-008"):
        assert outcomes["gpu-a"][rule]["status"] == "pass", rule


def test_gdr_disabled_where_no_gpu_is_near_is_nccls_right_choice(dgx8_broken, tmp_path):
    # the broken twin's mlx5_0 moved to the other socket: disabling GPUDirect RDMA for it is right
    log = DISTANT.replace("[send] via NET/IB/3/GDRDMA", "[send] via NET/IB/1/GDRDMA")
    found, outcomes, _report = audit({"gpu-a": (dgx8_broken, {"nccl_logs": [log_file(tmp_path, log)]})})
    assert "NCCLRUN-004" not in found and outcomes["gpu-a"]["NCCLRUN-004"]["status"] == "pass"


def test_gdr_disabled_names_the_missing_module(dgx8_broken, tmp_path):
    log = HEALTHY.replace("Enabled for HCA 0 'mlx5_0'", "Disabled for HCA 1 'mlx5_1'").replace(
        "via NET/IB/1/GDRDMA", "via NET/IB/1")
    found, _outcomes, _report = audit({"gpu-a": (dgx8_broken, {"nccl_logs": [log_file(tmp_path, log)]})})
    assert "nvidia_peermem" in found["NCCLRUN-004"][0]["message"]


def test_real_socket_fallback_on_a_node_with_rdma(dgx8):
    name = "b-socket-fallback-no-libibverbs-2node-2.4.2"  # two nodes, connections via NET/Socket
    found, _outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [real(name)]})})
    fallback = found["NCCLRUN-001"]
    assert len(fallback) == 1 and "active RDMA ports" in fallback[0]["message"]
    assert fallback[0]["evidence"]["log"] == real(name)


def test_a_one_node_run_on_sockets_sent_nothing_over_them(dgx8):
    # the GCP VM ran one rank: "Using network Socket", but no byte crossed a network
    found, outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [real("b-socket-fallback-gcp-a2-vm-2.19.3")]})})
    assert "NCCLRUN-001" not in found and outcomes["gpu-a"]["NCCLRUN-001"]["status"] == "pass"


def test_socket_fallback_is_fine_when_tcp_is_intended_or_there_is_no_rdma(dgx8, tmp_path):
    log = [real("b-socket-fallback-gcp-a2-vm-2.19.3")]
    _found, outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": log, "nccl_mode": "tcp"})})
    assert outcomes["gpu-a"]["NCCLRUN-001"]["status"] == "not_applicable"
    no_rdma = dict(dgx8, rdma=[])
    _found, outcomes, _report = audit({"gpu-a": (no_rdma, {"nccl_logs": log})})
    assert outcomes["gpu-a"]["NCCLRUN-001"]["status"] == "not_applicable"


@pytest.mark.parametrize("name,host", [("a-ib-gdrdma-h100-ibext-2node-nccl1357", "qh100-gpu20"),
                                       ("a-roce-2.19.3-dgxh100-2node-nccltests185", "dgxh100-4"),
                                       ("b-ray-worker-prefix-gcp-g2-l4-2.14.3", "any-name")])
def test_real_healthy_logs_raise_nothing_without_the_facts_to_contradict_them(dgx8, name, host):
    found, _outcomes, _report = audit({host: (dgx8, {"nccl_logs": [real(name)]})})
    assert "NCCLRUN-001" not in found and "NCCLRUN-005" not in found and "NCCLRUN-008" not in found


@pytest.mark.parametrize("name,host", [("b-init-no-socket-interface-traceback-2.14.3", "node"),
                                       ("b-init-pci-realpath-traceback-2.4.2", "node"),
                                       ("b-launcher-host-prefix-cuda-init-error-ibext", "rdma-test-gpu-worker-1")])
def test_real_init_errors_are_findings(dgx8, name, host):
    found, _outcomes, _report = audit({host: (dgx8, {"nccl_logs": [real(name)]})})
    errors = found["NCCLRUN-005"]
    assert errors and errors[0]["severity"] in ("fail", "warn")
    if "no-socket" in name:
        assert "no socket interface found" in str(errors[0]["evidence"])


def test_sockets_on_the_management_network(dgx8, tmp_path):
    found, _outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, ON_MANAGEMENT)],
                                                        "networks": NETWORKS, "nccl_mode": "tcp"})})
    assert [f["subject"] for f in found["NCCLRUN-003"]] == ["bond0"]
    assert found["NCCLRUN-003"][0]["evidence"]["NCCL_SOCKET_IFNAME"] == "bond"


def test_versions_and_settings_differing_across_hosts(dgx8, tmp_path):
    other = HEALTHY.replace("2.21.5+cuda12.4", "2.18.3+cuda12.2") + \
        "gpu-b:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
    mine = HEALTHY + "gpu-a:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
    found, _outcomes, _report = audit({
        "gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, mine, "a.log")]}),
        "gpu-b": (dgx8, {"nccl_logs": [log_file(tmp_path, other.replace("gpu-a:", "gpu-b:"), "b.log")]})})
    subjects = sorted(f["subject"] for f in found["NCCLRUN-007"])
    assert subjects == ["NCCL_IB_DISABLE", "version"]
    version = [f for f in found["NCCLRUN-007"] if f["subject"] == "version"][0]
    assert version["evidence"]["version"] == {"2.18.3": ["gpu-b"], "2.21.5": ["gpu-a"]}


def test_one_multi_node_log_serves_each_host(dgx8):
    log = real("a-roce-2.10.3-a800-2node-nccltests133")
    _found, _outcomes, report = audit({"nodea": (dgx8, {"nccl_logs": [log]}), "nodeb": (dgx8, {"nccl_logs": [log]}),
                                       "nodec": (dgx8, {"nccl_logs": [log]})})
    rows = dict((r["host"], r) for r in report["nccl"])
    assert rows["nodea"]["problem"] is None and rows["nodeb"]["problem"] is None
    assert "not from this host" in rows["nodec"]["problem"]


def test_unusable_logs_are_named(dgx8, tmp_path):
    empty = log_file(tmp_path, "just a training log\nloss 0.1\n", "train.log")
    found, _outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [empty]})})
    assert "no NCCL line" in found["NCCLRUN-008"][0]["message"]


def _flattened(source, target):
    """HAND-MADE variant of a real dump: every GPU and NIC moved straight under its CPU (the switches gone) and the
    CPUs' NUMA ids set to -1, as NCCL sees a VM."""
    tree = ET.parse(source)
    for cpu in tree.getroot().findall("cpu"):
        cpu.set("numaid", "-1")
        leaves = [p for p in cpu.iter("pci") if p.find("gpu") is not None or p.find("nic") is not None]
        for child in list(cpu):
            if child.tag == "pci":
                cpu.remove(child)
        for leaf in leaves:
            cpu.append(leaf)
    tree.write(target)
    return target


def test_nccl_flattened_view_disagrees_with_the_facts(tmp_path):
    real_dump = os.path.join(REPO, "tests", "fixtures", "realdata", "rccl-mi300x-8gpu-cx7", "topo_8p_940.xml")
    facts = gather(source="nccl_xml", path=real_dump)  # the machine as its own (unflattened) dump shows it
    flat = _flattened(real_dump, str(tmp_path / "flat.xml"))
    found, _outcomes, _report = audit({"mi300x": (facts, {"nccl_logs": [flat]})})
    view = found["NCCLRUN-006"]
    assert any("NUMA -1" in f["message"] for f in view)
    pairs = [f for f in view if "->" in str(f["subject"])]
    assert len(pairs) == 8 and all(f["evidence"]["facts_path"] == "PXB" for f in pairs)
    assert all(f["evidence"]["nccl_path"] in ("PHB", "NODE", "SYS") for f in pairs)
    # and the real dump against itself agrees
    found, outcomes, _report = audit({"mi300x": (facts, {"nccl_logs": [real_dump]})})
    assert "NCCLRUN-006" not in found and outcomes["mi300x"]["NCCLRUN-006"]["status"] == "pass"


def test_real_vm_dump_shows_numa_unknown():
    """The KVM guest's dump as posted (cut short): NCCL sees NUMA -1; the guest's own facts know no NUMA either."""
    dump = real("b-topo-vm-h200-kvm-flat-numa-unknown", "topo.xml")
    entry = read_log(dump)
    assert entry["kind"] == "topology_dump" and entry["error"] is None
    assert [g["numa_node"] for g in entry["facts"]["gpus"]] == [None]
    assert any("stops early" in w for w in entry["facts"]["warnings"])
    found, _outcomes, _report = audit({"vm": (entry["facts"], {"nccl_logs": [dump]})})
    assert [f["subject"] for f in found["NCCLRUN-006"]] == ["numa"]
    assert "know none either" in found["NCCLRUN-006"][0]["message"]


# HAND-WRITTEN variants of what real clusters print, each once a false verdict.

def test_gdr_line_of_a_sub_communicator_names_a_rank_not_a_device(dgx8, tmp_path):
    # NCCL 2.12+: "for GPU <rank of this communicator>"; rank 0 of the group on GPUs 4-7 drives GPU 0000:95:00.0, far
    # from mlx5_0: disabling GDR there is right
    log = ("gpu-a:300:301 [4] NCCL INFO comm 0x9 rank 0 nranks 4 cudaDev 4 nvmlDev 4 busId 95000 commId 0x2 - Init START\n"
           "gpu-a:300:301 [4] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_4:1/RoCE ; OOB bond0.100:198.18.100.11<0>\n"
           "gpu-a:300:301 [4] NCCL INFO GPU Direct RDMA Disabled for GPU 0 / HCA 0 (distance 6 > 4)\n")
    found, outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, log)]})})
    assert "NCCLRUN-004" not in found and outcomes["gpu-a"]["NCCLRUN-004"]["status"] == "pass"


def test_one_gpu_per_process_is_told_by_its_process(dgx8, tmp_path):
    # Slurm --gpus-per-task=1: every process is cudaDev 0; 2.19+ writes the nvmlDev in the brackets
    log = ("gpu-a:12:13 [0] NCCL INFO comm 0x1 rank 2 nranks 16 cudaDev 0 nvmlDev 2 busId 35000 commId 0x1 - Init START\n"
           "gpu-a:14:15 [0] NCCL INFO comm 0x2 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 15000 commId 0x1 - Init START\n"
           "gpu-a:12:13 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]mlx5_2:1/RoCE ; OOB x:1.2.3.4<0>\n"
           "gpu-a:12:16 [0] NCCL INFO Channel 00/0 : 2[2] -> 10[2] [send] via NET/IB/2/GDRDMA\n"
           "gpu-a:14:17 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n")
    found, outcomes, report = audit({"gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, log)]})})
    assert "NCCLRUN-002" not in found and outcomes["gpu-a"]["NCCLRUN-002"]["status"] == "pass"
    chosen = dict((g["gpu"], [n["nic"] for n in g["nccl_nics"]]) for g in report["nccl"][0]["gpus"])
    assert chosen["0000:35:00.0"] == ["mlx5_2"] and chosen["0000:15:00.0"] == ["mlx5_0"]


def test_socket_gdr_lines_and_routine_ib_events_are_not_faults(dgx8, tmp_path):
    log = ("gpu-a:1:2 [0] NCCL INFO NET/Socket : Using [0]ens1np0:198.18.0.17<0>\n"
           "gpu-a:1:2 [0] NCCL INFO Using network Socket\n"
           "gpu-a:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'ens1np0'\n"
           "gpu-a:1:2 [0] transport/net_ib.cc:88 NCCL WARN NET/IB : mlx5_0:1 Got async event : port active\n"
           "gpu-a:1:2 [0] NCCL INFO Channel 00/0 : 0[15000] -> 8[15000] [send] via NET/Socket/0\n")
    found, outcomes, _report = audit({"gpu-a": (dgx8, {"nccl_logs": [log_file(tmp_path, log)], "nccl_mode": "tcp"})})
    assert found == {}
    assert outcomes["gpu-a"]["NCCLRUN-005"]["status"] == "pass"
    assert outcomes["gpu-a"]["NCCLRUN-004"]["status"] == "not_applicable"


def test_per_host_settings_do_not_count_as_divergence(dgx8, tmp_path):
    logs = {}
    for host in ("gpu-a", "gpu-b"):
        logs[host] = log_file(tmp_path, "%s:1:2 [0] NCCL INFO NCCL_TOPO_DUMP_FILE set by environment to /tmp/x-%s/t.xml\n"
                              "%s:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to =ens%s\n"
                              % (host, host, host, host[-1]), host + ".log")
    found, outcomes, _report = audit(dict((h, (dgx8, {"nccl_logs": [p]})) for h, p in logs.items()))
    assert "NCCLRUN-007" not in found


def test_a_shared_one_host_log_is_not_adopted_by_every_host(dgx8):
    log = real("b-ray-worker-prefix-gcp-g2-l4-2.14.3")  # one host, jamin-g2-cluster-a-0
    found, _outcomes, report = audit({"node-1": (dgx8, {"nccl_logs": [log]}), "node-2": (dgx8, {"nccl_logs": [log]})})
    assert all("not from this host" in r["problem"] for r in report["nccl"])
    assert sorted(f["host"] for f in found["NCCLRUN-008"]) == ["node-1", "node-2"]


def test_hand_written_probe_results_do_not_crash_the_audit(dgx8):
    odd = {"nccl": {"nccl_log": {"nccl_lines": 1, "hosts": ["x"], "sections": {}}}}
    odder = {"nccl": {"nccl_log": {"nccl_lines": 3, "hosts": ["gpu-a"], "sections": {
        "gpu-a": {"gdr": "x", "env": [], "network": 5, "connections": [1, None, {"nic": "x"}], "ranks": ["r"]}}}}}
    for probes in (odd, odder):
        found, outcomes, report = audit({"gpu-a": (dgx8, {"probes": probes})})
        assert not [f for f in found.get("NCCLRUN-005", []) if f.get("internal_error")]
        assert all(o["status"] != "error" for r, o in outcomes["gpu-a"].items() if r.startswith("NCCLRUN"))
