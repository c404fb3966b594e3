"""The audit's inputs: the register names it reads exist where it says they are registered, every host variable it
reads is a known one, and a host's status comes from its registered gather result."""

import json
import os
import re

import pytest

from conftest import REPO

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import (
    HOST_VARIABLES, REGISTERED, held_facts, host_input, network_drift, nccl_drift,
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
    """audit.yml reads the counters a second time in its window play; a host that left the run before it (a probe
    failed on it) has counters in its first reading and no second reading: named as having left, not as a
    playbook that reads once."""
    facts = {"schema_version": 1, "counters": {"net": {}}}
    left = host_input({"ansible_facts": {"gpuops_fabric": facts}, "fabric_audit_gather": {"changed": False},
                       "fabric_audit_window": 60})
    assert left["window_counters"] is None and "left the play" in left["window_error"]
    once = host_input({"ansible_facts": {"gpuops_fabric": facts}, "fabric_audit_window": 60})  # drift.yml: no gather
    assert once["window_error"] is None
    off = host_input({"ansible_facts": {"gpuops_fabric": facts}, "fabric_audit_gather": {"changed": False}})
    assert off["window_error"] is None


def text(facts):
    return json.dumps(facts, sort_keys=True, separators=(",", ":"))


def test_the_facts_as_one_text():
    """audit.yml gathers with as_json: the facts are fabric_audit_gather.facts_json, parsed once by the reader;
    site.yml's audit keeps its pre-flight's facts (reused) in ansible_facts.gpuops_fabric."""
    facts = {"schema_version": 2, "counters": {"uptime_s": 10}, "nics": []}
    stale = {"schema_version": 2, "counters": {"uptime_s": 1}, "nics": [{"name": "old"}]}
    read = host_input({"fabric_audit_gather": {"changed": False, "facts_json": text(facts)},
                       "ansible_facts": {"gpuops_fabric": stale}})  # the pre-flight's, older: the text wins
    assert (read["status"], read["facts"]) == ("audited", facts)
    assert held_facts({"fabric_audit_gather": {"reused": True}, "ansible_facts": {"gpuops_fabric": stale}}) == (
        stale, None)
    assert held_facts({}) == (None, None)
    # the window: the second text is the facts judged, the first text's counters the baseline
    later = dict(facts, counters={"uptime_s": 70})
    both = host_input({"fabric_audit_window": 60, "fabric_audit_gather": {"facts_json": text(facts)},
                       "fabric_audit_window_gather": {"facts_json": text(later)}})
    assert both["facts"] == later and both["window_counters"] == {"uptime_s": 10} and both["window_error"] is None
    # reused first reading (a mapping), second as text
    kept = host_input({"fabric_audit_window": 60, "fabric_audit_gather": {"reused": True},
                       "ansible_facts": {"gpuops_fabric": facts},
                       "fabric_audit_window_gather": {"facts_json": text(later)}})
    assert kept["facts"] == later and kept["window_counters"] == {"uptime_s": 10}
    # a second reading that replaced the first's mapping cannot be compared with it: named
    mapped = host_input({"fabric_audit_window": 60, "fabric_audit_gather": {"reused": True},
                         "ansible_facts": {"gpuops_fabric": later}, "fabric_audit_window_gather": {"changed": False}})
    assert mapped["window_counters"] is None and "returned no facts_json" in mapped["window_error"]


@pytest.mark.parametrize("value, problem", [
    ('{"schema_version": 2, "nics": [', "facts_json cannot be read: "),  # cut short
    ("", "facts_json cannot be read: "),
    ("[1, 2]", "facts_json holds an array, not a JSON object"),
    ("null", "facts_json holds null, not a JSON object"),
    ('"{}"', "facts_json holds a string, not a JSON object"),
    ("1e999", "facts_json holds a number, not a JSON object"),
    ("[" * 100000 + "]" * 100000, "facts_json "),  # nested past the parser's depth: named, no traceback
    ({"schema_version": 2}, "facts_json is a dict, not a JSON text"),
    (7, "facts_json is a int, not a JSON text"),
])
def test_a_facts_text_that_cannot_be_read_is_named(value, problem):
    entry = host_input({"fabric_audit_gather": {"changed": False, "facts_json": value}, "fabric_audit_window": 60,
                        "fabric_audit_window_gather": {"facts_json": text({"counters": {}})}})
    assert entry["status"] == "failed" and entry["facts"] is None and entry["window_counters"] is None
    assert entry["reason"].startswith("the facts topology_facts returned: " + problem), entry["reason"]
    # the second reading's text alike: the first reading stands, the window is named as not read
    first = {"schema_version": 2, "counters": {"uptime_s": 1}}
    entry = host_input({"fabric_audit_gather": {"facts_json": text(first)}, "fabric_audit_window": 60,
                        "fabric_audit_window_gather": {"facts_json": value}})
    assert entry["status"] == "audited" and entry["facts"] == first and entry["window_counters"] is None
    assert entry["window_error"].startswith("the second reading: " + problem), entry["window_error"]
