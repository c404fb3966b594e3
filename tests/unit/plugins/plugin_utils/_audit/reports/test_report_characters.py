"""JUnit and HTML stay well-formed whatever the host names and messages hold: a character XML 1.0 forbids (a control
character in a dynamic inventory's host name, an ANSI colour in an ssh error) is written as a visible escape."""

import copy
import datetime
import re
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.html_report import render_html
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.junit_report import render_junit
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.model import xml_safe
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.topology_svg import topology_svg
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit

EXPECT = {"gpu": {"width": 16}, "nics": [{"name": "ens*np0", "speed_mbps": 400000, "mtu": 9000}], "rdma": True}
BROKEN = u"gpu\x01node"            # the tester's host name, from a dynamic inventory
GONE = u"gone\x1b[31m\x0b"         # an escape sequence and a vertical tab
# what XML 1.0 allows: tab, newline, carriage return, U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF
FORBIDDEN = re.compile(u"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@pytest.fixture(scope="module")
def report(roots):
    inputs = {
        BROKEN: {"facts": gather(root=roots["dgx8-broken"]), "expectations": EXPECT},
        GONE: {"facts": None, "status": "unreachable", "reason": u"ssh: \x1b[31mconnection refused\x1b[0m\x00"},
    }
    result, errors = run_audit(inputs, datetime.date(2027, 1, 1), "2027-01-01T00:00:00+00:00", "0.1.0")
    assert errors == []
    result = copy.deepcopy(result)
    first = result["findings"][0]
    assert first["host"] == BROKEN and first["severity"] == "fail"
    first["subject"] = first["subject"] + u"\x02\ufffe"
    first["message"] = first["message"] + u" \x07bell \udcff"
    first["evidence"] = {"line": u"\x03evidence\x04"}
    return result


def test_xml_safe_escapes_only_what_xml_forbids():
    assert xml_safe(u"a\x01b\x1fc\x00") == u"a\\x01b\\x1fc\\x00"
    assert xml_safe(u"\ufffe\udcff\x85") == u"\\ufffe\\udcff\\x85"
    kept = u"tab\tnewline\nreturn\r \u00e9\u20ac\U0001F600 <&>\"'"
    assert xml_safe(kept) == kept


def test_junit_parses_and_names_the_host(report):
    page = render_junit(report)
    assert not FORBIDDEN.search(page)
    root = ElementTree.fromstring(page)  # raised "not well-formed (invalid token)" before
    suites = dict((s.get("name"), s) for s in root.findall("testsuite"))
    assert set(suites) == {u"gpu\\x01node", u"gone\\x1b[31m\\x0b", "inventory"}
    broken = suites[u"gpu\\x01node"]
    assert all(c.get("classname") == u"gpu\\x01node" for c in broken.findall("testcase"))
    failures = list(broken.iter("failure"))
    assert failures and any(u"\\x07bell \\udcff" in f.get("message") for f in failures)
    assert any(u"\\x02\\ufffe" in (f.text or "") for f in failures)
    error = suites[u"gone\\x1b[31m\\x0b"].find("testcase/error")
    assert error.get("message") == u"host unreachable: ssh: \\x1b[31mconnection refused\\x1b[0m\\x00"


class _Attributes(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.hosts, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.hosts.extend(value for name, value in attrs if name == "data-host")

    def handle_data(self, data):
        self.text.append(data)


def test_html_holds_no_forbidden_character_and_its_svg_parses(report):
    page = render_html(report)
    assert not FORBIDDEN.search(page)
    parser = _Attributes()
    parser.feed(page)
    assert u"gpu\\x01node" in parser.hosts and u"gone\\x1b[31m\\x0b" in parser.hosts
    text = u"".join(parser.text)
    assert u"\\x07bell \\udcff" in text and u"\\x02\\ufffe" in text
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert svgs and any(u'data-host="gpu\\x01node"' in svg for svg in svgs)
    for svg in svgs:
        ElementTree.fromstring(svg)


def test_the_topology_picture_alone_is_well_formed(report):
    svg = topology_svg(BROKEN, report["topology"][BROKEN])
    assert ElementTree.fromstring(svg).get("data-host") == u"gpu\\x01node"
