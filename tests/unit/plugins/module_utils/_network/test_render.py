"""Renderers: golden files per backend for each intent in tests/fixtures/intents, and the real consumers
(netplan generate, nmcli --offline) reading what we write."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import configparser
import os
import subprocess

import pytest
import yaml

from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.plan import plan_host
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import NETWORK_RENDERERS as RENDERERS
from conftest import REPO, require_tool

INTENTS_DIR = os.path.join(REPO, "tests", "fixtures", "intents")
GOLDEN_DIR = os.path.join(REPO, "tests", "fixtures", "golden")
INTENTS = sorted(f[:-4] for f in os.listdir(INTENTS_DIR) if f.endswith(".yml"))


@pytest.fixture(scope="module")
def facts(healthy):
    return healthy


def plan_for(name, facts):
    with open(os.path.join(INTENTS_DIR, name + ".yml")) as handle:
        hostvars = yaml.safe_load(handle)
    plan, errors, _warnings = plan_host("node", hostvars, facts)
    assert errors == [], errors
    return plan


def golden_name(path):
    return path.strip("/").replace("/", "__")


@pytest.mark.parametrize("backend", sorted(RENDERERS))
@pytest.mark.parametrize("intent", INTENTS)
def test_golden(intent, backend, facts):
    files = RENDERERS[backend](plan_for(intent, facts))
    folder = os.path.join(GOLDEN_DIR, intent, backend)
    if os.environ.get("GPUOPS_UPDATE_GOLDEN"):
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):
            os.unlink(os.path.join(folder, old))
        for path, (content, _mode) in files.items():
            with open(os.path.join(folder, golden_name(path)), "w") as handle:
                handle.write(content)
    expected = sorted(os.listdir(folder))
    assert sorted(golden_name(p) for p in files) == expected
    for path, (content, mode) in files.items():
        with open(os.path.join(folder, golden_name(path))) as handle:
            assert content == handle.read(), path
        assert mode == ("0644" if backend == "networkd" else "0600")


def test_same_plan_same_bytes(facts):
    for intent in INTENTS:
        for render in RENDERERS.values():
            assert render(plan_for(intent, facts)) == render(plan_for(intent, facts))


@pytest.mark.parametrize("intent", INTENTS)
def test_netplan_generate_accepts(intent, facts, tmp_path):
    netplan = require_tool("netplan")
    files = RENDERERS["netplan"](plan_for(intent, facts))
    for path, (content, mode) in files.items():
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        os.chmod(str(target), int(mode, 8))
    result = subprocess.run([netplan, "generate", "--root-dir", str(tmp_path)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    generated = tmp_path / "run" / "systemd" / "network"
    names = sorted(os.listdir(str(generated)))
    plan = plan_for(intent, facts)
    for iface in plan["interfaces"]:
        assert "10-netplan-%s.network" % iface["name"] in names
        if iface["kind"] in ("bond", "vlan"):
            netdev = (generated / ("10-netplan-%s.netdev" % iface["name"])).read_text()
            if iface["kind"] == "bond":
                assert "Mode=%s" % iface["mode"] in netdev
            if iface.get("mtu"):
                assert "MTUBytes=%d" % iface["mtu"] in netdev


def parse_ini(text):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read_string(text)
    return dict((s, dict(parser.items(s))) for s in parser.sections())


@pytest.mark.parametrize("intent", INTENTS)
def test_nmcli_offline_accepts(intent, facts):
    """NetworkManager 1.42 parses each keyfile and writes it back with the same settings."""
    nmcli = require_tool("nmcli")
    for path, (content, _mode) in RENDERERS["networkmanager"](plan_for(intent, facts)).items():
        result = subprocess.run([nmcli, "--offline", "connection", "modify", "connection.autoconnect", "yes"],
                                input=content, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, (path, result.stderr)
        ours = parse_ini(content)
        theirs = dict((s, v) for s, v in parse_ini(result.stdout).items() if v)  # NM adds empty [proxy], [bond-port]
        assert theirs == ours, path


def test_restore_script_copies_files_not_directories(tmp_path):
    """A rollback must never copy a directory onto / (its 0700 mode would lock sshd out of the node)."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import restore_script
    script = restore_script("netplan", "/var/lib/gpuops-fabric/rollback", ["/etc/netplan/new.yaml"],
                            ["/etc/netplan/60-gpuops-fabric.yaml"], [["netplan", "apply"]])
    assert "cp -p -- /var/lib/gpuops-fabric/rollback/files/etc/netplan/60-gpuops-fabric.yaml " \
           "/etc/netplan/60-gpuops-fabric.yaml" in script
    assert "rm -f -- /etc/netplan/new.yaml" in script
    assert " / " not in script and "/. " not in script
    assert "\ntimeout 120 netplan apply\nprintf 'gpuops-fabric: restore: %s exited %d\\n' 'netplan apply' \"$?\"" \
        in script  # bounded, and what it did is in the kernel's log
    assert script.index("systemctl stop 'gpuops-fabric-apply-*.timer'") < script.index("cp -p")
