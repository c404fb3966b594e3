"""The role-variable rule that .ansible-lint states once (instead of a noqa for var-naming[no-role-prefix] per line):
a role's inputs (defaults) are named fabric_*, in the shared vocabulary of the inventory; what a role keeps for itself
(register, set_fact) carries the role's name as prefix, as ansible-lint wants, or is a fabric_ result other plays
read (fabric_probe_results)."""

import glob
import os

import yaml

from conftest import REPO


def tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            yield from tasks(node.get(key))


def test_role_variables_carry_the_prefix():
    roles = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "roles", "*")))
    assert {"network", "nccl", "probes"} <= set(roles)
    wrong = []
    for role in roles:
        for path in glob.glob(os.path.join(REPO, "roles", role, "defaults", "*.yml")):
            for name in yaml.safe_load(open(path)) or {}:
                if not name.startswith("fabric_"):
                    wrong.append("%s: %s" % (os.path.relpath(path, REPO), name))
        for path in glob.glob(os.path.join(REPO, "roles", role, "tasks", "*.yml")):
            for task in tasks(yaml.safe_load(open(path))):
                names = list((task.get("ansible.builtin.set_fact") or task.get("set_fact") or {}).keys())
                if task.get("register"):
                    names.append(task["register"])
                for name in names:
                    if name == "cacheable":
                        continue
                    if not (name.startswith("fabric_") or name.startswith(role + "_")):
                        wrong.append("%s: %s" % (os.path.relpath(path, REPO), name))
    assert not wrong, wrong
