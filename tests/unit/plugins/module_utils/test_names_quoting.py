"""The quoting itself, not only the validators in front of it: names with shell, YAML and key-file metacharacters
go through each format's quoting, and the consumers (/bin/sh, PyYAML, NetworkManager, fnmatch(3)) read back
exactly the name and nothing more. The validators would refuse every one of these names long before; these tests
bypass them on purpose, to show the second wall holds alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ctypes
import os
import subprocess

import pytest
import yaml

from ansible_collections.gpuops.fabric.plugins.module_utils import _names
from ansible_collections.gpuops.fabric.plugins.module_utils._network.rollback import restore_script, shell_command
from ansible_collections.gpuops.fabric.plugins.module_utils._network.netplan import render_netplan
from ansible_collections.gpuops.fabric.plugins.module_utils._network.networkd import render_networkd
from ansible_collections.gpuops.fabric.plugins.module_utils._network.networkmanager import render_networkmanager
from conftest import require_tool

# Shell: quote, command separators, substitution, globs, redirection, newline, backslash, leading dash, unicode.
HOSTILE = [
    "b';id;'", "b'", "a;touch PWNED", "$(touch PWNED)", "`touch PWNED`", "x&&touch PWNED", "x|touch PWNED",
    "e*", "[ab]?", "a>PWNED", "a<b", "line\nnext", "tab\there", "back\\slash", "-rf", "--", "", " lead", "trail ",
    "\"dq\"", "#hash", "~root", "a b", "$HOME", "${IFS}", "!bang", "{a,b}", "a%b", "ä-ü", "\u2028sep", "a\rb",
    "key: value", "- item", "null", "yes", "no", "0100", "1e3", "@at", "*alias", "&anchor", "!!python/object",
    "{flow: 1}", "[1, 2]", "?x", "a # comment", "%TAG", "'single'", "a=b", "[section]", ";semi",
]


def test_shell_command_round_trip():
    """/bin/sh hands printf exactly the words we quoted, whatever is in them."""
    words = list(HOSTILE)
    script = "printf '%s\\0' " + shell_command(words)
    out = subprocess.run(["/bin/sh", "-c", script], capture_output=True, check=True, timeout=30).stdout
    assert out.decode("utf-8").split("\0")[:-1] == words


def test_shell_word_refuses_nul():
    with pytest.raises(_names.UnsafeValue):
        _names.shell_word("bond\0")


def _shims(tmp_path, names):
    """A PATH of harmless stand-ins that log their arguments: NUL after each, a record separator after each call."""
    bindir = tmp_path / "shims"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    for name in names:
        shim = bindir / name
        shim.write_text("#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%%s\\0' \"$a\"; done >> %s\nprintf '\\036' >> %s\n"
                        % (_names.shell_word(str(log)), _names.shell_word(str(log))))
        shim.chmod(0o755)
    return bindir, log


def _calls(log):
    if not log.exists():
        return []
    return [[os.path.basename(p) if i == 0 else p for i, p in enumerate(line.split("\0")[:-1])]
            for line in log.read_text().split("\x1e") if line]


@pytest.mark.parametrize("name", ["b';id;'", "$(touch PWNED)", "`touch PWNED`", "x;touch PWNED", "a\nb"])
def test_restore_script_runs_only_what_it_should(tmp_path, name):
    """The rollback script, run by /bin/sh with shims for the backend tools, copies, removes and re-applies
    exactly the files and interfaces it names, and runs nothing a name says."""
    work = tmp_path / "node"
    (work / "etc").mkdir(parents=True)
    backup = tmp_path / "backup"
    saved = str(work / "etc" / ("60-gpuops-%s.network" % name))
    created = str(work / "etc" / ("new-%s.netdev" % name))
    (backup / "files" / saved.lstrip("/")).parent.mkdir(parents=True)
    (backup / "files" / saved.lstrip("/")).write_text("old\n")
    with open(saved, "w") as handle:
        handle.write("changed\n")
    with open(created, "w") as handle:
        handle.write("new\n")
    commands = [["networkctl", "reload"], ["networkctl", "reconfigure", name],
                ["nmcli", "connection", "up", "id", "gpuops-" + name]]
    script = tmp_path / "restore.sh"
    script.write_text(restore_script("networkd", str(backup), [created], [saved], commands)
                      .replace(">/dev/kmsg", ">/dev/null"))
    bindir, log = _shims(tmp_path, ["networkctl", "nmcli", "systemctl"])
    env = {"PATH": "%s:/usr/bin:/bin" % bindir, "HOME": str(tmp_path)}
    result = subprocess.run(["/bin/sh", str(script)], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    # the change's own apply, if still running, is stopped first; each re-apply runs under timeout
    assert _calls(log) == [["systemctl", "stop", "gpuops-fabric-apply-*.timer", "gpuops-fabric-apply-*.service"],
                           ["networkctl", "reload"], ["networkctl", "reconfigure", name],
                           ["nmcli", "connection", "up", "id", "gpuops-" + name]]
    with open(saved) as handle:
        assert handle.read() == "old\n"
    assert not os.path.exists(created)
    assert not any("PWNED" in f for f in os.listdir(str(tmp_path))), os.listdir(str(tmp_path))
    assert sorted(os.listdir(str(backup))) == ["files", "rolled-back"]


def _plan(name, network="training"):
    return {"host": "node", "backend": "auto", "roles": {network: "training"}, "addresses": {}, "index": None,
            "interfaces": [
                {"name": name + "m", "kind": "ethernet", "bond": name, "mtu": 9000, "networks": [], "addresses": [],
                 "routes": []},
                {"name": name, "kind": "bond", "members": [name + "m"], "mode": "802.3ad", "lacp_rate": "fast",
                 "xmit_hash_policy": "layer3+4", "miimon": 100, "primary": None, "mtu": 9000,
                 "networks": [network], "addresses": ["198.18.0.17/22"], "routes": []}]}


@pytest.mark.parametrize("name", [n for n in HOSTILE if n and not any(c in n for c in "\n\r\t\u2028")])
def test_netplan_yaml_reads_back_the_same_names(name):
    """PyYAML (a YAML 1.1 reader, as netplan's libyaml is) reads each interface key and value as the very string."""
    content = render_netplan(_plan(name))["/etc/netplan/60-gpuops-fabric.yaml"][0]
    data = yaml.safe_load(content)
    assert sorted(data["network"]["bonds"]) == [name]
    assert sorted(data["network"]["ethernets"]) == [name + "m"]
    assert data["network"]["bonds"][name]["interfaces"] == [name + "m"]
    assert set(data["network"]) == {"version", "ethernets", "bonds"}


@pytest.mark.parametrize("render", [render_netplan, render_networkmanager, render_networkd])
@pytest.mark.parametrize("network", ["train\ning", "x\n  dhcp4: true", "a\0b", "t\rx", "a\u2028b"])
def test_a_newline_in_a_network_name_is_refused_not_written(render, network):
    """A network name reaches comment lines in every backend's files; a line break there would start a line of
    the file's own. Refused (UnsafeValue), never written."""
    with pytest.raises(_names.UnsafeValue):
        render(_plan("bond0", network))


@pytest.mark.parametrize("name", ["bond0\0", "b\nDHCP=yes"])
def test_networkd_refuses_what_it_cannot_carry(name):
    with pytest.raises(_names.UnsafeValue):
        render_networkd(_plan(name))


def _fnmatch(pattern, name):
    libc = ctypes.CDLL(None)
    return libc.fnmatch(pattern.encode(), name.encode(), 0) == 0


@pytest.mark.parametrize("name", ["e*", "[ab]", "eth?", "a\\b", "bond0"])
def test_networkd_match_name_matches_only_itself(name):
    """[Match] Name= is a glob list read with fnmatch(3), flags 0 (systemd's strv_fnmatch): the escaped name
    matches the name and not the management NIC eno1 that 'e*' would catch."""
    files = render_networkd(_plan(name))
    content = [c for p, (c, _m) in files.items() if p.endswith("60-gpuops-%s.network" % name)][0]
    pattern = [line for line in content.splitlines() if line.startswith("Name=")][0][len("Name="):]
    assert _fnmatch(pattern, name)
    for other in ("eno1", "a", "b", "eth0", "ab", "bond1"):
        if other != name:
            assert not _fnmatch(pattern, other), (pattern, other)


@pytest.mark.parametrize("value", ["plain", "sp ace", " lead", "back\\slash", "new\nline", "tab\tx", "\tlead", "semi;colon",
                                   "cr\rx", "#hash", "a=b", "[x]"])
def test_keyfile_value_as_networkmanager_reads_it(value):
    """NetworkManager (nmcli --offline) reads our escaped connection.id and writes it back with GLib's own escaping:
    byte-identical to ours, so it read exactly the string."""
    nmcli = require_tool("nmcli")
    content = "[connection]\nid=%s\nuuid=5b1e4c1e-7a43-4d57-9f0b-6770756f7073\ntype=ethernet\n" \
              "interface-name=eth9\n" % _names.keyfile_value(value)
    result = subprocess.run([nmcli, "--offline", "connection", "modify", "connection.autoconnect", "yes"],
                            input=content, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    ids = [line[len("id="):] for line in result.stdout.splitlines() if line.startswith("id=")]
    assert ids == [_names.keyfile_value(value)]


@pytest.mark.parametrize("value", HOSTILE + ["\0", "a\0b"])
def test_yaml_scalar_round_trip(value):
    text = "key: %s\n" % _names.yaml_scalar(value)
    assert yaml.safe_load(text) == {"key": value}


def test_nccl_conf_refuses_a_newline_in_a_value():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._nccl.settings import render_conf
    with pytest.raises(_names.UnsafeValue):
        render_conf([("NCCL_SOCKET_IFNAME", "=bond0\nNCCL_DEBUG=TRACE")], [])
    with pytest.raises(_names.UnsafeValue):
        render_conf([("NCCL_SOCKET_IFNAME", "=bond0\0")], [])
