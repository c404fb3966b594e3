# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""The deployment checklist as rules over gpuops_fabric facts.

Adding a rule is one function and one decorator: ``@host_rule(...)`` for a rule evaluated on one
host's facts, ``@inventory_rule(...)`` for one evaluated once over all hosts. A rule yields
findings through ``ctx.finding(...)``; raising ``NotApplicable`` says it cannot be judged here.
Rule ids never change meaning once released; a retired id is not reused.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
from collections import namedtuple

from ansible_collections.gpuops.fabric.plugins.module_utils._nccl import base_interface, ifname_matches, ports_under

SEVERITIES = ("fail", "warn", "info")
_PATH_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
SEVERITY_RANK = {"fail": 0, "warn": 1, "info": 2}

Rule = namedtuple("Rule", "id title severity description remediation scope check")

CATALOG = {}


class NotApplicable(Exception):
    """The rule cannot be judged on this host (the reason is reported, not a pass)."""


def _register(scope, rule_id, title, severity, description, remediation):
    if severity not in SEVERITIES:
        raise ValueError("%s: severity %r" % (rule_id, severity))

    def register(func):
        if rule_id in CATALOG:
            raise ValueError("rule id %s registered twice" % rule_id)
        CATALOG[rule_id] = Rule(rule_id, title, severity, " ".join(description.split()),
                                " ".join(remediation.split()), scope, func)
        return func
    return register


def host_rule(rule_id, title, severity, description, remediation):
    return _register("host", rule_id, title, severity, description, remediation)


def inventory_rule(rule_id, title, severity, description, remediation):
    return _register("inventory", rule_id, title, severity, description, remediation)


class HostContext:
    """What a host rule sees: the host's facts and expectations, and a way to report."""

    def __init__(self, host, facts, expect):
        self.host = host
        self.facts = facts
        self.expect = expect
        self.rule = None
        self.findings = []

    def finding(self, subject, message, evidence, severity=None, host=None):
        rule = self.rule
        self.findings.append({
            "id": rule.id,
            "title": rule.title,
            "severity": severity or rule.severity,
            "host": host or self.host,
            "subject": subject,
            "message": message,
            "evidence": evidence,
            "remediation": rule.remediation,
        })

    # Small helpers rules share.
    def pci(self):
        if "_pci_index" not in self.__dict__:
            self._pci_index = dict((p["address"], p) for p in self.facts.get("pci") or [])
        return self._pci_index

    def need(self, *keys):
        for key in keys:
            if self.facts.get(key) is None:
                raise NotApplicable("facts subset %r was not gathered" % key)


# An exception in a rule is a finding for that host, never the end of the audit: one host with odd facts (a
# 400-digit speed, a string where a number belongs) must not cost every other host its report. The finding keeps
# the rule's own id (so the report's per-rule outcome and JUnit case show it) and the rule's severity, raised to
# warn for info rules: a check that could not run cannot vouch for what it guards, so a fail-level check that
# crashed must not let the gate pass. Such findings are marked ``internal_error`` and are never waived.
INTERNAL_ERROR_MIN_SEVERITY = "warn"


def _error_severity(rule):
    if SEVERITY_RANK[rule.severity] > SEVERITY_RANK[INTERNAL_ERROR_MIN_SEVERITY]:
        return INTERNAL_ERROR_MIN_SEVERITY
    return rule.severity


def _exception_text(exc):
    try:
        text = str(exc)
    except Exception:  # pylint: disable=broad-except
        text = "(unprintable)"
    if len(text) > 300:
        text = text[:300] + "..."
    return "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__


def _where(exc):
    """The innermost frame of the traceback, as file:line in function (for whoever fixes the rule)."""
    import traceback
    frames = traceback.extract_tb(exc.__traceback__) if getattr(exc, "__traceback__", None) else []
    if not frames:
        return None
    last = frames[-1]
    return "%s:%s in %s" % (last[0].rsplit("/", 1)[-1], last[1], last[2])


def _internal_error(ctx, rule, exc, host=None):
    text = _exception_text(exc)
    message = ("rule %s (%s) could not be evaluated%s: %s; the facts have a value this rule did not expect, or the "
               "rule has a bug; the other rules ran" % (rule.id, rule.title, " on host %s" % host if host else "",
                                                        text))
    ctx.findings.append({
        "id": rule.id,
        "title": rule.title,
        "severity": _error_severity(rule),
        "host": host,
        "subject": "internal error",
        "message": message,
        "evidence": {"rule": rule.id, "exception": type(exc).__name__, "error": text, "where": _where(exc)},
        "remediation": "Report this with the host's gpuops_fabric facts; check the facts for odd values (a number "
                       "out of range, a string where a number belongs, a missing value).",
        "internal_error": True,
    })
    return ("error", text)


def evaluate_host(host, facts, expect):
    """Run every host rule; return (findings, outcomes) where outcomes maps rule id -> (status, reason).

    status is ``pass``, ``findings``, ``not_applicable`` (reason: why) or ``error`` (reason: the exception; the
    findings then hold an internal-error finding for the rule)."""
    ctx = HostContext(host, facts if isinstance(facts, dict) else {}, expect if isinstance(expect, dict) else {})
    outcomes = {}
    for rule in CATALOG.values():
        if rule.scope != "host":
            continue
        ctx.rule = rule
        before = len(ctx.findings)
        try:
            for _item in rule.check(ctx) or ():
                pass
            outcomes[rule.id] = ("findings" if len(ctx.findings) > before else "pass", None)
        except NotApplicable as exc:
            outcomes[rule.id] = ("not_applicable", str(exc))
        except Exception as exc:  # pylint: disable=broad-except
            outcomes[rule.id] = _internal_error(ctx, rule, exc, host)
        ctx.__dict__.pop("_pci_index", None)  # a rule may have left a half-built index behind
    return ctx.findings, outcomes


def evaluate_inventory(hosts):
    """``hosts``: {name: (facts, expect)} of audited hosts. Returns (findings, {rule id: status}).

    An exception in an inventory rule is one internal-error finding without a host (see evaluate_host)."""
    findings, outcomes = [], {}
    for rule in CATALOG.values():
        if rule.scope != "inventory":
            continue
        ctx = HostContext(None, None, None)
        ctx.rule = rule
        try:
            rule.check(ctx, hosts)
            outcomes[rule.id] = ("findings" if ctx.findings else "pass", None)
        except NotApplicable as exc:
            outcomes[rule.id] = ("not_applicable", str(exc))
        except Exception as exc:  # pylint: disable=broad-except
            outcomes[rule.id] = _internal_error(ctx, rule, exc)
        findings.extend(ctx.findings)
    return findings, outcomes


# ---- expectations helpers ---------------------------------------------------------------------------
_MATCHES = {}


def _matches(name, pattern):
    key = (name, pattern)
    if key not in _MATCHES:
        if len(_MATCHES) > 100000:
            _MATCHES.clear()
        _MATCHES[key] = fnmatch.fnmatchcase(name, pattern)
    return _MATCHES[key]


def expected_nic(expect, name):
    """The first expectation entry whose name pattern matches the interface, or None."""
    for entry in expect.get("nics") or ():
        if _matches(name, entry["name"]):
            return entry
    return None


def _gbps(mbps):
    return mbps / 1000.0 if mbps else None


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
        current = gpu["link"]["current"]["width"]
        nvml = gpu.get("nvml") or {}
        maximum = nvml.get("max_width") or gpu["link"]["max"]["width"]
        if nvml.get("current_width"):
            current = nvml["current_width"]
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
        nvml = gpu.get("nvml") or {}
        current = nvml.get("current_generation") or gpu["link"]["current"]["generation"]
        maximum = nvml.get("max_generation") or gpu["link"]["max"]["generation"]
        expected = ctx.expect["gpu"].get("generation") or maximum
        if current is None or expected is None or current >= expected:
            continue
        evidence = {"current_generation": current, "max_generation": maximum, "expected_generation": expected,
                    "performance_state": nvml.get("performance_state")}
        if nvml.get("performance_state") == 0:
            ctx.finding(gpu["address"], "GPU %s runs at Gen%d while busy (P0), expected Gen%d"
                        % (gpu["address"], current, expected), evidence)
        else:
            why = ("idle at P%d" % nvml["performance_state"] if nvml.get("performance_state") is not None
                   else "no NVML to say whether it is busy")
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
        if card and nic.get("kind") in ("physical", "ipoib"):
            cards.setdefault(card, []).append(nic)
    rates = None
    for card in sorted(cards):
        nics = sorted(cards[card], key=lambda n: (str(n.get("address")), str(n.get("name"))))
        # The functions of one card share its link; a capture may hold the link files of one function only.
        link = {}
        for nic in nics:
            candidate = (nic.get("pci_link") or {}).get("current") or {}
            if candidate.get("gbytes_per_s") is not None:
                link = candidate
                break
        slot = link.get("gbytes_per_s")
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
        if dev["kind"] not in ("gpu", "accelerator", "nic", "rdma"):
            continue
        own = dev["link"]["current"]["gbytes_per_s"]
        if own is None:
            continue
        for ancestor in dev["chain"]:
            up = pci.get(ancestor)
            if up is None:
                continue
            theirs = up["link"]["current"]["gbytes_per_s"]
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
#   width is a finding (DESIGN.md: width stays). GPUs listed in the gpus facts are judged by PCIE-001/PCIE-002 (with
#   NVML and fabric_expectations.gpu); PCIE-005 judges GPUs and accelerators only where those facts are absent.
# - NICs and HCAs keep the link they trained to at probe: the kernel prints it once, at driver load, as
#   "4.000 Gb/s available PCIe bandwidth, limited by 5.0 GT/s PCIe x1 link at 0000:00:00.0 (capable of 32.000 Gb/s
#   with 5.0 GT/s PCIe x8 link)" (ixgbe on an 82599, github.com/geerlingguy/raspberry-pi-pcie-devices/issues/330;
#   older ixgbe: "PCI Express bandwidth of 4GT/s available", ntop/PF_RING#283; a ConnectX-3 at LnkSta 5GT/s x1 under
#   LnkCap 8GT/s x4 and "wouldn't have the expected throughput", geerlingguy/raspberry-pi-pcie-devices#143). ASPM
#   (L0s/L1) saves power in link states, not by training to a lower speed or width, so LnkSta of an idle NIC still
#   shows what it trained to. A NIC or HCA below its own maximum is a fault even with every port down
#   (DESIGN.md, Known traps: a 10GbE card at 2.5 GT/s x1 carries 0.25 GB/s).
_LINK_POLICY = {
    # kind: (label, severity when the generation is low, severity when the width is narrow)
    "nic": ("NIC", "fail", "fail"),
    "rdma": ("HCA", "fail", "fail"),
    "gpu": ("GPU", "info", "fail"),
    "accelerator": ("accelerator", "info", "fail"),
}


def _gen_width(link):
    link = link or {}
    gen, width = link.get("generation"), link.get("width")
    return (gen if isinstance(gen, int) and not isinstance(gen, bool) else None,
            width if isinstance(width, int) and not isinstance(width, bool) else None)


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
        cur_gen, cur_width = _gen_width(link.get("current"))
        max_gen, max_width = _gen_width(link.get("max"))
        if not ((cur_gen and max_gen) or (cur_width and max_width)):
            continue
        judged += 1
        # The slot's own maximum (the port above) caps what the link can train to.
        parent = pci.get(dev.get("parent")) or {}
        slot_gen, slot_width = _gen_width((parent.get("link") or {}).get("max"))
        reach_gen = min(max_gen, slot_gen) if max_gen and slot_gen else max_gen
        reach_width = min(max_width, slot_width) if max_width and slot_width else max_width
        low_gen = bool(cur_gen and reach_gen and cur_gen < reach_gen)
        low_width = bool(cur_width and reach_width and cur_width < reach_width)
        capped = ((max_gen and reach_gen and reach_gen < max_gen) or
                  (max_width and reach_width and reach_width < max_width))
        if not (low_gen or low_width or capped):
            continue
        # The functions of one card share its link: one finding per card and link, naming every port on it.
        card = str(dev["address"]).rsplit(".", 1)[0]
        key = (card, cur_gen, cur_width, max_gen, max_width)
        if key in seen:  # a sibling function of a card already reported (its ports are named there)
            continue
        ports = seen[key] = list(names.get(dev["address"], []))
        siblings = [d for d in ctx.facts["pci"] if d is not dev and str(d.get("address")).rsplit(".", 1)[0] == card
                    and _gen_width((d.get("link") or {}).get("current")) == (cur_gen, cur_width)]
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
            if dev.get("kind") in ("nic", "rdma"):
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


# ---- NUMA -------------------------------------------------------------------------------------------
@host_rule(
    "NUMA-001", "GPU's nearest NIC is on another NUMA node", "fail",
    """When the closest NIC to a GPU hangs off the other socket, every byte the GPU sends or receives over
    the network crosses the inter-socket link (UPI/xGMI) and the remote root complex: more latency, less
    bandwidth, and GPUDirect RDMA is disabled or slow.""",
    """Put a NIC on the GPU's socket (ideally under the same PCIe switch), or move the GPU; on cloud SKUs,
    check that the NIC-to-GPU mapping matches the vendor's topology.""")
def numa_nearest_nic(ctx):
    ctx.need("gpus", "nics")
    numa_of = dict((n["address"], n["numa_node"]) for n in ctx.facts["nics"] if n.get("address"))
    numa_of.update((r["address"], r["numa_node"]) for r in ctx.facts.get("rdma") or [] if r.get("address"))
    if not numa_of:
        raise NotApplicable("no PCI NIC on this host")
    for gpu in ctx.facts["gpus"]:
        nearest = gpu.get("nearest_nics") or []
        if gpu["numa_node"] is None or not nearest:
            continue
        nodes = [numa_of.get(n["nic"]) for n in nearest]
        if all(node is not None and node != gpu["numa_node"] for node in nodes):
            ctx.finding(gpu["address"], "GPU %s on NUMA %d: nearest NIC %s on NUMA %s"
                        % (gpu["address"], gpu["numa_node"], "/".join(nearest[0]["nic_names"]) or nearest[0]["nic"],
                           ",".join(str(n) for n in sorted(set(nodes)))),
                        {"gpu_numa_node": gpu["numa_node"], "nearest_nics": nearest})


@host_rule(
    "NUMA-002", "GPU without a NIC of its own on its socket", "warn",
    """With one NIC per GPU (the usual rail layout), each GPU should have its own NIC behind the same PCIe
    switch or at least the same socket. When NICs and GPUs are paired one to one by closeness, a GPU whose
    partner NIC is across the socket link (SYS) sends its share of every collective through UPI/xGMI.""",
    """Balance NICs across sockets to match the GPUs (one per GPU, under the GPU's PCIe switch), or pin
    that GPU's traffic to a local NIC.""")
def numa_paired_nic(ctx):
    ctx.need("gpus", "paths")
    gpus = [g["address"] for g in ctx.facts["gpus"]]
    fast = set(r["address"] for r in ctx.facts.get("rdma") or [] if r.get("address"))
    if not fast:
        fast = set(n["address"] for n in ctx.facts.get("nics") or [] if n.get("address") and (n.get("speed_mbps") or 0) >= 100000)
    if not gpus or len(fast) < len(gpus):
        raise NotApplicable("fewer high-speed NICs (%d) than GPUs (%d): no one-to-one pairing" % (len(fast), len(gpus)))
    pairs = sorted((_PATH_RANK.get(p["type"], len(_PATH_RANK)), p["gpu"], p["nic"], p)
                   for p in ctx.facts["paths"]["gpu_nic"] if p["nic"] in fast)
    taken_gpu, taken_nic = set(), set()
    for _rank, gpu, nic, path in pairs:
        if gpu in taken_gpu or nic in taken_nic:
            continue
        taken_gpu.add(gpu)
        taken_nic.add(nic)
        if path["type"] == "SYS":
            ctx.finding(gpu, "GPU %s pairs with NIC %s across the socket link (SYS)"
                        % (gpu, "/".join(path["nic_names"]) or nic), {"path": path})


@host_rule(
    "NUMA-003", "GPU or NIC locality unknown", "warn",
    """When the firmware does not say which NUMA node a device belongs to (numa_node -1), neither the
    kernel nor NCCL can place memory and threads next to it, and path types between host bridges cannot be
    told apart from socket crossings.""",
    """Enable NUMA/SRAT reporting in the BIOS (e.g. "NUMA" on, sub-NUMA clustering consistent), update
    the firmware, and check /sys/bus/pci/devices/*/numa_node.""")
def numa_unknown(ctx):
    ctx.need("pci")
    if not ctx.facts.get("numa") or ctx.facts["numa"]["count"] < 2:
        raise NotApplicable("a single NUMA node: locality does not matter")
    for dev in ctx.facts["pci"]:
        if dev["kind"] in ("gpu", "accelerator", "nic", "rdma") and dev["numa_node"] is None:
            ctx.finding(dev["address"], "%s %s has no NUMA node (firmware reports -1)" % (dev["kind"], dev["address"]),
                        {"numa_node": None, "local_cpus": dev["local_cpus"]})


# ---- network ----------------------------------------------------------------------------------------
@host_rule(
    "NET-001", "Link slower than expected", "fail",
    """A port that negotiated below its expected speed (25G at 10G, 100G at 40G) caps every flow through it.
    Auto-negotiation against a wrong cable or a switch port configured lower is the usual cause.""",
    """Check the cable/transceiver and the switch port speed; `ethtool <if>` shows what was negotiated and
    what both ends advertise.""")
def net_speed(ctx):
    ctx.need("nics")
    if not ctx.expect.get("nics"):
        raise NotApplicable("no fabric_expectations.nics")
    for nic in ctx.facts["nics"]:
        entry = expected_nic(ctx.expect, nic["name"])
        if entry is None or not entry.get("speed_mbps"):
            continue
        if nic["speed_mbps"] is None:
            continue  # link down: NET-003 reports it
        if nic["speed_mbps"] < entry["speed_mbps"]:
            message = "%s runs at %d Mb/s, expected %d Mb/s" % (nic["name"], nic["speed_mbps"], entry["speed_mbps"])
            ctx.finding(nic["name"], message,
                        {"speed_mbps": nic["speed_mbps"], "expected_speed_mbps": entry["speed_mbps"]})


@host_rule(
    "NET-003", "Link down", "fail",
    """An expected interface without carrier carries nothing; a bond runs degraded, a network is cut off.""",
    """Check the cable, transceiver and the switch port (admin state, errdisable), then `ip link show`.""")
def net_carrier(ctx):
    ctx.need("nics")
    for nic in ctx.facts["nics"]:
        if nic["kind"] not in ("physical", "bond", "vlan", "ipoib"):
            continue
        down = nic["carrier"] is False or nic["operstate"] in ("down", "lowerlayerdown")
        if not down:
            continue
        expected = expected_nic(ctx.expect, nic["name"]) is not None or nic.get("bond_master")
        ctx.finding(nic["name"], "%s is %s (no carrier)%s" % (
            nic["name"], nic["operstate"] or "down", "" if expected else "; not an expected interface"),
            {"operstate": nic["operstate"], "carrier": nic["carrier"]}, severity=None if expected else "info")


@host_rule(
    "NET-004", "MTU differs from the expected MTU", "fail",
    """Jumbo frames only help when every hop carries them: an interface left at 1500 on a 9000 network
    fragments or drops large frames (TCP falls back to small segments, RDMA fails outright).""",
    """Set the MTU on the interface and on everything it rides on (bond, parent), persistently in the
    network configuration; check the switch ports carry the same frame size.""")
def net_mtu(ctx):
    ctx.need("nics")
    if not ctx.expect.get("nics"):
        raise NotApplicable("no fabric_expectations.nics")
    for nic in ctx.facts["nics"]:
        entry = expected_nic(ctx.expect, nic["name"])
        if entry is None or not entry.get("mtu") or nic["mtu"] is None:
            continue
        if nic["mtu"] != entry["mtu"]:
            ctx.finding(nic["name"], "%s has MTU %d, expected %d" % (nic["name"], nic["mtu"], entry["mtu"]),
                        {"mtu": nic["mtu"], "expected_mtu": entry["mtu"]})


@host_rule(
    "NET-005", "VLAN MTU above its parent's", "fail",
    """A VLAN can never send frames larger than its parent (bond or port) carries; a 9000-byte VLAN on a
    1500-byte bond is capped at 1500 and large frames are dropped.""",
    """Raise the parent's MTU to at least the largest MTU of what rides on it (members, bond, then VLAN).""")
def net_vlan_parent_mtu(ctx):
    ctx.need("vlans", "nics")
    mtu = dict((n["name"], n["mtu"]) for n in ctx.facts["nics"])
    for vlan in ctx.facts["vlans"]:
        parent = mtu.get(vlan["parent"])
        if vlan["mtu"] and parent and vlan["mtu"] > parent:
            ctx.finding(vlan["name"], "VLAN %s has MTU %d above its parent %s (%d)"
                        % (vlan["name"], vlan["mtu"], vlan["parent"], parent),
                        {"mtu": vlan["mtu"], "parent": vlan["parent"], "parent_mtu": parent})


@inventory_rule(
    "NET-002", "Speed or MTU differs across the inventory", "warn",
    """Hosts on the same network should run the same link speed and MTU: one slower host slows every
    collective it takes part in, and an MTU mismatch breaks large frames between some pairs only.""",
    """Make the outliers match the rest (cable, switch port, network configuration).""")
def net_consistency(ctx, hosts):
    groups = {}
    for host, (facts, expect) in hosts.items():
        for nic in facts.get("nics") or []:
            entry = expected_nic(expect, nic["name"])
            if entry is not None:
                groups.setdefault(entry["name"], []).append((host, nic))
    if not groups:
        raise NotApplicable("no fabric_expectations.nics on any host")
    for pattern, members in sorted(groups.items()):
        entry = [e for e in hosts[members[0][0]][1]["nics"] if e["name"] == pattern][0]
        for field in ("mtu", "speed_mbps"):
            if entry.get(field):
                continue  # an expected value: NET-001 / NET-004 judge each host against it
            values = {}
            for host, nic in members:
                if nic[field] is not None:
                    values.setdefault(nic[field], []).append((host, nic["name"]))
            if len(values) < 2:
                continue
            counts = sorted((len(v) for v in values.values()), reverse=True)
            majority = max(values, key=lambda v: len(values[v])) if counts[0] > counts[1] else None
            distribution = dict((str(k), len(v)) for k, v in sorted(values.items()))
            for value, where in sorted(values.items()):
                if value == majority:
                    continue
                for host, name in where:
                    if majority is None:
                        message = "%s %s is %s; %s interfaces differ across the inventory (%s)" % (
                            name, field, value, pattern, ", ".join("%s on %d" % kv for kv in distribution.items()))
                    else:
                        message = "%s %s is %s where most %s interfaces have %s" % (
                            name, field, value, pattern, majority)
                    ctx.finding(name, message, {"field": field, "value": value, "majority": majority,
                                                "pattern": pattern, "distribution": distribution}, host=host)


# ---- bonds ------------------------------------------------------------------------------------------
def _bonds(ctx):
    ctx.need("bonds")
    if not ctx.facts["bonds"]:
        raise NotApplicable("no bond on this host")
    return ctx.facts["bonds"]


@host_rule(
    "BOND-001", "Bond member down", "fail",
    """A bond with a member down runs at a fraction of its bandwidth, without redundancy, and often unnoticed.""",
    """Check the member's cable, transceiver and switch port; `cat /proc/net/bonding/<bond>` shows the state.""")
def bond_member_down(ctx):
    for bond in _bonds(ctx):
        for member in bond["members"]:
            if member["mii_status"] not in (None, "up"):
                ctx.finding("%s/%s" % (bond["name"], member["name"]), "%s member %s is %s"
                            % (bond["name"], member["name"], member["mii_status"]),
                            {"mii_status": member["mii_status"], "link_failure_count": member["link_failure_count"]})


@host_rule(
    "BOND-002", "No LACP partner", "fail",
    """An 802.3ad bond whose members see no LACP partner (partner MAC all zeros) is not aggregated by the
    switch: traffic uses one link at best, or the bond falls back to a single port.""",
    """Configure an LACP port-channel (MLAG across two switches) on the switch ports of this bond's members,
    with matching speed and LACP rate.""")
def bond_lacp_partner(ctx):
    lacp = [b for b in _bonds(ctx) if b["mode"] == "802.3ad"]
    if not lacp:
        raise NotApplicable("no 802.3ad bond")
    for bond in lacp:
        for member in bond["members"]:
            if member["has_partner"] is False:
                ctx.finding("%s/%s" % (bond["name"], member["name"]), "%s member %s has no LACP partner"
                            % (bond["name"], member["name"]), {"partner_mac": member["partner_mac"]})


@host_rule(
    "BOND-003", "Bond members in different aggregators", "fail",
    """In 802.3ad only the members of the active aggregator carry traffic; members in other aggregators
    (different switch, different LACP key, mismatched speed) sit idle.""",
    """Put all members' switch ports in one port-channel (or one MLAG pair) with the same speed and settings.""")
def bond_aggregators(ctx):
    lacp = [b for b in _bonds(ctx) if b["mode"] == "802.3ad"]
    if not lacp:
        raise NotApplicable("no 802.3ad bond")
    for bond in lacp:
        ids = dict((m["name"], m["aggregator_id"]) for m in bond["members"] if m["aggregator_id"] is not None)
        if len(set(ids.values())) > 1:
            ctx.finding(bond["name"], "%s members are in %d aggregators: %s" % (
                bond["name"], len(set(ids.values())), ", ".join("%s=%s" % kv for kv in sorted(ids.items()))),
                {"aggregator_ids": ids, "active_aggregator_id": bond["active_aggregator_id"]})


@host_rule(
    "BOND-004", "Bond members at different speeds", "warn",
    """Members at different speeds cannot share an 802.3ad aggregator, and in other modes the slower member
    caps the flows hashed onto it.""",
    """Use members of one speed; check cables and switch port speeds of the slower member.""")
def bond_speeds(ctx):
    for bond in _bonds(ctx):
        speeds = dict((m["name"], m["speed_mbps"]) for m in bond["members"] if m["speed_mbps"])
        if len(set(speeds.values())) > 1:
            ctx.finding(bond["name"], "%s members run at different speeds: %s" % (
                bond["name"], ", ".join("%s=%d Mb/s" % kv for kv in sorted(speeds.items()))), {"speeds": speeds})


# ---- GPUDirect RDMA ---------------------------------------------------------------------------------
@host_rule(
    "GDR-001", "GPUDirect RDMA module not loaded", "fail",
    """With RDMA, NCCL moves data between GPU memory and the NIC directly only when nvidia_peermem (or the
    older nv_peer_mem) is loaded; without it every transfer is staged through host memory.""",
    """Load it (`modprobe nvidia_peermem`) and make it persistent (/etc/modules-load.d), or install the
    MLNX_OFED/DOCA package that provides nv_peer_mem.""")
def gdr_peermem(ctx):
    if not ctx.expect.get("rdma"):
        raise NotApplicable("RDMA not intended (fabric_expectations.rdma is false)")
    ctx.need("gpus")
    if not any(g["vendor"] == "nvidia" for g in ctx.facts["gpus"]):
        raise NotApplicable("no NVIDIA GPU")
    modules = ctx.facts.get("kernel_modules")
    if modules is None:
        raise NotApplicable("kernel module state not in these facts (capture without /sys/module)")
    if not (modules.get("nvidia_peermem") or modules.get("nv_peer_mem")):
        ctx.finding("nvidia_peermem", "neither nvidia_peermem nor nv_peer_mem is loaded",
                    {"nvidia_peermem": modules.get("nvidia_peermem"), "nv_peer_mem": modules.get("nv_peer_mem")})


@host_rule(
    "GDR-002", "ACS redirect on a PCIe switch port between a GPU and its NIC", "fail",
    """PCIe Access Control Services with request/completion redirect force peer-to-peer traffic up to the
    root complex, so GPUDirect RDMA between a GPU and the NIC beside it either fails or crawls through the
    CPU. Many BIOSes enable it by default for virtualization isolation.""",
    """Disable ACS on the switch ports (BIOS option "ACS" / "PCIe ACS control", or `setpci` on the ports at boot)
    on bare-metal GPU nodes that use GPUDirect; keep it only where VMs need IOMMU isolation.""")
def gdr_acs(ctx):
    if not ctx.expect.get("rdma"):
        raise NotApplicable("RDMA not intended (fabric_expectations.rdma is false)")
    ctx.need("gpus", "pci")
    pci = ctx.pci()
    unreadable = []
    checked = 0
    for gpu in ctx.facts["gpus"]:
        for near in gpu.get("nearest_nics") or []:
            if near["type"] not in ("PIX", "PXB"):
                continue  # only a shared switch gives GPU<->NIC peer-to-peer below the root complex
            nic = pci.get(near["nic"])
            if nic is None:
                continue
            shared = set(gpu_chain(pci, gpu["address"])) & set(nic["chain"])
            between = [b for b in gpu_chain(pci, gpu["address"]) + nic["chain"]
                       if b not in shared or b == _lowest(shared, pci)]
            for bridge in sorted(set(between)):
                acs = (pci.get(bridge) or {}).get("acs")
                if not acs or not acs["readable"]:
                    unreadable.append(bridge)
                    continue
                checked += 1
                if acs["redirects_p2p"]:
                    ctx.finding("%s->%s" % (gpu["address"], near["nic"]),
                                "ACS redirect on %s %s between GPU %s and NIC %s (control %s)" % (
                                    pci[bridge]["kind"].replace("_", " "), bridge, gpu["address"],
                                    "/".join(near["nic_names"]) or near["nic"], acs["control"]),
                                {"bridge": bridge, "acs": acs})
                    break
    if not checked and unreadable:
        raise NotApplicable("ACS not readable on %d bridge(s): extended config space needs root on the live node"
                            % len(set(unreadable)))
    if not checked:
        raise NotApplicable("no GPU shares a PCIe switch with a NIC")


def gpu_chain(pci, address):
    return (pci.get(address) or {}).get("chain") or []


def _lowest(bridges, pci):
    """The deepest of a set of bridges (the one with the longest chain above it)."""
    return max(bridges, key=lambda b: len((pci.get(b) or {}).get("chain") or [])) if bridges else None


# ---- addressing (network intent plus the addresses on the hosts) -------------------------------------
def _interface_addresses(facts):
    """[(interface, ip_interface)] of global addresses in the facts (not loopback, not link-local)."""
    import ipaddress
    found = []
    for nic in facts.get("nics") or []:
        for text in (nic.get("ipv4") or []) + (nic.get("ipv6") or []):
            try:
                address = ipaddress.ip_interface(text)
            except ValueError:
                continue
            if not (address.ip.is_loopback or address.ip.is_link_local):
                found.append((nic["name"], address))
    return found


@inventory_rule(
    "NET-006", "Networks with overlapping subnets", "fail",
    """Management, training and storage networks must not overlap: overlapping subnets make routing
    ambiguous, so training traffic can leave through the management interface (or the reverse) and
    firewall or QoS rules apply to the wrong traffic.""",
    """Give each network its own subnet (fabric_networks.<name>.subnet) and renumber the hosts on it.""")
def net_subnet_overlap(ctx, hosts):
    seen = {}
    for _host, (_facts, expect) in sorted(hosts.items()):
        for name, net in (expect.get("networks") or {}).items():
            for subnet in net["subnets"]:
                seen[(name, str(subnet))] = subnet
    if not seen:
        raise NotApplicable("no fabric_networks in the inventory")
    items = sorted(seen.items())
    for i, ((name_a, text_a), net_a) in enumerate(items):
        for (name_b, text_b), net_b in items[i + 1:]:
            if name_a != name_b and net_a.version == net_b.version and net_a.overlaps(net_b):
                ctx.finding("%s/%s" % (name_a, name_b), "networks %s (%s) and %s (%s) overlap"
                            % (name_a, text_a, name_b, text_b), {name_a: text_a, name_b: text_b})


@inventory_rule(
    "NET-007", "Address used by more than one host", "fail",
    """Two hosts with one address break whichever of them the switches learned last: connections reset,
    NCCL bootstrap hangs on the wrong peer, and the fault moves around as ARP caches expire. With a network
    intent only addresses in its networks count; without one, bridges and virtual interfaces are left out.""",
    """Give each host its own address (fabric_addresses or the allocation file), then check with
    `arping -D` before bringing the interface up.""")
def net_duplicate_addresses(ctx, hosts):
    owners = {}
    for host, (facts, expect) in sorted(hosts.items()):
        subnets = [s for net in (expect.get("networks") or {}).values() for s in net["subnets"]]
        kinds = dict((n["name"], n["kind"]) for n in facts.get("nics") or [])
        for iface, address in _interface_addresses(facts):
            if subnets:
                # With a network intent, only its networks count: NAT and container bridges (docker0,
                # a hypervisor's user network) repeat the same private address on every host by design.
                if not any(address.ip in subnet for subnet in subnets):
                    continue
            elif kinds.get(iface) in ("bridge", "virtual"):
                continue
            owners.setdefault(str(address.ip), []).append((host, iface))
    if not owners:
        raise NotApplicable("no host facts carry addresses (captures and XML sources have none)")
    for ip, where in sorted(owners.items()):
        distinct = sorted(set(host for host, _iface in where))
        if len(distinct) > 1:
            for host, iface in where:
                ctx.finding(iface, "%s on %s is also used by %s" % (ip, iface, ", ".join(h for h in distinct if h != host)),
                            {"address": ip, "hosts": distinct}, host=host)


@host_rule(
    "NET-008", "Training network on the management interface", "warn",
    """Collective traffic on the management interface competes with SSH, monitoring and image pulls,
    usually on a slower link, and a saturated training job can cut the node off from its controller.""",
    """Attach the training network to its own interfaces or bond (fabric_attachments.training), or set
    fabric_networks.<training>.allow_on_management: true where this is deliberate (small test clusters).""")
def net_training_on_management(ctx):
    networks = ctx.expect.get("networks") or {}
    training = [(n, v) for n, v in networks.items() if v["role"] == "training"]
    management = [(n, v) for n, v in networks.items() if v["role"] == "management"]
    if not training or not management:
        raise NotApplicable("fabric_networks names no training and management network")
    attachments = ctx.expect.get("attachments") or {}
    addresses = _interface_addresses(ctx.facts)
    for mgmt_name, mgmt in management:
        mgmt_ifaces = set(base_interface(ctx.facts, i) for i, a in addresses if any(a.ip in s for s in mgmt["subnets"]))
        if attachments.get(mgmt_name):
            mgmt_ifaces.add(base_interface(ctx.facts, attachments[mgmt_name]))
        for name, net in training:
            if net["allow_on_management"]:
                continue
            ifaces = set(base_interface(ctx.facts, i) for i, a in addresses if any(a.ip in s for s in net["subnets"]))
            if attachments.get(name):
                ifaces.add(base_interface(ctx.facts, attachments[name]))
            shared = sorted(ifaces & mgmt_ifaces)
            if shared:
                ctx.finding(shared[0], "training network %s rides on %s, the management interface (%s)"
                            % (name, shared[0], mgmt_name),
                            {"training": name, "management": mgmt_name, "interfaces": shared,
                             "attachments": dict((k, attachments.get(k)) for k in (name, mgmt_name))})


# ---- configuration drift ----------------------------------------------------------------------------
@host_rule(
    "DRIFT-001", "Network configuration drifted from the intent", "fail",
    """The node's network files differ from what the inventory's intent renders: someone changed an MTU, removed
    a VLAN or edited a bond by hand, or the intent changed and was not applied. The next reboot or reload brings
    up a network nobody reviewed.""",
    """Review the diff; if the change is wanted, put it in the inventory's intent, then run
    `ansible-playbook gpuops.fabric.network` to apply the intent again.""")
def drift_network(ctx):
    drift = ctx.expect.get("drift")
    if drift is None:
        raise NotApplicable("no drift check ran (use playbooks/drift.yml)")
    if drift.get("error"):
        ctx.finding("network", "drift check failed: %s" % drift["error"], drift)
        return
    for change in drift["changes"]:
        action, _sep, path = change.partition(" ")
        ctx.finding(path, "%s would be %s to match the intent (%s)" % (
            path, "rewritten" if action == "write" else "removed", drift.get("backend")),
            {"diff": drift["diff"], "backend": drift.get("backend")})


# ---- NCCL ---------------------------------------------------------------------------------------------
@host_rule(
    "NCCL-001", "NCCL configuration drifted from what the facts and intent give", "fail",
    """/etc/nccl.conf differs from what the nccl role derives from this node's facts and the network intent: it
    was edited by hand, the node changed (a NIC moved, a VLAN was renamed) or the intent changed and the role has
    not run since. NCCL then picks interfaces or HCAs nobody reviewed.""",
    """Review the diff; put wanted values in fabric_nccl_env, then run `ansible-playbook gpuops.fabric.nccl`.""")
def nccl_drift(ctx):
    drift = ctx.expect.get("nccl_drift")
    if drift is None:
        raise NotApplicable("no NCCL drift check ran (use playbooks/drift.yml)")
    if drift.get("error"):
        ctx.finding("nccl", "NCCL drift check failed: %s" % drift["error"], drift)
        return
    if drift.get("changed"):
        ctx.finding(drift.get("path") or "/etc/nccl.conf", "%s would be rewritten to match the facts and intent"
                    % (drift.get("path") or "/etc/nccl.conf"), {"diff": drift.get("diff") or ""})


def _nccl_conf(ctx):
    ctx.need("nccl", "nics")
    conf = ctx.facts["nccl"]
    if not conf.get("present"):
        raise NotApplicable("no %s on this node (NCCL uses its defaults)" % conf.get("path", "/etc/nccl.conf"))
    return conf


@host_rule(
    "NCCL-002", "NCCL_SOCKET_IFNAME selects the wrong interfaces", "fail",
    """NCCL_SOCKET_IFNAME is a list of prefixes unless it starts with '=': 'bond0' also selects 'bond0.100', and a
    name the node does not have selects nothing, so NCCL falls back to whatever interface it finds first — often
    the management NIC.""",
    """Name the training interface exactly (`NCCL_SOCKET_IFNAME==bond0.100`); the nccl role writes it so.""")
def nccl_socket_ifname(ctx):
    conf = _nccl_conf(ctx)
    spec = conf["values"].get("NCCL_SOCKET_IFNAME")
    if not spec:
        raise NotApplicable("NCCL_SOCKET_IFNAME is not set in %s" % conf["path"])
    names = [n["name"] for n in ctx.facts["nics"]]
    chosen = ifname_matches(spec, names)
    body = spec.lstrip("^")
    named = [p.lstrip("=") for p in body.split(",") if p]
    evidence = {"NCCL_SOCKET_IFNAME": spec, "selects": chosen, "interfaces": names}
    if not chosen:
        ctx.finding(spec, "NCCL_SOCKET_IFNAME=%s selects no interface on this node" % spec, evidence)
    elif not spec.startswith("^") and not body.startswith("="):
        extra = sorted(set(chosen) - set(named))
        if extra:
            ctx.finding(spec, "NCCL_SOCKET_IFNAME=%s is a prefix: it also selects %s" % (spec, ", ".join(extra)),
                        evidence)


@host_rule(
    "NCCL-003", "NCCL transport contradicts the intended mode", "fail",
    """fabric_nccl_mode says how the training traffic should travel. rdma intended with NCCL_IB_DISABLE=1 runs over
    TCP sockets at a fraction of the speed; tcp intended on a node with active RDMA ports but IB not disabled lets
    NCCL pick RDMA nobody has validated — the seed's advice is to make TCP stable first.""",
    """Run `ansible-playbook gpuops.fabric.nccl` with the intended fabric_nccl_mode, or change the mode.""")
def nccl_transport(ctx):
    conf = _nccl_conf(ctx)
    mode = ctx.expect.get("nccl_mode")
    if mode not in ("tcp", "rdma"):
        raise NotApplicable("fabric_nccl_mode is not set for this host")
    disabled = conf["values"].get("NCCL_IB_DISABLE", "0").strip() == "1"
    active = sorted("%s:%s" % (d["name"], p["port"]) for d in ctx.facts.get("rdma") or []
                    for p in d.get("ports") or [] if p.get("state") == "ACTIVE")
    evidence = {"fabric_nccl_mode": mode, "NCCL_IB_DISABLE": conf["values"].get("NCCL_IB_DISABLE"),
                "active_rdma_ports": active}
    if mode == "rdma" and disabled:
        ctx.finding("NCCL_IB_DISABLE", "rdma intended but NCCL_IB_DISABLE=1: NCCL runs over TCP sockets", evidence)
    elif mode == "tcp" and not disabled and active:
        ctx.finding("NCCL_IB_DISABLE", "tcp intended but IB is not disabled and the node has active RDMA ports "
                    "(%s): NCCL will use them" % ", ".join(active), evidence)


# ---- probes (traffic between the hosts; opt-in) -----------------------------------------------------------------
def _probes(ctx, key=None):
    probes = ctx.expect.get("probes")
    if not isinstance(probes, dict):
        raise NotApplicable("no probes ran (opt in with fabric_probes_enabled: true or --tags probes)")
    if key is not None and not isinstance(probes.get(key), list):
        raise NotApplicable("the %s probe did not run" % key)
    return probes


def _pair(entry, host):
    return "%s -> %s (%s)" % (host, entry.get("peer"), entry.get("network"))


@inventory_rule(
    "PROBE-001", "Full-size frames do not cross the path", "fail",
    """A ping with the don't-fragment bit and the largest payload the network's MTU allows fails where small pings
    pass: a hop on the path (this host, the peer, a switch port or the bond/VLAN under the address) has a smaller MTU.
    TCP then stalls or falls back to small segments after path-MTU discovery times out, and NCCL connections hang or
    crawl while every per-node check looks fine. A host that fails with every peer is the likely culprit; the
    message names it.""",
    """Compare `ip link` MTUs along the path (interface, VLAN, bond and its ports on both hosts) and the switch ports'
    frame size with fabric_networks.<name>.mtu; run the network role to apply the intent.""")
def probe_jumbo(ctx, hosts):
    tried, failed = {}, []
    ran = False
    for host, (_facts, expect) in sorted(hosts.items()):
        probes = expect.get("probes")
        if not isinstance(probes, dict) or not isinstance(probes.get("jumbo"), list):
            continue
        ran = True
        for entry in probes["jumbo"]:
            peer = entry.get("peer")
            for who in (host, peer):
                tried[who] = tried.get(who, 0) + 1
            if entry.get("status") in ("mtu", "loss"):
                failed.append((host, entry))
    if not ran:
        raise NotApplicable("no jumbo probe ran (opt in with fabric_probes_enabled: true or --tags probes)")
    blamed = {}
    for host, entry in failed:
        for who in (host, entry.get("peer")):
            blamed[who] = blamed.get(who, 0) + 1
    culprits = sorted(h for h, n in blamed.items() if n == tried.get(h) and n > 1)
    for host, entry in failed:
        jumbo = entry.get("jumbo") or {}
        if entry["status"] == "loss":
            what = "%s of %s full-size pings were lost" % ((jumbo.get("sent") or 0) - (jumbo.get("received") or 0),
                                                           jumbo.get("sent"))
        elif jumbo.get("local_error"):
            what = "this host refuses to send them (%s)" % jumbo["local_error"]
        else:
            what = "they get no answer while small pings do"
        low = ["%s's %s has MTU %s" % (who, iface, mtu) for who, iface, mtu in (
            (host, entry.get("interface"), entry.get("interface_mtu")),
            (entry.get("peer"), entry.get("peer_interface"), entry.get("peer_mtu")))
            if iface and isinstance(mtu, int) and isinstance(entry.get("mtu"), int) and mtu < entry["mtu"]]
        if low:
            what += " (%s)" % ", ".join(low)
        suspects = [c for c in culprits if c in (host, entry.get("peer"))]
        message = "%d-byte pings with don't-fragment (MTU %s) from %s %s to %s %s on %s: %s" % (
            entry.get("payload") or 0, entry.get("mtu"), host, entry.get("source") or "", entry.get("peer"),
            entry.get("address"), entry.get("network"), what)
        if suspects:
            message += "; %s fails with every peer" % " and ".join(suspects)
        ctx.finding(_pair(entry, host), message, dict(entry, suspects=suspects), host=host,
                    severity="warn" if entry["status"] == "loss" else None)


@host_rule(
    "PROBE-002", "Peer unreachable on the network", "fail",
    """Even small pings from this host to a peer's address on the network get no answer: the peer's interface is
    down or unaddressed, a VLAN is missing on a switch port, or a firewall drops ICMP. Collective traffic between these
    two nodes cannot flow on this network.""",
    """Check both hosts' interface and address on the network (`ip -br addr`), the VLAN on the switch ports, and
    firewall rules; then probe again.""")
def probe_unreachable(ctx):
    probes = _probes(ctx, "jumbo")
    for entry in probes["jumbo"]:
        if entry.get("status") == "unreachable":
            ctx.finding(_pair(entry, ctx.host), "%s cannot reach %s at %s on %s, not even with small pings" % (
                ctx.host, entry.get("peer"), entry.get("address"), entry.get("network")), entry)


@host_rule(
    "PROBE-003", "TCP goodput below what the link gives", "fail",
    """iperf3 between two nodes measured less than the configured fraction of the goodput the bandwidth model
    expects for the link speed and MTU (a 10GbE link at MTU 9000 gives about 9.90 Gbit/s of TCP payload, at 1500
    about 9.41). iperf looking normal is not enough: the number must match the link. Typical causes are a port
    negotiated down, a bad cable or optic with retransmits, a bond carrying everything on one leg, a shaper or a
    congested uplink. Without a known link speed the measurement is shown as information.""",
    """Check both ends' negotiated speed (`ethtool`), error counters and retransmits, the switch port and uplink;
    set fabric_networks.<name>.speed_mbps to the speed the network is built for.""")
def probe_throughput(ctx):
    probes = _probes(ctx, "throughput")
    for entry in probes["throughput"]:
        gbps, expected = entry.get("gbps"), entry.get("expected_gbps")
        if gbps is None:
            continue  # PROBE-004
        fraction = entry.get("min_fraction") or 0.8
        evidence = dict((k, entry.get(k)) for k in ("peer", "network", "bind", "server", "gbps", "expected_gbps",
                                                    "min_fraction", "basis", "retransmits", "speed_mbps", "mtu"))
        if expected is None:
            ctx.finding(_pair(entry, ctx.host), "%s -> %s on %s: %.3g Gbit/s measured; %s, not judged" % (
                ctx.host, entry.get("peer"), entry.get("network"), gbps, entry.get("basis") or "no expectation"),
                evidence, severity="info")
        elif gbps < fraction * expected:
            ctx.finding(_pair(entry, ctx.host), "%s -> %s on %s: %.3g Gbit/s, %d%% of the %.3g Gbit/s expected (%s); "
                        "below %d%%%s" % (ctx.host, entry.get("peer"), entry.get("network"), gbps,
                                          round(100.0 * gbps / expected), expected, entry.get("basis"),
                                          round(100 * fraction),
                                          ", %s retransmits" % entry["retransmits"] if entry.get("retransmits") else ""),
                        evidence)


@host_rule(
    "PROBE-004", "Probe could not run", "warn",
    """A probe this run asked for did not produce a measurement: the host has no address on a network it is attached
    to, ping or iperf3 is missing, an iperf3 server could not start (the port is taken) or a measurement failed.
    The path it should have checked is unverified.""",
    """Install iputils-ping and iperf3 on the nodes, free the probe port (fabric_probe_port) or pick another, and
    check the addresses on the network; then probe again.""")
def probe_errors(ctx):
    probes = _probes(ctx)
    for text in probes.get("missing") or []:
        ctx.finding("probes", text, {"missing": text})
    if probes.get("jumbo_error"):
        ctx.finding("path_probe", "full-size pings did not run: %s" % probes["jumbo_error"],
                    {"error": probes["jumbo_error"]})
    for entry in probes.get("jumbo") or []:
        if entry.get("status") == "error":
            ctx.finding(_pair(entry, ctx.host), "ping to %s on %s did not run: %s" % (
                entry.get("peer"), entry.get("network"),
                entry.get("error") or (entry.get("jumbo") or {}).get("output") or "no output"), entry)
    for entry in probes.get("server_errors") or []:
        message = "iperf3 server for %s on %s did not start: %s" % (entry.get("peer"), entry.get("network"),
                                                                    entry.get("error"))
        ctx.finding("iperf3 server %s:%s" % (entry.get("bind"), entry.get("port")), message, entry)
    for entry in probes.get("throughput") or []:
        if entry.get("gbps") is None:
            ctx.finding(_pair(entry, ctx.host), "iperf3 from %s to %s on %s failed: %s" % (
                ctx.host, entry.get("peer"), entry.get("network"), entry.get("error")), entry)


@host_rule(
    "PROBE-005", "NCCL all-reduce not measured or below expectation", "warn",
    """Where nccl-tests is installed, all_reduce_perf shows what NCCL reaches over the paths the other checks looked
    at. Not installed is information only. With fabric_nccl_tests_expected_busbw set, a peak bus bandwidth below the
    configured fraction of it is a warning; a run that produced no table is a warning too.""",
    """Install nccl-tests (github.com/NVIDIA/nccl-tests) to measure; compare NCCL_DEBUG=INFO output with the
    interfaces and HCAs the nccl role chose.""")
def probe_nccl(ctx):
    probes = _probes(ctx)
    result = probes.get("nccl")
    if not isinstance(result, dict) or result.get("skipped") or "installed" not in result:
        raise NotApplicable("nccl-tests did not run on this host")
    if not result.get("installed"):
        ctx.finding("nccl-tests", result.get("msg") or "nccl-tests is not installed: NCCL not measured",
                    {"installed": False}, severity="info")
        return
    scope = "across nodes" if probes.get("nccl_scope") == "launcher" else "on this node"
    if result.get("error") or not result.get("rows"):
        ctx.finding("nccl-tests", "all_reduce_perf %s gave no result: %s" % (scope, result.get("error")),
                    {"command": result.get("command"), "error": result.get("error")})
        return
    expected = probes.get("nccl_expected_busbw")
    fraction = probes.get("min_fraction") or 0.8
    peak = result.get("max_busbw")
    if expected and peak is not None and peak < fraction * float(expected):
        ctx.finding("nccl-tests", "all_reduce_perf %s peaks at %.3g GB/s bus bandwidth, %d%% of the %.3g GB/s "
                    "expected (below %d%%)" % (scope, peak, round(100.0 * peak / float(expected)), float(expected),
                                               round(100 * fraction)),
                    {"max_busbw": peak, "avg_busbw": result.get("avg_busbw"), "expected_busbw": expected,
                     "rows": [(r["bytes"], r["busbw"]) for r in result["rows"]]})


# ---- the switch side, seen from the host (LLDP) and the NICs' link modes ---------------------------------------
ETHERNET_FRAME = 18  # 14 bytes header + 4 bytes FCS around the MTU; a VLAN tag adds 4


def _ports_of(facts, device):
    """The NIC facts of the ports a device's traffic leaves on, by name: a VLAN's parent's, a bond's members, or
    the device itself (virtual ports too: a veth has LLDP neighbours)."""
    return sorted(ports_under(facts, device, physical_only=False), key=lambda nic: nic["name"])


def _lldp(ctx):
    ctx.need("nics")
    lldp = ctx.facts.get("lldp")
    if lldp is None:
        raise NotApplicable("no LLDP facts (gathered on the live node only: subset lldp)")
    if not lldp.get("agent"):
        raise NotApplicable(lldp.get("reason") or "no LLDP agent")
    return lldp.get("ports") or {}


def _attached(ctx):
    """[(network name, network, device)] for networks this host attaches (fabric_attachments)."""
    networks = ctx.expect.get("networks") or {}
    attachments = ctx.expect.get("attachments") or {}
    found = [(name, networks[name], attachments[name]) for name in sorted(attachments) if name in networks]
    if not found:
        raise NotApplicable("no network of fabric_networks is attached here (fabric_attachments)")
    return found


def _switch_port(neighbour):
    return "%s %s" % (neighbour.get("chassis_name") or neighbour.get("chassis_id") or "?",
                      neighbour.get("port_descr") or neighbour.get("port_id") or "?")


def _neighbours_under(ctx, wanted):
    """(network name, network, device, port, neighbour) for every LLDP neighbour of the ports under each attached
    network that has ``wanted`` (a key of the network, e.g. vlan or mtu)."""
    ports = _lldp(ctx)
    for name, net, device in _attached(ctx):
        if not net.get(wanted):
            continue
        for port in _ports_of(ctx.facts, device):
            for neighbour in ports.get(port["name"]) or []:
                yield name, net, device, port["name"], neighbour


@host_rule(
    "LLDP-001", "Switch port does not carry the network's VLAN", "fail",
    """The switch port a network's traffic leaves on advertises its VLANs over LLDP (IEEE 802.1 port VLAN and VLAN
    name TLVs), and the VLAN the intent puts on this interface is not among them: tagged frames are dropped at the
    switch, so the node looks configured and reaches nothing on that network.""",
    """Add the VLAN to the switch port (or its port channel), or correct fabric_networks.<name>.vlan.""")
def lldp_vlan(ctx):
    judged = 0
    for name, net, device, port, neighbour in _neighbours_under(ctx, "vlan"):
        ids = set(v["id"] for v in neighbour.get("vlans") or [] if v.get("id") is not None)
        if not ids and neighbour.get("pvid") is None:
            continue  # the neighbour says nothing about VLANs
        judged += 1
        if net["vlan"] not in ids:
            advertised = ", ".join(str(i) for i in sorted(ids)) or "only PVID %s" % neighbour.get("pvid")
            ctx.finding(port, "%s (network %s, VLAN %d) leaves on %s, whose switch port %s does not carry VLAN %d "
                        "(it advertises %s)" % (device, name, net["vlan"], port, _switch_port(neighbour), net["vlan"],
                                                advertised),
                        {"network": name, "vlan": net["vlan"], "port": port, "neighbour": neighbour})
    if not judged:
        raise NotApplicable("no neighbour of a tagged network's ports advertises its VLANs")


@host_rule(
    "LLDP-002", "Bond member's switch port not aggregated with the others", "fail",
    """An 802.3ad bond needs each member's switch port in the same link aggregation. LLDP's link aggregation TLV
    says whether the neighbour's port is aggregated and in which aggregation: a member whose neighbour is not
    aggregated, or two members on one switch whose neighbours name different aggregations, is cabled to the wrong
    port or the switch has no matching port channel; the bond then carries traffic on one leg or flaps.""",
    """Put both switch ports in one port channel (LACP), or move the cable to the right port.""")
def lldp_aggregation(ctx):
    ports = _lldp(ctx)
    bonds = [b for b in ctx.facts.get("bonds") or [] if b.get("mode") == "802.3ad"]
    if not bonds:
        raise NotApplicable("no 802.3ad bond on this node")
    judged = 0
    for bond in bonds:
        seen = {}
        for member in bond.get("members") or []:
            name = member["name"] if isinstance(member, dict) else member
            for neighbour in ports.get(name) or []:
                judged += 1
                aggregation = neighbour.get("aggregation")
                if not aggregation or not aggregation.get("enabled"):
                    ctx.finding(name, "%s is a member of %s (802.3ad) but its switch port %s does not say it is "
                                "aggregated" % (name, bond["name"], _switch_port(neighbour)),
                                {"bond": bond["name"], "member": name, "neighbour": neighbour})
                    continue
                chassis = neighbour.get("chassis_id") or neighbour.get("chassis_name")
                seen.setdefault(chassis, []).append((name, aggregation.get("port_id"), neighbour))
        for chassis, entries in sorted(seen.items(), key=lambda kv: str(kv[0])):
            ids = sorted(set(str(e[1]) for e in entries))
            if len(ids) > 1:
                for name, port_id, neighbour in entries:
                    ctx.finding(name, "members of %s land on %s in different aggregations (%s): %s is in %s" % (
                        bond["name"], neighbour.get("chassis_name") or chassis, ", ".join(ids), name, port_id),
                        {"bond": bond["name"], "member": name, "aggregations": ids, "neighbour": neighbour})
    if not judged:
        raise NotApplicable("no bond member has an LLDP neighbour")


@host_rule(
    "LLDP-003", "Switch port's maximum frame size below the network's MTU", "fail",
    """The switch port advertises its maximum frame size (IEEE 802.3 TLV). A frame of the network's MTU needs MTU +
    18 bytes (+4 with a VLAN tag); a port that takes less drops every full-size frame, the classic 9000 on the host
    and 1500 on the switch.""",
    """Raise the switch port's MTU (frame size) to at least the network's MTU + 22, or lower
    fabric_networks.<name>.mtu.""")
def lldp_frame_size(ctx):
    judged = 0
    for name, net, _device, port, neighbour in _neighbours_under(ctx, "mtu"):
        if neighbour.get("mfs") is None:
            continue
        judged += 1
        needed = net["mtu"] + ETHERNET_FRAME + (4 if net.get("vlan") else 0)
        if neighbour["mfs"] < needed:
            ctx.finding(port, "switch port %s takes frames up to %d bytes; network %s (MTU %d%s) needs %d" % (
                _switch_port(neighbour), neighbour["mfs"], name, net["mtu"],
                ", VLAN %d" % net["vlan"] if net.get("vlan") else "", needed),
                {"network": name, "mtu": net["mtu"], "needed": needed, "neighbour": neighbour})
    if not judged:
        raise NotApplicable("no neighbour of an attached network's ports advertises a maximum frame size")


@host_rule(
    "LLDP-004", "Port cabled to another switch port than the cabling plan says", "fail",
    """fabric_cabling names, per node port, the switch and port it should be cabled to. LLDP says where it is: two
    bond legs swapped into the wrong switch, a node on the storage switch, a cable in the neighbouring port.""",
    """Move the cable to the planned switch port, or correct fabric_cabling.""")
def lldp_cabling(ctx):
    plan = ctx.expect.get("cabling") or {}
    if not plan:
        raise NotApplicable("no fabric_cabling for this host")
    ports = _lldp(ctx)
    for port, want in sorted(plan.items()):
        seen = ports.get(port) or []
        if not seen:
            ctx.finding(port, "%s should go to %s %s but LLDP sees no neighbour on it" % (
                port, want["switch"], want["port"]), {"plan": want, "neighbours": []})
            continue
        if not any(n.get("chassis_name") == want["switch"] and want["port"] in (n.get("port_id"), n.get("port_descr"))
                   for n in seen):
            ctx.finding(port, "%s should go to %s %s but is cabled to %s" % (
                port, want["switch"], want["port"], ", ".join(_switch_port(n) for n in seen)),
                {"plan": want, "neighbours": seen})


def _link_modes(ctx, roles=None):
    """[(network, net, port's NIC fact, link_modes)] for ports under attached networks (of ``roles``) with link
    modes."""
    found = []
    for name, net, device in _attached(ctx):
        if roles and net["role"] not in roles:
            continue
        for nic in _ports_of(ctx.facts, device):
            modes = nic.get("link_modes")
            if modes and modes.get("supported_speeds_mbps"):
                found.append((name, net, nic, modes))
    if not found:
        raise NotApplicable("no port of an attached network reports its link modes (subset link_modes, live node, "
                            "a driver that reports them)")
    return found


@host_rule(
    "LINK-001", "NIC cannot reach the speed the network is built for", "fail",
    """fabric_networks.<name>.speed_mbps says what the network is built for; a port whose supported link modes stop
    below it caps the node at its own speed whatever the switch and cable can do.""",
    """Use a NIC (or transceiver) that supports the network's speed on this network, or correct speed_mbps.""")
def link_speed_capability(ctx):
    judged = 0
    for name, net, nic, modes in _link_modes(ctx):
        port = nic["name"]
        if not net.get("speed_mbps"):
            continue
        judged += 1
        if modes["max_supported_mbps"] < net["speed_mbps"]:
            ctx.finding(port, "%s supports up to %s Mb/s; network %s is built for %s Mb/s" % (
                port, modes["max_supported_mbps"], name, net["speed_mbps"]),
                {"network": name, "port": port, "supported_speeds_mbps": modes["supported_speeds_mbps"],
                 "speed_mbps": net["speed_mbps"]})
    if not judged:
        raise NotApplicable("no attached network sets speed_mbps")


@host_rule(
    "LINK-002", "No upgrade headroom on a training or storage port", "info",
    """Whether the network can get faster later without new NICs: a port already running at the fastest mode it
    supports (a 25G card at 25G) needs new hardware for the next step; a 25G card at 10G can move up with new optics
    or switch ports. Information for planning, with the card's port count (single or dual port).""",
    """Plan NICs with headroom (for example 100/200G cards) where the network will grow.""")
def link_headroom(ctx):
    for name, _net, nic, modes in _link_modes(ctx, roles=("training", "storage")):
        port = nic["name"]
        speed = modes.get("speed_mbps") or nic.get("speed_mbps")
        if speed and speed >= modes["max_supported_mbps"]:
            ctx.finding(port, "%s (network %s) runs at %s Mb/s, the fastest its card supports (%s-port card %s)" % (
                port, name, speed, nic.get("ports_on_card") or "?", nic.get("card") or "?"),
                {"port": port, "network": name, "speed_mbps": speed,
                 "supported_speeds_mbps": modes["supported_speeds_mbps"], "ports_on_card": nic.get("ports_on_card")})


@host_rule(
    "LINK-003", "10GBASE-T on a training link", "info",
    """Twisted-pair 10G (10GBASE-T) works, but within a rack DAC or AOC cables give lower latency (about 2 us less
    per link for the PHY) and draw several watts less per port; collective traffic notices the latency.""",
    """Prefer SFP+/SFP28 ports with DAC or AOC cables for training links within a rack.""")
def link_base_t(ctx):
    for name, _net, nic, modes in _link_modes(ctx, roles=("training",)):
        port = nic["name"]
        twisted = modes.get("port") == "twisted_pair" or "TP" in (modes.get("supported_ports") or [])
        if twisted and modes.get("media") == ["base-t"] and modes["max_supported_mbps"] >= 10000:
            ctx.finding(port, "%s (training network %s) is a BASE-T port (%s)" % (
                port, name, ", ".join(m for m in modes["supported_modes"] if m.startswith("10000base")) or
                "10G over twisted pair"), {"port": port, "network": name, "supported_modes": modes["supported_modes"]})
