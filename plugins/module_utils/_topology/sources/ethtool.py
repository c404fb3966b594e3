# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""A NIC port's link modes from ``ethtool <port>`` (the kernel's ethtool interface, as the ethtool tool prints
it): what the port supports, what it advertises, what the partner advertises, the port type.

``parse(text)`` -> {"name", "supported_modes", "advertised_modes", "partner_modes", "supported_ports",
"supported_speeds_mbps", "max_supported_mbps", "max_advertised_mbps", "speed_mbps", "duplex", "autoneg", "port",
"media", "link"}. ``port`` is ethtool's connector (twisted_pair, direct_attach, fibre, backplane, mii, other, none);
``media`` what the fastest supported modes are built for (base-t, dac, fibre, backplane), from the mode names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuops.fabric.plugins.module_utils._names import ifname_problem

MAX_BYTES = 1 << 20  # of ethtool's output looked at: one port's settings are a few KiB
_MODE = re.compile(r"^(\d+)base([A-Za-z0-9_]+)/(Full|Half)$")
_PORTS = {"twisted pair": "twisted_pair", "direct attach copper": "direct_attach", "fibre": "fibre",
          "mii": "mii", "other": "other", "none": "none", "aui": "other", "bnc": "other", "da": "direct_attach"}
_LISTS = {"supported link modes": "supported_modes", "advertised link modes": "advertised_modes",
          "link partner advertised link modes": "partner_modes"}


def _media(suffix):
    """What a mode's medium is: 10000baseT -> base-t, 25000baseCR -> dac, 100000baseSR4 -> fibre."""
    s = suffix.upper()
    if s.startswith("T"):
        return "base-t"
    if s.startswith("CR"):
        return "dac"
    if s.startswith("K"):
        return "backplane"
    if s[:2] in ("SR", "LR", "ER", "FR", "DR", "LX", "SX", "ZR", "BX"):
        return "fibre"
    return "other"


def modes_speeds(modes):
    return sorted(set(int(m.group(1)) for m in (_MODE.match(x) for x in modes) if m))


def parse(text):
    result = {"name": None, "supported_modes": [], "advertised_modes": [], "partner_modes": [], "supported_ports": [],
              "speed_mbps": None, "duplex": None, "autoneg": None, "port": None, "link": None}
    current = None
    for raw in text[:MAX_BYTES].splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Settings for ") and line.endswith(":"):
            result["name"] = line[len("Settings for "):-1]
            continue
        key, sep, value = line.partition(":")
        if sep and not _MODE.match(key.strip()) and key.strip().lower() in _LISTS:
            current = _LISTS[key.strip().lower()]
            result[current].extend(t for t in value.split() if _MODE.match(t))
            continue
        if sep and key.strip() and not key.strip()[0].isdigit():
            current = None
            key, value = key.strip().lower(), value.strip()
            if key == "supported ports":
                result["supported_ports"] = value.strip("[] ").split()
            elif key == "speed":
                match = re.match(r"(\d+)\s*Mb/s", value)
                result["speed_mbps"] = int(match.group(1)) if match else None
            elif key == "duplex":
                result["duplex"] = value.split()[0].lower() if value and not value.startswith("Unknown") else None
            elif key == "auto-negotiation":
                result["autoneg"] = value.lower() == "on"
            elif key == "port":
                result["port"] = _PORTS.get(value.lower(), "other")
            elif key == "link detected":
                result["link"] = value.lower() == "yes"
            continue
        if current:  # continuation of a mode list
            result[current].extend(t for t in line.split() if _MODE.match(t))
    supported = modes_speeds(result["supported_modes"])
    advertised = modes_speeds(result["advertised_modes"])
    result["supported_speeds_mbps"] = supported
    result["max_supported_mbps"] = supported[-1] if supported else None
    result["max_advertised_mbps"] = advertised[-1] if advertised else None
    top = [m for m in (_MODE.match(x) for x in result["supported_modes"]) if m and supported
           and int(m.group(1)) == supported[-1]]
    result["media"] = sorted(set(_media(m.group(2)) for m in top))
    return result


def gather(run, ethtool, names):
    """{port: parsed} for the named ports on a live node; ports ethtool cannot read are left out."""
    found = {}
    if not ethtool:
        return found
    for name in names:
        if ifname_problem(name):
            continue  # never an argument ethtool could take for an option ("-s" is a valid Linux name)
        rc, out, _err = run([ethtool, name])
        if rc == 0 and out.strip():
            found[name] = parse(out)
    return found
