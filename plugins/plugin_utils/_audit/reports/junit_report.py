# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""junit.xml: one test suite per host, one test case per rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from xml.etree import ElementTree
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.catalog import CATALOG
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import (
    RDMA_COLUMNS, THROUGHPUT_COLUMNS, nccl_lines, rdma_cells, stability_lines, throughput_cells, xml_safe,
)


def render_junit(report):
    """One testsuite per host, one testcase per host x rule: fail findings fail the case. A character XML 1.0
    forbids (a control character in a host name) is written as a visible escape (model.xml_safe)."""
    suites = ElementTree.Element("testsuites", name="gpuops.fabric audit")
    by_case = {}
    for f in report["findings"]:
        by_case.setdefault((f["host"], f["id"]), []).append(f)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for host in report["hosts"]:
        suite = ElementTree.SubElement(suites, "testsuite", name=host["name"], timestamp=report["generated_at"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if host["status"] != "audited":
            case = ElementTree.SubElement(suite, "testcase", classname=host["name"], name="facts gathered")
            ElementTree.SubElement(case, "error", message="host %s: %s" % (host["status"], host["reason"] or ""),
                                   type=host["status"])
            counts["tests"] += 1
            counts["errors"] += 1
        else:
            for rule_id, outcome in sorted(report["outcomes"].get(host["name"], {}).items()):
                rule = CATALOG[rule_id]
                case = ElementTree.SubElement(suite, "testcase", classname=host["name"],
                                              name="%s %s" % (rule_id, rule.title))
                counts["tests"] += 1
                found = by_case.get((host["name"], rule_id), [])
                failing = [f for f in found if f["severity"] == "fail" and not f.get("waived")]
                if failing:
                    failure = ElementTree.SubElement(case, "failure", message="; ".join(f["message"] for f in failing),
                                                     type=rule_id)
                    failure.text = "\n".join("%s: %s\nFix: %s" % (f["subject"], f["message"], f["remediation"])
                                             for f in failing)
                    counts["failures"] += 1
                elif outcome["status"] == "not_applicable":
                    ElementTree.SubElement(case, "skipped", message=outcome["reason"] or "not applicable")
                    counts["skipped"] += 1
                other = [f for f in found if f not in failing]
                if other:
                    out = ElementTree.SubElement(case, "system-out")
                    out.text = "\n".join("%s%s %s: %s" % (f["severity"], " (waived)" if f.get("waived") else "",
                                                          f["subject"], f["message"]) for f in other)
        said = []
        nccl = [line for row in report.get("nccl") or [] if row["host"] == host["name"] for line in nccl_lines(row)]
        if nccl:
            said.append("NCCL, what it chose:\n" + "\n".join(nccl))
        said += ["\n".join(stability_lines(row)) for row in report.get("stability") or []
                 if row["host"] == host["name"]]
        mine = [m for m in report.get("measurements") or [] if m["host"] == host["name"]]
        for title, kind, columns, cells in (
                ("Throughput and latency under load", "throughput", THROUGHPUT_COLUMNS, throughput_cells),
                ("RDMA writes (perftest)", "perftest", RDMA_COLUMNS, rdma_cells)):
            rows = [m for m in mine if m["kind"] == kind]
            if rows:  # one line per measurement, each cell named by its column (the host is the suite's)
                said.append("%s:\n" % title + "\n".join("  " + ", ".join(
                    "%s %s" % (name, cell) for name, cell in zip(columns[1:], cells(m, "-")[1:])) for m in rows))
        if said:
            # one system-out per suite: JUnit readers keep only one
            ElementTree.SubElement(suite, "system-out").text = "\n\n".join(said)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    inventory = report["outcomes"].get("inventory")
    if inventory:
        suite = ElementTree.SubElement(suites, "testsuite", name="inventory", timestamp=report["generated_at"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for rule_id, outcome in sorted(inventory.items()):
            case = ElementTree.SubElement(suite, "testcase", classname="inventory",
                                          name="%s %s" % (rule_id, CATALOG[rule_id].title))
            counts["tests"] += 1
            found = [f for f in report["findings"] if f["id"] == rule_id]
            failing = [f for f in found if f["severity"] == "fail" and not f.get("waived")]
            if failing:
                failure = ElementTree.SubElement(case, "failure", message="; ".join(
                    "%s %s" % (f["host"], f["message"]) for f in failing), type=rule_id)
                failure.text = "\n".join("%s %s: %s" % (f["host"], f["subject"], f["message"]) for f in failing)
                counts["failures"] += 1
            elif outcome["status"] == "not_applicable":
                ElementTree.SubElement(case, "skipped", message=outcome["reason"] or "not applicable")
                counts["skipped"] += 1
            if found and not failing:
                out = ElementTree.SubElement(case, "system-out")
                out.text = "\n".join("%s %s %s: %s" % (f["severity"], f["host"], f["subject"], f["message"])
                                     for f in found)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    return xml_safe('<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n")
