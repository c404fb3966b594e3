"""NVML enrichment. NVML cannot run here (no GPU), so a fake stands in for the pynvml functions the
code calls (the library boundary); the real pynvml is used for the missing-library path."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology import facts as _facts
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvml import read_nvml
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.subsets import SUBSETS


class FakeNVMLError(Exception):
    pass


class FakePciInfo:
    def __init__(self, bus_id):
        self.busId = bus_id


class FakeNvml:
    """The subset of pynvml that _nvml calls, answering from a table of GPUs."""

    NVMLError = FakeNVMLError

    def __init__(self, gpus, init_error=None, unsupported=()):
        self.gpus = gpus
        self.init_error = init_error
        self.unsupported = set(unsupported)
        self.shutdown_called = False

    def nvmlInit(self):
        if self.init_error:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shutdown_called = True

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        return self.gpus[index]

    def nvmlDeviceGetPciInfo(self, handle):
        return FakePciInfo(handle["bus"])

    def _get(self, key):
        def call(handle):
            if key in self.unsupported:
                raise FakeNVMLError("Not Supported")
            return handle[key]
        return call

    def __getattr__(self, name):
        keys = {
            "nvmlDeviceGetName": "name", "nvmlDeviceGetUUID": "uuid",
            "nvmlDeviceGetMaxPcieLinkGeneration": "max_gen", "nvmlDeviceGetMaxPcieLinkWidth": "max_width",
            "nvmlDeviceGetCurrPcieLinkGeneration": "cur_gen", "nvmlDeviceGetCurrPcieLinkWidth": "cur_width",
            "nvmlDeviceGetPerformanceState": "pstate",
        }
        if name in keys:
            return self._get(keys[name])
        raise AttributeError(name)


def gpu(bus, cur_gen=5, cur_width=16, pstate=0, max_gen=5, max_width=16):
    return {"bus": bus, "name": b"NVIDIA H100 80GB HBM3", "uuid": "GPU-%s" % bus[-7:-5], "max_gen": max_gen,
            "max_width": max_width, "cur_gen": cur_gen, "cur_width": cur_width, "pstate": pstate}


def facts_with(roots, fake):
    topo = _facts.load_topology(root=roots["dgx8"])
    status, infos = read_nvml(fake)
    topo.gpu_info.update(infos)
    return status, {g["address"]: g for g in _facts.build_facts(topo, SUBSETS, status)["gpus"]}


def test_idle_gpu_at_gen1_is_idle_not_degraded(roots):
    fake = FakeNvml([gpu("00000000:15:00.0", cur_gen=1, pstate=8)])
    status, gpus = facts_with(roots, fake)
    assert status == {"status": "used", "reason": None, "driver_version": "550.54.15"}
    g = gpus["0000:15:00.0"]
    assert g["link_state"] == "idle" and "P8" in g["link_state_reason"]
    assert g["name"] == "NVIDIA H100 80GB HBM3" and g["facts_from"] == "nvml"
    assert g["nvml"]["max_gbytes_per_s"] == pytest.approx(63.015, abs=0.001)
    assert fake.shutdown_called


def test_busy_gpu_below_max_generation_is_degraded(roots):
    _status, gpus = facts_with(roots, FakeNvml([gpu("00000000:19:00.0", cur_gen=4, pstate=0)]))
    assert gpus["0000:19:00.0"]["link_state"] == "degraded"
    assert "busy (P0)" in gpus["0000:19:00.0"]["link_state_reason"]


def test_narrow_width_is_degraded_even_when_idle(roots):
    _status, gpus = facts_with(roots, FakeNvml([gpu("00000000:35:00.0", cur_gen=1, cur_width=8, pstate=8)]))
    assert gpus["0000:35:00.0"]["link_state"] == "degraded"


def test_gpus_nvml_does_not_know_keep_sysfs_facts(roots):
    _status, gpus = facts_with(roots, FakeNvml([gpu("00000000:15:00.0")]))
    assert gpus["0000:95:00.0"]["nvml"] is None and gpus["0000:95:00.0"]["facts_from"] == "sysfs"


def test_unsupported_query_leaves_field_null(roots):
    _status, gpus = facts_with(roots, FakeNvml([gpu("00000000:15:00.0")], unsupported={"pstate", "uuid"}))
    assert gpus["0000:15:00.0"]["nvml"]["performance_state"] is None
    assert gpus["0000:15:00.0"]["nvml"]["uuid"] is None


@pytest.mark.parametrize("error", ["Driver Not Loaded", "NVML Shared Library Not Found"])
def test_init_errors(error):
    status, infos = read_nvml(FakeNvml([], init_error=error))
    assert status["status"] == "unavailable" and error in status["reason"] and infos == {}


def test_real_pynvml_without_driver():
    """The real pynvml on a machine without the NVIDIA driver: NVML cannot start, no exception."""
    import pynvml
    status, infos = read_nvml(pynvml)
    if status["status"] == "used":  # a machine with a GPU: then there are GPUs to report
        assert infos
    else:
        assert status["reason"].startswith("NVML could not start") and infos == {}


def test_missing_library_reason(monkeypatch):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import nvml as _nvml
    monkeypatch.setattr(_nvml, "_pynvml", None)
    status, _infos = _nvml.read_nvml()
    assert status["status"] == "unavailable" and "not installed" in status["reason"]


def test_nvml_yes_refuses_captures(roots):
    with pytest.raises(TopologyError, match="nvml: yes needs the live machine"):
        _facts.gather(root=roots["dgx8"], nvml="yes")


def test_captures_never_use_nvml(healthy):
    facts = healthy
    assert facts["nvml"]["status"] == "not_used" and "capture" in facts["nvml"]["reason"]
    assert all(g["link_state"] == "ok" for g in facts["gpus"])


# ---- NVLink (issue 33) ------------------------------------------------------------------------------------------
class FakeNotSupported(FakeNVMLError):
    pass


class FakeNvlinkNvml(FakeNvml):
    """FakeNvml with pynvml's NVLink calls: each GPU's "nvlink" is a list of (remote bus id, remote type) per link,
    "nvlink_error" an error its link 0 raises instead."""

    NVMLError_NotSupported = FakeNotSupported

    def nvmlDeviceGetNvLinkState(self, handle, link):
        if handle.get("nvlink_error") and link == 0:
            raise handle["nvlink_error"]
        if "nvlink" not in handle:
            raise FakeNotSupported("Not Supported")
        if link >= len(handle["nvlink"]):
            raise FakeNVMLError("Invalid Argument")
        return 1 if handle["nvlink"][link] else 0

    def nvmlDeviceGetNvLinkVersion(self, handle, link):
        return 4

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, handle, link):
        return FakePciInfo(handle["nvlink"][link][0])

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle, link):
        return handle["nvlink"][link][1]


SWITCHES = ["00000000:%02x:00.0" % b for b in (5, 6, 7, 8)]


def test_nvlink_through_nvswitches_and_gpu_to_gpu(roots):
    # 18 links to four NVSwitches (5 + 5 + 4 + 4), the third link down; the second GPU: 4 links to the first,
    # the remote's type not reported (an older driver): a GPU of the node is a peer
    to_switches = [(SWITCHES[i % 4], 2) for i in range(18)]
    to_switches[2] = None
    direct = dict(gpu("00000000:19:00.0"), nvlink=[("00000000:15:00.0", 99)] * 4)
    status, gpus = facts_with(roots, FakeNvlinkNvml([dict(gpu("00000000:15:00.0"), nvlink=to_switches), direct]))
    nvlink = gpus["0000:15:00.0"]["nvlink"]
    assert (nvlink["links"], nvlink["to_switch"], nvlink["peers"], nvlink["version"], nvlink["source"]) == (
        17, 17, [], 4, "nvml")
    assert gpus["0000:19:00.0"]["nvlink"]["peers"] == [{"address": "0000:15:00.0", "links": 4}]
    assert gpus["0000:19:00.0"]["nvlink"]["to_switch"] == 0
    assert gpus["0000:95:00.0"]["nvlink"] is None  # NVML does not know it: nothing said


def test_nvlink_none_unknown_and_old_pynvml(roots):
    none = gpu("00000000:15:00.0")  # NVML: not supported -> no NVLink
    odd = dict(gpu("00000000:19:00.0"), nvlink_error=FakeNVMLError("Unknown Error"))
    _status, gpus = facts_with(roots, FakeNvlinkNvml([none, odd]))
    assert gpus["0000:15:00.0"]["nvlink"] == {"links": 0, "version": None, "to_switch": 0, "peers": [],
                                              "source": "nvml"}
    assert gpus["0000:19:00.0"]["nvlink"] is None  # NVML could not tell
    _status, gpus = facts_with(roots, FakeNvml([gpu("00000000:15:00.0")]))  # a pynvml without the NVLink calls
    assert gpus["0000:15:00.0"]["nvlink"] is None


def test_power9_cpu_links_are_no_switch_and_a_switch_without_an_address_still_counts(roots):
    # NVML_NVLINK_DEVICE_TYPE_IBMNPU (1): a POWER9 CPU's NVLinks; the second GPU's remote PCI info is not supported
    class NoRemoteAddress(FakeNvlinkNvml):
        def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, handle, link):
            if handle.get("no_address"):
                raise FakeNotSupported("Not Supported")
            return FakePciInfo(handle["nvlink"][link][0])

    power9 = dict(gpu("00000000:15:00.0"), nvlink=[("00000000:04:00.0", 1)] * 3 + [("00000000:19:00.0", 0)] * 3)
    hidden = dict(gpu("00000000:19:00.0"), nvlink=[(None, 2)] * 18, no_address=True)
    _status, gpus = facts_with(roots, NoRemoteAddress([power9, hidden]))
    first = gpus["0000:15:00.0"]["nvlink"]
    assert (first["links"], first["to_switch"], first["peers"]) == (6, 0, [{"address": "0000:19:00.0", "links": 3}])
    second = gpus["0000:19:00.0"]["nvlink"]
    assert (second["links"], second["to_switch"], second["peers"]) == (18, 18, [])
