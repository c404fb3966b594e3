# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""GPU details from NVIDIA's NVML (the ``pynvml`` module of nvidia-ml-py).

The module object is injectable so tests can stand a fake in at the library boundary.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.gpuops.fabric.plugins.module_utils._model import GpuInfo
from ansible_collections.gpuops.fabric.plugins.module_utils._sysfs import normalize_pci_address

PYNVML_IMPORT_ERROR = None
try:
    import pynvml as _pynvml
except ImportError:  # pragma: no cover - depends on the host
    _pynvml = None
    PYNVML_IMPORT_ERROR = traceback.format_exc()


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def read_nvml(nvml=None):
    """Return (status, {pci address: GpuInfo}).

    ``status`` is a dict: ``status`` is ``used`` or ``unavailable``, ``reason`` says why
    NVML could not be used (library not installed, libnvidia-ml missing, driver not loaded).
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
        for index in range(module.nvmlDeviceGetCount()):
            handle = module.nvmlDeviceGetHandleByIndex(index)
            address = normalize_pci_address(_text(module.nvmlDeviceGetPciInfo(handle).busId))
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
                    setattr(info, attr, _text(getattr(module, call)(handle)))
                except error_class:
                    pass  # not supported on this GPU; the field stays None
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
