# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What GPUDirect needs of the kernel and the GPU driver, for the sysfs reader: the kernel release (DMA-BUF needs
5.12 or later), the IOMMU options of the kernel command line, whether IOMMU groups exist, and the NVIDIA driver's
version line (the open kernel module, which DMA-BUF needs, says so there). Files only, each bounded; a capture
without them reads as unknown."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

# The kernel parameters that decide whether the IOMMU translates device DMA.
IOMMU_PARAMETERS = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict")
_RELEASE = re.compile(r"^(\d{1,3})\.(\d{1,3})")
_NVIDIA = re.compile(r"NVRM version: (.{0,120}?Kernel Module)(?: for \S{1,20})?\s+(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)")
DMABUF_KERNEL = (5, 12)


def iommu_options(cmdline):
    """{parameter: value} of the IOMMU parameters of a kernel command line (the last one given wins, as the kernel
    reads them); a parameter without a value is ""."""
    found = {}
    for word in (cmdline or "").split()[:1000]:
        key, _sep, value = word.partition("=")
        if key in IOMMU_PARAMETERS:
            found[key] = value[:40]
    return dict(sorted(found.items()))


def parse_release(text):
    """(major, minor) of a kernel release ("6.5.0-1018-nvidia"), or None."""
    match = _RELEASE.match(text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_nvidia_version(text):
    """{"version", "open_module", "line"} from /proc/driver/nvidia/version, or None."""
    for line in (text or "")[:8192].splitlines()[:20]:
        match = _NVIDIA.search(line[:512])
        if match:
            return {"version": match.group(2), "open_module": "Open Kernel Module" in match.group(1),
                    "line": line.strip()[:200]}
    return None


class KernelMixin:
    """Reads /proc/cmdline, /proc/sys/kernel/osrelease, /proc/driver/nvidia/version and /sys/kernel/iommu_groups
    into ``topo.kernel``; needs the I/O of SysfsFiles."""

    def read_kernel(self):
        cmdline = self.read(self.path("proc/cmdline"), quiet=True)
        release = self.read(self.path("proc/sys/kernel/osrelease"), quiet=True)
        nvidia = self.read(self.path("proc/driver/nvidia/version"), quiet=True)
        groups_dir = self.path("sys/kernel/iommu_groups")
        groups = len([n for n in self.listdir(groups_dir) if re.match(r"^[0-9]{1,6}$", n)]) \
            if os.path.isdir(groups_dir) else None
        self.topo.kernel = {
            "release": release[:80] if release else None,
            "cmdline_read": cmdline is not None,
            "iommu_options": iommu_options(cmdline),
            "iommu_groups": groups,
            "nvidia_driver": parse_nvidia_version(nvidia),
        }
