"""Prepare the machine fixtures the demo, tests and benchmarks read, under one directory.

Captured sysfs tarballs (tests/fixtures/realdata/*/*.tar.*) are extracted, and the hand-written
trees (tests/fixtures/handwritten) are generated. Prints nothing on success; the layout is:

  <out>/<capture name>/            sysfs root of each captured machine (holds sys/, maybe proc/)
  <out>/handwritten/dgx8[-broken]/ sysfs roots of the hand-written nodes
"""

import hashlib
import os
import shutil
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
REALDATA = os.path.join(REPO, "tests", "fixtures", "realdata")
sys.path.insert(0, os.path.join(REPO, "tests", "fixtures", "handwritten"))

import sysfs_builder  # noqa: E402


def _sysfs_root(directory):
    """The directory below ``directory`` that holds ``sys/`` (captures keep a top folder)."""
    for current, dirs, _files in os.walk(directory):
        if "sys" in dirs:
            return current
    return None


def _fingerprint():
    """Changes whenever an input of the fixtures changes, so stale trees are rebuilt."""
    digest = hashlib.sha256()
    inputs = [os.path.join(REPO, "tests", "fixtures", "handwritten", "sysfs_builder.py"), os.path.abspath(__file__)]
    for name in sorted(os.listdir(REALDATA)):
        folder = os.path.join(REALDATA, name)
        inputs += [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if ".tar." in f]
    for path in inputs:
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


def prepare(out):
    out = os.path.abspath(out)
    roots = {}
    stamp = os.path.join(out, ".complete-" + _fingerprint()[:16])
    for name in sorted(os.listdir(REALDATA)):
        folder = os.path.join(REALDATA, name)
        tarballs = [f for f in sorted(os.listdir(folder)) if ".tar." in f]
        if not tarballs:
            continue
        target = os.path.join(out, name)
        if not os.path.exists(stamp):
            shutil.rmtree(target, ignore_errors=True)
            os.makedirs(target)
            with tarfile.open(os.path.join(folder, tarballs[0])) as archive:
                if hasattr(tarfile, "tar_filter"):
                    archive.extractall(target, filter="tar")
                else:  # pragma: no cover - Python without extraction filters
                    archive.extractall(target)
        roots[name] = _sysfs_root(target)
    hand = os.path.join(out, "handwritten")
    if not os.path.exists(stamp):
        shutil.rmtree(hand, ignore_errors=True)
        sysfs_builder.build(os.path.join(hand, "dgx8"))
        sysfs_builder.build(os.path.join(hand, "dgx8-broken"), broken=True)
        for old in os.listdir(out):
            if old.startswith(".complete-"):
                os.unlink(os.path.join(out, old))
        with open(stamp, "w") as handle:
            handle.write("ok\n")
    roots["dgx8"] = os.path.join(hand, "dgx8")
    roots["dgx8-broken"] = os.path.join(hand, "dgx8-broken")
    # Stable names for inventories: <out>/roots/<name> -> the sysfs root.
    links = os.path.join(out, "roots")
    os.makedirs(links, exist_ok=True)
    for name, root in roots.items():
        link = os.path.join(links, name)
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(os.path.relpath(root, links), link)
    return roots


if __name__ == "__main__":
    prepare(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".cache", "fixtures"))
