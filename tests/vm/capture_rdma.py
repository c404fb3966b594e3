"""Run inside a test VM (python3 - < capture_rdma.py OUT.tar.gz): capture what the collection's sysfs reader reads of
the RDMA devices and the interfaces under them, as the kernel serves them, into a tarball laid out as sysfs (the
class links, the device folders they point to, /sys/module's entries), and the tools' own view beside it
(tools/*.txt): ibv_devinfo -v, ibv_devices, rdma link/dev/statistic show, ip -details link. tests/unit reads the
tarball as a real capture (tests/fixtures/realdata/soft-roce-vm, PROVENANCE.md says how it was made).

Only attribute files are copied (at most 64 KiB each, folders at most 4 levels below a device); power/, queues/ and
the GID table's unused entries (all zeros, 1024 per port) are left out."""

import os
import subprocess
import sys
import tarfile
import tempfile

SKIP = ("power", "queues", "pkeys", "msi_irqs")
MODULES = ("ib_core", "rdma_rxe", "siw", "mlx5_core", "bonding", "8021q", "nvidia", "nvidia_peermem",
           "nv_peer_mem", "amdgpu")
TOOLS = (("ibv_devinfo-v.txt", ["ibv_devinfo", "-v"]), ("ibv_devices.txt", ["ibv_devices"]),
         ("rdma-link-show.txt", ["rdma", "link", "show"]), ("rdma-dev-show.txt", ["rdma", "dev", "show"]),
         ("rdma-statistic-show.txt", ["rdma", "statistic", "show"]),
         ("ip-details-link.txt", ["ip", "-details", "link", "show"]), ("uname-r.txt", ["uname", "-r"]))
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def copy_tree(source, tree, depth=0):
    """Copy ``source`` (a real folder under /sys/devices) into ``tree``: files, and links as links."""
    target = os.path.join(tree, source.lstrip("/"))
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if name in SKIP:
            continue
        if os.path.islink(path):
            os.symlink(os.readlink(path), os.path.join(target, name))
        elif os.path.isdir(path):
            if depth < 4 and not (os.path.basename(source) == "net" and depth == 0 and name == "lo"):
                copy_tree(path, tree, depth + 1)
        elif os.path.isfile(path):
            try:
                with open(path, "rb") as handle:
                    data = handle.read(65536)
            except OSError:
                continue  # write-only or refusing attributes
            if os.path.basename(source) == "gids" and data.strip().decode(errors="replace") == ZERO_GID:
                continue
            with open(os.path.join(target, name), "wb") as handle:
                handle.write(data)


def copy_files(source, tree):
    """The attribute files and links directly in ``source``, not its folders."""
    target = os.path.join(tree, source.lstrip("/"))
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(source)):
        path, dest = os.path.join(source, name), os.path.join(target, name)
        if os.path.lexists(dest):
            continue
        if os.path.islink(path):
            os.symlink(os.readlink(path), dest)
        elif os.path.isfile(path) and name not in ("rom", "remove", "rescan", "reset"):
            try:
                with open(path, "rb") as handle:
                    data = handle.read(65536)
            except OSError:
                continue
            with open(dest, "wb") as handle:
                handle.write(data)


def main(out):
    tree = tempfile.mkdtemp(prefix="rdma-capture-")
    devices = set()
    for cls in ("infiniband", "net"):
        folder = "/sys/class/" + cls
        os.makedirs(os.path.join(tree, folder.lstrip("/")), exist_ok=True)
        for name in sorted(os.listdir(folder)):
            link = os.path.join(folder, name)
            if os.path.islink(link):
                os.symlink(os.readlink(link), os.path.join(tree, link.lstrip("/")))
                devices.add(os.path.realpath(link))
            elif os.path.isfile(link):  # bonding_masters
                with open(link, "rb") as src, open(os.path.join(tree, link.lstrip("/")), "wb") as dst:
                    dst.write(src.read(65536))
    for device in sorted(devices):
        copy_tree(device, tree)
        # the PCI functions and bridges above a device: their own attribute files (the reader's PCI walk)
        parent = os.path.dirname(device)
        while parent.startswith("/sys/devices/pci"):
            copy_files(parent, tree)
            parent = os.path.dirname(parent)
    for folder in ("/sys/devices/system/node", "/sys/devices/system/node/node0"):
        if os.path.isdir(folder):
            copy_files(folder, tree)
    for module in MODULES:
        if os.path.isdir("/sys/module/" + module):
            os.makedirs(os.path.join(tree, "sys", "module", module))
    for path in ("/proc/sys/kernel/random/boot_id", "/proc/uptime", "/proc/net/vlan/config"):
        if os.path.isfile(path):
            os.makedirs(os.path.dirname(os.path.join(tree, path.lstrip("/"))), exist_ok=True)
            with open(path, "rb") as src, open(os.path.join(tree, path.lstrip("/")), "wb") as dst:
                dst.write(src.read(65536))
    os.makedirs(os.path.join(tree, "tools"))
    for name, argv in TOOLS:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=60, check=False)
        with open(os.path.join(tree, "tools", name), "wb") as handle:
            handle.write(done.stdout)
    with tarfile.open(out, "w:gz") as archive:
        for top in ("sys", "proc", "tools"):
            if os.path.isdir(os.path.join(tree, top)):
                archive.add(os.path.join(tree, top), arcname=top)


if __name__ == "__main__":
    main(sys.argv[1])
