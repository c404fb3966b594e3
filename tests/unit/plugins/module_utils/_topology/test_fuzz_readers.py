"""Property-based tests: random and truncated contents fed to every parser never raise.

Each sysfs/procfs file the reader parses is overwritten with random bytes in a copy of a hand-written
tree; XML readers get random and truncated documents. The only acceptable failure is TopologyError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import parse_cpulist, parse_cpumask
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import parse_link_speed, parse_link_width
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import normalize_pci_address
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import parse_proc_bonding
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import parse_acs_control
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.rdma import ipv4_from_gid

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Files of the hand-written tree that the reader parses, relative to its root.
TARGETS = [
    "sys/devices/system/node/node0/cpulist",
    "sys/devices/system/node/node0/distance",
    "sys/devices/system/node/node1/meminfo",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:00.0/0000:15:00.0/class",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:00.0/0000:15:00.0/numa_node",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:00.0/0000:15:00.0/"
    "current_link_speed",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:00.0/0000:15:00.0/"
    "max_link_width",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:00.0/0000:15:00.0/"
    "local_cpulist",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:01.0/0000:16:00.0/"
    "net/ens1np0/speed",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:01.0/0000:16:00.0/"
    "net/ens1np0/mtu",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:01.0/0000:16:00.0/"
    "infiniband/mlx5_0/ports/1/rate",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:01.0/0000:16:00.0/"
    "infiniband/mlx5_0/ports/1/gids/3",
    "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:01.0/0000:16:00.0/"
    "infiniband/mlx5_0/ports/1/state",
    "proc/net/bonding/bond0",
    "proc/net/vlan/config",
    "sys/devices/virtual/net/bond0/bonding/mode",
]


@pytest.fixture(scope="module")
def base_tree(roots, tmp_path_factory):
    dest = tmp_path_factory.mktemp("fuzz") / "node"
    shutil.copytree(roots["dgx8"], str(dest), symlinks=True)
    for target in TARGETS:
        assert os.path.isfile(str(dest / target)), target
    return dest


@SETTINGS
@given(index=st.integers(min_value=0, max_value=len(TARGETS) - 1), data=st.binary(max_size=300))
def test_random_sysfs_file_contents(base_tree, index, data):
    path = str(base_tree / TARGETS[index])
    with open(path, "rb") as handle:
        original = handle.read()
    try:
        with open(path, "wb") as handle:
            handle.write(data)
        facts = gather(root=str(base_tree))
        assert len(facts["gpus"]) >= 7
    finally:
        with open(path, "wb") as handle:
            handle.write(original)


@SETTINGS
@given(index=st.integers(min_value=0, max_value=len(TARGETS) - 1), cut=st.floats(min_value=0, max_value=1))
def test_truncated_sysfs_files(base_tree, index, cut):
    path = str(base_tree / TARGETS[index])
    with open(path, "rb") as handle:
        original = handle.read()
    try:
        with open(path, "wb") as handle:
            handle.write(original[: int(len(original) * cut)])
        gather(root=str(base_tree))
    finally:
        with open(path, "wb") as handle:
            handle.write(original)


@SETTINGS
@given(data=st.binary(max_size=5000))
def test_config_space_parser_never_raises(data):
    readable, control = parse_acs_control(data)
    assert readable == (len(data) >= 0x104)
    assert control is None or 0 <= control <= 0xFFFF


@SETTINGS
@given(text=st.text(max_size=200))
def test_text_parsers_never_raise(text):
    parse_link_speed(text)
    parse_link_width(text)
    parse_cpulist(text)
    parse_cpumask(text)
    ipv4_from_gid(text)
    normalize_pci_address(text)
    parse_proc_bonding("bond0", text)


@SETTINGS
@given(cut=st.floats(min_value=0, max_value=1), source=st.sampled_from([
    ("hwloc_xml", "hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"),
    ("hwloc_xml", "hwloc-xeonphi-mlx4-2numa", "32em64t-2n8c+dax+nvme+mic+dimms.xml"),
    ("nccl_xml", "rccl-mi300x-8gpu-cx7", "topo_8p_940.xml"),
]))
def test_truncated_xml(tmp_path_factory, realdata, cut, source):
    kind, folder, name = source
    with open(realdata(folder, name), "rb") as handle:
        data = handle.read()
    path = tmp_path_factory.mktemp("xml") / "cut.xml"
    path.write_bytes(data[: int(len(data) * cut)])
    try:
        gather(source=kind, path=str(path))
    except TopologyError as exc:
        assert str(path) in str(exc)


attribute_values = st.one_of(st.text(max_size=20), st.sampled_from(["", "-1", "0x", "Unknown", "99999999999"]))


@SETTINGS
@given(busid=attribute_values, klass=attribute_values, speed=attribute_values, width=attribute_values,
       netspeed=attribute_values, numaid=attribute_values, affinity=attribute_values)
def test_random_nccl_attributes(tmp_path_factory, busid, klass, speed, width, netspeed, numaid, affinity):
    from xml.sax.saxutils import quoteattr
    doc = (
        "<system version='2'><cpu numaid=%s affinity=%s>"
        "<pci busid=%s class=%s link_speed=%s link_width=%s><gpu dev='0'/></pci>"
        "<pci busid='0000:07:00.0' class='0x020700'><nic><net name='mlx5_0' speed=%s port='1' gdr='1'/></nic></pci>"
        "</cpu></system>"
    ) % tuple(quoteattr(v) for v in (numaid, affinity, busid, klass, speed, width, netspeed))
    path = tmp_path_factory.mktemp("nccl") / "topo.xml"
    path.write_text(doc)
    try:
        gather(source="nccl_xml", path=str(path))
    except TopologyError as exc:
        assert str(path) in str(exc)
