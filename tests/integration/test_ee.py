"""The execution environment: ansible-builder reads the collection's own dependency metadata; scripts/ee.sh turns
ee/execution-environment.yml into a build context, and with podman builds the image for real on a Debian base made
here (scripts/ee-base.sh, no registry); the image's own ansible-playbook then audits two namespace hosts over SSH,
with a planted fault. Where podman run cannot start a container (these machines: no rlimits may be set), that
refusal is checked and the image runs in a chroot of its mounted root instead."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from packaging.version import Version

import testbed
from conftest import REPO
from test_ansible_core_range import core_spec, newest, read
from nshosts import NamespaceHosts

BUILDER = os.path.join(os.path.dirname(sys.executable), "ansible-builder")


def test_builder_introspects_the_collections_needs(ansible_env):
    collections = ansible_env["ANSIBLE_COLLECTIONS_PATH"]
    done = subprocess.run([BUILDER, "introspect", "--sanitize", collections], capture_output=True, text=True,
                          check=True)
    data = yaml.safe_load(done.stdout.split("\n", 1)[1])
    python = " ".join(data["python"])
    for package in ("jmespath", "netaddr", "nvidia-ml-py", "matplotlib"):
        assert package in python
    assert "ansible-core" not in python  # the EE definition pins ansible-core itself
    assert any(line.startswith("iproute2 [platform:dpkg]") for line in data["system"])


def test_ee_script_writes_a_build_context(tmp_path):
    context = tmp_path / "context"
    # EE_CONTEXT_ONLY: where a container runtime works the script would build the image (registries, minutes)
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "ee.sh"), str(context)], capture_output=True,
                          text=True, cwd=REPO, env=dict(os.environ, EE_CONTEXT_ONLY="1"), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    containerfile = (context / "Containerfile").read_text()
    assert "COPY _build/collections/ /build/collections/" in containerfile
    assert "ansible-galaxy collection install" in containerfile or "install-from-bindep" in containerfile
    assert (context / "_build" / "collections" / "gpuops-fabric.tar.gz").stat().st_size > 10000
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert requirements["collections"][0]["name"] == "/build/collections/gpuops-fabric.tar.gz"


@pytest.mark.parametrize("script,setting,value", [
    ("ee.sh", "EE_BASE_IMAGE", "ee-minimal rhel9"),
    ("ee.sh", "EE_BASE_IMAGE", "x;rm -rf /"),
    ("ee.sh", "EE_BASE_IMAGE", "$(id)"),
    ("ee.sh", "EE_TAG", "Local/EE"),
    ("ee.sh", "EE_PKGMGR", "microdnf"),
    ("ee.sh", "EE_PKGMGR", "/usr/../bin/sh"),
    ("ee.sh", "EE_PYCMD", "/usr/bin/python3 -c 'import os'"),
    ("ee.sh", "EE_ISOLATION", "none"),
    ("ee-base.sh", "EE_BASE_SUITE", "trixie main"),
    ("ee-base.sh", "EE_BASE_MIRROR", "file:///etc"),
    ("ee-base.sh", "EE_CA_BUNDLE", "/tmp/a bundle.crt"),
])
def test_a_bad_setting_stops_the_ee_scripts_before_anything_is_built(tmp_path, script, setting, value):
    context = tmp_path / "context"
    dist = os.path.join(REPO, "ee", "dist")
    before = os.stat(dist).st_mtime_ns if os.path.exists(dist) else None
    # ee-base.sh gets a throwaway tag: were a check to let the value through, no real base would be replaced
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", script)]
                          + ([str(context)] if script == "ee.sh" else ["localhost/gpuops-fabric-ee-base:never-made"]),
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
                          env=dict(os.environ, EE_CONTEXT_ONLY="1", **{setting: value}))
    assert done.returncode == 2, done.stdout + done.stderr
    assert setting in done.stderr and "'%s'" % value in done.stderr, done.stderr
    # the tarball is not rebuilt, nothing is written, no image is made
    assert not context.exists() and (os.stat(dist).st_mtime_ns if os.path.exists(dist) else None) == before


@pytest.mark.parametrize("settings", [
    {"EE_BASE_IMAGE": "registry.redhat.io/ansible-automation-platform-25/ee-minimal-rhel9:latest",
     "EE_PKGMGR": "/usr/bin/microdnf", "EE_PYCMD": "/usr/bin/python3.11"},
    {"EE_BASE_IMAGE": "quay.io/ansible/awx-ee:24.6.1", "EE_ISOLATION": "chroot", "EE_TAG": "my_ee:latest"},
    {"EE_BASE_IMAGE": "localhost:5000/ee/base@sha256:" + "0123456789abcdef" * 4, "EE_ISOLATION": "oci",
     "EE_TAG": "docker.io/library/gpuops-ee:1.0"},
])
def test_the_ee_script_takes_real_image_references_and_paths(tmp_path, settings):
    """What AWX and Automation Platform users name passes the checks (the build context is written; no build)."""
    context = tmp_path / "context"
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "ee.sh"), str(context)], capture_output=True,
                          text=True, cwd=REPO, timeout=300, check=False,
                          env=dict(os.environ, EE_CONTEXT_ONLY="1", **settings))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (context / "Containerfile").exists()


# -- the image itself: built with podman from a base made here, then the audit run from inside it ---------------

EE_TAG = "localhost/gpuops-fabric-ee:test-%s" % testbed.slot()
# what podman run answers on the development and CI machines (no rlimits may be set there): the image is then run
# the other way, its own ansible-playbook in a chroot of the mounted image (../shared/testbed/README.md)
RUN_REFUSED = ("RLIMIT", "Operation not permitted")
# bash with positional arguments: the image root, the work folder, then the command to run inside
IN_CHROOT = ('set -e; root=$1; work=$2; shift 2; mount -t tmpfs tmpfs "$root/tmp"; mount --rbind /dev "$root/dev"; '
             'mount -t proc proc "$root/proc"; mount --bind "$work" "$root/runner"; '
             'exec chroot "$root" env HOME=/runner ANSIBLE_STDOUT_CALLBACK=default "$@"')


@pytest.fixture(scope="module")
def image():
    if os.geteuid() != 0:
        pytest.skip("building with podman and mounting its image need root (CI runs as root)")
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "ee.sh"), os.path.join(REPO, ".cache", "ee-context")],
                          capture_output=True, text=True, cwd=REPO, timeout=1200, check=False,
                          env=dict(os.environ, EE_TAG=EE_TAG, EE_ISOLATION="chroot"))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    yield EE_TAG
    subprocess.run(["podman", "image", "unmount", EE_TAG], capture_output=True, check=False)
    subprocess.run(["podman", "rmi", "-f", EE_TAG], capture_output=True, check=False)


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    hosts = NamespaceHosts(str(tmp_path_factory.mktemp("ee")), 2, prefix="gfee", mgmt_octet=18, train_octet=19)
    hosts.up()
    yield hosts
    hosts.down()


def in_image(image_tag, work, *command):
    """``command`` run by the image's own programs against ``work`` (its /runner): ``podman run`` where it can
    start a container, else (the reason checked) a chroot of the mounted image; returns (how, result)."""
    tried = subprocess.run(["podman", "run", "--rm", "--network", "host", "-v", "%s:/runner" % work, "--user", "0",
                            image_tag] + list(command), capture_output=True, text=True, timeout=600, check=False)
    if tried.returncode == 0 or not all(word in tried.stderr for word in RUN_REFUSED):
        return "podman run", tried
    root = subprocess.run(["podman", "image", "mount", image_tag], capture_output=True, text=True,
                          check=True).stdout.strip()
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "bash", "-c", IN_CHROOT, "_", root,
                           str(work)] + list(command), capture_output=True, text=True, timeout=600, check=False)
    return "chroot: " + tried.stderr.strip().splitlines()[-1], done


def test_the_built_image_audits_the_namespace_hosts(image, bed, tmp_path):
    work = tmp_path / "runner"
    work.mkdir()
    shutil.copy(bed.key, work / "key")
    os.chmod(work / "key", 0o600)
    group = dict(bed.connection_vars(), ansible_ssh_private_key_file="/runner/key",  # the key as the image sees it
                 fabric_expectations={"nics": [{"name": "eth1", "mtu": 9000}]})
    (work / "inventory.json").write_text(json.dumps({"all": {"vars": group, "hosts": bed.hostvars()}}))
    bed.set_mtu(2, 1500)  # a real fault on the second host: its training interface at 1500 where 9000 is expected

    version = in_image(image, work, "ansible-playbook", "--version")[1]
    assert version.returncode == 0, version.stderr
    assert "/usr/share/ansible/collections" in version.stdout or "ansible-playbook [core 2." in version.stdout
    how, run = in_image(image, work, "ansible-playbook", "-i", "/runner/inventory.json", "gpuops.fabric.audit",
                        "-e", "fabric_report_dir=/runner/report")
    if how != "podman run":
        assert "rlimit" in how.lower() or "operation not permitted" in how.lower(), how
    # the audit fails the run on the planted fault, after writing its reports
    assert run.returncode == 2, how + "\n" + run.stdout[-4000:] + run.stderr[-2000:]
    report = json.loads((work / "report" / "report.json").read_text())
    findings = [(f["host"], f["id"]) for f in report["findings"] if f["severity"] == "fail"]
    assert (bed.names[1], "NET-004") in findings, findings
    assert not [f for f in findings if f[0] == bed.names[0]], findings
    core = [line for line in version.stdout.splitlines() if line.startswith("ansible-playbook [core")][0]
    # pip takes the newest core that the base's Python allows within the supported range: on Debian trixie's 3.13,
    # the newest the tests install (tests/core-newest-requirements.txt)
    found = Version(core.split("[core ", 1)[1].split("]", 1)[0])
    assert found in core_spec(read("requirements.txt")) and (found.major, found.minor) == newest(), core
