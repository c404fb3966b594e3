"""NCCLRUN-009, -010 and -011 (issue 32): peer to peer between the node's GPUs, the interfaces NCCL's sockets bound
to, and NCCL_IB_HCA against the node's HCAs. The logs are real ones posted publicly
(tests/fixtures/realdata/nccl-logs, each with its PROVENANCE.md) and, where a log must name this node's own devices,
short logs written here by hand in NCCL's formats (marked HAND-WRITTEN). The facts are the hand-written 8-GPU node
and its broken twin (ACS redirect on its switch ports, an IOMMU translating DMA)."""

import datetime
import json
import os

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.rules.ncclrun.reach import (
    hca_filter, virtual_interface,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

LOGS = os.path.join(REPO, "tests", "fixtures", "realdata", "nccl-logs")
TODAY = datetime.date(2026, 12, 1)


def real(name):
    return os.path.join(LOGS, name, "nccl.log")


def written(tmp_path, text):
    path = tmp_path / "nccl.log"
    path.write_text(text)
    return str(path)


def audit(host, facts, logs, **more):
    report, errors = run_audit({host: dict(more, facts=facts, status="audited", nccl_logs=logs)}, TODAY,
                               "2026-12-01T00:00:00+00:00")
    assert errors == []
    found = {}
    for f in report["findings"]:
        found.setdefault(f["id"], []).append(f)
    return found, report["outcomes"][host]


# ---- NCCLRUN-009 ---------------------------------------------------------------------------------------------

def test_real_shm_fallback_names_the_pair_and_the_lines(healthy):
    found, _outcomes = audit("ault43", healthy, [real("c-p2p-shm-could-not-enable-ib-shared-nccl1516")])
    [finding] = found["NCCLRUN-009"]
    assert finding["subject"] == "0000:41:00.0->0000:81:00.0" and finding["severity"] == "warn"
    assert finding["evidence"]["said"] == ["P2P not enabled", "via SHM/direct/direct"]
    assert "Could not enable P2P between dev 1(=81000)" in finding["evidence"]["p2p_off"]
    assert "via SHM/direct/direct" in finding["evidence"]["transport SHM/direct/direct"]
    assert "no cause in the facts" in finding["message"]  # these GPUs are not the hand-written node's


def test_real_vm_where_nvml_refuses_p2p(healthy):
    """Azure: "P2P is disabled between connected GPUs 1 and 0" names CUDA devices, "Could not enable P2P between dev
    1(=200000) and dev 0(=100000)" their busIds: one pair, with NVML's refusal as the cause."""
    host = "e2bd2729de1e4961bccb1c0d6311f3a4000001"
    found, _outcomes = audit(host, healthy, [real("c-p2p-disabled-azure-vm-socket-nccl1214")])
    [finding] = found["NCCLRUN-009"]
    assert finding["subject"] == "0001:00:00.0->0002:00:00.0"
    assert finding["evidence"]["said"] == ["P2P disabled", "P2P not enabled"]
    assert "NVML reports peer to peer unsupported" in finding["message"]


def test_real_p2p_level_set_by_the_run(healthy):
    found, _outcomes = audit("nccl-tests", healthy, [real("c-p2p-level-loc-direct-shm-a6000-2.8.2-nccl606")])
    [finding] = found["NCCLRUN-009"]
    assert finding["evidence"]["said"] == ["via direct shared memory"]
    assert finding["evidence"]["causes"][0] == "NCCL_P2P_LEVEL=LOC is set for the run"
    assert finding["evidence"]["env"] == {"NCCL_P2P_LEVEL": "LOC"}


def test_real_healthy_p2p_log_passes(healthy):
    found, outcomes = audit("678c7278cb2d", healthy, [real("c-p2p-cumem-healthy-4gpu-container-nccl1504")])
    assert "NCCLRUN-009" not in found and outcomes["NCCLRUN-009"]["status"] == "pass"


# HAND-WRITTEN: two GPUs of the hand-written node below one PCIe switch (PXB) connected through shared memory
SHM_BELOW_ONE_SWITCH = """\
gpu-a:100:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 15000 commId 0x9 - Init START
gpu-a:100:201 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 19000 commId 0x9 - Init START
gpu-a:100:200 [0] NCCL INFO Could not enable P2P between dev 0(=15000) and dev 1(=19000)
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 0[15000] -> 1[19000] via SHM/direct/direct
gpu-a:100:201 [1] NCCL INFO Channel 00/0 : 1[19000] -> 0[15000] via SHM/direct/direct
gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 15000 commId 0x9 - Init COMPLETE
"""


def test_acs_and_the_iommu_named_as_the_cause(broken, healthy, tmp_path):
    found, _outcomes = audit("gpu-a", broken, [written(tmp_path, SHM_BELOW_ONE_SWITCH)])
    [finding] = found["NCCLRUN-009"]
    assert finding["subject"] == "0000:15:00.0->0000:19:00.0" and finding["severity"] == "warn"
    causes = finding["evidence"]["causes"]
    assert causes[0].startswith("ACS redirect on switch downstream") and "(control 0x001d)" in causes[0].lower()
    assert causes[1] == "the IOMMU translates the DMA of 0000:15:00.0, 0000:19:00.0"
    # the healthy node has neither: the finding stands (P2P was refused) without a cause in the facts
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, SHM_BELOW_ONE_SWITCH)])
    assert found["NCCLRUN-009"][0]["evidence"]["causes"] == []


def test_across_cpu_sockets_shared_memory_is_nccls_default(healthy, tmp_path):
    log = SHM_BELOW_ONE_SWITCH.replace("19000", "95000")  # GPU 0000:95:00.0 hangs under the other socket (SYS)
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, log)])
    [finding] = found["NCCLRUN-009"]
    assert finding["severity"] == "info" and "(SYS)" in finding["message"]
    # the same with NCCL_P2P_DISABLE set is the run's choice, named, and no longer NCCL's default alone
    log = log.replace("Could not enable", "NCCL_P2P_DISABLE set by environment to 1\ngpu-a:100:200 [0] NCCL INFO "
                                          "Could not enable")
    [finding] = audit("gpu-a", healthy, [written(tmp_path, log)])[0]["NCCLRUN-009"]
    assert finding["severity"] == "warn" and finding["evidence"]["causes"][0] == "NCCL_P2P_DISABLE=1 is set for the run"


def test_a_log_without_intra_node_connections_cannot_judge(healthy):
    _found, outcomes = audit("gpu6", healthy, [real("a-roce-2.4.2-34hca-mpirun-tags-nccl224")])
    assert outcomes["NCCLRUN-009"]["status"] == "not_applicable"


# ---- NCCLRUN-010 ---------------------------------------------------------------------------------------------

# HAND-WRITTEN in NCCL 2.18's format: sockets on the loopback, the bootstrap on Docker's bridge
ON_LOOPBACK = """\
gpu-a:100:200 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>
gpu-a:100:200 [0] NCCL INFO NET/IB : No device found.
gpu-a:100:200 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>
gpu-a:100:200 [0] NCCL INFO Using network Socket
"""


def test_sockets_on_the_loopback_and_bootstrap_on_a_container_bridge(healthy, tmp_path):
    # a communicator of 16 ranks on the 8-GPU node spans nodes: the data transport on lo is a fault
    spans = ON_LOOPBACK + "gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 15000 - Init START\n"
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, spans)])
    data, boot = sorted(found["NCCLRUN-010"], key=lambda f: f["subject"], reverse=True)
    assert data["subject"] == "data lo" and data["severity"] == "fail" and data["evidence"]["spans_nodes"] is True
    assert "NCCL's socket transport (NET/Socket) uses lo (the loopback interface)" == data["message"]
    assert boot["subject"] == "bootstrap docker0" and boot["severity"] == "warn"
    assert "container, VM, tunnel or overlay interface by its name" in boot["message"]


def test_sockets_on_the_loopback_judged_by_what_the_log_says_of_the_run(healthy, tmp_path):
    # the log stops after init without a word on its ranks: a warning that says the span is not known
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, ON_LOOPBACK)])
    data = [f for f in found["NCCLRUN-010"] if f["subject"] == "data lo"][0]
    assert data["severity"] == "warn" and data["evidence"]["spans_nodes"] is None
    assert data["message"].endswith("the log stops before saying whether the run spans nodes: across nodes it would "
                                    "hang or crawl")
    # one rank, or NCCL's nNodes 1: nothing crossed lo or docker0, and the outcome says why
    for said in ("comm 0x1 rank 0 nranks 1 cudaDev 0 busId 15000 - Init COMPLETE",
                 "comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0"):
        log = ON_LOOPBACK + "gpu-a:100:200 [0] NCCL INFO " + said + "\n"
        found, outcomes = audit("gpu-a", healthy, [written(tmp_path, log)])
        assert "NCCLRUN-010" not in found and outcomes["NCCLRUN-010"]["status"] == "not_applicable"
        assert "the run stayed on one node" in outcomes["NCCLRUN-010"]["reason"]
        assert "docker0, lo carried nothing between nodes" in outcomes["NCCLRUN-010"]["reason"]


def test_sockets_on_the_training_bond_pass(healthy, tmp_path):
    log = ON_LOOPBACK.replace("docker0:172.17.0.1", "bond0.100:198.18.100.11").replace("lo:127.0.0.1",
                                                                                       "bond0.100:198.18.100.11")
    found, outcomes = audit("gpu-a", healthy, [written(tmp_path, log)])
    assert "NCCLRUN-010" not in found and outcomes["NCCLRUN-010"]["status"] == "pass"


@pytest.mark.parametrize("name, address, why", [
    ("lo", None, "the loopback interface"),  # the facts' kind
    ("docker0", None, "by its name"), ("veth1a2b3c", None, "by its name"), ("tunl0", None, "by its name"),
    ("virbr0", None, "by its name"), ("cni0", None, "by its name"), ("flannel.1", None, "by its name"),
    ("eth0", "127.0.0.1", "the loopback interface"),
    ("eth0", "10.0.0.1", None), ("bond0.100", None, None), ("ens1np0", None, None), ("ib0", None, None),
    ("vethernet-name-too-long-for-a-netdev", None, None),
])
def test_which_interfaces_never_leave_the_node(healthy, name, address, why):
    said = virtual_interface(healthy, name, address)
    assert (said is None) if why is None else why in said


def test_real_socket_logs_on_real_interfaces_pass(healthy):
    found, outcomes = audit("instance-8g-96c-2", healthy, [real("b-socket-fallback-gcp-a2-vm-2.19.3")])
    assert "NCCLRUN-010" not in found and outcomes["NCCLRUN-010"]["status"] == "pass"  # ens7, a gVNIC


# ---- NCCLRUN-011 ---------------------------------------------------------------------------------------------

# HAND-WRITTEN in NCCL 2.19's format: NCCL_IB_HCA names a device the node does not have; NCCL finds none and falls
# back to sockets over the training VLAN
HCA_TYPO = """\
gpu-a:100:200 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_bond_0
gpu-a:100:200 [0] NCCL INFO NET/IB : No device found.
gpu-a:100:200 [0] NCCL INFO NET/Socket : Using [0]bond0.100:198.18.100.11<0>
gpu-a:100:200 [0] NCCL INFO Using network Socket
"""


def test_an_ib_hca_that_matches_nothing_is_a_fail_with_the_devices_the_node_has(healthy, tmp_path):
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, HCA_TYPO)])
    [finding] = found["NCCLRUN-011"]
    assert finding["severity"] == "fail"
    assert finding["message"] == (
        "NCCL_IB_HCA=mlx5_bond_0 (the run's environment): mlx5_bond_0 matches no active port of the node (it has "
        "mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_9; active ports mlx5_0:1, "
        "mlx5_1:1, mlx5_2:1, mlx5_3:1, mlx5_4:1, mlx5_5:1, mlx5_6:1, mlx5_7:1, mlx5_8:1, mlx5_9:1); NCCL found no "
        "device (NET/IB) and used network Socket")
    assert "No device found" in finding["evidence"]["no_device IB"]


@pytest.mark.parametrize("value, unmatched, severity", [
    ("mlx5_0,mlx5_11", ["mlx5_11"], "warn"),  # one rail lost
    ("mlx5", None, None),  # a prefix: every mlx5_N
    ("=mlx5", ["mlx5"], "fail"),  # exact names only
    ("=mlx5_0:1,mlx5_1:1", None, None),
    ("=mlx5_0,=mlx5_1", ["=mlx5_1"], "warn"),  # NCCL reads "=" at the start of the list only
    ("mlx5_0:1,mlx5_3:1", None, None),
    ("^mlx5_9", None, None),  # an exclusion that leaves devices: NCCL picks among them
    ("^mlx5", ["mlx5"], "fail"),  # one that leaves none
    ("mlx5_0:2", ["mlx5_0"], "fail"),  # mlx5_0 has port 1 only
    ("=mlx5_0:2,mlx5_1:1", ["mlx5_0"], "warn"),
    ("mlx5_0, mlx5_1", [" mlx5_1"], "warn"),  # NCCL does not trim: " mlx5_1" names nothing
    ("mlx5_0:\u00b2", ["mlx5_0"], "fail"),  # a superscript two: atoi reads port 0, which no device has
])
def test_ib_hca_as_nccl_matches_it(healthy, tmp_path, value, unmatched, severity):
    found, outcomes = audit("gpu-a", healthy, [written(tmp_path, HCA_TYPO.replace("mlx5_bond_0", value))])
    # the same value where NCCL opened the devices that match
    opened = HCA_TYPO.replace("mlx5_bond_0", value).replace(
        "NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/IB ; OOB bond0.100:198.18.100.11<0>").replace(
        "Using network Socket", "Using network IB")
    if unmatched is None:
        # the value names active ports, and this log says NCCL found no device: it could not open them
        [finding] = found["NCCLRUN-011"]
        assert finding["evidence"]["unmatched"] == [] and finding["severity"] == "fail"
        assert "but NCCL found no device (NET/IB) and used network Socket: the process could not open them" in (
            finding["message"])
        found, outcomes = audit("gpu-a", healthy, [written(tmp_path, opened)])
        assert "NCCLRUN-011" not in found
        assert outcomes["NCCLRUN-011"]["status"] == "pass"
        return
    # this log says NCCL found no device: whatever matched, the run lost its whole RDMA network (a fail)
    [finding] = found["NCCLRUN-011"]
    assert finding["evidence"]["unmatched"] == unmatched and finding["severity"] == "fail"
    assert "NCCL found no device (NET/IB) and used network Socket" in finding["message"]
    # where NCCL opened the devices that match, only the others' rails are lost: the severity given
    found, outcomes = audit("gpu-a", healthy, [written(tmp_path, opened)])
    [finding] = found["NCCLRUN-011"]
    assert finding["evidence"]["unmatched"] == unmatched and finding["severity"] == severity
    assert "NCCL found no device" not in finding["message"]


def test_could_not_open_names_the_ports_the_value_names(healthy, tmp_path):
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, HCA_TYPO.replace("mlx5_bond_0", "mlx5_3:1"))])
    [finding] = found["NCCLRUN-011"]
    assert "names active ports of the node (mlx5_3:1), but NCCL found no device" in finding["message"]


def test_real_log_of_an_ib_hca_nccl_could_not_open(healthy):
    """nccl#811: NCCL_IB_HCA=mlx5_1 in a KVM guest, "No device found", sockets over IPoIB. On a node whose facts
    show mlx5_1 active (the hand-written node), NCCL could not open it; on one without it, the name matches nothing."""
    found, _outcomes = audit("ZP-GPU-2", healthy, [real("d-ib-hca-mlx5_1-no-device-socket-ipoib-kvm-2.17.1-nccl811")])
    [finding] = found["NCCLRUN-011"]
    assert finding["severity"] == "fail" and finding["evidence"]["unmatched"] == []
    assert "could not open them" in finding["message"] and "used network Socket" in finding["message"]
    assert "No device found" in finding["evidence"]["no_device IB"]
    renamed = json.loads(json.dumps(healthy).replace('"mlx5_1"', '"mlx5_x1"'))
    found, _outcomes = audit("ZP-GPU-2", renamed, [real("d-ib-hca-mlx5_1-no-device-socket-ipoib-kvm-2.17.1-nccl811")])
    [finding] = found["NCCLRUN-011"]
    assert finding["evidence"]["unmatched"] == ["mlx5_1"]
    assert "mlx5_1 matches no active port of the node" in finding["message"]


def test_real_log_of_an_sriov_vf_an_unprivileged_pod_could_not_open(healthy):
    """dgxarley: NCCL_IB_HCA names a VF's RDMA device (rocep1s0f0v7), the pod cannot open it, NCCL 2.23+ says only
    that its IB plugin failed and its Socket plugin came up, and runs on the VF's netdev (excerpt, prefixes stripped
    by its author)."""
    log = real("d-ib-hca-vf-no-device-socket-k8s-pod-excerpt-dgxarley")
    vf = json.loads(json.dumps(healthy).replace('"mlx5_2"', '"rocep1s0f0v7"'))
    found, _outcomes = audit("spark1", vf, [log])
    [finding] = found["NCCLRUN-011"]
    assert finding["severity"] == "fail" and finding["evidence"]["unmatched"] == []
    assert "names active ports of the node (rocep1s0f0v7:1), but NCCL found no device" in finding["message"]
    assert "could not open them" in finding["message"]
    [fallback] = found["NCCLRUN-001"]  # the Socket plugin the only one up: sockets, said or not
    assert fallback["severity"] == "warn" and "net1" in fallback["message"]
    found, _outcomes = audit("spark1", healthy, [log])
    [finding] = found["NCCLRUN-011"]
    assert finding["evidence"]["unmatched"] == ["rocep1s0f0v7"] and "matches no active port" in finding["message"]


def test_ib_hca_filter():
    assert hca_filter("^=mlx5_0:1,mlx5_1") == (True, True, [("mlx5_0", 1), ("mlx5_1", None)])
    assert hca_filter(" mlx5 ") == (False, False, [(" mlx5 ", None)])
    assert hca_filter("^^mlx5") == (True, False, [("^mlx5", None)])  # one ^, as NCCL reads it
    assert hca_filter("") == (False, False, [])
    assert len(hca_filter(",".join(["m"] * 1000))[2]) == 64  # bounded


def test_without_ib_hca_nothing_is_judged(healthy):
    _found, outcomes = audit("instance-8g-96c-2", healthy, [real("b-socket-fallback-gcp-a2-vm-2.19.3")])
    assert outcomes["NCCLRUN-011"]["status"] == "not_applicable"


# ---- NCCLRUN-006 from the topology NCCL prints in its log ----------------------------------------------------

# HAND-WRITTEN in NCCL 2.19's GRAPH format: NCCL inside a VM that flattened the hand-written node's tree: no switch, the
# GPU beside mlx5_0 (PIX in the facts) seen through the CPU (PHB), and NUMA unknown
FLAT = """\
gpu-a:100:200 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===
gpu-a:100:200 [0] NCCL INFO CPU/FFFFFFFFFFFFFFFF (1/1/2)
gpu-a:100:200 [0] NCCL INFO + PCI[24.0] - GPU/15000 (0)
gpu-a:100:200 [0] NCCL INFO + PCI[24.0] - NIC/16000
gpu-a:100:200 [0] NCCL INFO               + NET[50.0] - NET/0 (b8e2ce0003f6ceb8/1/50.000000)
gpu-a:100:200 [0] NCCL INFO ==========================================
gpu-a:100:200 [0] NCCL INFO GPU/15000 :GPU/15000 (0/5000.000000/LOC) CPU/FFFFFFFFFFFFFFFF (1/24.000000/PHB) NET/0 (2/24.000000/PHB)
"""


def test_nccls_flattened_view_printed_in_the_log_is_held_to_the_facts(healthy, tmp_path):
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, FLAT)])
    by_subject = dict((f["subject"], f) for f in found["NCCLRUN-006"])
    assert sorted(by_subject) == ["0000:15:00.0->0000:16:00.0", "numa"]
    pair = by_subject["0000:15:00.0->0000:16:00.0"]
    assert (pair["evidence"]["nccl_path"], pair["evidence"]["facts_path"]) == ("PHB", "PIX")
    assert pair["evidence"]["dump"].endswith("(NCCL's topology in the log)")
    assert by_subject["numa"]["evidence"]["gpus"] == ["0000:15:00.0"]
    # the same tree as the facts have it: nothing to say
    healthy_log = FLAT.replace("FFFFFFFFFFFFFFFF", "0").replace("NET/0 (2/24.000000/PHB)", "NET/0 (2/24.000000/PIX)")
    found, outcomes = audit("gpu-a", healthy, [written(tmp_path, healthy_log)])
    assert "NCCLRUN-006" not in found and outcomes["NCCLRUN-006"]["status"] == "pass"


def test_a_real_printed_topology_of_another_machine_is_named(healthy):
    found, _outcomes = audit("n013", healthy, [real("c-topo-2socket-a100-pcie-phb-sys-2.16.5-nccltests350")])
    [finding] = found["NCCLRUN-006"]
    assert "0000:81:00.0" in finding["message"] and "another machine" in finding["message"]


# ---- NCCLRUN-004 from the connections of any transport -----------------------------------------------------

# HAND-WRITTEN in the format of NCCL 2.19 with HPC-X's IBext plugin: no "GPU Direct RDMA" line at all, and the data
# GPU 0000:15:00.0 receives through mlx5_0 (beside it, PIX) is not GDRDMA; sends are not judged (NCCL_NET_GDR_READ)
PLUGIN_NO_GDR = """\
gpu-a:100:200 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v8)
gpu-a:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB bond0.100:198.18.100.11<0>
gpu-a:100:200 [0] NCCL INFO Using network IBext_v8
gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 15000 commId 0x9 - Init START
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 8[15000] -> 0[15000] [receive] via NET/IBext_v8/0
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 0[15000] -> 8[15000] [send] via NET/IBext_v8/0
"""


def test_a_plugin_receiving_without_gdrdma_beside_the_gpu(healthy, tmp_path):
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, PLUGIN_NO_GDR)])
    [finding] = found["NCCLRUN-004"]
    assert finding["subject"] == "mlx5_0" and finding["evidence"]["gpus"] == ["0000:15:00.0"]
    assert finding["evidence"]["detail"] == "connections via NET/IBext_v8, not GDRDMA"
    assert "the facts show no reason" in finding["message"]  # peer memory loaded, no ACS, IOMMU in passthrough
    assert "via NET/IBext_v8/0" in finding["evidence"]["transport NET/IBext_v8"]
    # with GDRDMA on the receive side the same plugin is healthy; a send without it is NCCL's default
    fine = PLUGIN_NO_GDR.replace("[receive] via NET/IBext_v8/0", "[receive] via NET/IBext_v8/0/GDRDMA")
    found, outcomes = audit("gpu-a", healthy, [written(tmp_path, fine)])
    assert "NCCLRUN-004" not in found and outcomes["NCCLRUN-004"]["status"] == "pass"


def test_real_plugin_logs_with_gdrdma_pass(healthy):
    found, _outcomes = audit("qh100-gpu20", healthy, [real("a-ib-gdrdma-h100-ibext-2node-nccl1357")])
    assert "NCCLRUN-004" not in found


# ---- NCCLRUN-001 on logs that stop after init ----------------------------------------------------------------

# HAND-WRITTEN in NCCL 2.18's format: IB not found, sockets chosen, and the log ends there (the job hung at init)
INIT_ONLY = """\
gpu-a:100:200 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
gpu-a:100:200 [0] NCCL INFO NET/IB : No device found.
gpu-a:100:200 [0] NCCL INFO NET/Socket : Using [0]bond0.100:198.18.100.11<0>
gpu-a:100:200 [0] NCCL INFO Using network Socket
"""


def test_a_log_that_stops_after_choosing_sockets_is_judged_from_what_it_says(healthy, tmp_path):
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, INIT_ONLY)])
    [finding] = found["NCCLRUN-001"]
    assert finding["severity"] == "warn" and finding["evidence"]["init_only"] is True
    assert "whether the run spans nodes is not known" in finding["message"]
    assert "No device found" in finding["evidence"]["no_device IB"]
    # a communicator of 16 ranks on an 8-GPU node spans nodes, connections or not
    spans = INIT_ONLY + "gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 15000 - Init START\n"
    [finding] = audit("gpu-a", healthy, [written(tmp_path, spans)])[0]["NCCLRUN-001"]
    assert finding["severity"] == "fail" and finding["evidence"]["init_only"] is False
    # 4 ranks on the 8-GPU node, one init line: they may be four nodes of one GPU each, so not known
    few = spans.replace("nranks 16", "nranks 4")
    [finding] = audit("gpu-a", healthy, [written(tmp_path, few)])[0]["NCCLRUN-001"]
    assert finding["severity"] == "warn" and finding["evidence"]["init_only"] is True
    # every rank of the communicator initialised on this host, or NCCL saying nNodes 1: one node, nothing crossed
    every = few + "".join("gpu-a:100:20%d [%d] NCCL INFO comm 0x1 rank %d nranks 4 cudaDev %d busId %d5000 - Init START\n"
                          % (r, r, r, r, r + 1) for r in (1, 2, 3))
    nnodes = few + "gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0\n"
    for one_node in (every, nnodes):
        found, outcomes = audit("gpu-a", healthy, [written(tmp_path, one_node)])
        assert "NCCLRUN-001" not in found and outcomes["NCCLRUN-001"]["status"] == "pass"


def test_nccl_2_5_chooses_sockets_without_saying_using_network(healthy):
    """NCCL 2.5.7 prints no "Using network" line: its socket device list is the choice (real log, one desktop)."""
    found, _outcomes = audit("wangying-system", healthy, [real("c-topo-numa-unknown-cpu-ffff-2.5.7-nccl340")])
    [finding] = found["NCCLRUN-001"]
    assert finding["severity"] == "warn" and "eno1" in finding["message"]


def test_the_pair_is_drawn_on_both_gpus_in_the_tree(broken, tmp_path):
    report, errors = run_audit({"gpu-a": {"facts": broken, "status": "audited",
                                          "nccl_logs": [written(tmp_path, SHM_BELOW_ONE_SWITCH)]}}, TODAY,
                               "2026-12-01T00:00:00+00:00")
    assert errors == []
    marked = sorted(d["address"] for d in report["topology"]["gpu-a"]["devices"]
                    if "NCCLRUN-009" in [f["id"] for f in d["findings"]])
    assert marked == ["0000:15:00.0", "0000:19:00.0"]


# ---- found in review: lines and shapes the first version missed or fell over --------------------------------

# HAND-WRITTEN in NCCL 2.19's format: NVLink P2P refused is a WARN (init fails after it); the SHM lines name ranks
NVLINK_REFUSED = """\
gpu-a:100:200 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 15000 commId 0x9 - Init START
gpu-a:100:201 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 19000 commId 0x9 - Init START
gpu-a:100:200 [0] transport/p2p.cc:275 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This \
should not be the case given their connectivity, and is probably due to a hardware issue. If you still want to \
proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.
gpu-a:100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
"""


def test_nvlink_p2p_refused_in_a_warn_and_ranks_placed_by_the_init_lines(broken, tmp_path):
    found, _outcomes = audit("gpu-a", broken, [written(tmp_path, NVLINK_REFUSED)])
    [finding] = found["NCCLRUN-009"]  # one pair: NVML's 1 and 0 and ranks 0 and 1 are the same two GPUs
    assert finding["subject"] == "0000:15:00.0->0000:19:00.0"
    assert finding["evidence"]["said"] == ["P2P disabled (NVLink)", "via SHM/direct/direct"]
    assert finding["evidence"]["causes"][0].startswith("ACS redirect")  # placed, so the facts are asked


@pytest.mark.parametrize("section", [
    {"p2p_off": [{"devs": [1], "gpus": ["x"]}, {"devs": [[1], 2]}, {"devs": [True, 2]}, "junk"]},
    {"shm": [{"rank": 0, "peer": 1, "gpu": 5, "peer_gpu": [1]}, {"rank": "0"}, None]},
    {"bootstrap": {"name": 7, "address": "1.2.3.4"}, "oob": {"name": "eth0", "address": 12},
     "net_lists": {"Socket": [{"name": "lo", "address": 5}, {"name": None}, "x"]}},
    {"bootstrap": {"name": "eth7", "address": "127.0.0.1"}, "oob": {"name": "eth7", "address": "10.1.1.1"}},
    # ranks of the wrong type, and a communicator too large to enumerate: neither raises nor takes long
    {"network": "Socket", "net_lists": {"Socket": [{"name": "lo", "address": "127.0.0.1", "index": 0}]},
     "ranks": [{"rank": [1], "nranks": 2}, {"rank": True, "nranks": 2}, "x"], "nranks": 2},
    {"network": "Socket", "net_lists": {"Socket": [{"name": "lo", "address": "127.0.0.1", "index": 0}]},
     "ranks": [{"rank": 0, "nranks": 10 ** 8}], "nranks": 10 ** 8},
])
def test_odd_shapes_of_a_stored_view_never_raise(healthy, section):
    """The nccl-tests probe's result reaches the audit as host variables: its parsed log may hold anything."""
    parsed = {"lines": 3, "nccl_lines": 3, "hosts": ["gpu-a"], "sections": {"gpu-a": section}}
    report, errors = run_audit({"gpu-a": {"facts": healthy, "status": "audited",
                                          "probes": {"nccl": {"nccl_log": parsed}}}}, TODAY,
                               "2026-12-01T00:00:00+00:00")
    assert errors == []
    crashed = [f for f in report["findings"] if f["subject"] == "internal error"]
    assert crashed == [], crashed


@pytest.mark.parametrize("name, host, interfaces, severity", [
    # every one stops after init without saying whether its run spans nodes: warnings that say so, never a pass
    ("d-socket-lo-ifname-bgp-unnumbered-nccl1053", "axa", ["lo"], "warn"),
    ("d-socket-ip6tnl0-veth0-2.5.6-nccl529", "NvYt-dcf441d17e21-1bdf2bc9-79ce82ee-3fe03e8-c2959af0",
     ["ip6tnl0", "veth0"], "warn"),
    ("d-bootstrap-lo-ifname-excl-docker0-sagemaker-dlc-2.21.5", "9dc3329bb310", ["lo"], "warn"),
    ("d-ibext-nodev-socket-virbr0-container-2.17.1-nccl941", "05-06-76-200", ["virbr0"], "warn"),
    # two ranks on an 8-GPU node may be two nodes of one GPU each: not known either
    ("d-socket-lo-ifname-init-only-vllm-tp2-pod-2.28.9-hami261", "test-7b94f88dfd-dxs9c", ["lo"], "warn"),
])
def test_real_logs_of_sockets_on_virtual_interfaces(healthy, name, host, interfaces, severity):
    found, _outcomes = audit(host, healthy, [real(name)])
    named = dict((i, f["severity"]) for f in found["NCCLRUN-010"] for i in f["evidence"]["interfaces"])
    assert set(interfaces) <= set(named), named
    assert severity in [named[i] for i in interfaces]
    data = [f for f in found["NCCLRUN-010"] if f["subject"].startswith("data ")]
    assert all("whether the run spans nodes" in f["message"] for f in data), data


def test_the_ranks_of_a_smaller_communicator_do_not_make_a_run_one_node(healthy, tmp_path):
    """Node B of two 4-GPU nodes: the world communicator's ranks 4..7 and a tensor-parallel group's 0..3 initialise
    here. Together they are 0..7, but no communicator of 8 has all its ranks here: the span is not known."""
    lines = "".join("gpu-a:100:20%d [%d] NCCL INFO comm 0x1 rank %d nranks 8 cudaDev %d busId %d5000 - Init START\n"
                    % (d, d, d + 4, d, d + 1) for d in range(4))
    lines += "".join("gpu-a:100:20%d [%d] NCCL INFO comm 0x2 rank %d nranks 4 cudaDev %d busId %d5000 - Init START\n"
                     % (d, d, d, d, d + 1) for d in range(4))
    found, _outcomes = audit("gpu-a", healthy, [written(tmp_path, ON_LOOPBACK + lines)])
    data = [f for f in found["NCCLRUN-010"] if f["subject"] == "data lo"][0]
    assert data["severity"] == "warn" and data["evidence"]["spans_nodes"] is None
    assert found["NCCLRUN-001"][0]["severity"] == "warn"
    # the world communicator's eight ranks all here: one node
    every = "".join("gpu-a:100:20%d [%d] NCCL INFO comm 0x1 rank %d nranks 8 cudaDev %d busId %d5000 - Init START\n"
                    % (d, d, d, d, d + 1) for d in range(8))
    found, outcomes = audit("gpu-a", healthy, [written(tmp_path, ON_LOOPBACK + every)])
    assert "NCCLRUN-010" not in found and outcomes["NCCLRUN-010"]["status"] == "not_applicable"


def test_a_real_one_rank_log_on_the_loopback_is_not_judged_and_says_why(healthy):
    """A complete real log of one rank: sockets and bootstrap on lo carried nothing; the OFI plugin standing aside
    (no EFA device) is a warning, not a network error."""
    found, outcomes = audit("7b6059672f82", healthy,
                            [real("d-socket-lo-single-rank-init-complete-ofi-declined-2.10.3-herring")])
    assert "NCCLRUN-010" not in found and outcomes["NCCLRUN-010"]["status"] == "not_applicable"
    assert "lo carried nothing between nodes" in outcomes["NCCLRUN-010"]["reason"]
    assert "NCCLRUN-001" not in found
    [warned] = found["NCCLRUN-005"]
    assert warned["severity"] == "warn" and "Only EFA provider is supported" in warned["message"]


@pytest.mark.parametrize("name", ["d-efa-ofi-p4d-gdrdma-healthy-excerpt-ofi65",
                                  "d-ib-hca-set-roce-mlx5_4-working-2.18.5-nccl1052"])
def test_real_healthy_plugin_and_ib_hca_logs_raise_none_of_the_new_rules(healthy, name):
    import json
    with open(os.path.join(LOGS, name, "expected.json")) as handle:
        host = json.load(handle)["hosts"][0]
    found, _outcomes = audit(host, healthy, [real(name)])
    assert not set(found) & {"NCCLRUN-009", "NCCLRUN-010"}, found.keys()
