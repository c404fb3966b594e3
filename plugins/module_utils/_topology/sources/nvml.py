# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""GPU details from NVIDIA's NVML (the ``pynvml`` module of nvidia-ml-py).

The module object is injectable so tests can stand a fake in at the library boundary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import GpuInfo
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import normalize_pci_address

PYNVML_IMPORT_ERROR = None
try:
    import pynvml as _pynvml
except ImportError:  # pragma: no cover - depends on the host
    _pynvml = None
    PYNVML_IMPORT_ERROR = traceback.format_exc()


# What NVML can answer, per GpuInfo field: (low, high) for numbers; anything else is left None with a warning.
MAX_GPUS = 4096
_LIMITS = {
    "max_generation": (1, 15),
    "current_generation": (1, 15),
    "max_width": (1, 32),
    "current_width": (1, 32),
    "performance_state": (0, 15),
}
_WIDTHS = (1, 2, 4, 8, 12, 16, 32)
_PSTATE_UNKNOWN = 32  # NVML_PSTATE_UNKNOWN
_MAX_TEXT = 256


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _checked(attr, value, address, warn):
    """``value`` when it is something NVML can say for ``attr``, else None (with a warning)."""
    if attr in ("name", "uuid"):
        value = _text(value)
        if isinstance(value, str) and value and len(value) <= _MAX_TEXT and "\x00" not in value:
            return value
        reason = "not a short text"
    else:
        if attr == "performance_state" and value == _PSTATE_UNKNOWN:
            return None
        low, high = _LIMITS[attr]
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high and (
                "width" not in attr or value in _WIDTHS):
            return value
        reason = "outside %d..%d" % (low, high)
    if warn is not None:
        shown = repr(value)
        warn("NVML %s of GPU %s: %s is %s, ignored" % (attr, address, shown if len(shown) <= 40 else shown[:36] + "...",
                                                       reason))
    return None


MAX_NVLINKS = 18  # NVML_NVLINK_MAX_LINKS (nvml.h): 18 links a GPU since Hopper
NVLINK_TYPES = {0: "gpu", 1: "cpu", 2: "switch"}  # NVML_NVLINK_DEVICE_TYPE_GPU, _IBMNPU (a POWER9 CPU), _SWITCH


# what a binding of another shape raises (a call that takes other arguments, an answer without busId): the NVLink
# answer is then unknown, never an error of the gather
_ODD = (AttributeError, TypeError, ValueError, KeyError, IndexError)


def _nvlink(module, handle, error_class):
    """The GPU's NVLinks as NVML reports them (GpuInfo.nvlink), or None when NVML cannot tell."""
    caught = _ODD + (error_class,)
    try:
        not_supported = getattr(module, "NVMLError_NotSupported", None)
    except caught:
        not_supported = None
    out = {"links": 0, "version": None, "remotes": {}}
    for link in range(MAX_NVLINKS):
        try:
            state = module.nvmlDeviceGetNvLinkState(handle, link)
        except _ODD:
            return None  # a pynvml without the NVLink calls, or of another shape
        except error_class as exc:
            if link == 0 and not (isinstance(not_supported, type) and isinstance(exc, not_supported)):
                return None
            break  # no such link (fewer than MAX_NVLINKS), or none at all (not supported)
        if not isinstance(state, int) or isinstance(state, bool) or state != 1:  # NVML_FEATURE_ENABLED
            continue
        out["links"] += 1
        try:
            version = module.nvmlDeviceGetNvLinkVersion(handle, link)
        except caught:
            version = None
        if isinstance(version, int) and not isinstance(version, bool) and 1 <= version <= 15:
            out["version"] = max(out["version"] or 0, version)
        address = kind = None
        for call in ("nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"):
            try:
                bus_id = _text(getattr(module, call)(handle, link).busId)
            except caught:
                continue
            address = normalize_pci_address(bus_id[:64]) if isinstance(bus_id, str) else None
            break
        try:
            remote = module.nvmlDeviceGetNvLinkRemoteDeviceType(handle, link)
        except caught:
            remote = None
        if isinstance(remote, int) and not isinstance(remote, bool):
            kind = NVLINK_TYPES.get(remote)
        # a link whose far end NVML names no address still counts, by its type where NVML gives one
        entry = out["remotes"].setdefault(address or "unaddressed %s" % (kind or "unknown"), {"links": 0, "type": kind})
        entry["links"] += 1
    return out


def read_nvml(nvml=None, warn=None):
    """Return (status, {pci address: GpuInfo}).

    ``status`` is a dict: ``status`` is ``used`` or ``unavailable``, ``reason`` says why
    NVML could not be used (library not installed, libnvidia-ml missing, driver not loaded).
    Answers NVML cannot mean (a generation of 400, a width of 3) are left None; ``warn(message)``
    hears about each.
    """
    module = nvml if nvml is not None else _pynvml
    if module is None:
        return {"status": "unavailable", "reason": "the pynvml Python module (nvidia-ml-py) is not installed",
                "driver_version": None}, {}
    error_class = getattr(module, "NVMLError", Exception)
    try:
        module.nvmlInit()
    except error_class as exc:
        return {"status": "unavailable", "reason": "NVML could not start: %s" % exc, "driver_version": None}, {}
    gpus = {}
    status = {"status": "used", "reason": None, "driver_version": None}
    try:
        try:
            status["driver_version"] = _text(module.nvmlSystemGetDriverVersion())
        except error_class:
            pass
        count = module.nvmlDeviceGetCount()
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_GPUS:
            if warn is not None:
                warn("NVML device count %r is outside 0..%d, no GPU read from NVML" % (count, MAX_GPUS))
            count = 0
        for index in range(count):
            handle = module.nvmlDeviceGetHandleByIndex(index)
            bus_id = _text(module.nvmlDeviceGetPciInfo(handle).busId)
            address = normalize_pci_address(bus_id) if isinstance(bus_id, str) else None
            if address is None:
                continue
            info = GpuInfo(address=address, index=index)
            for attr, call in (
                ("name", "nvmlDeviceGetName"),
                ("uuid", "nvmlDeviceGetUUID"),
                ("max_generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
                ("max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
                ("current_generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
                ("current_width", "nvmlDeviceGetCurrPcieLinkWidth"),
                ("performance_state", "nvmlDeviceGetPerformanceState"),
            ):
                try:
                    value = getattr(module, call)(handle)
                except error_class:
                    continue  # not supported on this GPU; the field stays None
                setattr(info, attr, _checked(attr, value, address, warn))
            info.nvlink = _nvlink(module, handle, error_class)
            gpus[address] = info
    except error_class as exc:
        status = {"status": "unavailable", "reason": "NVML query failed: %s" % exc,
                  "driver_version": status["driver_version"]}
    finally:
        try:
            module.nvmlShutdown()
        except error_class:
            pass
    return status, gpus
