"""The collection as it is published: the tarball `ansible-galaxy collection build` makes holds the license, the
release notes and what a user runs, and none of the checkout's test and lint settings; the release notes are the
ones antsibull-changelog makes from changelogs/changelog.yaml, and its lint passes."""

import os
import shutil
import subprocess
import sys
import tarfile

from conftest import REPO

BIN = os.path.dirname(sys.executable)


def members(tarball):
    with tarfile.open(tarball) as archive:
        return set(m.name for m in archive.getmembers())


def test_the_tarball_ships_the_license_and_release_notes_and_no_checkout_settings(ansible_env):
    names = members(ansible_env["GPUOPS_TARBALL"])
    for needed in ("LICENSE", "CHANGELOG.md", "changelogs/changelog.yaml", "README.md", "meta/runtime.yml",
                   "playbooks/site.yml", "playbooks/audit.yml", "roles/probes/meta/argument_specs.yml"):
        assert needed in names, needed
    for left_out in ("pytest.ini", ".ansible-lint", "site.yml", "changelogs/.plugin-cache.yaml", "docs/molecule.md",
                     "changelogs/fragments/.keep"):
        assert left_out not in names, left_out
    assert not [n for n in names if n.split("/")[0] in ("tests", "benchmarks", "scripts", "demo", "ee", "extensions",
                                                        ".ci", ".cache", ".venv")]
    with open(os.path.join(REPO, "LICENSE")) as handle:
        head = handle.read(200)
    assert "GNU GENERAL PUBLIC LICENSE" in head and "Version 3" in head  # galaxy.yml: GPL-3.0-or-later


def test_release_notes_are_what_antsibull_changelog_makes(tmp_path):
    """CHANGELOG.md is generated from changelogs/changelog.yaml (and the fragments not yet released), not edited by
    hand; antsibull-changelog's lint passes on the fragments and the changes file."""
    tool = os.path.join(BIN, "antsibull-changelog")
    lint = subprocess.run([tool, "lint"], cwd=REPO, capture_output=True, text=True, check=False)
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
    copy = tmp_path / "fabric"
    skipped = shutil.ignore_patterns(".git", ".venv", ".cache", "tests", "demo", "benchmarks", "ee", "extensions")
    shutil.copytree(REPO, str(copy), ignore=skipped)
    os.remove(str(copy / "CHANGELOG.md"))
    generate = subprocess.run([tool, "generate"], cwd=str(copy), capture_output=True, text=True, check=False)
    assert generate.returncode == 0, generate.stdout + generate.stderr
    with open(os.path.join(REPO, "CHANGELOG.md")) as ours, open(str(copy / "CHANGELOG.md")) as made:
        assert ours.read() == made.read(), "CHANGELOG.md differs from antsibull-changelog generate: run it"
    with open(os.path.join(REPO, "changelogs", "changelog.yaml")) as handle:
        assert "\n  0.1.0:\n" in handle.read()
