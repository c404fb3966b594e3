# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""nvidia-smi's own words, to hold the facts against: ``nvidia-smi -q`` (each GPU's bus id, performance state and
PCIe link as the driver reports it) and ``nvidia-smi topo -m`` (the GPU-to-NIC relation matrix with its NIC legend).
Read as posted (quote prefixes, colour codes, other lines around them); bounded; never raising."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

MAX_LINES = 200000
MAX_BYTES = 32 * 1024 * 1024  # of an output looked at, before it is split into lines (nvidia-smi -q: ~20 KiB a GPU)
MAX_DEVICES = 256
# str.splitlines()'s line ends, found one at a time: a runaway output is never split whole
_LINE_END = re.compile(u"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _lines(text):
    """The first MAX_LINES lines of the first MAX_BYTES of ``text``, as text.splitlines() gives them."""
    text = (text or "")[:MAX_BYTES]
    start = count = 0
    for match in _LINE_END.finditer(text):
        if count >= MAX_LINES:
            return
        yield text[start:match.start()]
        start, count = match.end(), count + 1
    if start < len(text) and count < MAX_LINES:
        yield text[start:]


_ANSI = re.compile(r"\x1b\[[0-9;]{0,20}m")
_QUOTE = re.compile(r"^(?:> ?)+")
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_ITEM = re.compile(r"^(\s*)([^:]{1,80}?)\s*:\s?(.{0,200})$")
_RELATIONS = ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "PXN")
_NV = re.compile(r"^NV\d{1,3}$")


def bus_address(text):
    """nvidia-smi's bus id ("00000000:18:00.0") as the facts write it ("0000:18:00.0"), or None."""
    match = re.match(r"^([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$", (text or "").strip())
    if not match:
        return None
    return "%04x:%s:%s.%s" % (int(match.group(1), 16), match.group(2).lower(), match.group(3).lower(),
                              match.group(4))


def _int(text):
    match = re.match(r"^\s*(\d{1,3})x?\s*$", text or "")
    return int(match.group(1)) if match else None


def _clean(line):
    return _QUOTE.sub("", _ANSI.sub("", line.rstrip("\r\n")))


def parse_smi_query(text):
    """``nvidia-smi -q``: [{"address", "name", "performance_state", "generation": {"max", "current", "device_max"},
    "width": {"max", "current"}}] per GPU block, in the order printed. ``max`` is what the GPU and its slot allow,
    ``device_max`` (newer drivers) the GPU's own."""
    gpus, current, path = [], None, []
    for raw in _lines(text):
        line = _clean(raw)
        gpu = _GPU.match(line.strip())
        if gpu:
            if len(gpus) >= MAX_DEVICES:
                break
            current = {"address": bus_address(gpu.group(1)), "name": None, "performance_state": None,
                       "generation": {"max": None, "current": None, "device_max": None},
                       "width": {"max": None, "current": None}}
            gpus.append(current)
            path = []
            continue
        if current is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        item = _ITEM.match(line)
        key = (item.group(2) if item else line).strip()
        while path and path[-1][0] >= indent:
            path.pop()
        if not item:  # a section heading ("PCI", "GPU Link Info", "PCIe Generation")
            path.append((indent, key))
            continue
        value = item.group(3).strip()
        sections = [name for _i, name in path]
        if key == "Product Name":
            current["name"] = value[:80]
        elif key == "Performance State" and re.match(r"^P\d{1,2}$", value):
            current["performance_state"] = int(value[1:])
        elif sections[-1:] == ["PCIe Generation"] and key in ("Max", "Current", "Device Max"):
            current["generation"][key.lower().replace(" ", "_")] = _int(value)
        elif sections[-1:] == ["Link Width"] and key in ("Max", "Current"):
            current["width"][key.lower()] = _int(value)
    return gpus


_SPACES = re.compile(r"\s{2,}|(?<=\S)\s(?=(?:X|NV\d+|SYS|SOC|NODE|PHB|PXB|PIX)\b)")
_NAME = re.compile(r"^[A-Za-z][\w.-]{0,40}$")
_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def _cells(line):
    """The cells of a matrix line: tab-separated as nvidia-smi prints them (empty cells kept in place), else runs of
    two or more spaces (a post that turned the tabs into spaces)."""
    if "\t" in line:
        return [c.strip() for c in line.split("\t")]
    return [c.strip() for c in _SPACES.split(line.strip()) if c.strip()]


def _relation(cell):
    return cell in _RELATIONS or cell == "SOC" or bool(_NV.match(cell))


def parse_topo_matrix(text):
    """``nvidia-smi topo -m``: {"columns": [GPU0, ..., NIC0, ...], "rows": {GPU0: {column: relation}},
    "cpu_affinity": {GPU0: text}, "numa_affinity": {GPU0: text}, "nic_legend": {NIC0: "mlx5_0"}}. Relations are
    X, NV#, PIX, PXB, PHB, NODE, SYS (SOC, the older drivers' word, as SYS) and PXN; an odd cell is left out. The
    columns are the header's, by position, up to "CPU Affinity" (older drivers name RDMA devices there)."""
    out = {"columns": [], "rows": {}, "cpu_affinity": {}, "numa_affinity": {}, "nic_legend": {}}
    for raw in _lines(text):
        line = _clean(raw)
        stripped = line.strip()
        legend = re.match(r"^(NIC\d{1,3})\s*:\s*(\S{1,64})$", stripped)
        if legend:
            out["nic_legend"][legend.group(1)] = legend.group(2)
            continue
        cells = _cells(line)
        named = [c for c in cells if c]
        if not named:
            continue
        if re.match(r"^GPU\d{1,3}$", named[0]) and not any(_relation(c) for c in named):
            # the header: device names, then "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"
            if not out["rows"]:
                header = (cells[1:] if cells and cells[0] == "" else cells) if "\t" in line else named
                columns = []
                for cell in header:
                    if cell in _TRAILING or cell.startswith("CPU Affinity") or not _NAME.match(cell):
                        break
                    columns.append(cell)
                out["columns"] = columns[:MAX_DEVICES]
            continue
        if not out["columns"] or named[0] not in out["columns"]:
            continue
        values = cells[1:] if "\t" in line else named[1:]
        if not values or not _relation(values[0] if values[0] else (values[1] if len(values) > 1 else "")):
            continue
        name = named[0]
        out["rows"][name] = dict((column, "SYS" if value == "SOC" else value)
                                 for column, value in zip(out["columns"], values) if _relation(value))
        rest = values[len(out["columns"]):]
        if name.startswith("GPU") and rest:
            if rest[0]:
                out["cpu_affinity"][name] = rest[0][:200]
            if len(rest) > 1 and rest[1]:
                out["numa_affinity"][name] = rest[1][:40]
        if len(out["rows"]) >= MAX_DEVICES:
            break
    return out
