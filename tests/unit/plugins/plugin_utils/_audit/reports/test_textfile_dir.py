"""fabric_prometheus_textfile_dir: a folder that is a symlink, or reached through one, is refused by name."""

import os

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.prometheus_report import (
    textfile_dir_problem,
)


def test_a_plain_folder_is_fine(tmp_path):
    folder = tmp_path / "textfile"
    folder.mkdir()
    assert textfile_dir_problem(str(folder)) is None
    assert textfile_dir_problem(str(folder) + "/") is None
    # a link named like the file inside it is replaced by write_atomic, not written through: no problem here
    (folder / "gpuops_fabric.prom").symlink_to("/etc/passwd")
    assert textfile_dir_problem(str(folder)) is None


def test_a_folder_that_is_a_symlink_to_etc_is_refused(tmp_path):
    link = tmp_path / "textfile"
    link.symlink_to("/etc")
    problem = textfile_dir_problem(str(link))
    assert problem == "%r is a symbolic link (to '/etc'): name the folder itself, not a link to it" % str(link)


def test_a_folder_reached_through_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    (real / "textfile").mkdir(parents=True)
    (tmp_path / "via").symlink_to(real)
    path = os.path.join(str(tmp_path / "via"), "textfile")
    problem = textfile_dir_problem(path)
    assert problem == "%r resolves to %r through a symbolic link on its way: name the folder by its own path" % (
        path, str(real / "textfile"))


def test_what_is_no_path_is_named():
    assert textfile_dir_problem("") == "'' is not a path"
    assert textfile_dir_problem("/a\0b") == "'/a\\x00b' is not a path"
    assert textfile_dir_problem(None) == "None is not a path"
