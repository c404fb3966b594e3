"""rollback.confirm: the timer is disarmed only by a call that arrives after the apply has run ``settle`` seconds.

The module object stands in for AnsibleModule at the library boundary (its fail_json raises, run_command records
what would run); the marker files are real files in a temporary rollback directory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._network import rollback


class Failed(Exception):
    pass


class Module:
    check_mode = False

    def __init__(self, service="inactive"):
        self.ran = []
        self.service = service  # what systemctl is-active says of the rollback service

    def get_bin_path(self, name, required=False):
        return {"systemctl": "/bin/systemctl"}.get(name)

    def run_command(self, argv, **_kwargs):
        self.ran.append(argv)
        if argv[1:2] == ["is-active"]:
            return (0 if self.service == "active" else 3), self.service + "\n", ""
        return 0, "", ""

    def fail_json(self, **kwargs):
        raise Failed(kwargs)


@pytest.fixture
def state(tmp_path, monkeypatch):
    directory = tmp_path / "rollback"
    directory.mkdir()
    monkeypatch.setattr(rollback, "ROLLBACK_DIR", str(directory))
    return directory


def applied(directory, rc, seconds_ago):
    marker = directory / "applied"
    marker.write_text("%d\n" % rc)
    when = time.time() - seconds_ago
    os.utime(str(marker), (when, when))


def test_nothing_armed_nothing_to_confirm(tmp_path, monkeypatch):
    monkeypatch.setattr(rollback, "ROLLBACK_DIR", str(tmp_path / "absent"))
    result = rollback.confirm(Module(), "/", 5)
    assert result["pending"] is False and result["disarmed"] is False and result["msg"] == "nothing to confirm"


def test_apply_still_running_is_pending_and_disarms_nothing(state):
    module = Module()
    result = rollback.confirm(module, "/", 5)
    assert result["pending"] is True and result["disarmed"] is False
    assert "still being applied" in result["msg"]
    assert module.ran == [] and state.is_dir()


def test_apply_just_finished_is_pending_until_it_has_run_settle_seconds(state):
    applied(state, 0, 1)
    module = Module()
    result = rollback.confirm(module, "/", 5)
    assert result["pending"] is True and module.ran == [] and state.is_dir()
    assert "applied 1 s ago" in result["msg"] and "run 5 s" in result["msg"]


def test_a_call_after_the_settle_time_disarms_and_drops_the_backup(state):
    applied(state, 0, 6)
    module = Module()
    result = rollback.confirm(module, "/", 5)
    assert result["pending"] is False and result["disarmed"] is True and result["apply_rc"] == 0
    assert module.ran == [["/bin/systemctl", "stop", "gpuops-fabric-rollback.timer"],
                          ["/bin/systemctl", "is-active", "gpuops-fabric-rollback.service"]]
    assert not state.exists()


@pytest.mark.parametrize("service", ["activating", "active"])
def test_a_timer_that_fired_just_before_keeps_its_backup(state, service):
    """The timer fired a moment before it was stopped: its restore runs (the marker comes at its end); the
    confirmation fails and leaves the backup the restore copies from."""
    applied(state, 0, 60)
    (state / "files").mkdir()
    with pytest.raises(Failed) as failed:
        rollback.confirm(Module(service), "/", 5)
    assert failed.value.args[0]["rolled_back"] is True and "restoring its previous network files" in \
        failed.value.args[0]["msg"]
    assert (state / "files").is_dir()


def test_settle_zero_confirms_at_once(state):
    applied(state, 0, 0)
    assert rollback.confirm(Module(), "/", 0)["pending"] is False


def test_a_rollback_that_already_happened_fails_without_waiting(state):
    (state / "rolled-back").write_text("2026-12-01T21:40:00+00:00\n")
    module = Module()
    with pytest.raises(Failed) as failed:
        rollback.confirm(module, "/", 5)
    assert failed.value.args[0]["rolled_back"] is True
    assert "rolled back on the node at 2026-12-01T21:40:00+00:00" in failed.value.args[0]["msg"]
    assert module.ran == []


def test_a_failed_apply_is_reported_once_settled(state):
    applied(state, 3, 10)
    with pytest.raises(Failed) as failed:
        rollback.confirm(Module(), "/", 5)
    assert failed.value.args[0]["apply_rc"] == 3 and "applying the change failed on the node (rc 3)" in \
        failed.value.args[0]["msg"]
