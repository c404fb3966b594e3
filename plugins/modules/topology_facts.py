#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: topology_facts
short_description: Gather the PCIe, NUMA, GPU, NIC, RDMA, bond and VLAN layout of a GPU node
version_added: 0.1.0
description:
  - Reads one node's topology and returns it as C(ansible_facts.gpuops_fabric), the model every other part of the
    collection (network, NCCL, validation, reports) consumes.
  - The default source is sysfs and procfs of the managed node. Only files are read; no C(lspci) or other tool is
    started, so fact gathering cannot hang on broken hardware.
  - A captured sysfs tree (O(root)), an hwloc XML file (C(lstopo --of xml)) or an NCCL topology XML file can stand
    in for a machine, which is how the demo inventory, offline audits of a server model and the tests work.
  - Values the kernel reports as unknown (C(-1), C(Unknown), missing files, garbage) become C(null) and, where
    unexpected, a line in C(warnings). Input that cannot be read at all fails with a message that names the path.
  - An option the task does not give is taken from the host's variable of that name, C(fabric_facts_source),
    C(fabric_facts_root), C(fabric_facts_path), C(fabric_facts_nvml) and C(fabric_facts_lldp_socket) (an invalid
    value fails the task and names the variable), so every play gathers as the inventory says, and a task with no
    options at all is the usual one. A task that gives any of O(source), O(root) and O(path) names its source
    itself, and none of the three is then taken from the variables.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.facts
  - gpuops.fabric.attributes.node_action
  - gpuops.fabric.attributes.info_module
  - gpuops.fabric.attributes.actiongroup
options:
  gather_subset:
    description:
      - Which parts to gather. C(all) gathers everything; C(min) is C(numa).
      - Prefix a name with C(!) to leave it out, for example C(['all', '!paths']). A list of exclusions only starts
        from C(all). C(min) is always gathered unless C(!min) is given.
      - C(paths) are GPU/accelerator to NIC and GPU to GPU paths with their type as C(nvidia-smi topo -m) names it.
      - C(nccl) is the node's C(/etc/nccl.conf) (below O(root)) as NCCL reads it.
      - C(lldp) (live node only) is each port's LLDP neighbours as lldpd reports them (C(lldpctl -f json0)), the switch
        port's name, VLANs, aggregation and frame size among them; without a running lldpd it says "no LLDP agent".
      - C(link_modes) (live node only) adds each physical NIC's supported and advertised link modes and port type
        from ethtool (C(link_modes) in RV(ansible_facts.gpuops_fabric.nics)).
      - C(counters) are the stability counters (RV(ansible_facts.gpuops_fabric.counters)), totals since boot that the
        audit turns into rates between two readings.
    type: list
    elements: str
    default: [all]
  source:
    description:
      - Where the topology comes from.
      - C(sysfs) reads C(/sys) and C(/proc) below O(root).
      - C(hwloc_xml) reads O(path), written by C(lstopo --of xml). hwloc records only the usable bandwidth of the
        current link, so link generation and width stay C(null) and the bandwidth is reported with basis C(hwloc).
      - C(nccl_xml) reads O(path), an NCCL or RCCL topology dump (C(NCCL_TOPO_DUMP_FILE)). NCCL records each
        device's maximum link, so current links stay C(null).
    type: str
    choices: [sysfs, hwloc_xml, nccl_xml]
    default: sysfs
  root:
    description:
      - Directory holding C(sys/) (and optionally C(proc/)) of the machine to read, for example an extracted
        C(hwloc-gather-topology) capture. Only used with O(source=sysfs).
      - Absolute symbolic links inside a capture are followed below O(root), never on the machine running the
        module. The module fails when O(root) is not a directory.
    type: path
    default: /
  path:
    description:
      - The XML file to read. Required with O(source=hwloc_xml) and O(source=nccl_xml).
    type: path
  nvml:
    description:
      - Whether to ask NVIDIA's NVML (the C(pynvml) module of C(nvidia-ml-py)) for GPU details. NVML gives the name,
        UUID, the maximum link generation the GPU and slot support, and the performance state, so a GPU whose link
        dropped to Gen1 at idle is reported as C(idle), not C(degraded).
      - C(auto) uses NVML when the live machine has NVIDIA GPUs and says in C(nvml.reason) why it did not.
      - C(yes) fails when NVML cannot be used. C(no) never loads it.
      - NVML is never used for captures (O(root) other than C(/), or an XML source).
    type: str
    choices: [auto, "yes", "no"]
    default: auto
  lldp_socket:
    description:
      - lldpd's control socket for the C(lldp) subset (C(lldpctl -u)); default lldpd's own (C(/run/lldpd.socket)).
    type: path
  reuse:
    description:
      - Keep the facts this run already gathered on the host, without reading the node again, when they hold every
        subset O(gather_subset) asks for and were read from the same O(source), O(root) and O(path); otherwise
        gather as usual. The result then says RV(reused=true) and sets no facts.
      - For plays that know nothing changed on the host since (the collection's roles inside C(site.yml) pass it
        only while none of them changed the host); facts read before a change the play made are stale.
    type: bool
    default: false
  as_json:
    description:
      - Return the facts as one JSON text, RV(facts_json), and set no facts.
      - An 8-GPU node's facts are about 7,000 values. On their way into the host's variables Ansible wraps, copies
        and pickles each value several times, in each worker and again on the controller. One text is one value, and
        whoever reads the facts parses it once (the C(from_json) filter in a play).
      - The audit and the node-local audit gather this way, into their registered result C(fabric_audit_gather); the
        other playbooks and the roles read RV(ansible_facts.gpuops_fabric).
    type: bool
    default: false
requirements:
  - The C(pynvml) Python module (C(pip install nvidia-ml-py)) on the managed node for NVML details; optional.
notes:
  - Path types follow C(nvidia-smi topo -m) and NCCL. C(PIX) at most one PCIe switch, C(PXB) several switches
    without the host bridge, C(PHB) through a PCIe host bridge (the CPU), C(NODE) between host bridges within a
    NUMA node, C(SYS) across the inter-socket link. When either end has no NUMA node (firmware reported C(-1)) and
    the devices sit under different host bridges, the type is C(null).
  - PCIe bandwidth is per direction after line coding (8b/10b for Gen1-2, 128b/130b for Gen3-5, 242/256 FLIT
    efficiency for Gen6-7), for example 15.754 GB/s for Gen3 x16 and 63.015 GB/s for Gen5 x16.
seealso:
  - name: nvidia-smi topo
    description: The path names used here.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
  - name: hwloc lstopo
    description: The XML format read with O(source=hwloc_xml).
    link: https://www.open-mpi.org/projects/hwloc/doc/
"""

EXAMPLES = r"""
- name: Gather the topology of the node
  gpuops.fabric.topology_facts:

- name: Only NUMA and GPUs, without NVML
  gpuops.fabric.topology_facts:
    gather_subset: [gpu]
    nvml: "no"

- name: Read a captured sysfs tree on the controller
  gpuops.fabric.topology_facts:
    root: /srv/captures/node017
  delegate_to: localhost

- name: Read the hwloc XML of a server model before buying it
  gpuops.fabric.topology_facts:
    source: hwloc_xml
    path: /srv/captures/candidate.xml
  delegate_to: localhost

- name: Show each GPU's nearest NIC
  ansible.builtin.debug:
    msg: "{{ item.address }} -> {{ item.nearest_nics | map(attribute='nic_names') | list }}"
  loop: "{{ ansible_facts.gpuops_fabric.gpus }}"
"""

RETURN = r"""
reused:
  description: The facts this run already gathered were kept (O(reuse)); the node was not read and no facts are set.
  returned: always
  type: bool
  sample: false
facts_json:
  description:
    - The facts, as RV(ansible_facts.gpuops_fabric) would hold them (their keys in the same order), as one JSON text
      (O(as_json)).
  returned: when O(as_json) is true, unless RV(reused)
  type: str
  sample: '{"schema_version":2,"source":"sysfs","gather_subset":["numa"]}'
ansible_facts:
  description: Facts added to the host.
  returned: unless RV(reused) or O(as_json)
  type: dict
  contains:
    gpuops_fabric:
      description: The node's topology. Lists are sorted by PCI address or name; unknown values are C(null).
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of this fact layout; incremented on incompatible change (2 since paths name their
            links by device).
          type: int
          returned: always
          sample: 2
        source:
          description: Where the facts came from (V(sysfs), V(hwloc_xml), V(nccl_xml)).
          type: str
          returned: always
        gather_subset:
          description: The subsets gathered, after expanding C(all), C(min) and exclusions.
          type: list
          elements: str
          returned: always
          sample: [numa, pci, gpu, nic, rdma, bond, vlan, paths]
        nvml:
          description: Whether NVML was used (C(status) V(used), V(unavailable) or V(not_used)), why not (C(reason)),
            and the driver version.
          type: dict
          returned: always
          sample: {status: unavailable, reason: "NVML could not start: Driver Not Loaded", driver_version: null}
        warnings:
          description:
            - Odd input that was read as C(null), one line each, naming the file.
            - The sysfs reader opens only regular files (a FIFO, socket or device node is named and skipped), reads
              at most 64 KiB of a sysfs attribute and 8 MiB of a procfs file, names files it may not read
              (permission denied, I/O error), and leaves numbers no kernel reports (a speed above 3.2 Tbit/s, an
              MTU above 65575, a NUMA node above 1023, a CPU number of 16384 or more) C(null). At most 500
              warnings are listed; one last line counts the rest.
          type: list
          elements: str
          returned: always
        numa:
          description: NUMA nodes with C(id), C(cpus) (cpulist; empty for memory-only nodes such as GPU memory),
            C(cpu_count), C(has_cpus), C(memory_bytes) and C(distances) (node id as string to distance);
            and C(count).
          type: dict
          returned: when numa is gathered
          sample: {count: 2, nodes: [{id: 0, cpus: "0-7", cpu_count: 8, has_cpus: true,
                   memory_bytes: 17149054976, distances: {"0": 10, "1": 21}}]}
        pci:
          description:
            - PCI functions with C(address) (dddd:bb:dd.f), C(class), C(vendor_id), C(device_id), subsystem ids,
              C(name) (hwloc only), C(kind), C(driver), C(numa_node) (C(null) when the firmware says C(-1)),
              C(local_cpus), C(link), C(parent), C(chain) (bridges up to the root port) and C(host_bridge).
            - C(kind) is one of V(gpu), V(accelerator), V(nic), V(rdma), V(nvme), V(root_port), V(switch_upstream),
              V(switch_downstream), V(other_bridge), V(other).
            - C(link) has C(current) and C(max), each with C(speed_gts), C(generation), C(width) and C(gbytes_per_s)
              (usable, one direction).
            - C(acs) (bridges only) says whether the extended config space was C(readable) (root on the live node),
              whether the ACS capability is C(present), its C(control) register, each control bit, and
              C(redirects_p2p) (request or completion redirect on, which sends peer-to-peer through the CPU).
            - C(pcie_control) (bridges, network, display and accelerator functions) is what the PCI Express
              capability says, C(readable) (C(false) when the config space stops before it, as the 64 bytes a
              non-root reader gets), C(mps_supported), C(mps) and C(mrrs) in bytes, C(relaxed_ordering),
              C(no_snoop); C(null) where not read or the function has no such capability.
            - C(iommu) is the function's C(group) and its default domain C(type) (V(identity), V(DMA), V(DMA-FQ),
              ...); C(null) without an IOMMU group.
          type: list
          elements: dict
          returned: when pci is gathered
        gpus:
          description:
            - GPUs and accelerators with C(index), C(address), C(kind), C(vendor), ids, C(name), C(driver),
              C(numa_node), C(local_cpus), C(link), C(nvml) (details from NVML or C(null)), C(facts_from)
              (V(nvml) or the source), and C(nearest_nics) (list of C(nic), C(nic_names), C(type)).
            - C(link_state) is V(ok), V(degraded) (width below maximum, or generation below maximum while NVML says
              the GPU is busy), V(idle) (generation below maximum while idle or without NVML; cannot judge) or
              V(unknown); C(link_state_reason) says why.
            - C(nvlink) is the GPU's NVLinks, from NVML live or from the nvlink elements of an NCCL topology dump
              (C(null) where neither tells), with C(links) (active links; V(0) where NVML says the GPU has none),
              C(version), C(to_switch) (links to NVSwitches), C(peers) (list of C(address) and C(links), the GPUs
              linked directly) and C(source).
          type: list
          elements: dict
          returned: when gpu is gathered
        nics:
          description:
            - Network interfaces with C(name), C(kind) (V(physical), V(bond), V(vlan), V(bridge), V(ipoib),
              V(loopback), V(virtual)), C(address), C(card) (dddd:bb:dd), C(ports_on_card), C(driver),
              C(speed_mbps) (C(null) when the kernel says C(-1)), C(duplex), C(mtu), C(operstate), C(carrier),
              C(mac), C(numa_node), C(link), C(rdma_devices), C(bond_master), C(vlan), and C(ipv4) / C(ipv6)
              (lists of C(address/prefix); C(null) when the source has no addresses).
            - C(link) is the PCIe link of the port's PCI function, with the keys of a GPU's and a PCI device's
              C(link) (C(current) and C(max), each C(generation), C(width), C(speed_gts), C(gbytes_per_s)); C(null)
              for an interface without one. C(pci_link) holds the same and is deprecated (removed in 2.0.0).
            - C(min_mtu) and C(max_mtu) are the MTU range the driver allows, read from netlink with
              C(ip -json -details link show) on a live node (sysfs does not carry them); C(null) from captures
              and for drivers that set no limit.
            - C(link_modes) (subset C(link_modes), live node, ports with a PCI address) is what ethtool reports,
              C(supported_modes), C(advertised_modes), C(partner_modes), C(supported_speeds_mbps),
              C(max_supported_mbps), C(max_advertised_mbps), C(port) (V(twisted_pair), V(direct_attach), V(fibre),
              V(mii), V(other), V(none)), C(media) of the fastest modes (V(base-t), V(dac), V(fibre), V(backplane)),
              C(autoneg) and C(link). With C(card) and C(ports_on_card) it tells single from dual port cards and
              what speed a port could run later.
            - Addresses come from procfs files, not netlink; IPv4 addresses are matched to interfaces through the
              connected routes of the main table, so an address on an interface without a connected route (for
              example a /32) is not listed.
          type: list
          elements: dict
          returned: when nic is gathered
        rdma:
          description:
            - RDMA devices under C(/sys/class/infiniband) with C(name), C(address), C(numa_node), C(netdevs),
              C(software) and C(ports). C(software) is V(rxe) (Soft-RoCE) or V(siw) (soft iWARP) for a driver over a
              netdev, with no PCI function (C(address) and C(numa_node) C(null), C(netdevs) the interface it runs
              over), and C(null) for a device of its own. Each port has C(port), C(state), C(rate), C(rate_gbps), C(link_layer) (V(InfiniBand) or
              V(Ethernet)), C(active_mtu), C(netdev), C(gids), and C(roce_v2_gid_index) with C(roce_v2_ipv4), the
              RoCE v2 GID that carries the port's IPv4 address, the one NCCL_IB_GID_INDEX should name.
            - C(active_mtu) is derived from the netdev MTU for RoCE ports as the kernel does (a NIC's driver less
              96 header bytes, Soft-RoCE less 80 and at least 256); sysfs does not expose it for InfiniBand ports or
              soft iWARP, where it is C(null).
          type: list
          elements: dict
          returned: when rdma is gathered
        lldp:
          description:
            - C(agent) (whether lldpd answered), C(reason) when it did not (V(no LLDP agent ...)), C(format) (the
              lldpctl output read, V(json0), or V(keyvalue) where lldpctl was built without JSON), and C(ports), a map
              of local port to its neighbours. Each neighbour has C(chassis_name), C(chassis_id), C(mgmt_ip),
              C(port_id), C(port_id_type), C(port_descr), C(ttl), C(pvid), C(vlans) (C(id), C(name), C(pvid)),
              C(aggregation) (C(enabled), C(port_id); C(null) when the neighbour does not say the port is
              aggregated), C(mfs) (maximum frame size), C(autoneg) (C(supported), C(enabled), C(mau)) and C(via).
            - C(null) when not read (captures and XML sources, or not on the live node).
          type: dict
          returned: when lldp is gathered
        nccl:
          description:
            - The node's C(/etc/nccl.conf) as NCCL reads it, C(path), C(present) and C(values) (name to value);
              C(null) for XML sources.
          type: dict
          returned: when nccl is gathered
        kernel_modules:
          description:
            - Whether each kernel module the checks care about is loaded (C(nvidia), C(nvidia_peermem),
              C(nv_peer_mem), C(amdgpu), C(ib_core), C(mlx5_core), C(rdma_rxe), C(siw), C(bonding), C(8021q)), from
              C(/sys/module).
            - C(null) when the source cannot tell (XML sources, captures without C(/sys/module)).
          type: dict
          returned: when rdma is gathered
          sample: {nvidia: true, nvidia_peermem: false, nv_peer_mem: false, amdgpu: false, ib_core: true,
                   mlx5_core: true, bonding: true, "8021q": true}
        gpudirect:
          description:
            - What GPUDirect RDMA needs beyond the PCIe path, from files (sysfs sources only; C(null) for XML).
            - C(kernel_release), C(peermem) (V(nvidia_peermem), V(nv_peer_mem) or C(null)), C(peermem_known),
              C(nvidia_driver) (C(version), C(open_module), C(line) from C(/proc/driver/nvidia/version)), C(dmabuf)
              (C(kernel) 5.12 or later, C(open_module), C(possible)) and C(iommu) (C(mode) of the GPUs' and NICs' groups,
              V(off), V(passthrough), V(translated), V(mixed), V(other) or V(unknown); C(options), the IOMMU parameters of C(/proc/cmdline);
              C(cmdline_read); C(groups), the number of IOMMU groups; C(domain_types) seen).
          type: dict
          returned: when rdma is gathered
        kernel_pcie:
          description:
            - The kernel's own verdict on PCIe links, from its log (sysfs sources; C(null) for XML), gathered with the
              C(pci) subset. C(source) is what was read (C(/dev/kmsg) on the live node as root, else a saved
              C(var/log/dmesg) or C(var/log/kern.log) below the root; C(null) where none could be read),
              C(oldest_s) the oldest message's seconds after boot (a log that lost the boot's messages says so).
            - C(entries), per "available PCIe bandwidth" line the kernel printed, C(driver), C(device), C(available_gbps),
              C(limited), C(limit_speed_gts), C(limit_width), C(limit_at) (the port at the upper end of the slowest
              link), C(capable_gbps), C(capable_speed_gts) and C(capable_width).
          type: dict
          returned: when pci is gathered
          sample: {source: /dev/kmsg, oldest_s: 0, entries: [{driver: mlx5_core, device: "0000:5e:00.0",
                   available_gbps: 31.504, limited: true, limit_speed_gts: 8.0, limit_width: 4,
                   limit_at: "0000:5d:00.0", capable_gbps: 63.008, capable_speed_gts: 8.0, capable_width: 8}]}
        counters:
          description:
            - Stability counters, totals since boot (sysfs sources; C(null) for XML). C(boot_time) (C(btime) of
              C(/proc/stat)) and C(uptime_s) (C(/proc/uptime)) say when they were read, C(boot_id)
              (C(/proc/sys/kernel/random/boot_id), made anew at each boot; C(null) where unreadable) which boot.
            - C(interfaces), per physical interface, bond, VLAN and IPoIB port, C(kind), C(carrier_changes),
              C(carrier_up_count), C(carrier_down_count) and the kernel's C(statistics) (C(rx_packets), C(tx_packets),
              C(rx_errors), C(tx_errors), C(rx_dropped), C(tx_dropped), C(rx_crc_errors), C(rx_frame_errors),
              C(rx_fifo_errors), C(rx_missed_errors), C(rx_over_errors), C(rx_length_errors), C(tx_carrier_errors),
              C(tx_fifo_errors), C(tx_aborted_errors), C(collisions)); C(null) for a counter the kernel lacks.
            - C(aer), per PCI address of the GPUs, accelerators, NICs and every bridge above them, C(correctable),
              C(nonfatal) and C(fatal), each C(total) and C(by_type) (the non-zero types, as the kernel names them),
              and for root ports the C(rootport_*) totals.
            - C(rdma), per C(device/port), the port's C(counters) and C(hw_counters) that say something about
              stability (C(link_downed), C(symbol_error), C(port_rcv_errors), C(out_of_sequence), C(np_cnp_sent),
              ...; Soft-RoCE's C(out_of_seq_request), C(rcvd_seq_err), C(completer_retry_err), C(retry_exceeded_err)).
            - C(tcp), C(in_segs), C(out_segs), C(retrans_segs) and C(in_errs) of C(/proc/net/snmp).
            - C(roce_ecn), per physical port with an C(ecn) folder (mlx5), its DCQCN configuration. For
              C(notification_point) (C(ecn/roce_np), the CNPs it sends for ECN-marked packets) and
              C(reaction_point) (C(ecn/roce_rp), the slow-down on CNPs) the priorities C(enabled) and those C(read),
              and for the notification point C(cnp_dscp) and C(cnp_802p_prio). Configuration, not a counter.
            - C(nic_stats), per physical NIC port on a live node (C(root=/)), the driver's own counters from
              C(ethtool -S) whose names say drop, discard, error or pause (C(rx_discards_phy), C(rx_out_of_buffer),
              C(rx_pause_ctrl_phy), C(link_xoff_rx), ...), per-queue ones summed under the name with C(*) for the
              queue (C(rx*_wqe_err)); C(null) for a capture, C({}) without ethtool.
            - C(roce_ports), per RoCE port (C(device/port), link layer Ethernet), the network interface it runs on.
            - C(roce_lag), per such interface that is a bond (a RoCE LAG, as C(mlx5_bond_0)), its legs.
            - C(roce_pfc), per interface behind a RoCE port (a LAG's legs) on a live node, its priority flow control from
              C(dcb pfc show dev <port>), else C(mlnx_qos -i <port>) (C(source)) - the priorities PFC is C(enabled)
              for, and from dcb its C(capability) and the pause frames per priority it sent (C(requests)) and
              received (C(indications)), from mlnx_qos its C(trust) (C(pcp) or C(dscp)). Configuration, not a
              counter. C(null) for a capture; a port neither tool answers is left out.
          type: dict
          returned: when counters is gathered
          sample: {boot_time: 1764547200, uptime_s: 86400.0, boot_id: 0f6c2a9e-3b1d-4c55-9a51-2d0e8f7b6c41, interfaces: {ens1np0: {kind: physical,
                   carrier_changes: 2, carrier_up_count: 1, carrier_down_count: 1, rx_crc_errors: 0}},
                   aer: {"0000:19:00.0": {correctable: {total: 0, by_type: {}}}}, rdma: {},
                   tcp: {in_segs: 50000000, out_segs: 60000000, retrans_segs: 1200, in_errs: 0}}
        bonds:
          description:
            - Bonds with C(name), C(mode) (kernel name, for example V(802.3ad)), C(miimon), C(xmit_hash_policy),
              C(lacp_rate), C(mii_status), C(mtu), C(active_aggregator_id), C(partner_mac) and C(members).
            - Each member has C(name), C(mii_status), C(speed_mbps), C(duplex), C(aggregator_id), C(partner_mac),
              C(has_partner) (C(false) when the partner MAC is all zeros, that is, no LACP partner) and
              C(link_failure_count).
          type: list
          elements: dict
          returned: when bond is gathered
        vlans:
          description: VLAN interfaces with C(name), C(id), C(parent), C(mtu) and C(source) (V(kernel) from
            C(/proc/net/vlan/config), or V(name) when inferred from a C(parent.id) name).
          type: list
          elements: dict
          returned: when vlan is gathered
        paths:
          description:
            - C(gpu_nic) (one entry per GPU and NIC PCI function) and C(gpu_gpu) (one per GPU pair), each with
              C(type) (V(PIX), V(PXB), V(PHB), V(NODE), V(SYS) or C(null) when locality is unknown),
              C(common_bridge), C(via) (the devices whose link is on the path, in order, from the GPU to the other
              end), C(bottleneck_gbytes_per_s) and C(bottleneck_device).
            - C(links) holds each link some path crosses, once, in address order, with C(device), C(gbytes_per_s),
              C(speed_gts), C(generation), C(width) and C(basis) V(current), V(hwloc) or V(max). Facts of
              C(schema_version) 1 held these in each path as C(links) instead of C(via).
            - C(nearest_nics) maps each GPU address to its closest NIC functions.
          type: dict
          returned: when paths is gathered
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import run_capped

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import (
    gather, merge_link_limits, merge_switch_side,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.subsets import SOURCES, resolve_subsets


# A tool the facts ask (ip, lldpctl, ethtool, dcb, mlnx_qos) may hang on broken hardware or a stuck daemon, or print
# without end: each run is bounded in time and in output, and one that is cut is a warning of the facts.
TOOL_TIMEOUT_S = 20
TOOL_MAX_BYTES = 16 * 1024 * 1024


def run_tool(argv, facts):
    """(rc, out, err) of one tool run, bounded (run_capped); a run cut short or that cannot start is rc 1 and a
    warning in ``facts``, so the readers treat it as a tool that failed."""
    try:
        rc, out, err, why = run_capped(argv, TOOL_TIMEOUT_S, TOOL_MAX_BYTES, env=dict(os.environ, LC_ALL="C"))
    except OSError as exc:
        rc, out, err, why = None, "", "", "%s: %s" % (argv[0], exc)
    if why:
        facts.setdefault("warnings", []).append("%s (left out of the facts)" % why)
        return 1, "", why
    return rc, out, err


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather_subset=dict(type="list", elements="str", default=["all"]),
            source=dict(type="str", choices=list(SOURCES), default="sysfs"),
            root=dict(type="path", default="/"),
            path=dict(type="path"),
            nvml=dict(type="str", choices=["auto", "yes", "no"], default="auto"),
            lldp_socket=dict(type="path"),
            reuse=dict(type="bool", default=False),  # decided by the action plugin, before the module runs
            as_json=dict(type="bool", default=False),
        ),
        required_if=[
            ("source", "hwloc_xml", ("path",)),
            ("source", "nccl_xml", ("path",)),
        ],
        supports_check_mode=True,
    )
    params = module.params
    if params["source"] == "sysfs" and params["path"]:
        module.fail_json(msg="path: %r is only used with source hwloc_xml or nccl_xml; use root for a sysfs tree"
                         % params["path"])
    try:
        facts = gather(
            source=params["source"],
            root=params["root"],
            path=params["path"],
            gather_subset=params["gather_subset"],
            nvml=params["nvml"],
        )
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except TopologyError as exc:
        module.fail_json(msg=str(exc))
    ip = module.get_bin_path("ip")
    if params["source"] == "sysfs" and params["root"] == "/" and facts.get("nics") and ip:
        # The MTU range of each NIC is only in netlink, not sysfs.
        rc, out, _err = run_tool([ip, "-json", "-details", "link", "show"], facts)
        if rc == 0:
            merge_link_limits(facts, out)
    if params["source"] == "sysfs" and params["root"] == "/":
        merge_switch_side(facts, lambda argv: run_tool(argv, facts), module.get_bin_path,
                          resolve_subsets(params["gather_subset"]), params["lldp_socket"])
    facts["root"] = params["root"] if params["source"] == "sysfs" else None
    facts["path"] = params["path"]
    if params["as_json"]:
        module.exit_json(changed=False, reused=False, facts_json=json.dumps(facts, separators=(",", ":")))
    module.exit_json(changed=False, reused=False, ansible_facts={"gpuops_fabric": facts})


if __name__ == "__main__":
    main()
