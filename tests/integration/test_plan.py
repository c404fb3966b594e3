"""gpuops.fabric.plan over captured nodes: the figures and times are the model of NCCL's collectives (the audit's),
each rail and what caps it is named, a chart per host is written, a host without a training network is planned on the
NICs nearest its GPUs and says so, and bad input is refused naming the value."""

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
    assert tcp["interface"] == "bond0.100" and tcp["mode"] == "tcp"
    assert [(r["rail"], r["mtu"], r["limited_by"]) for r in tcp["rails"]] == [
        ("bond0.100", 9000, "TCP goodput (20 Gbit/s at MTU 9000)")]
    assert tcp["across"]["limited_by"] == "network: 1 rail (TCP goodput (20 Gbit/s at MTU 9000))"
    # the broken twin: GPU 0 shares mlx5_1 with GPU 1 (its own HCA is on the other socket), so 7 rails; and GPU 1
    # trained down to x8 (NCCL's Gen5 x8: 24 GB/s) caps that rail below its line rate (400 x 0.96 / 8 = 48 GB/s)
    rdma = plans["node-rdma"]
    rails = dict((r["rail"], r) for r in rdma["rails"])
    assert len(rails) == 7 and rails["mlx5_1"]["gpus"] == ["0", "1"]
    assert rails["mlx5_1"]["limited_by"] == "GPU link" and rails["mlx5_1"]["gbytes_per_s"] == 24.0
    assert [r["nodes"] for r in rdma["scaling"]] == list(range(2, 9))
    text = (plan_dir / "plan.md").read_text()
    assert "| 10 GbE | 2.475 | network: 1 rail (TCP goodput (20 Gbit/s at MTU 9000)) |" in text
    assert "network becomes the ceiling at" in text and "| mlx5_1 | 0, 1 | roce | 400 | 24 | GPU link |" in text
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
                    "node-eth9": {"fabric_facts_root": roots["dgx8"], "fabric_nccl_mode": "tcp",
                                  "fabric_nccl_interface": "eth9"},
                    "node-gone": {"fabric_facts_source": "hwloc_xml",
                                  "fabric_facts_path": str(tmp_path / "missing.xml")}})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    output = " ".join((result.stdout + result.stderr).split())
    assert ("bandwidth_plan: node-none: no training network attached in fabric_attachments; set "
            "fabric_nccl_interface; planned on the NIC nearest each GPU") in output
    assert "bandwidth_plan: node-gone was not planned: its facts could not be gathered: " in output
    # an interface the facts do not have: not planned, and the reason says which
    assert ("bandwidth_plan: node-eth9 was not planned: rails: 16 nodes need at least one rail (a NIC NCCL uses "
            "between nodes) (mode tcp); eth9: not in the facts, or no PCIe port under it; no rail") in output
    assert "node-eth9: no training network" not in output and "node-eth9; planned" not in output
    plan_dir = tmp_path / "plan"
    assert sorted(os.listdir(str(plan_dir))) == ["node-none.png", "node-rdma.png", "node-tcp.png", "plan.json",
                                                 "plan.md"]
    with open(str(plan_dir / "plan.json")) as handle:
        plans = json.load(handle)
    assert sorted(plans) == ["node-none", "node-rdma", "node-tcp"]
    # the host without a training network: the NIC nearest each GPU is its rail, as a server model captured before
    # purchase gets it, and the plan says so
    assert plans["node-none"]["interface"] is None and plans["node-none"]["rails"]
    assert plans["node-none"]["notes"][0].startswith("no training network attached in fabric_attachments")
    text = (plan_dir / "plan.md").read_text()
    assert "## Not planned" in text and "- node-gone: its facts could not be gathered" in text
    assert "## node-tcp" in text and "## node-rdma" in text and "## node-none" in text


def test_plan_fails_when_no_host_can_be_planned(ansible_env, roots, tmp_path):
    # a GPU node without a training network is still planned (its nearest NICs as rails); a real capture of a host
    # without GPUs (a Westmere box with a QLogic HCA) is not
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
    assert "node-none: facts: no GPUs on this node; nothing to predict (mode tcp)" in result.stdout
    assert not (tmp_path / "plan").exists()
