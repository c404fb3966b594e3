"""The collection as users get it: built, installed from its tarball, run by ansible itself."""

import json
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(env, *args, check=True):
    proc = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("%s failed (%d)\n%s\n%s" % (args, proc.returncode, proc.stdout, proc.stderr))
    return proc


def adhoc(env, module_args, *extra):
    """Run topology_facts on localhost; return the module result (the json callback's view)."""
    proc = run(env, "ansible", "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + _python(),
               "-o", "-m", "gpuops.fabric.topology_facts", "-a", module_args, *extra, check=False)
    # One-line output: "localhost | SUCCESS => {json}" or "localhost | FAILED! => {json}".
    line = [x for x in proc.stdout.splitlines() if x.startswith("localhost | ")]
    assert line, proc.stdout + proc.stderr
    status, payload = line[0].split(" => ", 1)
    result = json.loads(payload)
    result["failed"] = "FAILED" in status
    assert result["failed"] == (proc.returncode != 0)
    return result


def _python():
    import sys
    return sys.executable


def test_tarball_installs_and_ansible_doc_shows_the_manual(ansible_env):
    assert os.path.isfile(os.path.join(ansible_env["GPUOPS_INSTALLED"], "MANIFEST.json"))
    assert not os.path.exists(os.path.join(ansible_env["GPUOPS_INSTALLED"], "tests"))  # build_ignore
    doc = run(ansible_env, "ansible-doc", "gpuops.fabric.topology_facts").stdout
    for text in ("gather_subset", "hwloc_xml", "nccl_xml", "RETURN VALUES", "roce_v2_gid_index", "link_state"):
        assert text in doc, text
    assert "pcie_bandwidth" in run(ansible_env, "ansible-doc", "-t", "filter", "gpuops.fabric.pcie_bandwidth").stdout
    assert "topology_summary" in run(ansible_env, "ansible-doc", "-t", "filter",
                                     "gpuops.fabric.topology_summary").stdout
    listing = run(ansible_env, "ansible-doc", "-l", "gpuops.fabric").stdout
    assert "gpuops.fabric.topology_facts" in listing


def test_facts_from_a_captured_tree(ansible_env, roots):
    result = adhoc(ansible_env, "root=%s" % roots["dgx8-broken"])
    assert result["failed"] is False, result
    assert result["changed"] is False
    facts = result["ansible_facts"]["gpuops_fabric"]
    assert facts["root"] == roots["dgx8-broken"] and facts["source"] == "sysfs"
    assert len(facts["gpus"]) == 8
    assert [g["link_state"] for g in facts["gpus"]].count("degraded") == 1


def test_check_mode_and_subset(ansible_env, realdata):
    path = realdata("rccl-mi300x-8gpu-cx7", "topo_8p_940.xml")
    result = adhoc(ansible_env, "source=nccl_xml path=%s gather_subset=gpu,!min" % path, "--check")
    assert result["failed"] is False, result
    facts = result["ansible_facts"]["gpuops_fabric"]
    assert facts["gather_subset"] == ["gpu"] and "numa" not in facts and len(facts["gpus"]) == 8


def test_live_machine(ansible_env):
    """This machine's own sysfs: no GPU here, but the module must read it cleanly."""
    result = adhoc(ansible_env, "")
    assert result["failed"] is False, result
    facts = result["ansible_facts"]["gpuops_fabric"]
    assert facts["root"] == "/" and facts["numa"]["count"] >= 1
    assert any(n["name"] == "lo" and n["kind"] == "loopback" for n in facts["nics"])


@pytest.mark.parametrize("args,message", [
    ("root=/nonexistent/capture", "/nonexistent/capture is not a sysfs tree"),
    ("source=hwloc_xml", "source is hwloc_xml but all of the following are missing: path"),
    ("path=/tmp/x.xml", "path: '/tmp/x.xml' is only used with source hwloc_xml or nccl_xml"),
    ("gather_subset=gpus", "gather_subset: 'gpus' is not one of"),
    ("source=hwloc_xml path=/nonexistent.xml", "/nonexistent.xml: cannot read"),
    ("nvml=maybe", "value of nvml must be one of"),
])
def test_bad_input_is_named(ansible_env, args, message):
    result = adhoc(ansible_env, args)
    assert result["failed"] is True
    assert message in result["msg"]
    assert "Traceback" not in result.get("module_stderr", "")


def test_playbook_with_module_defaults_and_filters(ansible_env, roots):
    env = dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default")
    proc = run(env, "ansible-playbook", "-i", "localhost,", "-c", "local",
               "-e", "ansible_python_interpreter=" + _python(), "-e", "fixture_root=" + roots["dgx8"],
               os.path.join(REPO, "tests", "integration", "playbooks", "module_defaults.yml"))
    assert "failed=0" in proc.stdout and "changed=0" in proc.stdout


def test_demo_inventory(ansible_env, roots):
    """The README's main job: every demo host gathered, summaries printed with real findings."""
    env = dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml")
    proc = run(env, "ansible-playbook", "-i", os.path.join(REPO, "demo", "inventory.yml"), "gpuops.fabric.gather")
    out = proc.stdout
    hosts = [line.split()[0] for line in out.splitlines() if "ok=2" in line and "failed=0" in line]
    assert len(hosts) == 13, out[-3000:]
    assert "RDMA mlx4_0/1 InfiniBand ACTIVE 56 Gb/sec (4X FDR)" in out
    assert "ACCELERATOR 0000:83:00.0 (intel) NUMA 1" in out
    assert "degraded: link width x8 below its maximum x16" in out
    assert "eno1 (no LACP partner)" in out
    assert "CPU-less: 250,251,252,253,254,255" in out


def test_nccl_tests_probe_reads_what_nccl_said(ansible_env, tmp_path):
    """The probe's environment and what it reads back, through ansible. NCCL cannot run without a GPU, so the
    program is a stand-in (a shell script, the library boundary): it prints a real nccl-tests table after a real
    NCCL_DEBUG=INFO log, and writes a real NCCL topology dump where NCCL_TOPO_DUMP_FILE points."""
    fixtures = os.path.join(REPO, "tests", "fixtures")
    table = os.path.join(fixtures, "probes", "nccl-tests", "gb10-2node.txt")
    log = os.path.join(fixtures, "realdata", "nccl-logs", "a-roce-2.19.3-dgxh100-2node-nccltests185", "nccl.log")
    dump = os.path.join(fixtures, "realdata", "rccl-mi300x-8gpu-cx7", "topo_8p_940.xml")
    seen = tmp_path / "env.txt"
    program = tmp_path / "all_reduce_perf"
    program.write_text("#!/bin/sh\nprintf '%%s %%s\\n' \"$NCCL_DEBUG\" \"$NCCL_DEBUG_SUBSYS\" > %s\n"
                       "cat %s %s\ncp %s \"$NCCL_TOPO_DUMP_FILE\"\n" % (seen, log, table, dump))
    program.chmod(0o755)
    proc = run(ansible_env, "ansible", "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + _python(),
               "-o", "-m", "gpuops.fabric.nccl_tests_probe", "-a", "binary=%s gpus=1" % program, check=False)
    status, payload = [x for x in proc.stdout.splitlines() if x.startswith("localhost | ")][0].split(" => ", 1)
    result = json.loads(payload)
    assert "SUCCESS" in status, result
    assert seen.read_text().split() == ["INFO", "INIT,ENV,NET,GRAPH"]
    assert result["max_busbw"] is not None
    sections = result["nccl_log"]["sections"]
    assert result["nccl_log"]["hosts"] == ["dgxh100-3", "dgxh100-4"]
    assert sections[""]["version"] == "2.19.3"  # rank 0 prints it without the prefix
    assert [d["name"] for d in sections["dgxh100-4"]["net_devices"]] == ["mlx5_10", "mlx5_11"]
    assert result["nccl_topology_error"] is None
    assert len(result["nccl_topology"]["gpus"]) == 8
