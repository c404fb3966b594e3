"""Each default is stated once, in the declarations (plugins/plugin_utils/_intent/declared.py), and every copy that
has to exist agrees with it (issue 31: min_fraction 0.8 was written in seven places). A module that runs on the node
cannot import controller code, so its argument spec and its documentation repeat the default: held equal here. An
action plugin takes its defaults from the declarations and its documentation stub repeats them: held equal too."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib
import os
import re

import pytest
import yaml

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import INPUTS

# The variable prefix of each module's options (fabric_probe_port is throughput_probe's and probe_plan's port).
PREFIX = {"host_tuning": "fabric_tuning_", "throughput_probe": "fabric_probe_", "probe_plan": "fabric_probe_",
          "network_config": "fabric_network_", "network_intent": "fabric_network_", "nccl_env": "fabric_nccl_",
          "slurm_drain": "fabric_slurm_", "bandwidth_plan": "fabric_plan_", "topology_facts": "fabric_facts_",
          "validate": "fabric_"}
# An option whose name matches a variable but means something else, or whose variable's unset is the option's default
DIFFERENT = {
    ("slurm_drain", "drain"): "the module's drain is the set of nodes to drain; fabric_slurm_drain says whether to",
    ("bandwidth_plan", "nodes"): "fabric_plan_nodes unset leaves the module's default (16 nodes) to apply",
}


def documentation(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(r"^DOCUMENTATION\s*=\s*r?(\"\"\"|''')(.*?)\1", text, re.S | re.M)
    assert found, path
    return yaml.safe_load(found.group(2))


def module_options():
    for path in sorted(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))):
        name = os.path.basename(path)[:-3]
        for option, spec in sorted((documentation(path).get("options") or {}).items()):
            yield name, option, spec


OPTIONS = list(module_options())


def test_the_walk_finds_the_options():
    assert ("probe_plan", "min_fraction") in [(m, o) for m, o, _s in OPTIONS]
    assert len([1 for m, o, _s in OPTIONS if INPUTS.get(PREFIX.get(m, "fabric_") + o)]) >= 30


@pytest.mark.parametrize("module, option, spec", [o for o in OPTIONS if INPUTS.get(PREFIX.get(o[0], "fabric_") + o[1])],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_a_documented_default_is_the_declared_one(module, option, spec):
    var = INPUTS[PREFIX.get(module, "fabric_") + option]
    if (module, option) in DIFFERENT or "default" not in spec:
        return
    assert spec["default"] == var.default, "%s %s: documented %r, %s declares %r" % (
        module, option, spec["default"], var.name, var.default)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(REPO, "plugins", "action", "*.py"))),
                         ids=os.path.basename)
def test_an_action_is_documented_as_it_runs(path):
    name = os.path.basename(path)[:-3]
    action = importlib.import_module("ansible_collections.gpuops.fabric.plugins.action." + name)
    documented = documentation(os.path.join(REPO, "plugins", "modules", name + ".py")).get("options") or {}
    if hasattr(action, "SETTINGS"):  # an action that fills a node module's options from declared variables
        for option, variable in action.SETTINGS:
            assert option in documented and variable in INPUTS, (name, option, variable)
            assert documented[option].get("default") == INPUTS[variable].default, (name, option)
        return
    spec = getattr(action, "ARGUMENT_SPEC", None) or getattr(action.ActionModule, "ARGUMENT_SPEC", None)
    assert spec, name
    assert sorted(spec) == sorted(documented), name
    for option, argument in spec.items():
        assert argument.get("type", "str") == documented[option].get("type", "str"), (name, option)
        assert argument.get("default") == documented[option].get("default"), (name, option)
