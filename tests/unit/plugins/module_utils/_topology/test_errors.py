"""Bad input: clear messages naming the path, never a traceback; odd values become null plus a warning."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather


def test_root_that_is_not_sysfs(tmp_path):
    with pytest.raises(TopologyError) as err:
        gather(root=str(tmp_path))
    assert str(tmp_path) in str(err.value) and "not a sysfs tree" in str(err.value)


def test_root_that_does_not_exist(tmp_path):
    with pytest.raises(TopologyError, match="not a sysfs tree"):
        gather(root=str(tmp_path / "missing"))


@pytest.fixture
def tree(tmp_path, roots):
    dest = tmp_path / "node"
    shutil.copytree(roots["dgx8"], str(dest), symlinks=True)
    return dest


def gpu_dir(tree):
    for current, dirs, _files in os.walk(str(tree / "sys" / "devices")):
        if os.path.basename(current) == "0000:15:00.0":
            return current
    raise AssertionError("GPU directory not found")


def test_garbled_file_becomes_null_with_warning(tree):
    with open(os.path.join(gpu_dir(tree), "numa_node"), "wb") as handle:
        handle.write(b"\xff\xfe\x00garbage")
    facts = gather(root=str(tree))
    g = [g for g in facts["gpus"] if g["address"] == "0000:15:00.0"][0]
    assert g["numa_node"] is None
    assert any("numa_node: not text" in w for w in facts["warnings"])


def test_non_numeric_value(tree):
    with open(os.path.join(gpu_dir(tree), "numa_node"), "w") as handle:
        handle.write("zero\n")
    facts = gather(root=str(tree))
    assert any("numa_node: 'zero' is not a number" in w for w in facts["warnings"])


def test_fifo_is_not_read(tree):
    """A FIFO where a file should be would block open(); the reader must not hang on it."""
    path = os.path.join(gpu_dir(tree), "current_link_speed")
    os.unlink(path)
    os.mkfifo(path)
    facts = gather(root=str(tree))
    g = [g for g in facts["gpus"] if g["address"] == "0000:15:00.0"][0]
    assert g["link"]["current"]["speed_gts"] is None
    assert any("current_link_speed: not a regular file" in w for w in facts["warnings"])


def test_directory_in_place_of_file(tree):
    for name in ("uevent", "class"):
        path = os.path.join(gpu_dir(tree), name)
        os.unlink(path)
        os.mkdir(path)
    facts = gather(root=str(tree))
    assert [p for p in facts["pci"] if p["address"] == "0000:15:00.0"][0]["class"] is None


def test_unknown_speed_spelling_warns(tree):
    with open(os.path.join(gpu_dir(tree), "max_link_speed"), "w") as handle:
        handle.write("fast\n")
    facts = gather(root=str(tree))
    assert any("max_link_speed: 'fast' not understood" in w for w in facts["warnings"])


def test_unknown_speed_is_quietly_null(tree):
    with open(os.path.join(gpu_dir(tree), "max_link_speed"), "w") as handle:
        handle.write("Unknown\n")
    facts = gather(root=str(tree))
    assert not any("max_link_speed" in w for w in facts["warnings"])


def test_distance_matrix_of_wrong_size(tree):
    with open(str(tree / "sys/devices/system/node/node0/distance"), "w") as handle:
        handle.write("10 21 31\n")
    facts = gather(root=str(tree))
    assert facts["numa"]["nodes"][0]["distances"] == {}
    assert any("does not match the 2 nodes" in w for w in facts["warnings"])


@pytest.mark.parametrize("content,message", [
    (b"<topology><object", "malformed XML"),
    (b"<system version='2'/>", "root element is <system>, expected <topology>"),
    (b"<!DOCTYPE t [<!ENTITY a 'b'>]><topology/>", "entity declarations are not accepted"),
    (b"", "malformed XML"),
])
def test_bad_hwloc_xml(tmp_path, content, message):
    path = tmp_path / "bad.xml"
    path.write_bytes(content)
    with pytest.raises(TopologyError) as err:
        gather(source="hwloc_xml", path=str(path))
    assert str(path) in str(err.value) and message in str(err.value)


def test_missing_xml(tmp_path):
    with pytest.raises(TopologyError, match="cannot read"):
        gather(source="nccl_xml", path=str(tmp_path / "none.xml"))


def test_xml_source_without_path():
    with pytest.raises(TopologyError, match="path is required when source is nccl_xml"):
        gather(source="nccl_xml")


def test_truncated_real_xml(tmp_path, realdata):
    with open(realdata("rccl-mi300x-8gpu-cx7", "topo_8p_940.xml"), "rb") as handle:
        data = handle.read()
    path = tmp_path / "cut.xml"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TopologyError, match="malformed XML"):
        gather(source="nccl_xml", path=str(path))


def test_without_uevent_the_single_files_are_read(tree):
    """Old kernels and partial captures may lack uevent; class, ids and driver come from the other files."""
    with_uevent = [p for p in gather(root=str(tree))["pci"] if p["address"] == "0000:15:00.0"][0]
    os.unlink(os.path.join(gpu_dir(tree), "uevent"))
    without = [p for p in gather(root=str(tree))["pci"] if p["address"] == "0000:15:00.0"][0]
    assert without == with_uevent
    assert (without["class"], without["vendor_id"], without["driver"]) == ("0x030200", "0x10de", "nvidia")
