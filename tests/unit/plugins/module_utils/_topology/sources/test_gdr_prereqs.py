"""GPUDirect prerequisites read from real captures (tests/fixtures/realdata/gdr-prereqs, each with PROVENANCE.md):
PCIe payload and read request sizes and relaxed ordering from `lspci -xxx` dumps checked against lspci's own reading,
the open or proprietary GPU kernel module from /proc/driver/nvidia/version, the IOMMU options of /proc/cmdline; and
on the hand-written nodes (tests/fixtures/handwritten) the facts they become."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from conftest import REPO
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.kernel import (
    iommu_options, parse_nvidia_version, parse_release,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import parse_pcie_control

DATA = os.path.join(REPO, "tests", "fixtures", "realdata", "gdr-prereqs")
_DEVICE = re.compile(r"^(?:>\s*)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) \S")
_ROW = re.compile(r"^(?:>\s*)?([0-9a-f]{2,3}): ((?:[0-9a-f]{2} ?){16})\s*$")


def hexdumps(name, filename):
    """{device: config bytes} of an `lspci -xxx` dump as posted: rows by their offset, cut at the first missing row
    (a row the post lost must not shift the ones after it)."""
    devices, current = {}, None
    with open(os.path.join(DATA, name, filename)) as handle:
        for line in handle:
            device = _DEVICE.match(line)
            if device:
                current = devices.setdefault(device.group(1), {})
                continue
            row = _ROW.match(line)
            if row and current is not None:
                current[int(row.group(1), 16)] = bytes(int(b, 16) for b in row.group(2).split())
    out = {}
    for device, rows in devices.items():
        data = b""
        while len(data) in rows:
            data += rows[len(data)]
        out[device] = data
    return out


@pytest.mark.parametrize("name,filename,device,want", [
    # lspci's own reading, in the same post
    ("lspci-quadro-p1000-vfio-xeond", "lspci-vvvxxx.txt", "05:00.0", (256, 256, 4096, True)),
    ("lspci-quadro-p1000-vfio-xeond", "lspci-vvvxxx.txt", "05:00.1", (256, 256, 4096, False)),
    ("lspci-gtx645-rk3399-asm1184e", "lspci-vvxxx.txt", "04:00.1", (256, 256, 512, True)),
    # decoded by hand in PROVENANCE.md (no lspci reading was posted with it)
    ("lspci-cx5ex-hex-only-sriov-thread", "lspci-xxx.txt", None, (512, 512, 512, True)),
])
def test_payload_read_request_and_relaxed_ordering_as_lspci_reads_them(name, filename, device, want):
    dumps = hexdumps(name, filename)
    data = dumps[device] if device else next(iter(dumps.values()), None) or _only_rows(name, filename)
    got = parse_pcie_control(data)
    assert got["readable"] is True
    assert (got["mps_supported"], got["mps"], got["mrrs"], got["relaxed_ordering"]) == want


def _only_rows(name, filename):
    """A dump posted without its device line."""
    rows = {}
    with open(os.path.join(DATA, name, filename)) as handle:
        for line in handle:
            row = _ROW.match(line)
            if row:
                rows.setdefault(int(row.group(1), 16), bytes(int(b, 16) for b in row.group(2).split()))
    data = b""
    while len(data) in rows:
        data += rows[len(data)]
    return data


def test_a_dump_that_lost_the_control_row_reads_as_unknown():
    # the GTX 645's post lost its 80: row, where Device Control lives: unknown, not a guess
    data = hexdumps("lspci-gtx645-rk3399-asm1184e", "lspci-vvxxx.txt")["04:00.0"]
    assert len(data) == 0x80
    assert parse_pcie_control(data)["readable"] is False


def test_short_and_odd_config_spaces():
    assert parse_pcie_control(b"")["readable"] is False            # nothing
    header = bytearray(64)
    header[6], header[0x34] = 0x10, 0x60
    assert parse_pcie_control(bytes(header))["readable"] is False  # the 64 bytes a non-root reader gets
    no_caps = bytearray(256)
    assert parse_pcie_control(bytes(no_caps)) is None             # no capability list
    loop = bytearray(256)
    loop[6], loop[0x34], loop[0x40], loop[0x41] = 0x10, 0x40, 0x05, 0x40  # a list pointing at itself
    assert parse_pcie_control(bytes(loop)) is None
    reserved = bytearray(256)
    reserved[6], reserved[0x34], reserved[0x40] = 0x10, 0x40, 0x10
    reserved[0x44], reserved[0x48], reserved[0x49] = 0x07, 0xE0, 0x70  # reserved encodings 7
    got = parse_pcie_control(bytes(reserved))
    assert (got["mps_supported"], got["mps"], got["mrrs"]) == (None, None, None)


@pytest.mark.parametrize("name,want", [
    ("nvidia-version-open-565-ubuntu2404", ("565.57.01", True)),
    ("nvidia-version-proprietary-384-ubuntu", ("384.98", False)),
    ("nvidia-version-open-jetson-l4t-35", ("35.3.1", True)),
])
def test_open_and_proprietary_gpu_kernel_modules(name, want):
    with open(os.path.join(DATA, name, "nvidia-version.txt")) as handle:
        got = parse_nvidia_version(handle.read())
    assert (got["version"], got["open_module"]) == want


def test_iommu_options_of_a_real_command_line():
    with open(os.path.join(DATA, "cmdline-iommu-pt-mi100-rccl", "cmdline.txt")) as handle:
        assert iommu_options(handle.read()) == {"iommu": "pt"}
    assert iommu_options("ro intel_iommu=on iommu=nopt intel_iommu=off quiet") == {"intel_iommu": "off",
                                                                                   "iommu": "nopt"}
    assert iommu_options(None) == {}
    assert parse_release("6.8.0-45-generic") == (6, 8) and parse_release("junk") is None


def test_hand_written_nodes_become_gpudirect_facts(healthy, broken):
    assert healthy["gpudirect"]["dmabuf"] == {"kernel": True, "open_module": True, "possible": True}
    assert healthy["gpudirect"]["iommu"]["mode"] == "passthrough"
    assert broken["gpudirect"]["dmabuf"]["possible"] is False and broken["gpudirect"]["peermem"] is None
    assert broken["gpudirect"]["iommu"]["mode"] == "translated"
    pci = dict((p["address"], p) for p in broken["pci"])
    assert pci["0000:19:00.0"]["iommu"]["type"] == "DMA-FQ"
    assert pci["0000:1a:00.0"]["pcie_control"]["mps"] == 128
    assert pci["0000:1a:00.0"]["pcie_control"]["relaxed_ordering"] is False


def test_captures_without_them_read_as_unknown(roots):
    facts = gather(root=roots["hwloc-xeonphi-mlx4-2numa"])
    assert facts["gpudirect"]["iommu"]["mode"] == "unknown" and facts["gpudirect"]["nvidia_driver"] is None
    assert facts["gpudirect"]["dmabuf"]["possible"] is None
    # the capture kept 64 bytes of config space per function: the PCI Express capability is past them
    nic = [p for p in facts["pci"] if p["address"] == "0000:02:00.0"][0]
    assert nic["pcie_control"]["readable"] is False


def test_odd_iommu_links_types_and_short_capabilities(roots, tmp_path):
    import shutil
    tree = str(tmp_path / "node")
    shutil.copytree(roots["dgx8"], tree, symlinks=True)
    gpu = [os.path.join(d, "iommu_group") for d, _dirs, files in os.walk(os.path.join(tree, "sys", "devices"))
           if d.endswith("0000:15:00.0")][0]
    os.unlink(gpu)
    os.symlink("../../../../../../kernel/iommu_groups/\u00b2", gpu)  # a digit int() refuses
    with open(os.path.join(tree, "sys", "kernel", "iommu_groups", "12", "type"), "w") as handle:
        handle.write("unknown\n")  # a group without a default domain
    with open(os.path.join(tree, "sys", "kernel", "iommu_groups", "11", "type"), "w") as handle:
        handle.write("DMA-FQ\n")  # mlx5_0's
    facts = gather(root=tree)
    pci = dict((p["address"], p) for p in facts["pci"])
    assert pci["0000:15:00.0"]["iommu"] is None
    assert any("not an IOMMU group number" in w for w in facts["warnings"])
    assert not any("not a domain type" in w for w in facts["warnings"])
    assert facts["gpudirect"]["iommu"]["mode"] == "mixed"  # one data device translated, the rest identity
    # a short capability at the end of the 256 bytes: no PCI Express capability, not "unreadable"
    config = bytearray(256)
    config[6], config[0x34], config[0xFC], config[0xFD] = 0x10, 0xFC, 0x05, 0x00
    assert parse_pcie_control(bytes(config)) is None


def test_the_live_kernel_release_is_read_through_proc_sys():
    """/proc/sys allocates a kernel buffer of the size a read asks for and refuses a few MiB with ENOMEM: the reader
    must ask in small chunks, or the kernel release of every live node is lost (this machine's own /proc)."""
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.reader import SysfsReader
    reader = SysfsReader("/")
    reader.read_kernel()
    assert reader.topo.kernel["release"] == os.uname().release
    assert not [w for w in reader.topo.warnings if "osrelease" in w], reader.topo.warnings
