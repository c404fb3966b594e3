"""Helpers for tests that change a copy of a captured sysfs/procfs tree (tests/fixtures/realdata, extracted into
.cache/fixtures by scripts/fixtures.py): copy one, find a device's or interface's folder, write or replace a file."""

import os
import shutil


def copy_root(roots, name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(os.path.realpath(roots[name]), str(dest), symlinks=True)
    return str(dest)


def find_dir(root, name):
    for current, _dirs, _files in os.walk(os.path.join(root, "sys", "devices")):
        if os.path.basename(current) == name:
            return current
    raise AssertionError("%s not found" % name)


def netdev_dir(root, name):
    return os.path.realpath(os.path.join(root, "sys", "class", "net", name))


def write(path, data):
    with open(path, "wb") as handle:
        handle.write(data if isinstance(data, bytes) else data.encode())


def replace_with_fifo(path):
    os.unlink(path)
    os.mkfifo(path)
