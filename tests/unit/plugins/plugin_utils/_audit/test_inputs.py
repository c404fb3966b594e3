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
