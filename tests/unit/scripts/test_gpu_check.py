"""scripts/gpu_check.py, the one run prepared for a GPU machine, replayed here on captured outputs: the facts of
the hand-written node against nvidia-smi text written in nvidia-smi's format from those facts (HAND-WRITTEN, so the
comparison has something that agrees and something planted that does not), and a real NCCL log and dump."""

import json
import os
import shutil

import gpu_check  # scripts/gpu_check.py
from conftest import REPO

LOGS = os.path.join(REPO, "tests", "fixtures", "realdata", "nccl-logs")


def smi_query(facts, width_of=None):
    """HAND-WRITTEN: `nvidia-smi -q` blocks in the driver's layout for the GPUs of the facts."""
    lines = ["==============NVSMI LOG==============", "", "Driver Version                            : 550.90.07", ""]
    for gpu in facts["gpus"]:
        domain, rest = gpu["address"].split(":", 1)
        width = (width_of or {}).get(gpu["address"], gpu["link"]["current"]["width"])
        lines += ["GPU 0000%s:%s" % (domain, rest.upper()),
                  "    Product Name                          : NVIDIA H100 80GB HBM3",
                  "    PCI",
                  "        Bus Id                            : 0000%s:%s" % (domain, rest.upper()),
                  "        GPU Link Info",
                  "            PCIe Generation",
                  "                Max                       : %s" % gpu["link"]["max"]["generation"],
                  "                Current                   : %s" % gpu["link"]["current"]["generation"],
                  "            Link Width",
                  "                Max                       : %sx" % gpu["link"]["max"]["width"],
                  "                Current                   : %sx" % width,
                  "    Performance State                     : P0", ""]
    return "\n".join(lines) + "\n"


def replay_dir(tmp_path, facts, query):
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "facts.json").write_text(json.dumps(facts))
    (replay / "nvidia-smi-q.txt").write_text(query)
    (replay / "topo-m.txt").write_text("")
    shutil.copy(os.path.join(LOGS, "a-roce-2.19.3-dgxh100-2node-nccltests185", "nccl.log"), str(replay / "nccl.log"))
    shutil.copy(os.path.join(REPO, "tests", "fixtures", "realdata", "rccl-mi300x-8gpu-cx7", "topo_8p_940.xml"),
                str(replay / "nccl-topo.xml"))
    return str(replay)


def test_replay_agrees_with_facts_that_agree(healthy, tmp_path, capsys):
    facts = healthy
    out = str(tmp_path / "out")
    status = gpu_check.main(["--out", out, "--replay", replay_dir(tmp_path, facts, smi_query(facts)),
                             "--host", "dgx8"])
    result = json.load(open(os.path.join(out, "check.json")))
    assert status == 0, result["comparison"]["mismatches"]
    assert len(result["comparison"]["gpus"]) == 8
    assert all(c["same"] is not False for g in result["comparison"]["gpus"] for c in g["checks"].values())
    assert result["nccl_log"]["hosts"] == ["dgxh100-3", "dgxh100-4"]
    assert sorted(os.listdir(out)) == ["check.json", "facts.json", "nccl-topo.xml", "nccl.log", "nvidia-smi-q.txt",
                                       "topo-m.txt"]
    assert "8 GPU(s) compared" in capsys.readouterr().out


def test_replay_names_what_differs(broken, tmp_path, capsys):
    facts = broken  # GPU 0000:19:00.0 trained to x8
    query = smi_query(facts, width_of={"0000:19:00.0": 16, "0000:35:00.0": 4})
    status = gpu_check.main(["--out", str(tmp_path / "out"), "--replay", replay_dir(tmp_path, facts, query)])
    assert status == 1
    printed = capsys.readouterr().out
    assert "differs: 0000:19:00.0 width.current: facts 8, nvidia-smi 16" in printed
    assert "differs: 0000:35:00.0 width.current: facts 16, nvidia-smi 4" in printed


def test_topology_relations_are_held_against_the_facts(healthy):
    facts = healthy
    # HAND-WRITTEN in topo -m's tab layout: GPU0 (0000:15:00.0) PIX to mlx5_0 as the facts say; PIX to mlx5_1 planted
    # where the facts give PXB
    topo = ("\tGPU0\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tPIX\tPIX\t0-55,112-167\t0\n"
            "NIC0\tPIX\t X \tPXB\t\t\nNIC1\tPIX\tPXB\t X \t\t\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n")
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvidia_smi import (
        parse_smi_query, parse_topo_matrix,
    )
    result = gpu_check.compare(facts, parse_smi_query(smi_query(facts)), parse_topo_matrix(topo))
    assert [(r["nic"], r["nvidia_smi"], r["facts"], r["same"]) for r in result["relations"]] == [
        ("mlx5_0", "PIX", "PIX", True), ("mlx5_1", "PIX", "PXB", False)]
    assert result["mismatches"] == ["0000:15:00.0 <-> mlx5_1: facts PXB, nvidia-smi topo -m PIX"]


REAL = os.path.join(REPO, "tests", "fixtures", "realdata", "gpu-check-h200-vm")


def test_the_real_h200_run_replays(tmp_path, capsys):
    """The device machine's own run (tests/fixtures/realdata/gpu-check-h200-vm, PROVENANCE.md): one H200 passed through
    to a VM, facts gathered live with NVML. Replayed, the facts agree with nvidia-smi (bus id, Gen5 x16 now and at
    best, P0), NCCL's log is read (socket transport over eth0 after NET/IB found no device) and the audit of a host
    without a network intent runs without netaddr's help."""
    out = str(tmp_path / "out")
    status = gpu_check.main(["--out", out, "--replay", REAL, "--host", "vm"])
    result = json.load(open(os.path.join(out, "check.json")))
    assert status == 0, result
    assert result["problems"] == []
    (gpu,) = result["comparison"]["gpus"]
    assert gpu["gpu"] == "0000:00:06.0" and gpu["in_facts"]
    checks = gpu["checks"]
    assert checks["generation.max"] == {"facts": 5, "nvidia_smi": 5, "same": True, "volatile": False}
    assert checks["width.current"]["facts"] == checks["width.current"]["nvidia_smi"] == 16
    assert checks["performance_state"]["same"] is True
    assert result["comparison"]["mismatches"] == []
    assert result["nccl_log"]["hosts"] == ["vm"]
    assert "1 GPU(s) compared, 0 relation(s), 0 mismatch(es)" in capsys.readouterr().out


def test_the_real_copy_bandwidth_is_below_the_link():
    """The capture's host <-> GPU copies through the Gen5 x16 link: below its 63.0 GB/s, above 80% of it at 1 GiB."""
    with open(os.path.join(REAL, "facts.json")) as handle:
        link = json.load(handle)["gpus"][0]["link"]["max"]["gbytes_per_s"]
    with open(os.path.join(REAL, "extras", "copy-bw.json")) as handle:
        copies = json.load(handle)
    largest = max(copies["sizes"], key=lambda row: row["bytes"])
    for way in ("h2d_GBps", "d2h_GBps"):
        assert 0.8 * link < largest[way] < link, (way, largest[way], link)


def test_extras_are_captured_on_this_machine(tmp_path):
    """--extras on a machine without a GPU (this one): each step says how it ended in extras.json, none stops the
    others, and the PCI attribute files above this machine's NICs land in a tarball (sysfs names hold colons)."""
    import tarfile
    done = gpu_check.capture_extras(str(tmp_path))
    extras = tmp_path / "extras"
    assert set(json.loads((extras / "extras.json").read_text())) == set(
        [name for _argv, name in gpu_check.EXTRAS] + ["copy-bw.json", "pci-sysfs.tar.gz"])
    with tarfile.open(str(extras / "pci-sysfs.tar.gz")) as archive:
        names = archive.getnames()
    classes = [n for n in names if n.endswith("/class")]
    assert done["pci-sysfs.tar.gz"] != "0 files" and classes, names
    assert all(n.startswith("sys/devices/pci") for n in names if n != "sys" and n != "sys/devices")
