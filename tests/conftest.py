"""Shared test set-up: import the collection as ansible_collections.gpuops.fabric and prepare fixtures."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REALDATA = os.path.join(REPO, "tests", "fixtures", "realdata")


def _collection_root():
    """A directory holding ansible_collections/gpuops/fabric -> this checkout (unless already inside one)."""
    parts = REPO.split(os.sep)
    if parts[-3:] == ["ansible_collections", "gpuops", "fabric"]:
        return os.sep.join(parts[:-3])
    # one directory per checkout: two checkouts testing at once (a clean clone beside a working tree) must not
    # re-point each other's link
    import hashlib
    tag = hashlib.sha1(REPO.encode("utf-8")).hexdigest()[:10]
    base = os.path.join(tempfile.gettempdir(), "gpuops-fabric-tests-%d-%s" % (os.getuid(), tag))
    link = os.path.join(base, "ansible_collections", "gpuops", "fabric")
    if os.path.realpath(link) != REPO:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(REPO, link)
    return base


COLLECTIONS_ROOT = _collection_root()
if COLLECTIONS_ROOT not in sys.path:
    sys.path.insert(0, COLLECTIONS_ROOT)
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests", "utils"))  # helpers: nshosts, sysfs_tree

import fixtures as _fixtures  # noqa: E402  (scripts/fixtures.py)
import testbed as _testbed  # noqa: E402  (tests/utils/testbed.py)

if os.geteuid() == 0:
    # lease this run's test-bed slot now, before any environment is copied: molecule, ansible-playbook and the
    # scripts this run starts inherit it (GPUOPS_TESTBED_SLOT), so their namespaces and addresses are this run's
    _testbed.slot()


@pytest.fixture(scope="session")
def roots():
    """{name: sysfs root} for every captured sysfs tree and the hand-written nodes."""
    return _fixtures.prepare(os.path.join(REPO, ".cache", "fixtures"))


def ansible_playbook(env, inventory, playbook, *extra, timeout=600, **env_more):
    """``ansible-playbook -i inventory playbook extra...`` from the repository with the default callback (the tests
    read its lines and recap), its output captured; a playbook is a collection name (gpuops.fabric.audit) or a
    path. Never raises on a failed run: the tests assert on the return code."""
    return subprocess.run(["ansible-playbook", "-i", str(inventory), str(playbook)] + [str(e) for e in extra],
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default", **env_more), capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, check=False)


def fact_reads(stdout, host):
    """For each "Gather topology facts" task of a -v ansible-playbook run, in order: whether it read ``host``'s node
    (False where it kept the facts the run held, "reused")."""
    found = []
    for section in stdout.split("\nTASK [")[1:]:
        if section.split("]", 1)[0].endswith("Gather topology facts"):
            found += ['"reused": true' not in x for x in section.splitlines()
                      if x.startswith(("ok: [%s]" % host, "changed: [%s]" % host))]
    return found


@pytest.fixture(scope="session")
def _gathered(roots):
    """The hand-written 8-GPU node's facts, healthy and broken, gathered once for the whole run."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
    return {"healthy": gather(root=roots["dgx8"]), "broken": gather(root=roots["dgx8-broken"])}


@pytest.fixture(scope="module")
def healthy(_gathered):
    """The healthy hand-written node's facts (tests/fixtures/sysfs/dgx8): each test module gets its own copy."""
    import copy
    return copy.deepcopy(_gathered["healthy"])


@pytest.fixture(scope="module")
def broken(_gathered):
    """The same node with every fault the rules know planted (dgx8-broken): each test module gets its own copy."""
    import copy
    return copy.deepcopy(_gathered["broken"])


@pytest.fixture(scope="session")
def realdata():
    def path(name, filename):
        return os.path.join(REALDATA, name, filename)
    return path


def install_collection(work, source=REPO):
    """Build the collection tarball in ``work`` from ``source`` (this checkout, or another one a benchmark compares
    with) and install it there, as users get it.

    Returns (tarball path, the directory to put in ANSIBLE_COLLECTIONS_PATH). Tests and benchmarks use it.
    """
    galaxy = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    work = str(work)
    subprocess.run([galaxy, "collection", "build", "--output-path", work, str(source)], check=True,
                   capture_output=True)
    tarball = os.path.join(work, [f for f in os.listdir(work) if f.endswith(".tar.gz")][0])
    install = os.path.join(work, "collections")
    subprocess.run([galaxy, "collection", "install", "--force", "-p", install, tarball], check=True, capture_output=True)
    return tarball, install


@pytest.fixture(scope="session")
def ansible_env(tmp_path_factory):
    """Environment for ansible CLI runs against the collection as installed from its built tarball."""
    bindir = os.path.dirname(sys.executable)
    tarball, install = install_collection(tmp_path_factory.mktemp("collection"))
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": install,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        "PATH": bindir + os.pathsep + env.get("PATH", ""),
    })
    env["GPUOPS_TARBALL"] = tarball
    env["GPUOPS_INSTALLED"] = os.path.join(install, "ansible_collections", "gpuops", "fabric")
    return env


def require_tool(name):
    """Tests that need a system tool fail (not skip) when it is missing: the set-up installs it."""
    path = shutil.which(name)
    assert path, "%s is not installed; scripts/setup.sh installs it" % name
    return path


def recap(output, host):
    """The PLAY RECAP counters of ``host`` in ansible-playbook's default output: {"ok": "3", "changed": "0", ...}."""
    line = [x for x in output.splitlines() if x.startswith(host + " ")][-1]
    return dict(kv.split("=") for kv in line.split(":", 1)[1].split())


def tree_hash(path):
    """One digest of every file below ``path``: its path, mode and bytes (what --check must leave alone)."""
    import hashlib
    digest = hashlib.sha256()
    for folder, _dirs, files in sorted(os.walk(str(path))):
        for name in sorted(files):
            full = os.path.join(folder, name)
            digest.update(full.encode())
            digest.update(("%o" % os.stat(full).st_mode).encode())
            with open(full, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()
