# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The node-side rollback: what puts the previous files back when the controller cannot reach the node again.

The functions that take ``module`` (an AnsibleModule) run commands through it and fail the task through it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import time

from ansible_collections.gpuops.fabric.plugins.module_utils._names import shell_word
from ansible_collections.gpuops.fabric.plugins.module_utils._network.backends import backend_module

# ---- the controller's own path, and rollback -----------------------------------------------------------
ROLLBACK_DIR = "/var/lib/gpuops-fabric/rollback"
ROLLBACK_UNIT = "gpuops-fabric-rollback"
APPLY_UNIT = "gpuops-fabric-apply"  # each deferred apply is APPLY_UNIT-<milliseconds>
RESTORE_APPLY_TIMEOUT = 120  # seconds each of the restore's re-apply commands may take


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
             "echo 'gpuops-fabric: network change not confirmed, restoring the previous files' >/dev/kmsg || true",
             # On a slow node the change's own apply may still be running (it may take up to its apply timeout, the
             # rollback timer may be shorter): stop it, and everything it started, before the files go back, so the
             # two applies never run at once and the change's never finishes after the restore.
             "systemctl stop %s %s >/dev/null 2>&1 || true" % (
                 shell_word(APPLY_UNIT + "-*.timer"), shell_word(APPLY_UNIT + "-*.service"))]
    for path in created:
        lines.append("rm -f -- %s" % shell_word(path))
    for path in saved:
        lines.append("cp -p -- %s %s" % (shell_word("%s/files%s" % (backup_dir, path)), shell_word(path)))
    for command in commands:  # bounded: a hung apply must not keep the marker (and the node's owner) waiting
        lines.append("timeout %d %s" % (RESTORE_APPLY_TIMEOUT, shell_command(command)))
        lines.append("printf 'gpuops-fabric: restore: %%s exited %%d\\n' %s \"$?\" >/dev/kmsg || true"
                     % shell_word(" ".join(command)))
    lines.append("date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ > %s" % shell_word(backup_dir + "/rolled-back"))
    lines.append("echo 'gpuops-fabric: previous network configuration restored' >/dev/kmsg || true")
    return "\n".join(lines) + "\n"


# ---- arming, deferring the apply, confirming ------------------------------------------------------------
NM_BUS = ["org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager"]
# Roll back also deletes connections added after the checkpoint and disconnects devices that appeared after it.
NM_CHECKPOINT_FLAGS = 0x02 | 0x04
# NetworkManager's checkpoint rolls the running state back first; the files are put back this much later.
NM_FILES_GRACE = 15


def nm_checkpoint(module, timeout):
    """Ask NetworkManager for a checkpoint of all devices that rolls back by itself after ``timeout`` s."""
    busctl = module.get_bin_path("busctl")
    if not busctl:
        module.fail_json(msg="no busctl on this node: cannot create a NetworkManager checkpoint; set "
                         "rollback_timeout: 0 to apply without one")
    rc, out, err = module.run_command([busctl, "call"] + NM_BUS + ["CheckpointCreate", "aouu", "0", str(timeout),
                                                                   str(NM_CHECKPOINT_FLAGS)])
    if rc != 0 or len(out.split()) < 2:
        module.fail_json(msg="NetworkManager refused a checkpoint: %s (is NetworkManager running? does another "
                         "tool hold a checkpoint?)" % (err or out).strip())
    return out.split()[1].strip('"')


def nm_checkpoint_destroy(module, path):
    """Destroy a checkpoint (the change is confirmed). False when NetworkManager no longer has it."""
    busctl = module.get_bin_path("busctl")
    if not busctl:
        return False
    rc, _out, _err = module.run_command([busctl, "call"] + NM_BUS + ["CheckpointDestroy", "o", path])
    return rc == 0


def armed_checkpoint():
    """The NetworkManager checkpoint the last armed change recorded in its manifest, or None."""
    try:
        with open(os.path.join(ROLLBACK_DIR, "manifest.json")) as handle:
            return json.load(handle).get("checkpoint")
    except (IOError, OSError, ValueError, AttributeError):
        return None


def previous_checkpoint(module):
    """A checkpoint an earlier, unconfirmed run of ours left behind: destroy it before taking a new one."""
    path = armed_checkpoint()
    if path:
        nm_checkpoint_destroy(module, path)


def arm_rollback(module, root, backend, changes, timeout):
    """Back up what the change touches and arm a node-side timer that restores it.

    With NetworkManager as backend, NetworkManager's own checkpoint-with-rollback restores the running state
    at ``timeout``; the timer then puts the files back (byte for byte) a little later.
    """
    backup = ROLLBACK_DIR
    checkpoint = None
    if backend == "networkmanager":
        previous_checkpoint(module)
        checkpoint = nm_checkpoint(module, timeout)
        timeout += NM_FILES_GRACE
    if os.path.isdir(backup):
        shutil.rmtree(backup)
    os.makedirs(os.path.join(backup, "files"), 0o700)
    created, saved = [], []
    for _action, path, _new in changes:
        if os.path.exists(path):
            target = os.path.join(backup, "files", path.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(path, target)
            saved.append(path)
        else:
            created.append(path)
    script = os.path.join(backup, "restore.sh")
    with open(script, "w") as handle:
        handle.write(restore_script(backend, backup, created, saved, backend_module(backend).apply_commands(changes)))
    os.chmod(script, 0o700)
    with open(os.path.join(backup, "manifest.json"), "w") as handle:
        json.dump({"backend": backend, "created": created, "armed_at": time.time(), "timeout": timeout,
                   "checkpoint": checkpoint}, handle)
    systemd_run = module.get_bin_path("systemd-run")
    if systemd_run:
        module.run_command([module.get_bin_path("systemctl") or "systemctl", "stop", ROLLBACK_UNIT + ".timer"])
        module.run_command([module.get_bin_path("systemctl") or "systemctl", "reset-failed", ROLLBACK_UNIT + ".service"])
        rc, out, err = module.run_command([systemd_run, "--collect", "--unit=%s" % ROLLBACK_UNIT, "--on-active=%ds" % timeout,
                                           "--timer-property=AccuracySec=1s", "/bin/sh", script])
        if rc != 0:
            if checkpoint:
                nm_checkpoint_destroy(module, checkpoint)
            module.fail_json(msg="could not arm the rollback timer: %s" % (err or out).strip())
        return {"timer": ROLLBACK_UNIT + ".timer", "timeout": timeout, "nm_checkpoint": checkpoint}
    module.fail_json(msg="no systemd-run on this node: cannot arm a rollback timer; set rollback_timeout: 0 to "
                     "apply without one")
    return None


def defer_apply(module, commands, timeout):
    script = os.path.join(ROLLBACK_DIR, "apply.sh")
    lines = ["#!/bin/sh", "rc=0"]
    for command in commands:
        lines.append("timeout %d %s || rc=$?" % (timeout, shell_command(command)))
    lines.append("echo $rc > %s" % shell_word(ROLLBACK_DIR + "/applied"))
    with open(script, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(script, 0o700)
    unit = "%s-%d" % (APPLY_UNIT, int(time.time() * 1000))
    rc, out, err = module.run_command([module.get_bin_path("systemd-run", required=True), "--unit=%s" % unit,
                                       "--on-active=2s", "--timer-property=AccuracySec=100ms", "/bin/sh", script])
    if rc != 0:
        module.fail_json(msg="could not schedule the apply: %s" % (err or out).strip())
    return [{"command": c, "deferred": True} for c in commands]


def confirm(module, root, settle):
    """Disarm the rollback timer once the deferred apply has run for ``settle`` seconds before this call began;
    report a rollback that already happened.

    Never waits for the apply: a call that arrives earlier answers ``pending`` and disarms nothing, and the caller
    asks again over a new round trip. So the timer is only ever disarmed by a round trip that reached the node
    over the changed network, never by one already under way when the change cut the path (its answer lost, the
    node would otherwise stay cut off).
    """
    started = time.time()
    marker = os.path.join(ROLLBACK_DIR, "rolled-back")
    applied_marker = os.path.join(ROLLBACK_DIR, "applied")
    if not os.path.isdir(ROLLBACK_DIR):
        return dict(changed=False, rolled_back=False, disarmed=False, pending=False, msg="nothing to confirm")
    rolled_back = os.path.exists(marker)
    if not rolled_back:
        try:
            applied_for = started - os.stat(applied_marker).st_mtime
        except OSError:
            return dict(changed=False, rolled_back=False, disarmed=False, pending=True,
                        msg="the change is still being applied; the rollback timer stays armed")
        if applied_for < settle:
            return dict(changed=False, rolled_back=False, disarmed=False, pending=True,
                        msg="the change was applied %.0f s ago; it is confirmed once it has run %d s"
                        % (max(applied_for, 0), settle))
    stopped = False
    checkpoint = armed_checkpoint()
    if root == "/" and not module.check_mode and not rolled_back and module.get_bin_path("systemctl"):
        systemctl = module.get_bin_path("systemctl")
        rc, _out, _err = module.run_command([systemctl, "stop", ROLLBACK_UNIT + ".timer"])
        stopped = rc == 0
        # The timer may have fired just before it was stopped: its restore is then running (the rolled-back marker
        # comes at its end) and the backup must stay where it is.
        _rc, state, _err = module.run_command([systemctl, "is-active", ROLLBACK_UNIT + ".service"])
        if state.strip() in ("active", "activating", "deactivating", "reloading") or os.path.exists(marker):
            module.fail_json(msg="the rollback timer fired before the confirmation arrived: the node is restoring "
                             "its previous network files now", rolled_back=True)
        if checkpoint and not nm_checkpoint_destroy(module, checkpoint):
            # NetworkManager already rolled the running state back; put the files back too, now.
            module.run_command(["/bin/sh", os.path.join(ROLLBACK_DIR, "restore.sh")])
            module.fail_json(msg="the change was rolled back on the node by NetworkManager's checkpoint %s: the "
                             "controller did not confirm it in time; the previous files are back" % checkpoint,
                             rolled_back=True, nm_checkpoint=checkpoint)
    apply_rc = None
    if os.path.exists(applied_marker):
        with open(applied_marker) as handle:
            apply_rc = int(handle.read().strip() or "1")
    if apply_rc not in (None, 0) and not rolled_back:
        module.fail_json(msg="applying the change failed on the node (rc %d); the rollback timer was disarmed, the "
                         "new files are in place" % apply_rc, apply_rc=apply_rc)
    if rolled_back:
        with open(marker) as handle:
            when = handle.read().strip()
        module.fail_json(msg="the change was rolled back on the node at %s: the controller did not confirm it in "
                         "time" % when, rolled_back=True)
    if os.path.isdir(ROLLBACK_DIR) and not module.check_mode:
        shutil.rmtree(ROLLBACK_DIR)
    return dict(changed=False, rolled_back=False, disarmed=stopped, pending=False, apply_rc=apply_rc,
                nm_checkpoint=checkpoint)
