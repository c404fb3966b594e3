"""gpuops.fabric.plan over captured nodes: the table names each GPU's bottleneck, the times are the model's,
a chart per host is written, and bad input is refused naming the value."""

import json
import os
import subprocess

import yaml

from conftest import REPO, ansible_playbook


def run(env, tmp_path, roots, *extra, **more_hosts):
    hosts = {
        "node-tcp": {"fabric_facts_root": roots["dgx8"], "fabric_nccl_mode": "tcp",
                     "fabric_networks": {"training": {"role": "training", "subnet": "198.18.0.0/22", "vlan": 100,
                                                      "mtu": 9000}},
                     "fabric_attachments": {"training": "bond0"}},
        "node-rdma": {"fabric_facts_root": roots["dgx8-broken"], "fabric_nccl_mode": "rdma"},
    }
    hosts.update(more_hosts)
    inventory = tmp_path / "inventory.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory.write_text(yaml.safe_dump({"all": {"vars": local, "hosts": hosts}}))
    return ansible_playbook(env, inventory, "gpuops.fabric.plan", "-e", "fabric_plan_dir=%s" % (tmp_path / "plan"),
                            *extra, timeout=300)


def test_plan_playbook(ansible_env, roots, tmp_path):
    result = run(ansible_env, tmp_path, roots, "-e", "fabric_plan_gradient_bytes=1000000000",
                 "-e", "fabric_plan_compute_seconds=0.2", "-e", "fabric_plan_nodes=8")
    assert result.returncode == 0, result.stdout[-3000:]
    plan_dir = tmp_path / "plan"
    assert sorted(os.listdir(str(plan_dir))) == ["node-rdma.png", "node-tcp.png", "plan.json", "plan.md"]
    with open(str(plan_dir / "plan.json")) as handle:
        plans = json.load(handle)
    tcp = plans["node-tcp"]
    assert tcp["interface"] == "bond0.100" and tcp["mtu"] == 9000
    assert tcp["plan"]["node"]["limited_by"] == "NIC line rate"
    # the broken twin: GPU 0 shares mlx5_1 with GPU 1 (its own HCA is on the other socket), so 7 rails; and GPU 1
    # trained down to x8 (Gen5 x8 = 31.5 GB/s) caps that rail below its 50 GB/s line rate: 6 x 50 + 31.508
    rdma = plans["node-rdma"]
    assert [g["nic"] for g in rdma["plan"]["gpus"]][:2] == ["mlx5_1", "mlx5_1"]
    rails = dict((r["rail"], r) for r in rdma["plan"]["rails"])
    assert len(rails) == 7 and rails["mlx5_1"]["limited_by"] == "GPU side"
    assert abs(rdma["plan"]["node"]["gbytes_per_s"] - (6 * 50 + 31.508)) < 0.01
    text = (plan_dir / "plan.md").read_text()
    assert "| 10 GbE | 2.48 |" in text and "network becomes the ceiling at" in text
    assert (plan_dir / "node-tcp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_limit_narrows_the_plan(ansible_env, roots, tmp_path):
    """--limit plans the hosts it names (the planning play runs although localhost is not in the limit)."""
    result = run(ansible_env, tmp_path, roots, "-e", "fabric_plan_gradient_bytes=1000000000", "--limit", "node-tcp")
    assert result.returncode == 0, result.stdout[-3000:]
    assert sorted(os.listdir(str(tmp_path / "plan"))) == ["node-tcp.png", "plan.json", "plan.md"]
    assert "node-rdma" not in result.stdout


def test_plan_refuses_bad_input(ansible_env, roots, tmp_path):
    result = run(ansible_env, tmp_path, roots, "-e", "fabric_plan_gradient_bytes=0")
    assert result.returncode != 0
    assert "bandwidth_plan: gradient_bytes: 0.0 must be above 0" in result.stdout


def test_a_host_that_cannot_be_planned_is_named_and_the_others_planned(ansible_env, roots, tmp_path):
    # node-none: tcp without a training network in its intent; node-gone: its capture is missing (no facts)
    result = run(ansible_env, tmp_path, roots, "-e", "fabric_plan_gradient_bytes=1000000000",
                 **{"node-none": {"fabric_facts_root": roots["dgx8"], "fabric_nccl_mode": "tcp"},
                    "node-gone": {"fabric_facts_source": "hwloc_xml",
                                  "fabric_facts_path": str(tmp_path / "missing.xml")}})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    output = " ".join((result.stdout + result.stderr).split())
    assert ("bandwidth_plan: node-none was not planned: no training network attached in fabric_attachments; "
            "set fabric_nccl_interface (mode tcp)") in output
    assert "bandwidth_plan: node-gone was not planned: its facts could not be gathered: " in output
    plan_dir = tmp_path / "plan"
    assert sorted(os.listdir(str(plan_dir))) == ["node-rdma.png", "node-tcp.png", "plan.json", "plan.md"]
    with open(str(plan_dir / "plan.json")) as handle:
        assert sorted(json.load(handle)) == ["node-rdma", "node-tcp"]
    text = (plan_dir / "plan.md").read_text()
    assert "## Not planned" in text and "- node-none: no training network attached" in text
    assert "## node-tcp" in text and "## node-rdma" in text
    # the host the planner could not plan still gets what the hardware allows NCCL's all_reduce, its rails the NICs
    # nearest its GPUs (the model of NCCL's collectives, docs/nccl.md)
    assert "## What the hardware allows NCCL's all_reduce" in text
    row = [line for line in text.splitlines() if line.startswith("| node-none |")]
    assert row and "| 10 | socket interconnect (intel-skylake) |" in row[0], row


def test_plan_fails_when_no_host_can_be_planned(ansible_env, roots, tmp_path):
    # a GPU node without a training network would still get the model's figure (its nearest NICs as rails); a
    # real capture of a host without GPUs (a Westmere box with a QLogic HCA) gets neither a plan nor a figure
    inventory = tmp_path / "inventory.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    capture = os.path.join(REPO, "tests", "fixtures", "realdata", "hwloc-westmere-qib-4numa",
                           "40intel64-2g2n4c+pcilocality.xml")
    inventory.write_text(yaml.safe_dump({"all": {"vars": local, "hosts": {
        "node-none": {"fabric_facts_source": "hwloc_xml", "fabric_facts_path": capture, "fabric_nccl_mode": "tcp"}}}}))
    result = subprocess.run(["ansible-playbook", "-i", str(inventory), "gpuops.fabric.plan",
                             "-e", "fabric_plan_dir=%s" % (tmp_path / "plan"), "-e", "fabric_plan_gradient_bytes=1e9"],
                            env=dict(ansible_env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                            timeout=300, cwd=REPO, check=False)
    assert result.returncode != 0
    assert "bandwidth_plan: no host could be planned" in result.stdout
    assert "node-none: no training network attached in fabric_attachments" in result.stdout
    assert not (tmp_path / "plan").exists()
