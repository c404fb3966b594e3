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
    # the distribution reference grammar's limits (scripts/ee-checks.sh): a port is 1..65535, a name at most 255
    # characters, a tag at most 128, path components lowercase, a digest algorithm:hex
    ("ee.sh", "EE_BASE_IMAGE", "localhost:99999/ee-base:trixie"),
    ("ee.sh", "EE_TAG", "registry.example.com:0/gpuops-ee"),
    ("ee.sh", "EE_TAG", "quay.io/" + "a" * 248),
    ("ee.sh", "EE_BASE_IMAGE", "quay.io/ansible/awx-ee:" + "b" * 129),
    ("ee.sh", "EE_BASE_IMAGE", "quay.io/Ansible/awx-ee:24.6.1"),
    ("ee.sh", "EE_BASE_IMAGE", "quay.io/ansible/awx-ee@sha256:0123abcd"),
    ("ee.sh", "EE_BASE_IMAGE", "quay.io/ansible/awx-ee@sha256:" + "0123456789ABCDEF" * 4),
    ("ee.sh", "EE_TAG", "localhost/a..b"),
    ("ee.sh", "EE_CONTEXT_ONLY", "yes"),
    ("ee-base.sh", "EE_BASE_MIRROR", "http://deb.example.com:99999/debian"),
    # not a PEM certificate bundle
    ("ee-base.sh", "EE_CA_BUNDLE", "/etc/hostname"),
    ("ee-base.sh", "PIP_CERT", "/etc/hostname"),
    ("ee-base.sh", "EE_CA_BUNDLE", "/dev/null"),
    ("ee-base.sh", "EE_CA_BUNDLE", "/nonexistent/ca.crt"),
])
def test_a_bad_setting_stops_the_ee_scripts_before_anything_is_built(tmp_path, script, setting, value):
    context = tmp_path / "context"
    dist = os.path.join(REPO, "ee", "dist")
    before = os.stat(dist).st_mtime_ns if os.path.exists(dist) else None
    env = dict(os.environ, EE_CONTEXT_ONLY="1")
    env[setting] = value
    # ee-base.sh gets a throwaway tag: were a check to let the value through, no real base would be replaced
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", script)]
                          + ([str(context)] if script == "ee.sh" else ["localhost/gpuops-fabric-ee-base:never-made"]),
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert setting in done.stderr and "'%s'" % value in done.stderr, done.stderr
    # the tarball is not rebuilt, nothing is written, no image is made
    assert not context.exists() and (os.stat(dist).st_mtime_ns if os.path.exists(dist) else None) == before


GOOD_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def first_certificate():
    with open(GOOD_BUNDLE) as bundle:
        text = bundle.read()
    return text[text.index("-----BEGIN CERTIFICATE-----"):text.index("-----END CERTIFICATE-----") + 25] + "\n"


def bad_bundle(tmp_path, kind):
    """A file (or folder) that is no PEM certificate bundle, named ``kind``."""
    path = tmp_path / ("%s.crt" % kind)
    if kind == "empty":
        path.write_text("")
    elif kind == "begin-without-end":
        path.write_text("-----BEGIN CERTIFICATE-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n")
    elif kind == "folder":
        path.mkdir()
    elif kind == "with-a-private-key":  # a server's combined PEM: its key would be baked into the image
        path.write_text(first_certificate() + "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n"
                        "-----END PRIVATE KEY-----\n")
    elif kind == "der":
        path.write_bytes(b"\x30\x82\x01\x0a\x02\x82\x01\x01\x00" * 20)
    elif kind == "text-in-a-certificate":
        path.write_text(first_certificate().replace("\n", "\nnot base64\n", 2))
    elif kind == "too-big":  # over 16 MiB, sparse
        with open(path, "wb") as big:
            big.truncate(16 * 1024 * 1024 + 1)
    elif kind == "symlink-to-a-device":
        path.symlink_to("/dev/zero")
    return str(path)


@pytest.mark.skipif(not os.path.exists(GOOD_BUNDLE), reason="no %s here" % GOOD_BUNDLE)
@pytest.mark.parametrize("setting", ["EE_CA_BUNDLE", "PIP_CERT", "global.cert"])
@pytest.mark.parametrize("kind", ["empty", "begin-without-end", "folder", "with-a-private-key", "der",
                                  "text-in-a-certificate", "too-big", "symlink-to-a-device"])
def test_a_bad_ca_bundle_stops_ee_base_before_anything_is_built(tmp_path, kind, setting):
    """Wherever ee-base.sh takes the bundle from (EE_CA_BUNDLE, PIP_CERT, pip's own global.cert), it must be a PEM
    certificate bundle."""
    path = bad_bundle(tmp_path, kind)
    env = {key: value for key, value in os.environ.items() if key not in ("EE_CA_BUNDLE", "PIP_CERT")}
    if setting == "global.cert":  # read with .venv's pip, from the configuration file PIP_CONFIG_FILE names
        (tmp_path / "pip.conf").write_text("[global]\ncert = %s\n" % path)
        env["PIP_CONFIG_FILE"] = str(tmp_path / "pip.conf")
    else:
        env[setting] = path
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "ee-base.sh"),
                           "localhost/gpuops-fabric-ee-base:never-made"],
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert setting in done.stderr and "'%s'" % path in done.stderr, done.stderr


def test_ee_sh_checks_the_base_settings_before_anything_is_built(tmp_path):
    """Where ee.sh is to make the default base (a runtime works, the base is missing), ee-base.sh's settings stop it
    before it builds the collection tarball. podman here is a stand-in that works and lacks every image."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text('#!/bin/sh\ncase "$1" in info) exit 0 ;; *) exit 1 ;; esac\n')
    os.chmod(bin_dir / "podman", 0o755)
    context = tmp_path / "context"
    dist = os.path.join(REPO, "ee", "dist")
    before = os.stat(dist).st_mtime_ns if os.path.exists(dist) else None
    env = {key: value for key, value in os.environ.items()
           if key not in ("EE_CONTEXT_ONLY", "EE_BASE_IMAGE", "PIP_CERT")}
    env.update(PATH="%s:%s" % (bin_dir, os.environ["PATH"]), EE_CA_BUNDLE="/etc/hostname")
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "ee.sh"), str(context)], capture_output=True,
                          text=True, cwd=REPO, timeout=60, check=False, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("ee: EE_CA_BUNDLE: '/etc/hostname' is not a PEM certificate bundle"), done.stderr
    assert not context.exists() and (os.stat(dist).st_mtime_ns if os.path.exists(dist) else None) == before


@pytest.mark.skipif(not os.path.exists(GOOD_BUNDLE), reason="no %s here" % GOOD_BUNDLE)
def test_ee_base_uploads_a_checked_copy_of_a_good_bundle(tmp_path):
    """A good bundle (this machine's, through a symlink) passes, and mmdebstrap (a stand-in here that records its
    arguments and the file it is to upload, then fails: nothing is built) gets a copy of it in the script's own
    folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mmdebstrap").write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$RECORD/args"\nfor a; do case "$a" in --customize-hook=upload*) '
        'set -- $a; cp "$2" "$RECORD/uploaded" ;; esac; done\nexit 3\n')
    os.chmod(bin_dir / "mmdebstrap", 0o755)
    (tmp_path / "link.crt").symlink_to(GOOD_BUNDLE)
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]), RECORD=str(tmp_path),
               EE_CA_BUNDLE=str(tmp_path / "link.crt"))
    done = subprocess.run(["bash", os.path.join(REPO, "scripts", "ee-base.sh"),
                           "localhost/gpuops-fabric-ee-base:never-made"],
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False, env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    hook = [arg for arg in (tmp_path / "args").read_text().splitlines() if arg.startswith("--customize-hook=")]
    copy, inside = hook[0].split(" ")[1:]
    assert inside == "/etc/ssl/certs/ca-certificates.crt" and copy.endswith("/ca-bundle.crt"), hook
    assert not os.path.exists(copy)  # the script's folder is gone again
    with open(GOOD_BUNDLE, "rb") as bundle:
        assert (tmp_path / "uploaded").read_bytes() == bundle.read()


@pytest.mark.skipif(not os.path.exists(GOOD_BUNDLE), reason="no %s here" % GOOD_BUNDLE)
def test_the_checks_take_good_references_and_bundles(tmp_path):
    """The checks alone (scripts/ee-checks.sh, sourced): the limits themselves pass, and so does this machine's CA
    bundle, also through a symlink, with a curl-style title and CRLF line ends; the bundle resolves to the file."""
    (tmp_path / "link.crt").symlink_to(GOOD_BUNDLE)
    (tmp_path / "curl.pem").write_text("## Bundle of CA Root Certificates\n\nSome Root CA\n============\n"
                                       + first_certificate())
    (tmp_path / "crlf.pem").write_bytes(first_certificate().replace("\n", "\r\n").encode())
    references = ["localhost:65535/ee", "localhost:1/ee", "10.0.0.1:5000/ee/base", "quay.io/" + "a" * 247,
                  "quay.io/ansible/awx-ee:" + "b" * 128, "my_ee__x.y-z---w:latest",
                  "quay.io/ansible/awx-ee@sha512:" + "0123456789abcdef" * 8]
    script = ('EE_SCRIPT=test; . scripts/ee-checks.sh; for ref in %s; do ee_check_image ref "$ref"; done; '
              'for bundle in "$@"; do ee_check_ca_bundle bundle "$bundle"; echo "$ee_ca_real"; done'
              % " ".join("'%s'" % ref for ref in references))
    bundles = [GOOD_BUNDLE, str(tmp_path / "link.crt"), str(tmp_path / "curl.pem"), str(tmp_path / "crlf.pem")]
    done = subprocess.run(["bash", "-c", script, "_"] + bundles, capture_output=True, text=True, cwd=REPO,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    real = os.path.realpath(GOOD_BUNDLE)
    assert done.stdout.split() == [real, real, str(tmp_path / "curl.pem"), str(tmp_path / "crlf.pem")]


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
