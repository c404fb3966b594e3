# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""nccl-tests output (all_reduce_perf and friends) parsed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# ---- nccl-tests -------------------------------------------------------------------------------------------
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(?:(-?\d+)\s+)?(%s|N/A)\s+(%s|N/A)\s+(%s|N/A)\s+(\S+)"
                  r"(?:\s+(%s|N/A)\s+(%s|N/A)\s+(%s|N/A)\s+(\S+))?\s*$" % ((_NUM,) * 6))
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(%s)" % _NUM)
_RANK = re.compile(r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*)$")


def _float(text):
    return None if text in (None, "N/A") else float(text)


def parse_nccl_tests(text):
    """The table nccl-tests prints (all_reduce_perf and friends), old layout (no root column) and new.

    Returns {"rows": [{"bytes", "count", "type", "redop", "root", "time_us", "algbw", "busbw", "wrong",
    "in_place": {...}}], "avg_busbw": float or None, "ranks": [{"rank", "host", "device", "bus", "name"}],
    "max_busbw": float or None}. busbw and algbw in GB/s as printed. A row with a non-numeric error/#wrong column
    (nccl-tests prints N/A without validation) has wrong None.
    """
    rows, ranks = [], []
    avg = None
    for line in text.splitlines():
        match = _RANK.search(line)
        if match:
            ranks.append({"rank": int(match.group(1)), "host": match.group(2), "device": int(match.group(3)),
                          "bus": match.group(4), "name": match.group(5).strip()})
            continue
        found = _AVG.search(line)
        if found:
            avg = float(found.group(1))
            continue
        if line.lstrip().startswith("#"):
            continue
        row = _ROW.match(line)
        if not row:
            continue
        g = row.groups()
        entry = {"bytes": int(g[0]), "count": int(g[1]), "type": g[2], "redop": g[3],
                 "root": int(g[4]) if g[4] is not None else None,
                 "time_us": _float(g[5]), "algbw": _float(g[6]), "busbw": _float(g[7]), "wrong": _wrong(g[8])}
        if g[9] is not None:
            entry["in_place"] = {"time_us": _float(g[9]), "algbw": _float(g[10]), "busbw": _float(g[11]),
                                 "wrong": _wrong(g[12])}
        rows.append(entry)
    busbws = [r["busbw"] for r in rows if r["busbw"] is not None]
    return {"rows": rows, "avg_busbw": avg, "ranks": ranks, "max_busbw": max(busbws) if busbws else None}


def _wrong(text):
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None
