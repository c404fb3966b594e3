"""What the RDMA tools print, read back for tests that compare the facts with them (the VM tests on a live Soft-RoCE
device, the unit tests on its stored capture)."""

import ipaddress
import re


def ibv_devinfo(text):
    """{hca_id: {port: {"state", "active_mtu", "link_layer", "gids": {index: (gid, type)}}}} of `ibv_devinfo -v`
    (rdma-core's text: "hca_id:\\trxe0", "port:\\t1", "state:\\t\\t\\tPORT_ACTIVE (4)", "active_mtu:\\t\\t4096 (5)",
    "GID[  1]:\\t\\t::ffff:a.b.c.d, RoCE v2")."""
    devices, ports, port = {}, None, None
    for line in text.splitlines():
        stripped = line.strip()
        found = re.match(r"^hca_id:\s+(\S+)$", stripped)
        if found:
            ports, port = devices.setdefault(found.group(1), {}), None
            continue
        found = re.match(r"^port:\s+(\d+)$", stripped)
        if found and ports is not None:
            port = ports.setdefault(int(found.group(1)), {"gids": {}})
            continue
        if port is None:
            continue
        found = re.match(r"^(state|active_mtu|link_layer):\s+(\S+)", stripped)
        if found:
            port[found.group(1)] = found.group(2)
        found = re.match(r"^GID\[\s*(\d+)\]:\s+([0-9a-f:.]+),\s+(.+)$", stripped)
        if found:
            port["gids"][int(found.group(1))] = (found.group(2), found.group(3).strip())
    return devices


def expand_gid(text):
    """A GID as sysfs writes it (eight groups of four hex digits) from the short form ibv_devinfo prints."""
    return ipaddress.IPv6Address(text).exploded
