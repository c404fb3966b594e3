"""The topology_facts action plugin loads light: Ansible imports an action plugin once per run, in its main process
(the strategy loads the class to see whether it bypasses the host loop), and every worker it forks for a host
inherits what that import loaded; what the plugin imports inside run() is imported again in each worker, unless the
main process had it already. The facts' readers (_topology.facts and all below it, ~40 ms of compiling: Ansible's
collection loader compiles collection code from source, bytecode or not) are not imported at load, and the declared
variables (~15 ms) only in run() for a host that has a fabric_facts_* variable to check. A fresh interpreter, as the
main process's first import of the plugin is."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import subprocess
import sys

from conftest import COLLECTIONS_ROOT

PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpuops.fabric.plugins.action import topology_facts
loaded = lambda name: "ansible_collections.gpuops.fabric.plugins." + name in sys.modules
at_load = {"readers": loaded("module_utils._topology.facts"), "declared": loaded("plugin_utils._intent.declared")}
from ansible_collections.gpuops.fabric.plugins.action.topology_facts import reusable
facts = {"gather_subset": ["numa", "nic"], "source": "sysfs", "root": "/"}
answers = [reusable(facts, {"gather_subset": ["nic"]}), reusable(facts, {"gather_subset": ["pci"]})]
print(json.dumps({"at_load": at_load, "answers": answers, "after": loaded("module_utils._topology.facts")}))
"""


def test_the_action_loads_without_the_readers_or_the_declarations():
    done = subprocess.run([sys.executable, "-c", PROBE, COLLECTIONS_ROOT], capture_output=True, text=True,
                          timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert seen == {"at_load": {"readers": False, "declared": False}, "answers": [True, False], "after": False}, seen
