"""The parsers of a tool's output look at a bounded prefix of it: a runaway output (a tool stuck printing one line)
costs bounded work, never a split of all of it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import ethtool, lldp, nvidia_smi


def test_lldp_refuses_an_output_past_its_bound():
    huge = "x" * (lldp.MAX_BYTES + 1)
    with pytest.raises(lldp.LldpError, match="more than 16 MiB"):
        lldp.parse(huge)
    with pytest.raises(lldp.LldpError, match="more than 16 MiB"):
        lldp.parse_keyvalue(huge)
    assert lldp.parse("{}") == {}


def test_ethtool_reads_its_bound_of_a_runaway_output():
    text = "Settings for ens1np0:\n\tSpeed: 400000Mb/s\n" + "x" * (ethtool.MAX_BYTES * 4) + "\n\tDuplex: Full\n"
    parsed = ethtool.parse(text)
    assert parsed["name"] == "ens1np0" and parsed["speed_mbps"] == 400000 and parsed["duplex"] is None


def test_nvidia_smi_reads_its_bound_of_a_runaway_output():
    # a GPU's section, then a runaway with its line ends past the bound: what follows it is never looked at
    text = ("GPU 00000000:18:00.0\n" + "x" * nvidia_smi.MAX_BYTES + "\nGPU 00000000:2A:00.0\n")
    assert [g["address"] for g in nvidia_smi.parse_smi_query(text)] == ["0000:18:00.0"]
    assert nvidia_smi.parse_topo_matrix("\n" * (2 * nvidia_smi.MAX_BYTES))["columns"] == []
