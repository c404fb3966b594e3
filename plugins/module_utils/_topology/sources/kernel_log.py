# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The kernel's own verdict on a device's PCIe link, read from its log: the line drivers/pci print at probe
(``pcie_print_link_status``) and the PCI core at boot when a link is limited:

    mlx5_core 0000:5e:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x4 link at 0000:5d:00.0
        (capable of 63.008 Gb/s with 8.0 GT/s PCIe x8 link)
    ice 0000:10:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)

Kernels before about 5.7 write the speed without "PCIe" ("8 GT/s x8"); PCIe 6 links add ", in Flit mode"; an
unreadable speed is "Unknown" ("Unknown speed" before); older ixgbe drivers write "PCI Express bandwidth of 32GT/s
available" and, on the next line, "(Speed:5.0GT/s, Width: x8, Encoding Loss:20%)". The kernel names the port at the
upper end of the slowest link ("at 0000:5d:00.0"), and of equally slow links the one nearest the CPU.

Lines come from any source (dmesg, journalctl -k, a syslog file, a post), with whatever prefix; each is clipped and
the entries kept are bounded. A line this reader does not know is skipped: nothing in a log makes it fail."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

MAX_LINE = 4096  # characters of a line looked at
MAX_ENTRIES = 512  # bandwidth lines kept: one per PCI function of the largest node, and more

_ADDRESS = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_LINK = r"(?:(\d{1,3}(?:\.\d{1,3})?) ?GT/s(?: PCIe)?|Unknown(?: speed)?) x(\d{1,2})"
_DEVICE = re.compile(r"(?:^|[\s\]:])([A-Za-z][\w-]{0,31}) (%s): " % _ADDRESS)
_BANDWIDTH = re.compile(
    r"(\d{1,7}\.\d{3}) Gb/s available PCIe bandwidth(?:, limited by %s link at (%s|<unknown>) \(capable of "
    r"(\d{1,7}\.\d{3}) Gb/s with %s link\)| \(%s link\))" % (_LINK, _ADDRESS, _LINK, _LINK))
_LEGACY = re.compile(r"PCI Express bandwidth of (\d{1,4}(?:\.\d{1,3})?) ?GT/s available")
_LEGACY_LINK = re.compile(r"\(Speed:(\d{1,3}(?:\.\d{1,3})?) ?GT/s, Width: x(\d{1,2})")


def _number(text, kind=float):
    return kind(text) if text is not None else None


def _entry(driver, device, form):
    return {"driver": driver, "device": device.lower(), "available_gbps": None, "limited": None,
            "limit_speed_gts": None, "limit_width": None, "limit_at": None, "capable_gbps": None,
            "capable_speed_gts": None, "capable_width": None, "form": form, "line": None}


def parse_pcie_bandwidth(lines):
    """[entry] of every PCIe bandwidth line in ``lines`` (an iterable of text), in order: {driver, device (the PCI
    address the line is about), available_gbps, limited (true, false, or None where the line does not say),
    limit_speed_gts and limit_width (the slowest link; None where the kernel printed "Unknown"), limit_at (the port
    at its upper end), capable_gbps, capable_speed_gts, capable_width (what the device could do; for a line without
    "limited by", the link it printed), form ("modern", "pre-5.7": no "PCIe" after the speed, "ixgbe-legacy"), line
    (its number)}."""
    found = []
    legacy = {}  # device -> its entry, waiting for ixgbe's "(Speed:..., Width: x8 ...)" line
    for number, raw in enumerate(lines, 1):
        line = raw[:MAX_LINE] if isinstance(raw, str) else ""
        if "bandwidth" not in line and "Speed:" not in line:
            continue
        device = _DEVICE.search(line)
        if device is None:
            continue
        driver, address = device.group(1), device.group(2)
        rest = line[device.end():]
        match = _BANDWIDTH.match(rest)
        if match:
            entry = _entry(driver, address, "modern" if "GT/s PCIe" in match.group(0) or "Unknown" in match.group(0)
                           else "pre-5.7")
            entry["available_gbps"] = float(match.group(1))
            entry["line"] = number
            if match.group(2) is not None or match.group(4) is not None:  # limited by ... at ...
                entry.update(limited=True, limit_speed_gts=_number(match.group(2)),
                             limit_width=_number(match.group(3), int), limit_at=match.group(4).lower()
                             if match.group(4) != "<unknown>" else None, capable_gbps=float(match.group(5)),
                             capable_speed_gts=_number(match.group(6)), capable_width=_number(match.group(7), int))
            else:
                entry.update(limited=False, capable_gbps=entry["available_gbps"],
                             capable_speed_gts=_number(match.group(8)), capable_width=_number(match.group(9), int))
            if len(found) < MAX_ENTRIES:
                found.append(entry)
            continue
        match = _LEGACY.match(rest)
        if match and len(found) < MAX_ENTRIES:
            entry = _entry(driver, address, "ixgbe-legacy")
            entry.update(available_gbps=float(match.group(1)), line=number)
            found.append(entry)
            legacy[entry["device"]] = entry
            continue
        match = _LEGACY_LINK.match(rest)
        waiting = legacy.pop(address.lower(), None)
        if match and waiting is not None:
            waiting["link_speed_gts"], waiting["link_width"] = float(match.group(1)), int(match.group(2))
    return found


def limited_devices(entries):
    """{device: its last entry that says its bandwidth is limited}: a later probe (a driver reloaded) replaces an
    earlier one."""
    limited = {}
    for entry in entries:
        if entry.get("limited") is True:
            limited[entry["device"]] = entry
        elif entry.get("limited") is False:
            limited.pop(entry["device"], None)
    return limited
