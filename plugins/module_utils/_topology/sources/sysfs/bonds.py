# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Bonds and VLANs for the sysfs reader: /proc/net/bonding/* with /sys/class/net/<bond>/bonding/ filling gaps, and
/proc/net/vlan/config, with VLANs inferred from interface names (parent.vid) where it says nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    Bond, BondMember, NETDEV_BOND, NETDEV_VIRTUAL, NETDEV_VLAN, Vlan,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.procfs import parse_proc_bonding
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import (
    in_limits, LIMITS, parse_decimal, short_text,
)


class BondVlanMixin:
    """Reads bonds into ``topo.bonds`` and VLANs into ``topo.vlans``, setting the kind of their interfaces;
    needs the I/O of SysfsFiles and the interfaces NetMixin read."""

    def read_bonds(self):
        names = set(n for n, d in self.topo.netdevs.items() if d.kind == NETDEV_BOND)
        names.update(self.listdir(self.path("proc/net/bonding")))
        for name in sorted(names):
            path = self.path("proc/net/bonding", name)
            text = self.read(path)
            bond = parse_proc_bonding(name, text, warn=lambda m, p=path: self.warn("%s: %s" % (p, m))) \
                if text else Bond(name=name)
            self._bond_sysfs(bond)
            # The kernel lists members in the order they were enslaved, which means nothing: sort.
            bond.members.sort(key=lambda m: m.name)
            self.topo.bonds[name] = bond
            if name in self.topo.netdevs:
                self.topo.netdevs[name].kind = NETDEV_BOND

    def _bond_sysfs(self, bond):
        base = self.path("sys/class/net", bond.name, "bonding")
        if not os.path.isdir(base):
            return
        bond.mode = bond.mode or first_word(self.read(os.path.join(base, "mode")))
        bond.xmit_hash_policy = bond.xmit_hash_policy or first_word(self.read(os.path.join(base, "xmit_hash_policy")))
        bond.lacp_rate = bond.lacp_rate or first_word(self.read(os.path.join(base, "lacp_rate")))
        if bond.miimon is None:
            bond.miimon = self.read_int(os.path.join(base, "miimon"), what="miimon")
        if not bond.members:
            for member in (self.read(os.path.join(base, "slaves")) or "").split():
                bond.members.append(BondMember(name=member))

    def read_vlans(self):
        path = self.path("proc/net/vlan/config")
        text = self.read(path, quiet=True)
        if text:
            for line in text.splitlines():
                fields = [f.strip() for f in line.split("|")]
                vid = parse_decimal(fields[1]) if len(fields) == 3 and fields[1][:1] != "-" else None
                if vid is None or not fields[0]:
                    continue
                if in_limits(vid, "vlan_id"):
                    self.topo.vlans[fields[0]] = Vlan(name=fields[0], vlan_id=vid, parent=fields[2])
                else:
                    self.warn("%s: %s: VLAN id %s is outside %d..%d, ignored"
                              % ((path, fields[0][:40], short_text(fields[1])) + LIMITS["vlan_id"]))
        for name, dev in sorted(self.topo.netdevs.items()):
            if name in self.topo.vlans:
                dev.kind = NETDEV_VLAN
                continue
            parent, dot, vid_text = name.rpartition(".")
            vid = parse_decimal(vid_text) if vid_text[:1] != "-" else None
            if dev.kind in (NETDEV_VIRTUAL, NETDEV_VLAN) and dot and in_limits(vid, "vlan_id") and parent in self.topo.netdevs:
                self.topo.vlans[name] = Vlan(name=name, vlan_id=vid, parent=parent, source="name")
                dev.kind = NETDEV_VLAN
                self.warn("%s: VLAN id and parent inferred from the name (no /proc/net/vlan/config entry)" % name)


def first_word(text):
    """``"802.3ad 4"`` -> ``"802.3ad"`` (sysfs bonding files append the numeric value)."""
    return text.split()[0] if text else None
