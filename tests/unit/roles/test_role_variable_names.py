"""The role-variable rule that .ansible-lint states once (instead of a noqa for var-naming[no-role-prefix] per line):
a role's inputs (defaults) are named fabric_*, in the shared vocabulary of the inventory; what a role keeps for itself
(register, set_fact) carries the role's name as prefix, as ansible-lint wants, or is a fabric_ result other plays
read (fabric_probe_results)."""

import glob
import os
import re

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
        for path in glob.glob(os.path.join(REPO, "roles", role, "vars", "*.yml")):
            for name in yaml.safe_load(open(path)) or {}:  # what the role derives for itself
                if not name.startswith(role + "_"):
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


def readme_text(spec):
    """The description a role's README.md opens with: its argument_specs' short description and description, the
    markup of ansible-doc (M(), C(), O() ...) as Markdown code."""
    description = spec["description"] if isinstance(spec["description"], list) else [spec["description"]]
    text = "%s.\n\n%s" % (spec["short_description"].rstrip("."), "\n\n".join(d.strip() for d in description))
    return re.sub(r"\b[MCIROVL]\(([^()]*)\)", r"`\1`", text)


def test_each_role_readme_says_what_its_argument_specs_say():
    """galaxy-importer needs a README per role; it repeats the role's description, and must not drift from it."""
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        spec = yaml.safe_load(open(path))["argument_specs"]["main"]
        with open(os.path.join(REPO, "roles", role, "README.md")) as handle:
            readme = handle.read()
        assert readme.startswith("# gpuops.fabric.%s\n\n" % role), role
        assert readme_text(spec) in readme, "roles/%s/README.md: its description differs from argument_specs" % role
        assert "ansible-doc -t role gpuops.fabric.%s" % role in readme
