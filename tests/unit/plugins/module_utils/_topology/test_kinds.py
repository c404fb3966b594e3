"""The PCI device kinds are the facts' contract (module_utils/_topology/model.py): each consumer names the groups
there and never spells a kind itself (issue 31: they were re-spelled in four places, one with an "apu" no fact
carries). Every capture's kinds are held to the contract in tests/unit/plugins/plugin_utils/_audit/
test_link_verdict_agrees.py, where the captures are read anyway."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology import model
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import LOWERS_GENERATION_AT_IDLE
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.topology_svg import KIND_WORDS


def test_the_groups_partition_the_kinds():
    groups = (model.ACCELERATOR_KINDS, model.NETWORK_KINDS, (model.KIND_NVME,), model.BRIDGE_KINDS,
              (model.KIND_OTHER,))
    flat = [k for group in groups for k in group]
    assert sorted(flat) == sorted(model.KINDS) and len(set(flat)) == len(flat)
    assert set(model.INTERNAL_KINDS) < set(model.BRIDGE_KINDS)
    assert sorted(v for k, v in vars(model).items() if k.startswith("KIND_")) == sorted(model.KINDS)


def test_consumers_use_the_contract():
    assert LOWERS_GENERATION_AT_IDLE == model.ACCELERATOR_KINDS
    assert sorted(KIND_WORDS) == sorted(model.KINDS)  # a word for each kind, and none for a kind no fact carries


# a kind compared as a literal: kind == "gpu", kind in ("nic", "rdma"), d["kind"] not in ("root_port", ...)
SPELLED = re.compile(r"kind[\"')\]]*\s*(?:==|!=|\bin\b|\bnot in\b)\s*[(\[]?\s*[\"'](%s)[\"']"
                     % "|".join(re.escape(k) for k in model.KINDS))
WORDS = re.compile(r"[\"'](%s|apu)[\"']" % "|".join(re.escape(k) for k in model.KINDS if "_" in k or k == "nvme"))
HOME = "plugins/module_utils/_topology/model.py"


def sources(skip):
    """(path from the repository, text) of each Python file under plugins/, but those in ``skip``: the homes of a
    contract, which spell what they define."""
    for top, _dirs, files in sorted(os.walk(os.path.join(REPO, "plugins"))):
        for name in sorted(files):
            path = os.path.relpath(os.path.join(top, name), REPO)
            if name.endswith(".py") and path not in skip:
                with open(os.path.join(top, name), encoding="utf-8") as handle:
                    yield path, handle.read()


def spelled(text):
    return [line.strip() for line in text.splitlines() if SPELLED.search(line) or WORDS.search(line)]


def test_the_scan_finds_a_kind_spelled_out():
    assert spelled('        if dev["kind"] not in ("gpu", "accelerator", "nic", "rdma"):\n')
    assert spelled('ENDPOINTS = ("gpu", "apu", "accelerator", "nic", "rdma", "nvme")\n')
    assert spelled('    if d.kind == "switch_upstream":\n')
    assert not spelled('        if dev["kind"] not in ACCELERATOR_KINDS + NETWORK_KINDS:\n')
    assert not spelled('    for rdma in facts.get("rdma") or []:\n')  # the facts' key, not a kind


def test_no_kind_is_spelled_outside_the_contract():
    found = []
    for path, text in sources(skip=(HOME,)):
        found += ["%s: %s" % (path, line) for line in spelled(text)]
    assert not found, "name the kinds of module_utils/_topology/model.py:\n" + "\n".join(found)


# a group restated from its members: (KIND_GPU, KIND_ACCELERATOR) where ACCELERATOR_KINDS is meant
GROUPS = dict((name, frozenset(value)) for name, value in vars(model).items()
              if name.endswith("_KINDS") and isinstance(value, tuple) and len(value) > 1)
MEMBERS = re.compile(r"[(\[]\s*(KIND_[A-Z_]+(?:\s*,\s*KIND_[A-Z_]+)+)\s*,?\s*[)\]]")


def restated(text):
    found = []
    for match in MEMBERS.finditer(text):
        kinds = frozenset(getattr(model, n.strip(), None) for n in match.group(1).split(","))
        found += ["%s is %s" % (" ".join(match.group(0).split()), g) for g, v in sorted(GROUPS.items()) if v == kinds]
    return found


def test_the_scan_finds_a_group_restated():
    assert restated("gpus = [d for d in devices if d.kind in (KIND_GPU, KIND_ACCELERATOR)]") == [
        "(KIND_GPU, KIND_ACCELERATOR) is ACCELERATOR_KINDS"]
    assert restated("    if d.kind in (\n        KIND_RDMA,\n        KIND_NIC,\n    ):") == [
        "( KIND_RDMA, KIND_NIC, ) is NETWORK_KINDS"]
    assert restated("if d.kind in (KIND_GPU, KIND_NIC):") == []  # no group: a choice of its own
    assert restated("if d.kind in ACCELERATOR_KINDS + NETWORK_KINDS:") == []


def test_no_group_is_restated_outside_the_contract():
    found = []
    for path, text in sources(skip=(HOME,)):
        found += ["%s: %s" % (path, item) for item in restated(text)]
    assert not found, "name the group of module_utils/_topology/model.py:\n" + "\n".join(found)


# The interfaces' kinds (facts' nics[].kind) and the network plan's (ethernet, bond, vlan) are contracts too: the
# facts' kinds are named from model.py, the plan's from module_utils/_network/common.py, by producers and consumers
# alike. A backend's own words (netplan's "bonds:", networkd's Kind=bond, NetworkManager's type=bond) are its file
# format's, not a kind: they are spelled where that format is read or written, never compared with a kind.
NETDEV_SPELLED = re.compile(r"kind[\"')\]]*\s*(?:==|!=|\bin\b|\bnot in\b|=|:)\s*[(\[]?\s*[\"'](%s)[\"']"
                            % "|".join(re.escape(k) for k in model.NETDEV_KINDS + ("ethernet",)))
NETDEV_WORDS = re.compile(r"[\"'](physical|ipoib|loopback)[\"']")
NETDEV_HOMES = (HOME, "plugins/module_utils/_network/common.py")


def netdev_spelled(text):
    return [line.strip() for line in text.splitlines() if NETDEV_SPELLED.search(line) or NETDEV_WORDS.search(line)]


def test_the_scan_finds_an_interface_kind_spelled_out():
    assert netdev_spelled('        if nic["kind"] not in ("physical", "bond", "vlan", "ipoib"):\n')
    assert netdev_spelled('    counted = set(_interfaces(win, ("physical", "ipoib")))\n')
    assert netdev_spelled('        if iface["kind"] == "vlan" and iface["mtu"]:\n')
    assert netdev_spelled('                dev.kind = "bond"\n')
    assert netdev_spelled('        interfaces[d] = {"name": d, "kind": "ethernet", "bond": None}\n')
    assert not netdev_spelled('        if iface["kind"] == IFACE_VLAN and iface["mtu"]:\n')
    assert not netdev_spelled('            if values.get(("connection", "slave-type")) == "bond":\n')  # NM's word
    assert not netdev_spelled('        net["vlan"] = iface["id"]\n')  # the intent's key


def test_the_interface_kinds_are_grouped_once():
    groups = (model.PORT_NETDEVS, (model.NETDEV_BOND, model.NETDEV_VLAN), model.SOFTWARE_NETDEVS,
              (model.NETDEV_LOOPBACK,))
    flat = [k for group in groups for k in group]
    assert sorted(flat) == sorted(model.NETDEV_KINDS) and len(set(flat)) == len(flat)
    assert sorted(v for k, v in vars(model).items() if k.startswith("NETDEV_") and isinstance(v, str)) == sorted(
        model.NETDEV_KINDS)
    assert model.NetDev(name="eth0").kind in model.NETDEV_KINDS


def test_no_interface_kind_is_spelled_outside_the_contracts():
    found = []
    for path, text in sources(skip=NETDEV_HOMES):
        found += ["%s: %s" % (path, line) for line in netdev_spelled(text)]
    assert not found, "name the kinds of model.py (NETDEV_*) or _network/common.py (IFACE_*):\n" + "\n".join(found)
