# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Stability counters for the sysfs reader: per interface carrier changes and the kernel's error and drop
statistics, PCIe AER counters of the GPUs, NICs and the bridges above them, RDMA port counters, TCP segments and
retransmits, and the boot id, boot time and uptime that turn totals into rates and tell a reboot. Files only, each bounded; a known list of
names per directory, so a driver with hundreds of counters costs no more than one with a few."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import CARRIER_NETDEVS, NETDEV_BOND, NETDEV_PHYSICAL
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.sysfs.pci import CONTROL_CLASSES
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.values import MAX_COUNTER, parse_decimal

# /sys/class/net/<if>/ and its statistics/ (include/uapi/linux/if_link.h, struct rtnl_link_stats64)
CARRIER_FILES = ("carrier_changes", "carrier_up_count", "carrier_down_count")
NET_STATISTICS = ("rx_packets", "tx_packets", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors",
                  "rx_frame_errors", "rx_fifo_errors", "rx_missed_errors", "rx_over_errors", "rx_length_errors",
                  "tx_carrier_errors", "tx_fifo_errors", "tx_aborted_errors", "collisions")
# Interfaces whose counters are read: the physical ones and those built on them (not veths, tunnels, loopback)
COUNTED_KINDS = CARRIER_NETDEVS
AER_FILES = (("correctable", "aer_dev_correctable"), ("nonfatal", "aer_dev_nonfatal"), ("fatal", "aer_dev_fatal"))
AER_ROOTPORT_FILES = (("rootport_correctable", "aer_rootport_total_err_cor"),
                      ("rootport_nonfatal", "aer_rootport_total_err_nonfatal"),
                      ("rootport_fatal", "aer_rootport_total_err_fatal"))
AER_MAX_LINES = 64
# A directory is listed (one read, for the types of all its files) when more of its files are wanted than this;
# fewer are each looked at on their own (a stat: a missing one is one failed call)
LIST_ABOVE = 4
# /sys/class/infiniband/<dev>/ports/<n>/counters/ (the IB PortCounters) and hw_counters/ (mlx5, irdma, bnxt_re ...;
# Soft-RoCE has hw_counters only, its own names: rxe_hw_counters.c, link_downed among them)
RDMA_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                 "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
                 "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
                 "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait")
RDMA_HW_COUNTERS = ("out_of_sequence", "packet_seq_err", "out_of_buffer", "local_ack_timeout_err",
                    "duplicate_request", "implied_nak_seq_err", "rnr_nak_retry_err", "req_cqe_error",
                    "resp_cqe_error", "rx_icrc_encapsulated", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
                    "np_ecn_marked_roce_packets", "roce_adp_retrans", "roce_slow_restart",
                    "roce_slow_restart_cnps", "out_of_seq_request", "rcvd_seq_err", "completer_retry_err",
                    "retry_exceeded_err", "link_downed")
# /sys/class/net/<if>/ecn/ (mlx5: DCQCN per priority): roce_np, the notification point that answers ECN-marked
# packets with CNPs, and roce_rp, the reaction point that slows down on CNPs; enable/<0..7> each 0 or 1
ECN_POINTS = (("notification_point", "roce_np"), ("reaction_point", "roce_rp"))
ECN_NP_SETTINGS = ("cnp_dscp", "cnp_802p_prio")
TCP_FIELDS = (("InSegs", "in_segs"), ("OutSegs", "out_segs"), ("RetransSegs", "retrans_segs"), ("InErrs", "in_errs"))
_AER_LINE = re.compile(r"^(\S(?:.{0,62}\S)?)\s+([0-9]{1,20})$")


def parse_counter(text):
    """A counter file's value (a decimal of at most 64 bits), else None."""
    value = parse_decimal(text) if text is not None else None
    return value if value is not None and 0 <= value <= MAX_COUNTER else None


def parse_aer(text):
    """An aer_dev_* file: lines of ``<name> <count>`` (the kernel's short names, as ``RxErr 0``, and the long ones
    of older kernels, as ``Receiver Error 2``), the last one a ``TOTAL_ERR_*`` line. Returns {"total", "by_type"}
    (the total from the TOTAL line, else the sum), or None when no line is a count."""
    if text is None:
        return None
    by_type, total, counted = {}, None, False
    for line in text.splitlines()[:AER_MAX_LINES]:
        parts = line.rsplit(None, 1)
        if len(parts) != 2:
            continue
        if parts[1] == "0" and parts[0].strip() and not parts[0].startswith("TOTAL_ERR"):
            counted = True  # most lines, on a healthy machine: nothing to keep (zero types are left out)
            continue
        match = _AER_LINE.match(line.strip())
        if not match:
            continue
        name, value = match.group(1), parse_counter(match.group(2))
        if value is None:
            continue
        counted = True
        if name.startswith("TOTAL_ERR"):
            total = value
        else:
            by_type[name] = value
    if not counted:
        return None
    return {"total": total if total is not None else sum(by_type.values()),
            "by_type": dict(sorted((k, v) for k, v in by_type.items() if v))}


# /proc/net/dev's columns (net/core/net-procfs.c, dev_seq_printf_stats): some are one statistics file, some the sum
# of several. A sum of 0 says each of its files reads 0; only a sum above 0 needs the files, to say which.
NET_DEV_COLUMNS = ("rx_bytes", "rx_packets", "rx_errors", "rx_drop", "rx_fifo_errors", "rx_frame", "rx_compressed",
                   "multicast", "tx_bytes", "tx_packets", "tx_errors", "tx_dropped", "tx_fifo_errors", "collisions",
                   "tx_carrier", "tx_compressed")
NET_DEV_SUMS = {"rx_drop": ("rx_dropped", "rx_missed_errors"),
                "rx_frame": ("rx_length_errors", "rx_over_errors", "rx_crc_errors", "rx_frame_errors"),
                "tx_carrier": ("tx_carrier_errors", "tx_aborted_errors")}  # (+ tx_window, tx_heartbeat: not kept)
NET_DEV_MAX_LINES = 65536
# /proc/net/dev is the reading process's network namespace, the sysfs tree the mounter's: a row is taken only where
# its rx_packets and the file's, read just after, agree (the file no lower, and no more than this higher)
NET_DEV_AGREE_PACKETS = 10 ** 7


def parse_proc_net_dev(text):
    """/proc/net/dev as {interface: {column: value}} (NET_DEV_COLUMNS); a line that is not ``<name>: <16 counters>``
    is left out (the two header lines among them), and so is its interface: its files are read instead."""
    found = {}
    for line in (text or "").split("\n")[:NET_DEV_MAX_LINES]:  # split: a name may hold \x1c, \x85 ...
        # the name ends at the last colon ("eth0:123" on old kernels; "tun1:1:" where aliases were listed)
        name, sep, rest = line.rpartition(":")
        name = name.strip()
        if not sep or not name or " " in name or "|" in line:
            continue
        values = [parse_counter(field) for field in rest.split()]
        if len(values) != len(NET_DEV_COLUMNS) or None in values:
            continue
        found[name] = dict(zip(NET_DEV_COLUMNS, values))
    return found


def parse_proc_snmp_tcp(text):
    """The Tcp counters of /proc/net/snmp (a header line of names, then a line of values): {in_segs, out_segs,
    retrans_segs, in_errs}, None for a field absent or not a number; None when there is no Tcp pair."""
    if text is None:
        return None
    lines = [line.split() for line in text.splitlines()[:64] if line.startswith("Tcp:")]
    if len(lines) < 2 or len(lines[0]) != len(lines[1]):
        return None
    values = dict(zip(lines[0][1:], lines[1][1:]))
    return dict((key, parse_counter(values.get(name))) for name, key in TCP_FIELDS)


def parse_btime(text):
    """The boot time (seconds since the epoch) from /proc/stat's ``btime`` line, else None."""
    for line in (text or "").splitlines()[:4096]:
        if line.startswith("btime "):
            return parse_counter(line.split()[1]) if len(line.split()) == 2 else None
    return None


BOOT_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def parse_boot_id(text):
    """The kernel's random id of this boot (/proc/sys/kernel/random/boot_id, a UUID made anew at each boot), else
    None."""
    value = (text or "").strip().lower()
    return value if BOOT_ID.match(value) else None


def parse_uptime(text):
    """Seconds since boot, the first field of /proc/uptime, else None."""
    fields = (text or "").split()
    if not fields or not re.match(r"^[0-9]{1,12}(\.[0-9]{1,6})?$", fields[0]):
        return None
    return float(fields[0])


class CountersMixin:
    """Reads the stability counters into ``topo.counters``; needs the interfaces, PCI devices and RDMA ports the
    other mixins read."""

    def read_counters(self):
        counters = {
            "boot_time": parse_btime(self.read(self.path("proc/stat"), quiet=True)),
            "uptime_s": parse_uptime(self.read(self.path("proc/uptime"), quiet=True)),
            "boot_id": parse_boot_id(self.read(self.path("proc/sys/kernel/random/boot_id"), quiet=True)),
            "interfaces": {}, "aer": {}, "rdma": {}, "roce_ecn": {}, "roce_ports": {}, "roce_lag": {},
            "tcp": parse_proc_snmp_tcp(self.read(self.path("proc/net/snmp"), quiet=True)),
        }
        netdev = self._proc_net_dev()
        for name, dev in sorted(self.topo.netdevs.items()):
            if dev.kind not in COUNTED_KINDS:
                continue
            target = self.resolve(self.path("sys/class/net", name))
            values = self._counter_files(target, CARRIER_FILES)
            statistics = os.path.join(target, "statistics")
            row = netdev.get(name)
            if row is not None and self._same_interface(statistics, row):
                values.update(self._netdev_statistics(statistics, row))
            else:
                values.update(self._counter_files(statistics, NET_STATISTICS))
            if any(v is not None for v in values.values()):
                counters["interfaces"][name] = dict(values, kind=dev.kind)
            ecn = self._roce_ecn(os.path.join(target, "ecn")) if dev.kind == NETDEV_PHYSICAL else None
            if ecn:
                counters["roce_ecn"][name] = ecn
        parsed = {}  # aer_dev_* text: its parse (most devices' files are the same all-zero text)
        for address in sorted(self._aer_devices()):
            directory = self._pci_dirs.get(address)
            if not directory:
                continue
            names, files = self._pci_listing(directory)
            entry, prefix = {}, directory + "/"
            for key, filename in AER_FILES:
                text = self.read(prefix + filename, quiet=True, regular=filename in files) \
                    if filename in names else None
                if text not in parsed:
                    parsed[text] = parse_aer(text)
                found = parsed[text]
                entry[key] = None if found is None else {"total": found["total"], "by_type": dict(found["by_type"])}
            for key, filename in AER_ROOTPORT_FILES:
                if filename in names:
                    value = self.read(prefix + filename, quiet=True, regular=filename in files)
                    if value is not None:
                        entry[key] = parse_counter(value)
            if any(v is not None for v in entry.values()):
                counters["aer"][address] = entry
        for name, rdma in sorted(self.topo.rdma.items()):
            base = self.resolve(self.path("sys/class/infiniband", name))
            for port in rdma.ports:
                if port.link_layer == "Ethernet" and port.netdev:
                    counters["roce_ports"]["%s/%d" % (name, port.port)] = port.netdev
                    legs = self._bond_legs(port.netdev)
                    if legs:
                        counters["roce_lag"][port.netdev] = legs
                directory = os.path.join(base, "ports", str(port.port))
                values = self._counter_files(os.path.join(directory, "hw_counters"), RDMA_HW_COUNTERS)
                # the port counters' own where both have one (link_downed: Soft-RoCE keeps it in hw_counters)
                port_counters = self._counter_files(os.path.join(directory, "counters"), RDMA_COUNTERS)
                values.update((k, v) for k, v in port_counters.items() if v is not None)
                values = dict((k, v) for k, v in values.items() if v is not None)
                if values:
                    counters["rdma"]["%s/%d" % (name, port.port)] = values
        self.topo.counters = counters

    def _bond_legs(self, name):
        """The members of bond ``name`` that are interfaces here (a RoCE LAG's PFC and ECN are its legs'), else []."""
        dev = self.topo.netdevs.get(name)
        if dev is None or dev.kind != NETDEV_BOND:
            return []
        slaves = self.read(self.path("sys/class/net", name, "bonding", "slaves"), quiet=True) or ""
        return sorted(set(m for m in slaves.split() if m in self.topo.netdevs))

    def _pci_listing(self, directory):
        """(names, regular files) of a PCI device's folder: the PCI walk's listing, else one of its own."""
        listing = self._listings.get(directory)
        if listing is None:
            present = self.entries(directory)
            listing = (set(present), set(n for n, regular in present.items() if regular))
        return listing

    def _counter_files(self, directory, names):
        values, prefix = {}, directory + "/"
        present = self.entries(directory) if len(names) > LIST_ABOVE else None
        for name in names:
            if present is not None and name not in present:
                values[name] = None
                continue
            path = prefix + name
            text = self.read(path, quiet=True, regular=present is not None and present[name])
            value = parse_counter(text)
            if text is not None and value is None and text.strip():
                self.warn("%s: %r is not a counter, ignored" % (path, text[:40]))
            values[name] = value
        return values

    trust_proc_net_dev = False  # a capture's proc/net/dev: its moment or machine may not be its sysfs tree's

    def _proc_net_dev(self):
        """{interface: row} of /proc/net/dev (one read for the statistics of every interface, the kernel's own sums)
        on the live machine, when it names the same interfaces as /sys/class/net (the same network namespace);
        else {} (the files are read)."""
        if not (self.root == "/" or self.trust_proc_net_dev):
            return {}
        rows = parse_proc_net_dev(self.read(self.path("proc/net/dev"), quiet=True))
        if not rows or set(rows) != set(self.entries(self.path("sys/class/net"))):
            return {}
        return rows

    def _same_interface(self, directory, row):
        """Whether the /proc/net/dev ``row`` is this sysfs interface's: its rx_packets file, read after the row, no
        lower and not far higher."""
        packets = parse_counter(self.read(os.path.join(directory, "rx_packets"), quiet=True))
        return packets is not None and 0 <= packets - row["rx_packets"] <= NET_DEV_AGREE_PACKETS

    def _roce_ecn(self, directory):
        """The DCQCN configuration of a port (mlx5's ecn/ folder): per point the priorities it is enabled for and
        those read, and the CNPs' DSCP and 802.1p priority; None without the folder."""
        present = self.entries(directory)
        if not present:
            return None
        found = {}
        for key, point in ECN_POINTS:
            if point not in present:
                continue
            values = self._counter_files(os.path.join(directory, point, "enable"), [str(p) for p in range(8)])
            read = sorted(int(p) for p, v in values.items() if v in (0, 1))
            found[key] = {"enabled": sorted(int(p) for p, v in values.items() if v == 1), "read": read}
            if point == "roce_np":
                found[key].update(self._counter_files(os.path.join(directory, point), ECN_NP_SETTINGS))
        return found or None

    def _netdev_statistics(self, directory, row):
        """NET_STATISTICS of one interface from its /proc/net/dev ``row``: the columns that are one file each, and
        for a sum the files behind it, read only when the sum is above 0 (else each is 0)."""
        values = dict((key, row[key]) for key in NET_STATISTICS if key in row)
        for column, names in sorted(NET_DEV_SUMS.items()):
            if row[column]:
                values.update(self._counter_files(directory, names))
            else:
                values.update((key, 0) for key in names)
        return dict((key, values.get(key)) for key in NET_STATISTICS)

    def _aer_devices(self):
        """GPUs, accelerators, NICs and RDMA functions (by class: the devices are classified later), and every
        bridge above them: the paths whose errors slow or stop training."""
        chosen = set()
        for address, dev in self.topo.pci.items():
            if (dev.class_code or 0) >> 16 in CONTROL_CLASSES or dev.has_rdma:
                chosen.add(address)
                chosen.update(self.topo.ancestors(address))
        return chosen
