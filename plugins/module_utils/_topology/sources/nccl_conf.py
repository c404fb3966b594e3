# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The node's /etc/nccl.conf, read as a facts source (bounded, regular files only) and parsed as NCCL reads it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def parse_conf(text):
    """{name: value} of an nccl.conf as NCCL reads it (KEY=VALUE lines; '#' comments)."""
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        values[name.strip()] = value.strip()
    return values


NCCL_CONF = "/etc/nccl.conf"
NCCL_CONF_MAX_BYTES = 1 << 20


def read_nccl_conf(root, warn=None):
    """The node's /etc/nccl.conf as NCCL reads it: {"path", "present", "values"}.

    Read like the sysfs files (regular files only, non-blocking, at most 1 MiB); anything odd is absent
    plus a note to ``warn``.
    """

    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.files import SysfsFiles
    reader = SysfsFiles(root or "/")
    data = reader.read_bytes(reader.path(NCCL_CONF), limit=NCCL_CONF_MAX_BYTES)
    text = None
    if data is not None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            reader.warn("%s: not UTF-8 text, ignored" % reader.path(NCCL_CONF))
    if warn is not None:
        for message in reader.topo.warnings:
            warn(message)
    if text is None:
        return {"path": NCCL_CONF, "present": False, "values": {}}
    return {"path": NCCL_CONF, "present": True, "values": parse_conf(text)}
