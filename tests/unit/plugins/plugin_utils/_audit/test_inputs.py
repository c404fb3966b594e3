"""The audit's inputs: the register names it reads exist where it says they are registered, every host variable it
reads is a known one, and a host's status comes from its registered gather result."""

import os
import re

import pytest

from conftest import REPO

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import (
    HOST_VARIABLES, REGISTERED, host_input, network_drift, nccl_drift,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import KNOWN_VARIABLES


@pytest.mark.parametrize("name", sorted(REGISTERED))
def test_registered_where_it_says(name):
    path, _what = REGISTERED[name]
    with open(os.path.join(REPO, path)) as handle:
        text = handle.read()
    assert re.search(r"^\s*register:\s*%s\s*$" % re.escape(name), text, re.M), (name, path)


def test_host_variables_are_known():
    assert set(HOST_VARIABLES) <= KNOWN_VARIABLES, sorted(set(HOST_VARIABLES) - KNOWN_VARIABLES)


def test_status_from_the_gather_result():
    facts = {"schema_version": 1}
    assert host_input({"ansible_facts": {"gpuops_fabric": facts}})["status"] == "audited"
    gone = host_input({"fabric_audit_gather": {"unreachable": True, "msg": "ssh: timed out"}})
    assert (gone["status"], gone["reason"]) == ("unreachable", "ssh: timed out")
    broken = host_input({"fabric_audit_gather": {"failed": True, "msg": "boom"}, "ansible_facts": {"gpuops_fabric": facts}})
    assert (broken["status"], broken["reason"]) == ("failed", "boom")
    assert host_input({})["status"] == "failed"
    entry = host_input({"fabric_waivers": [{"rule": "PCIE-001"}], "network_result": {"files": []}})
    assert entry["waivers"] == [{"rule": "PCIE-001"}] and entry["drift"] is None  # drift only when asked


def test_drift_results():
    assert network_drift({"skipped": True}) is None and network_drift(None) is None
    assert network_drift({"files": ["/etc/netplan/60-gpuops-fabric.yaml"], "changed": True, "diff_text": "d",
                          "backend": "netplan"}) == {"changes": ["/etc/netplan/60-gpuops-fabric.yaml"], "diff": "d",
                                                     "backend": "netplan"}
    assert network_drift({"files": [], "failed": True, "msg": "no"}) == {"error": "no"}
    seen = nccl_drift({"changed": True, "dest": "/etc/nccl.conf",
                       "diff": {"before": "A=1\n", "after": "A=2\n"}})
    assert seen["changed"] and seen["path"] == "/etc/nccl.conf" and "-A=1" in seen["diff"] and "+A=2" in seen["diff"]


def test_a_host_view_merges_each_host_once_and_templates_only_the_inventory(tmp_path):
    """Ansible's own HostVars (the library boundary): the audit's view of a host reads the facts and registered
    results as merged and the inventory's variables templated as the host's own, with each host's variables merged
    once however many readers ask: Ansible merges them afresh, facts copied, on each hostvars[host]."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.inventory.manager import InventoryManager
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager

    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import slurm
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import HostView

    inventory_file = tmp_path / "hosts.yml"
    inventory_file.write_text("all:\n  hosts:\n    node1:\n    node2:\n  vars:\n"
                              "    fabric_nccl_mode: \"{{ 'tc' ~ 'p' }}\"\n    fabric_slurm_drain: true\n"
                              "    fabric_slurm_node_name: \"{{ inventory_hostname }}-slurm\"\n")
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(inventory_file)])
    variables = VariableManager(loader=loader, inventory=inventory)
    facts = {"schema_version": 1, "pci": [{"address": "0000:%02x:00.0" % i, "name": "{{ not a template }}"}
                                          for i in range(50)]}
    for host in ("node1", "node2"):
        variables.set_host_facts(host, {"gpuops_fabric": facts})
        variables.set_nonpersistent_facts(host, {"fabric_audit_gather": {"changed": False, "failed": False}})
    merges = []
    original = variables.get_vars

    def counted(*args, **kwargs):
        merges.append(kwargs.get("host"))
        return original(*args, **kwargs)

    variables.get_vars = counted
    hostvars = HostVars(inventory=inventory, variable_manager=variables, loader=loader)
    views = dict((host, HostView(hostvars, host)) for host in ("node1", "node2"))
    entries = dict((host, host_input(views[host])) for host in views)
    own = dict((host, slurm.host_settings(views[host])) for host in views)  # what validate keeps of each host
    assert own["node1"] == {"fabric_slurm_drain": True, "fabric_slurm_node_name": "node1-slurm"}
    config, errors = slurm.settings({}, ["node1", "node2"], own)
    assert sorted(str(host) for host in merges) == ["node1", "node2"], merges  # once per host, not once per reader
    assert errors == [] and config["host_node"] == {"node1": "node1-slurm", "node2": "node2-slurm"}
    for host, entry in entries.items():
        assert entry["status"] == "audited" and entry["nccl_mode"] == "tcp"
        assert entry["facts"]["pci"] == facts["pci"]  # the facts as held: a string that looks like a template stays
    assert "fabric_slurm_drain" in views["node1"] and "fabric_audit_gather" in views["node1"]
    assert "fabric_waivers" not in views["node1"] and views["node1"].get("fabric_waivers", "unset") == "unset"


def test_a_host_that_left_before_the_window_play_is_named_so():
    """audit.yml keeps the first reading's counters in its window play; a host that left the run before it (a probe
    failed on it) has counters in its facts, none kept and no second reading: named as having left, not as a
    playbook that reads once."""
    facts = {"schema_version": 1, "counters": {"net": {}}}
    left = host_input({"ansible_facts": {"gpuops_fabric": facts}, "fabric_audit_gather": {"changed": False},
                       "fabric_audit_window": 60})
    assert left["window_counters"] is None and "left the play" in left["window_error"]
    once = host_input({"ansible_facts": {"gpuops_fabric": facts}, "fabric_audit_window": 60})  # drift.yml: no gather
    assert once["window_error"] is None
    off = host_input({"ansible_facts": {"gpuops_fabric": facts}, "fabric_audit_gather": {"changed": False}})
    assert off["window_error"] is None
