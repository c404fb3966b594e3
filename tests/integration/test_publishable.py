"""The collection as it is published: the tarball `ansible-galaxy collection build` makes holds the license, the
release notes and what a user runs, and none of the checkout's test and lint settings; the release notes are the
ones antsibull-changelog makes from changelogs/changelog.yaml, and its lint passes."""

import json
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


IMPORTER = os.path.join(REPO, ".cache", "importer-venv", "bin")


def galaxy_importer(tarball, cwd):
    """galaxy-importer (what Galaxy and Automation Hub run on an upload) on ``tarball``, with its own ansible-doc and
    ansible-lint; its result file is written in ``cwd``."""
    python = os.path.join(IMPORTER, "python")
    assert os.path.exists(python), "galaxy-importer is not installed: scripts/test.sh makes " + IMPORTER
    env = dict(os.environ, PATH=IMPORTER + os.pathsep + os.environ["PATH"])
    return subprocess.run([python, "-m", "galaxy_importer.main", tarball], cwd=str(cwd), env=env, capture_output=True,
                          text=True, check=False, timeout=600)


def test_galaxy_importer_accepts_the_tarball(ansible_env, tmp_path):
    result = galaxy_importer(ansible_env["GPUOPS_TARBALL"], tmp_path)
    said = result.stdout + result.stderr
    assert result.returncode == 0 and "Importer processing completed successfully" in said, said[-3000:]
    assert "ansible-lint run complete" in said, said[-3000:]
    assert not [line for line in said.splitlines() if line.startswith(("ERROR", "WARNING"))], said[-3000:]
    with open(str(tmp_path / "importer_result.json")) as handle:
        imported = json.load(handle)
    documented = dict(((c["content_type"], c["content_name"]), bool(c.get("doc_strings")))
                      for c in imported["docs_blob"]["contents"])
    modules = sorted(n[:-3] for n in os.listdir(os.path.join(REPO, "plugins", "modules")) if n.endswith(".py"))
    assert modules and all(documented.get(("module", m)) for m in modules), documented  # ansible-doc ran on each
    roles = sorted(os.listdir(os.path.join(REPO, "roles")))
    assert sorted(c["name"] for c in imported["contents"] if c["content_type"] == "role") == roles
    assert imported["requires_ansible"] == ">=2.16.0"


def test_galaxy_importer_refuses_a_role_without_its_readme(tmp_path):
    """The check above can fail: a role without README.md is refused by the importer (as it was before the roles
    had one)."""
    copy = tmp_path / "src"
    skipped = shutil.ignore_patterns(".git", ".venv", ".cache", "tests", "demo", "benchmarks", "ee", "extensions")
    shutil.copytree(REPO, str(copy), ignore=skipped)
    os.remove(str(copy / "roles" / "nccl" / "README.md"))
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path),
                    str(copy)], check=True, capture_output=True)
    tarball = [str(tmp_path / n) for n in os.listdir(str(tmp_path)) if n.endswith(".tar.gz")][0]
    result = galaxy_importer(tarball, tmp_path)
    assert result.returncode != 0 and "No role readme found" in result.stdout + result.stderr, result.stdout[-2000:]
