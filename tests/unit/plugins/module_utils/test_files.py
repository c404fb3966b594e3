"""write_atomic: whatever sits at the target name, the write lands at that name and nowhere else."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._files import write_atomic


def test_a_symlink_at_the_target_is_replaced_never_written_through(tmp_path):
    outside = tmp_path / "etc"
    outside.mkdir()
    victim = outside / "passwd"
    victim.write_text("root:x:0:0\n")
    reports = tmp_path / "fabric-report"
    reports.mkdir()
    link = reports / "report.json"
    link.symlink_to(victim)
    write_atomic(str(link), "{}\n")
    assert victim.read_text() == "root:x:0:0\n"
    assert not os.path.islink(str(link)) and stat.S_ISREG(os.lstat(str(link)).st_mode)
    assert link.read_text() == "{}\n" and stat.S_IMODE(os.lstat(str(link)).st_mode) == 0o644
    assert sorted(os.listdir(str(reports))) == ["report.json"] and os.listdir(str(outside)) == ["passwd"]


def test_a_dangling_symlink_creates_nothing_where_it_points(tmp_path):
    link = tmp_path / "junit.xml"
    link.symlink_to(tmp_path / "elsewhere" / "junit.xml")
    write_atomic(str(link), "<testsuites/>\n")
    assert not (tmp_path / "elsewhere").exists() and not os.path.islink(str(link))
    assert link.read_text() == "<testsuites/>\n"


def test_a_directory_at_the_target_is_refused_leaving_nothing_behind(tmp_path):
    (tmp_path / "metrics.prom").mkdir()
    with pytest.raises(OSError):
        write_atomic(str(tmp_path / "metrics.prom"), "x 1\n")
    assert os.listdir(str(tmp_path)) == ["metrics.prom"] and os.listdir(str(tmp_path / "metrics.prom")) == []
