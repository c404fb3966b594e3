# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The node-side rollback: what puts the previous files back when the controller cannot reach the node again."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._names import shell_word

# ---- the controller's own path, and rollback -----------------------------------------------------------
ROLLBACK_DIR = "/var/lib/gpuops-fabric/rollback"


ROLLBACK_UNIT = "gpuops-fabric-rollback"


def connection_interface(ssh_connection, read_file=None):
    """The interface holding the local end of this SSH connection ($SSH_CONNECTION), or None."""
    if not ssh_connection:
        return None
    fields = ssh_connection.split()
    if len(fields) != 4:
        return None
    local = fields[2]
    import ipaddress
    try:
        wanted = ipaddress.ip_address(local)
    except ValueError:
        return None
    read_file = read_file or _read_text
    if wanted.version == 6:
        for line in (read_file("/proc/net/if_inet6") or "").splitlines():
            parts = line.split()
            if len(parts) == 6 and ipaddress.IPv6Address(int(parts[0], 16)) == wanted:
                return parts[5]
        return None
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import (
        parse_proc_route, route_for as _route_for,
    )
    iface, _prefix = _route_for(str(wanted), parse_proc_route(read_file("/proc/net/route")))
    return iface


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def shell_command(argv):
    """An argument list as one /bin/sh command line, every word quoted (shlex.quote)."""
    return " ".join(shell_word(part) for part in argv)


def restore_script(backend, backup_dir, created, saved, commands):
    """A shell script that puts the backed-up files back, removes the ones the change created, and re-applies.

    Files are copied back one by one: copying the backup directory itself onto / would also copy that
    directory's own mode (0700) onto /, and lock every unprivileged daemon (sshd's) out of the system.
    """
    lines = ["#!/bin/sh", "# Written by gpuops.fabric: undoes a network change the controller did not confirm.",
             "set -u",
             "echo 'gpuops-fabric: network change not confirmed, restoring the previous files' >/dev/kmsg || true"]
    for path in created:
        lines.append("rm -f -- %s" % shell_word(path))
    for path in saved:
        lines.append("cp -p -- %s %s" % (shell_word("%s/files%s" % (backup_dir, path)), shell_word(path)))
    for command in commands:
        lines.append(shell_command(command) + " || true")
    lines.append("date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ > %s" % shell_word(backup_dir + "/rolled-back"))
    lines.append("echo 'gpuops-fabric: previous network configuration restored' >/dev/kmsg || true")
    return "\n".join(lines) + "\n"
