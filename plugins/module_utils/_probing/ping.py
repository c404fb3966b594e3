# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Full-size ping probes: the payload for an MTU, the argv, and parsing and judging ping's output."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

IPV4_HEADERS = 28   # 20 bytes IPv4 + 8 bytes ICMP
IPV6_HEADERS = 48   # 40 bytes IPv6 + 8 bytes ICMPv6


# ---- ping ---------------------------------------------------------------------------------------------------
def payload(mtu, version):
    """The largest ICMP echo payload a frame of ``mtu`` carries without fragmenting."""
    return mtu - (IPV6_HEADERS if version == 6 else IPV4_HEADERS)


def ping_argv(ping, address, size, version, count=3, wait=1.0, source=None):
    argv = [ping, "-n", "-M", "do", "-s", str(size), "-c", str(count), "-i", "0.2", "-W", "%g" % wait]
    if version == 6:
        argv.insert(1, "-6")
    if source:
        argv += ["-I", source]
    return argv + [address]


_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received(?:, \+(\d+) errors)?")
_LOCAL = re.compile(r"local error: (.*?)(?:\n|$)")


def parse_ping(output):
    """{"sent", "received", "errors", "local_error"} from iputils ping's output (-q)."""
    found = _SUMMARY.search(output)
    local = _LOCAL.search(output)
    result = {"sent": None, "received": None, "errors": 0, "local_error": local.group(1).strip() if local else None}
    if found:
        result.update(sent=int(found.group(1)), received=int(found.group(2)), errors=int(found.group(3) or 0))
    return result


def judge_ping(jumbo, small):
    """ok | loss (some jumbo replies lost) | mtu (small frames pass, full-size ones do not) | unreachable | error"""
    if jumbo.get("received") is None:
        return "error"
    if jumbo["received"] and jumbo["received"] == jumbo["sent"]:
        return "ok"
    if jumbo["received"]:
        return "loss"
    if jumbo.get("local_error"):
        return "mtu"
    if small.get("received"):
        return "mtu"
    return "unreachable" if small.get("received") is not None else "error"
