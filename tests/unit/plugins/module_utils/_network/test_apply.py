"""The network files are written under fabric_network_root and nowhere else: a root whose etc (or etc/netplan, or a
file's own folder) is a symbolic link out of it -- an image root, a captured tree -- is refused before anything is
written, in check mode too, naming the path and where it leads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._files import outside_root, write_atomic
from ansible_collections.gpuops.fabric.plugins.module_utils._network.apply import (
    ApplyError, apply_changes, plan_changes,
)

FILE = "/etc/netplan/60-gpuops-fabric.yaml"
WANTED = {FILE: {"content": "network:\n  version: 2\n", "mode": "0600"}}


def tree(tmp_path, link_at):
    """A root, a folder outside it, and a symbolic link at ``link_at`` (a path below the root) pointing outside."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (outside / "netplan").mkdir(parents=True)
    (outside / "netplan" / "01-site.yaml").write_text("network: {version: 2}\n")
    (outside / "60-gpuops-fabric.yaml").write_text("keep\n")
    link = root / link_at
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(str(outside if link_at == "etc" else outside / "netplan"), str(link))
    return str(root), outside


def snapshot(folder):
    return sorted((os.path.relpath(os.path.join(d, f), str(folder)), open(os.path.join(d, f)).read())
                  for d, _s, fs in os.walk(str(folder)) for f in fs)


@pytest.mark.parametrize("link_at", ["etc", "etc/netplan"])
@pytest.mark.parametrize("replace", [False, True])
def test_a_link_out_of_the_root_is_refused_before_anything_is_written(tmp_path, link_at, replace):
    root, outside = tree(tmp_path, link_at)
    before = snapshot(outside)
    with pytest.raises(ApplyError) as caught:
        plan_changes(root, "netplan", WANTED, replace=replace)
    assert "leads out of the root %s" % root in str(caught.value) and str(outside) in str(caught.value)
    assert snapshot(outside) == before


def test_apply_refuses_a_link_swapped_in_after_the_plan(tmp_path):
    root = tmp_path / "root"
    (root / "etc" / "netplan").mkdir(parents=True)
    changes, _diffs = plan_changes(str(root), "netplan", WANTED, replace=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "etc" / "netplan").rmdir()
    os.symlink(str(outside), str(root / "etc" / "netplan"))
    with pytest.raises(ApplyError):
        apply_changes(str(root), changes)
    assert os.listdir(str(outside)) == []


def test_links_inside_the_root_and_the_root_itself_are_fine(tmp_path):
    root = tmp_path / "root"
    (root / "real-etc" / "netplan").mkdir(parents=True)
    os.symlink("real-etc", str(root / "etc"))  # relative, stays inside
    changes, _diffs = plan_changes(str(root), "netplan", WANTED, replace=False)
    apply_changes(str(root), changes)
    assert (root / "real-etc" / "netplan" / "60-gpuops-fabric.yaml").read_text() == "network:\n  version: 2\n"
    assert outside_root("/", "/etc/netplan/x.yaml") is None


def test_write_atomic_with_a_root_refuses_before_making_folders(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(str(outside), str(root / "etc"))
    with pytest.raises(ValueError):
        write_atomic(str(root / "etc" / "new" / "file"), "x", root=str(root))
    assert os.listdir(str(outside)) == []


def test_a_huge_file_of_ours_is_read_bounded_and_rewritten(tmp_path):
    """A 64 MiB file (sparse: no newline, all NUL) where our netplan file goes: read as far as the bound, found to
    differ, and planned to be rewritten."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._network import apply
    root = tmp_path / "root"
    (root / "etc" / "netplan").mkdir(parents=True)
    with open(str(root / "etc" / "netplan" / "60-gpuops-fabric.yaml"), "wb") as handle:
        handle.truncate(64 * 1024 * 1024)
    content, _mode = apply._read(str(root / "etc" / "netplan" / "60-gpuops-fabric.yaml"))
    assert len(content) == apply.MAX_FILE_BYTES
    changes, _diffs = plan_changes(str(root), "netplan", WANTED, replace=False)
    assert [(a, p) for a, p, _n in changes] == [("write", FILE)]
