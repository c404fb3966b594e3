"""The catalog holds every family under rules/, registered in the order catalog.FAMILIES gives: each rule id's
family prefix follows that order, and no rules file is left out of it."""

import glob
import os

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import catalog


def test_every_rules_file_is_a_family():
    """A family is a file under rules/, or a folder whose __init__.py imports its files in order (stab/)."""
    folder = os.path.dirname(catalog.FAMILIES[0].__file__)
    files = set(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(folder, "*.py")))
    files |= set(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(folder, "*", "__init__.py")))
    assert files - {"__init__", "common"} == set(f.__name__.rsplit(".", 1)[1] for f in catalog.FAMILIES)
    for package in glob.glob(os.path.join(folder, "*", "__init__.py")):
        with open(package) as handle:
            text = handle.read()
        parts = set(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(os.path.dirname(package), "*.py")))
        for part in parts - {"__init__"}:
            assert " %s" % part in text, (package, part)  # each file of the family is imported, so registered


def test_catalog_order_follows_the_families():
    order = [f.__name__.rsplit(".", 1)[1].upper() for f in catalog.FAMILIES]
    prefixes = [rule_id.split("-")[0] for rule_id in catalog.CATALOG]
    assert sorted(set(prefixes)) == sorted(order)
    seen = []
    for prefix in prefixes:
        if not seen or seen[-1] != prefix:
            seen.append(prefix)
    assert seen == order  # each family's rules together, families in FAMILIES' order
