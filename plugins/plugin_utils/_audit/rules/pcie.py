# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""Rule family PCIE: GPU and NIC links, slots and upstream links."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.model import (
    ACCELERATOR_KINDS, KIND_ACCELERATOR, KIND_GPU, KIND_NIC, KIND_RDMA, NETWORK_KINDS, PORT_NETDEVS,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.pcie import (
    gpu_link_values, link_sides, link_verdict, nic_link, path_bottleneck, path_hops,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.engine import host_rule, NotApplicable

# ---- PCIe -------------------------------------------------------------------------------------------


@host_rule(
    "PCIE-001", "GPU link narrower than it should be", "fail",
    """A GPU trained to fewer lanes than its slot gives moves half (or less) of the data per second over
    PCIe; every transfer to the NIC and host memory takes longer. Width does not drop at idle, so a
    narrow link is a fault: a badly seated card, a riser, or a slot wired narrower.""",
    """Reseat the card or riser, check the slot's wiring in the board manual, and look at
    `lspci -vv` LnkSta/LnkCap. If the card is x8 by design, set fabric_expectations.gpu.width.""")
def pcie_gpu_width(ctx):
    ctx.need("gpus")
    for gpu in ctx.facts["gpus"]:
        values = gpu_link_values(gpu["link"], gpu.get("nvml"))
        current, maximum = values["current_width"], values["max_width"]
        expected = ctx.expect["gpu"].get("width") or maximum
        if current is None or expected is None:
            continue
        if current < expected:
            ctx.finding(gpu["address"], "GPU %s runs at x%d, expected x%d" % (gpu["address"], current, expected),
                        {"current_width": current, "max_width": maximum, "expected_width": expected})


@host_rule(
    "PCIE-002", "GPU link generation below its maximum", "fail",
    """A link at a lower PCIe generation halves the bandwidth per step down. GPUs drop to Gen1 when idle
    to save power, so a lower generation only counts when NVML says the GPU is busy (P0); at idle
    it cannot be judged and is reported as information.""",
    """Put the GPU under load (e.g. nvidia-smi -q -d PERFORMANCE while a job runs) and check the link
    again; if it stays low under load, check BIOS PCIe speed settings, risers and retimers.""")
def pcie_gpu_generation(ctx):
    ctx.need("gpus")
    for gpu in ctx.facts["gpus"]:
        values = gpu_link_values(gpu["link"], gpu.get("nvml"))
        current, maximum, pstate = values["current_generation"], values["max_generation"], values["performance_state"]
        expected = ctx.expect["gpu"].get("generation") or maximum
        if current is None or expected is None or current >= expected:
            continue
        evidence = {"current_generation": current, "max_generation": maximum, "expected_generation": expected,
                    "performance_state": pstate}
        if pstate == 0:
            ctx.finding(gpu["address"], "GPU %s runs at Gen%d while busy (P0), expected Gen%d"
                        % (gpu["address"], current, expected), evidence)
        else:
            why = "idle at P%d" % pstate if pstate is not None else "no NVML to say whether it is busy"
            ctx.finding(gpu["address"], "GPU %s at Gen%d (max Gen%d): %s, cannot judge at idle"
                        % (gpu["address"], current, expected, why), evidence, severity="info")


@host_rule(
    "PCIE-003", "NIC slot slower than the NIC's ports", "fail",
    """A NIC's ports can only move what its PCIe slot carries: two 100GbE ports need 25 GB/s, more than a
    Gen3 x8 slot (7.9 GB/s) or even a Gen3 x16 slot (15.8 GB/s) gives. The network then looks slow although
    every link is up at full speed.""",
    """Move the card to a slot with enough lanes and generation (see the board manual), or check why the
    link trained lower than the card supports.""")
def pcie_nic_slot(ctx):
    ctx.need("nics")
    cards = {}
    for nic in ctx.facts["nics"]:
        card = nic.get("card")
        if card and nic.get("kind") in PORT_NETDEVS:
            cards.setdefault(card, []).append(nic)
    rates = None
    for card in sorted(cards):
        nics = sorted(cards[card], key=lambda n: (str(n.get("address")), str(n.get("name"))))
        # The functions of one card share its link; a capture may hold the link files of one function only.
        link, slot = {}, None
        for nic in nics:
            fact = nic_link(nic)
            slot = link_sides(fact)["current"]["gbytes_per_s"]
            if slot is not None:
                link = fact["current"]  # as the facts say it, for the message and the evidence
                break
        per_port, notes = {}, []
        for nic in nics:
            port_gbps, note = _port_gbps(nic)
            if port_gbps is None:
                # No Ethernet speed (InfiniBand, or down) and no link modes: its RDMA port's data rate.
                rates = _rdma_rates(ctx.facts) if rates is None else rates
                port_gbps = rates.get(nic.get("address"))
                if port_gbps and nic.get("speed_mbps") is None and _is_down(nic):
                    note = "%s: port is down; judged against its RDMA rate %g Gb/s" % (nic.get("name"), port_gbps)
            if port_gbps:
                address = nic.get("address") or nic.get("name")
                if port_gbps > per_port.get(address, 0):
                    per_port[address] = port_gbps
                if note:
                    notes.append(note)
        if not per_port or slot is None:
            continue
        # One slot carries every port of the card: the ports' rates add up. A port nothing is known about counts
        # at the fastest rate known on the card (the ports of one card are alike).
        addresses = set(nic.get("address") or nic.get("name") for nic in nics)
        best = max(per_port.values())
        speeds = [per_port.get(a, best) for a in sorted(addresses, key=str)]
        ports = len(speeds)
        line_gbps = sum(speeds)
        if slot * 8 < line_gbps:
            if len(set(speeds)) == 1:
                need = "%d port(s) x %g Gb/s" % (ports, speeds[0])
            else:
                need = "%d ports (%s Gb/s)" % (ports, " + ".join("%g" % s for s in speeds))
            ctx.finding(card, "card %s: %s need %.3g GB/s, its slot gives %.3g GB/s (%s)%s"
                        % (card, need, line_gbps / 8, slot, _link_text(link),
                           "".join("; " + n for n in notes)),
                        {"ports": ports, "port_gbps": best, "ports_gbps": speeds, "needed_gbytes_per_s": line_gbps / 8,
                         "slot": link, "notes": notes})


def _is_down(nic):
    return nic.get("carrier") is False or nic.get("operstate") in ("down", "lowerlayerdown", "dormant", "notpresent")


def _fastest_mode(modes):
    """(Mb/s, name) of the fastest supported link mode of ethtool's link_modes, or (None, None)."""
    best, name = None, None
    for mode in modes.get("supported_modes") or []:
        head = str(mode).split("base", 1)[0]
        if head.isdigit() and (best is None or int(head) > best or (int(head) == best and mode.endswith("/Full"))):
            best, name = int(head), str(mode)
    top = modes.get("max_supported_mbps")
    if top is None and modes.get("supported_speeds_mbps"):
        top = max(modes["supported_speeds_mbps"])
    if top is not None and (best is None or top > best):
        return top, "%s Mb/s" % top
    return best, name


def _port_gbps(nic):
    """(Gb/s, note) a port is judged at: its Ethernet speed; when down or without a speed, its fastest supported
    link mode (ethtool, subset link_modes) with a note saying so; (None, None) when neither is known."""
    speed = nic.get("speed_mbps")
    if speed:
        return speed / 1000.0, None
    mbps, name = _fastest_mode(nic.get("link_modes") or {})
    if not mbps:
        return None, None
    state = "port is down" if _is_down(nic) else "port reports no speed"
    return mbps / 1000.0, "%s: %s; judged against its fastest supported mode %s" % (nic.get("name"), state, name)


def _rdma_rates(facts):
    rates = {}
    for rdma in facts.get("rdma") or []:
        for port in rdma["ports"]:
            data = _ib_data_gbps(port)
            if rdma.get("address") and data:
                rates[rdma["address"]] = max(rates.get(rdma["address"], 0), data)
    return rates


def _ib_data_gbps(port):
    """Data rate of an RDMA port: SDR, DDR and QDR InfiniBand signal with 8b/10b (QDR 40 -> 32 Gb/s)."""
    rate = port.get("rate_gbps")
    if not rate:
        return None
    text = (port.get("rate") or "").upper()
    if any(name in text for name in ("SDR", "DDR", "QDR")):
        return rate * 0.8
    return rate


def _link_text(link):
    if link.get("generation") and link.get("width"):
        return "Gen%d x%d" % (link["generation"], link["width"])
    return "%.3g GB/s" % link["gbytes_per_s"]


@host_rule(
    "PCIE-004", "Upstream link narrower than the device below it", "warn",
    """A device can only use the bandwidth of the narrowest link between it and the CPU. A x16 GPU behind a
    switch whose uplink runs x8, or behind a port that reports a narrower link than the device, is capped
    at the uplink.""",
    """Check the switch uplink or riser (lspci -vv on the upstream port) and the board's slot layout.""")
def pcie_upstream(ctx):
    ctx.need("pci")
    pci = ctx.pci()
    for dev in ctx.facts["pci"]:
        if dev["kind"] not in ACCELERATOR_KINDS + NETWORK_KINDS:
            continue
        own = link_sides(dev.get("link"))["current"]["gbytes_per_s"]
        if own is None:
            continue
        for ancestor in dev["chain"]:
            up = pci.get(ancestor)
            if up is None:
                continue
            theirs = link_sides(up.get("link"))["current"]["gbytes_per_s"]
            if theirs is not None and theirs + 0.01 < own:
                ctx.finding(dev["address"], "%s %s (%.1f GB/s) sits below %s %s at %.1f GB/s"
                            % (dev["kind"], dev["address"], own, up["kind"].replace("_", " "), ancestor, theirs),
                            {"device_link": dev["link"]["current"], "upstream": ancestor,
                             "upstream_link": up["link"]["current"]})
                break


# What each kind of device does with its link at idle decides how a link below the device's own maximum is judged.
# - GPUs lower the link *generation* to save power when idle and raise it under load (NVIDIA: nvidia-smi's
#   "current link generation and width ... may be reduced when the GPU is not in use", and "downgrading the PCIe link
#   when not in use is an important integral part of the GPU's power management", forums.developer.nvidia.com
#   /t/prevent-pcie-from-reducing-gen/72537; baaz.dev/blog/understanding-power-management-in-gpu-via-pcie shows
#   LnkSta 2.5GT/s "downgraded" on idle GPUs in Gen5 slots). A lower generation is "idle, cannot judge"; a narrower
#   width is a finding (a GPU's link width does not drop at idle). GPUs listed in the gpus facts are judged by PCIE-001/PCIE-002 (with
#   NVML and fabric_expectations.gpu); PCIE-005 judges GPUs and accelerators only where those facts are absent.
# - NICs and HCAs keep the link they trained to at probe: the kernel prints it once, at driver load, as
#   "4.000 Gb/s available PCIe bandwidth, limited by 5.0 GT/s PCIe x1 link at 0000:00:00.0 (capable of 32.000 Gb/s
#   with 5.0 GT/s PCIe x8 link)" (ixgbe on an 82599, github.com/geerlingguy/raspberry-pi-pcie-devices/issues/330;
#   older ixgbe: "PCI Express bandwidth of 4GT/s available", ntop/PF_RING#283; a ConnectX-3 at LnkSta 5GT/s x1 under
#   LnkCap 8GT/s x4 and "wouldn't have the expected throughput", geerlingguy/raspberry-pi-pcie-devices#143). ASPM
#   (L0s/L1) saves power in link states, not by training to a lower speed or width, so LnkSta of an idle NIC still
#   shows what it trained to. A NIC or HCA below its own maximum is a fault even with every port down
#   (a 10GbE card at 2.5 GT/s x1 carries 0.25 GB/s).
_LINK_POLICY = {
    # kind: (label, severity when the generation is low, severity when the width is narrow)
    KIND_NIC: ("NIC", "fail", "fail"),
    KIND_RDMA: ("HCA", "fail", "fail"),
    KIND_GPU: ("GPU", "info", "fail"),
    KIND_ACCELERATOR: ("accelerator", "info", "fail"),
}


def _gen_width(link):
    """((generation, width) now, (generation, width) at best) of a link fact, read once by pcie.link_sides."""
    sides = link_sides(link)
    return tuple((sides[side]["generation"], sides[side]["width"]) for side in ("current", "max"))


def _gen_width_text(gen, width):
    return "%s %s" % ("Gen%d" % gen if gen else "Gen?", "x%d" % width if width else "x?")


@host_rule(
    "PCIE-005", "NIC, HCA or accelerator link below its own maximum", "fail",
    """A NIC or HCA whose PCIe link trained to a lower generation or fewer lanes than both the card and its slot
    support moves less than it was built to, whether or not its ports are up now: a dual-port 10GbE card at 2.5 GT/s
    x1 carries 0.25 GB/s where one port alone needs 1.25 GB/s. NICs do not retrain their link for power, so this is
    a fault (a badly seated card, a riser, a slot's lanes shared by the BIOS, a marginal retimer). Where the slot
    itself is the limit (a Gen4 card in a Gen3 slot) it is a warning. GPUs and accelerators lower their generation at
    idle: without the gpus facts (PCIE-001/PCIE-002 judge those) a lower generation is information, "idle, cannot
    judge"; a narrower width is a fault.""",
    """Reseat the card, move it to a slot wired for its full width and generation (board manual), check BIOS
    bifurcation and PCIe speed settings and any riser or retimer; compare `lspci -vv` LnkCap with LnkSta and the
    driver's "limited by ... (capable of ...)" line in dmesg.""")
def pcie_own_maximum(ctx):
    ctx.need("pci")
    pci = ctx.pci()
    in_gpus = set(g.get("address") for g in ctx.facts.get("gpus") or [])
    names = {}
    for nic in ctx.facts.get("nics") or []:
        if nic.get("address"):
            names.setdefault(nic["address"], []).append(nic.get("name"))
    judged, seen = 0, {}
    for dev in ctx.facts["pci"]:
        policy = _LINK_POLICY.get(dev.get("kind"))
        if policy is None or dev.get("address") in in_gpus:
            continue
        label, gen_severity, width_severity = policy
        link = dev.get("link") or {}
        (cur_gen, cur_width), (max_gen, max_width) = _gen_width(link)
        if not ((cur_gen and max_gen) or (cur_width and max_width)):
            continue
        judged += 1
        # The slot's own maximum (the port above) caps what the link can train to: the one verdict of the link
        parent = pci.get(dev.get("parent")) or {}
        verdict = link_verdict(dev.get("kind"), link, (parent.get("link") or {}).get("max"))
        if verdict["verdict"] == "ok":
            continue
        low_gen, low_width = verdict["generation_low"], verdict["width_low"]
        reach_gen, reach_width = verdict["reach"]
        # The functions of one card share its link: one finding per card and link, naming every port on it.
        card = str(dev["address"]).rsplit(".", 1)[0]
        key = (card, cur_gen, cur_width, max_gen, max_width)
        if key in seen:  # a sibling function of a card already reported (its ports are named there)
            continue
        ports = seen[key] = list(names.get(dev["address"], []))
        siblings = [d for d in ctx.facts["pci"] if d is not dev and str(d.get("address")).rsplit(".", 1)[0] == card
                    and _gen_width(d.get("link"))[0] == (cur_gen, cur_width)]
        for sibling in siblings:
            ports.extend(names.get(sibling.get("address"), []))
        who = "%s %s%s" % (label, dev["address"], " (%s)" % ", ".join(sorted(ports)) if ports else "")
        current = link.get("current") or {}
        evidence = {"kind": dev.get("kind"), "current": current, "max": link.get("max"),
                    "slot": parent.get("address"), "slot_max": (parent.get("link") or {}).get("max"),
                    "generation_low": low_gen, "width_low": low_width, "ports": sorted(ports)}
        running = "%s%s" % (_gen_width_text(cur_gen, cur_width),
                            " (%.3g GB/s)" % current["gbytes_per_s"] if current.get("gbytes_per_s") else "")
        own = _gen_width_text(max_gen, max_width)
        if low_width or (low_gen and gen_severity != "info"):
            judged_gen = low_gen and gen_severity != "info"
            what = " and ".join(w for w, low in (("generation", judged_gen), ("width", low_width)) if low)
            severity = width_severity if low_width else gen_severity
            message = "%s runs at %s, below its maximum %s (%s down)" % (who, running, own, what)
            if low_gen and not judged_gen:
                message += "; the lower generation may be idle power saving and is not judged"
            if (reach_gen, reach_width) != (max_gen, max_width):
                message += "; its slot %s allows %s" % (parent.get("address"), _gen_width_text(reach_gen, reach_width))
            if dev.get("kind") in NETWORK_KINDS:
                message += "; NICs do not lower their link for power, so this holds whether or not a port is up"
            ctx.finding(dev["address"], message, evidence, severity=severity)
        elif low_gen:
            ctx.finding(dev["address"], "%s at %s (max %s): idle, cannot judge (%ss lower their link generation "
                        "when idle; width is at its maximum)" % (who, running, own, label), evidence,
                        severity="info")
        else:
            ctx.finding(dev["address"], "%s runs at %s, what its slot %s allows; the card could run %s in a slot "
                        "that supports it" % (who, running, parent.get("address"), own), evidence, severity="warn")
    if not judged:
        raise NotApplicable("no NIC, HCA or accelerator (outside the gpus facts) reports both its current and its "
                            "maximum PCIe link (captures from old kernels and hwloc XML carry the current link only)")


@host_rule(
    "PCIE-006", "A link on a GPU's or NIC's path below what both its ends allow", "warn",
    """Every link between a GPU or NIC and its root port caps what the device can move: a PCIe switch's uplink
    trained to Gen3 or to x8 under Gen4 x16 devices halves what all of them get, and neither the devices' own links
    nor any XID or health event says so. Each link above the device (a switch's upstream port, another bridge) is
    judged against the lower of its two ends' maxima (its own and its slot's, the port above): a narrower width is a
    fault; a lower generation a warning (a switch keeps its trained generation at idle, but a platform's link power
    policy may lower it). Each finding names the hop, the devices below it, and whether it is their path's
    bottleneck. The devices' own links are PCIE-001, -002 and -005.""",
    """Read `lspci -vv -s <hop>` LnkCap and LnkSta on both ends of the hop; reseat the switch board or riser, check
    the retimer and the BIOS PCIe speed and bifurcation settings of that slot, and the kernel log's "limited by ...
    link at <hop>" line.""")
def pcie_path_hops(ctx):
    ctx.need("pci")
    pci = ctx.pci()
    below, judged = {}, 0
    for dev in ctx.facts["pci"]:
        if dev.get("kind") not in ACCELERATOR_KINDS + NETWORK_KINDS:
            continue
        hops = path_hops(dev["address"], pci)
        bottleneck = path_bottleneck(hops)
        for hop in hops[1:]:  # the device's own link is judged by PCIE-001/002/005
            if hop["verdict"]["verdict"] == "unknown":
                continue
            judged += 1
            if hop["verdict"]["verdict"] != "below":
                continue
            entry = below.setdefault(hop["address"], {"hop": hop, "devices": [], "bottleneck_of": []})
            entry["devices"].append(dev["address"])
            if bottleneck is hop:
                entry["bottleneck_of"].append(dev["address"])
    if not judged:
        raise NotApplicable("no link above a GPU or NIC reports both its current and its maximum (captures from old "
                            "kernels and hwloc or NCCL XML carry the current link only)")
    for address in sorted(below):
        hop, devices, capped = below[address]["hop"], below[address]["devices"], below[address]["bottleneck_of"]
        verdict, sides = hop["verdict"], hop["link"]
        now, best = sides["current"], sides["max"]
        reach = _gen_width_text(*verdict["reach"])
        if hop["slot_known"]:
            allowed = "below %s that both its ends allow (its own %s, its slot %s)" % (
                reach, _gen_width_text(best["generation"], best["width"]), hop["slot"])
        else:
            allowed = "below its own maximum %s (its slot %s gives no maximum)" % (reach, hop["slot"] or "unknown")
        message = "%s %s runs at %s%s, %s" % (
            str(hop["kind"]).replace("_", " "), address, _gen_width_text(now["generation"], now["width"]),
            " (%.3g GB/s)" % now["gbytes_per_s"] if now["gbytes_per_s"] else "", allowed)
        message += "; below it: %s" % ", ".join(_named(pci, d) for d in sorted(devices))
        if capped:
            message += "; it is the narrowest link on the path of %s" % ", ".join(_named(pci, d) for d in sorted(capped))
        ctx.finding(address, message, {
            "hop": address, "kind": hop["kind"], "slot": hop["slot"], "current": now, "max": best,
            "reach": {"generation": verdict["reach"][0], "width": verdict["reach"][1]},
            "generation_low": verdict["generation_low"], "width_low": verdict["width_low"],
            "devices": sorted(devices), "bottleneck_of": sorted(capped)},
            severity="fail" if verdict["width_low"] else "warn")


def _named(pci, address):
    return "%s %s" % (str((pci.get(address) or {}).get("kind") or "device").replace("_", " "), address)


BOOT_MESSAGES_S = 120  # a kernel log whose oldest message is later than this after boot lost the probe lines


@host_rule(
    "PCIE-007", "The kernel reports a GPU's or NIC's PCIe bandwidth limited", "warn",
    """When a driver probes a device (and the PCI core at boot) the kernel prints the bandwidth the device has and, if
    a link on its way is slower than the device could use, which one: "31.504 Gb/s available PCIe bandwidth, limited
    by 8.0 GT/s PCIe x4 link at 0000:5d:00.0 (capable of 63.008 Gb/s with 8.0 GT/s PCIe x8 link)". The finding
    repeats the kernel's verdict for each GPU, accelerator, NIC and HCA and says beside it what the facts say of that
    link now (below what both its ends allow, at what its slot allows, at its best, or not judged). Read live from
    the ring buffer (/dev/kmsg, as root), in a capture from var/log/dmesg or var/log/kern.log below its root.""",
    """Read the link named at both ends (`lspci -vv -s <port>` LnkCap and LnkSta); reseat the card, riser or switch
    board, check the slot's width and the BIOS PCIe speed and bifurcation; where the slot is narrower by design, move
    the card to one that is not.""")
def pcie_kernel_verdict(ctx):
    ctx.need("pci")
    log = ctx.facts.get("kernel_pcie")
    if not isinstance(log, dict):
        raise NotApplicable("no kernel log in these facts (XML sources have none)")
    if not log.get("source"):
        raise NotApplicable("the kernel log could not be read (/dev/kmsg needs root on the live node; a capture "
                            "needs var/log/dmesg or var/log/kern.log below its root)")
    pci = ctx.pci()
    limited = {}
    for entry in log.get("entries") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("device"), str):
            continue
        if entry.get("limited") is True:
            limited[entry["device"]] = entry
        elif entry.get("limited") is False:
            limited.pop(entry["device"], None)  # probed again later (the driver reloaded) at its full bandwidth
    judged = [a for a in limited if (pci.get(a) or {}).get("kind") in ACCELERATOR_KINDS + NETWORK_KINDS]
    oldest = log.get("oldest_s")
    if not judged and (not isinstance(oldest, int) or oldest > BOOT_MESSAGES_S):
        raise NotApplicable("the kernel log %s no longer holds the messages of the boot (its oldest is %s after "
                            "boot), so no limited link it printed then can be seen" % (
                                log["source"], "%d s" % oldest if isinstance(oldest, int) else "an unknown time"))
    for address in sorted(judged):
        entry = limited[address]
        hops = path_hops(address, pci)
        at = entry.get("limit_at")
        hop = next((h for h in hops if h["slot"] == at or h["address"] == at), None) if at else None
        said = "%s %s: the kernel says %s Gb/s available, limited by %s x%s at %s (capable of %s Gb/s with %s x%s)" % (
            pci[address]["kind"].replace("_", " "), address, entry.get("available_gbps"),
            "%s GT/s" % entry["limit_speed_gts"] if entry.get("limit_speed_gts") else "an unknown speed",
            entry.get("limit_width"), at or "an unnamed port", entry.get("capable_gbps"),
            "%s GT/s" % entry.get("capable_speed_gts"), entry.get("capable_width"))
        verdict = hop["verdict"]["verdict"] if hop else "unknown"
        now = hop["link"]["current"] if hop else {}
        facts_say = {
            "below": "the facts agree: %s %s runs at %s, below what both its ends allow (PCIE-005, PCIE-006)",
            "capped": "the facts: %s %s runs at %s, what its slot allows (by design, not a fault of the link)",
            "ok": "the facts: %s %s runs at %s, its best, now (trained higher since the kernel's line)",
            "idle": "the facts: %s %s runs at %s, idle (a GPU lowers its generation when idle)",
        }.get(verdict, "the facts cannot judge that link (%s %s: %s; current and maximum not both known)")
        link_text = _gen_width_text(now.get("generation"), now.get("width")) if hop else "not in the facts"
        message = "%s; %s" % (said, facts_say % (str(hop["kind"] if hop else "link").replace("_", " "),
                                                 hop["address"] if hop else at, link_text))
        ctx.finding(address, message, {
            "kernel": dict(entry), "log": log["source"], "hop": hop["address"] if hop else None,
            "facts_verdict": verdict, "facts_current": now or None},
            severity="info" if verdict in ("ok", "idle") else None)
