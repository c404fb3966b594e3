"""Hostile inputs to the hwloc and NCCL XML readers (issue 13): every one ends in facts with notes or in a
TopologyError naming the path, never a traceback, a hang or unbounded memory. Inputs are hand-made here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import xmlfile as _xmlsources
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather

SOURCES = ["hwloc_xml", "nccl_xml"]
ROOT = {"hwloc_xml": "topology", "nccl_xml": "system"}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def outcome(source, path):
    """The facts (checked to be strict JSON) or the TopologyError's text (checked to name the path)."""
    try:
        facts = gather(source=source, path=str(path))
    except TopologyError as exc:
        assert str(path) in str(exc)
        return str(exc)
    json.dumps(facts, allow_nan=False, sort_keys=True)
    return facts


def write(tmp_path, data, name="in.xml"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


@pytest.mark.parametrize("source", SOURCES)
def test_deep_nesting_refused(tmp_path, source):
    inner = "<pci>" if source == "nccl_xml" else '<object type="Group">'
    close = "</pci>" if source == "nccl_xml" else "</object>"
    doc = "<%s>%s%s</%s>" % (ROOT[source], inner * 100000, close * 100000, ROOT[source])
    result = outcome(source, write(tmp_path, doc))
    assert "nested deeper than 256 levels" in result


def test_nesting_below_the_bound_reads_without_recursion(tmp_path):
    """250 nested switches: deeper than any machine, within the bound; read iteratively, no RecursionError."""
    depth = 250
    opens = "".join('<pci busid="0000:%02x:%02x.0" class="0x060400" link_speed="8 GT/s" link_width="16">'
                    % (i // 32, i % 32) for i in range(depth))
    doc = ('<system version="1"><cpu numaid="0" affinity="ff">%s<pci busid="0001:00:00.0" class="0x030200"/>'
           '%s</cpu></system>' % (opens, "</pci>" * depth))
    facts = outcome("nccl_xml", write(tmp_path, doc))
    gpu = [p for p in facts["pci"] if p["address"] == "0001:00:00.0"][0]
    assert len(gpu["chain"]) == depth


@pytest.mark.parametrize("source", SOURCES)
def test_oversized_file_refused_before_reading(tmp_path, source):
    path = tmp_path / "big.xml"
    with open(str(path), "wb") as handle:
        handle.write(b"<%s>" % ROOT[source].encode())
        handle.truncate(_xmlsources.MAX_XML_BYTES + 1)  # sparse: nothing of it is read
    result = outcome(source, path)
    assert "33554433 bytes, larger than the 33554432 bytes (32 MiB) read at most" in result


BILLION_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                  + "".join('<!ENTITY lol%d "%s">' % (i, ("&lol%d;" % (i - 1) if i > 1 else "&lol;") * 10)
                            for i in range(1, 10))
                  + ']><%s a="&lol9;"/>')


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_entity_expansion_refused(tmp_path, source, encoding):
    doc = BILLION_LAUGHS % ROOT[source]
    if encoding == "utf-16":  # b"<!ENTITY" is not in these bytes: the check is the parser's
        doc = doc.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    result = outcome(source, write(tmp_path, doc.encode(encoding)))
    assert "entity declarations are not accepted" in result


@pytest.mark.parametrize("doctype", [
    '<!DOCTYPE system [<!ENTITY ext SYSTEM "file:///etc/passwd">]>',
    '<!DOCTYPE system [<!ENTITY % p SYSTEM "http://192.0.2.1/x.dtd"> %p;]>',
])
def test_doctype_entities_refused(tmp_path, doctype):
    result = outcome("nccl_xml", write(tmp_path, '%s<system version="1">&ext;</system>' % doctype))
    assert isinstance(result, str) and ("entity declarations" in result or "malformed XML" in result)


def test_external_dtd_reference_alone_is_fine(tmp_path):
    doc = '<?xml version="1.0"?><!DOCTYPE topology SYSTEM "hwloc2.dtd"><topology version="2.0"/>'
    assert outcome("hwloc_xml", write(tmp_path, doc))["pci"] == []


@pytest.mark.parametrize("data", [
    b"\xff\xfe\x00\xd8junk\x80\x81",
    b"<system>\xc3\x28</system>",
    b'<?xml version="1.0" encoding="x-no-such-codec"?><system/>',
    b"\x00" * 1000,
    b"   \n\t ",
])
def test_non_utf8_junk(tmp_path, data):
    result = outcome("nccl_xml", write(tmp_path, data))
    assert "malformed XML" in result


def test_latin1_declared_document_reads(tmp_path):
    doc = ('<?xml version="1.0" encoding="ISO-8859-1"?><system version="1"><cpu numaid="0" affinity="f">'
           '<pci busid="0000:01:00.0" class="0x020000"><nic><net name="eth\xe9" speed="1000"/></nic></pci>'
           '</cpu></system>').encode("latin-1")
    facts = outcome("nccl_xml", write(tmp_path, doc))
    assert [n["name"] for n in facts["nics"]] == ["eth\xe9"]


def _returns_within(func, seconds=10):
    box = {}

    def run():
        try:
            box["value"] = func()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "reader blocked"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("source", SOURCES)
def test_fifo_refused_without_blocking(tmp_path, source):
    fifo = tmp_path / "topo.fifo"
    os.mkfifo(str(fifo))
    result = _returns_within(lambda: outcome(source, fifo))
    assert "a FIFO, not a regular file" in result


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/tty"])
def test_device_refused(device):
    if not os.path.exists(device):
        pytest.skip("no %s here" % device)
    result = _returns_within(lambda: outcome("hwloc_xml", device))
    assert device in result and ("a device, not a regular file" in result or "cannot read" in result)


def test_directory_refused(tmp_path):
    assert "a directory, not a regular file" in outcome("nccl_xml", tmp_path)


def test_absurd_numbers_in_nccl_attributes(tmp_path):
    huge = "9" * 400
    doc = ('<system version="1"><cpu numaid="%s" affinity="ff">'
           '<pci busid="0000:01:00.0" class="0x%s" vendor="0x%s" link_speed="%s GT/s" link_width="%s">'
           '<gpu dev="0"/></pci>'
           '<pci busid="0000:02:00.0" class="0x020700" link_speed="1e999 GT/s" link_width="16">'
           '<nic><net name="mlx5_0" speed="%s" port="%s" gdr="1"/></nic></pci>'
           '</cpu></system>') % ("9" * 5000, "f" * 400, "f" * 400, huge, huge, "9" * 5000, "9" * 5000)
    facts = outcome("nccl_xml", write(tmp_path, doc))
    dev = [p for p in facts["pci"] if p["address"] == "0000:01:00.0"][0]
    assert (dev["class"], dev["vendor_id"], dev["numa_node"]) == (None, None, None)
    assert dev["link"]["max"]["speed_gts"] is None and dev["link"]["max"]["width"] is None
    assert [p for p in facts["pci"] if p["address"] == "0000:02:00.0"][0]["link"]["max"]["speed_gts"] is None
    assert facts["rdma"][0]["ports"][0]["rate_gbps"] is None
    text = " ".join(facts["warnings"])
    assert "link_speed" in text and "link_width" in text and "numaid" in text and "speed" in text
    assert max(len(w) for w in facts["warnings"]) < 400  # values are quoted cut short


@pytest.mark.parametrize("speed", ["9" * 400, "inf", "nan", "1e999", "-5", "junk"])
def test_absurd_numbers_in_hwloc_attributes(tmp_path, speed):
    doc = ('<topology version="2.0"><object type="Machine" cpuset="0x1" nodeset="0x1">'
           '<object type="NUMANode" os_index="%s" cpuset="0x1" nodeset="0x1" local_memory="%s"/>'
           '<object type="NUMANode" os_index="1" cpuset="0x1" nodeset="0x1" local_memory="%s"/>'
           '<object type="Bridge" bridge_type="0-1"><object type="PCIDev" pci_busid="0000:01:00.0" '
           'pci_type="0200 [8086:1521] [8086:0001] 01" pci_link_speed="%s">'
           '<object type="OSDev" name="eth0" osdev_type="%s"><info name="Port" value="%s"/></object>'
           '</object></object></object></topology>') % (
               "9" * 5000, "9" * 5000, "9" * 400, speed, "9" * 400, "9" * 5000)
    facts = outcome("hwloc_xml", write(tmp_path, doc))
    assert facts["pci"][0]["link"]["current"]["gbytes_per_s"] is None
    assert [n["id"] for n in facts["numa"]["nodes"]] == [1]
    assert facts["numa"]["nodes"][0]["memory_bytes"] is None


def test_notes_are_bounded(tmp_path):
    pcis = "".join('<pci busid="0000:%02x:%02x.%d" class="0x020000" link_speed="x%d"/>'
                   % (i // 256, (i // 8) % 32, i % 8, i) for i in range(3000))
    doc = '<system version="1"><cpu numaid="0" affinity="f">%s</cpu></system>' % pcis
    facts = outcome("nccl_xml", write(tmp_path, doc))
    assert len(facts["warnings"]) == _xmlsources.MAX_WARNINGS + 1
    assert "2900 more notes like the above left out" in facts["warnings"][-1]


def test_pci_devices_are_bounded(tmp_path):
    count = _xmlsources.MAX_PCI_DEVICES + 10
    pcis = "".join('<pci busid="%04x:%02x:00.0" class="0x088000"/>' % (i // 256, i % 256) for i in range(count))
    doc = '<system version="1"><cpu numaid="0" affinity="f">%s</cpu></system>' % pcis
    facts = outcome("nccl_xml", write(tmp_path, doc))
    assert len(facts["pci"]) == _xmlsources.MAX_PCI_DEVICES
    assert any("more than 4096 PCI devices; 10 more left out" in w for w in facts["warnings"])


def test_element_count_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(_xmlsources, "MAX_XML_ELEMENTS", 1000)
    doc = "<system>%s</system>" % ("<x/>" * 1000)
    assert "more than 1000 elements" in outcome("nccl_xml", write(tmp_path, doc))


# ---- property-based: random bytes and random well-formed structures -------------------------------
@SETTINGS
@given(data=st.binary(max_size=2000), source=st.sampled_from(SOURCES))
def test_random_bytes(tmp_path_factory, data, source):
    outcome(source, write(tmp_path_factory.mktemp("bytes"), data))


NCCL_TAGS = ["cpu", "pci", "nic", "net", "gpu", "nvlink", "xgmi", "c2c"]
HWLOC_TYPES = ["Machine", "Package", "NUMANode", "Group", "Core", "PU", "Bridge", "PCIDev", "OSDev", "Misc"]
xml_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Cn")), max_size=12)
values = st.one_of(xml_text, st.sampled_from([
    "0", "-1", "1", "16", "255", "Unknown", "0x060400", "0x030200", "0x020700", "0x120000", "16.0 GT/s PCIe",
    "32 GT/s", "0000:01:00.0", "0000:02:00.0", "0000:01:00.0", "ff", "0x1", "0x3", "0x0,0x1", "1e999", "nan",
    "9" * 30, "0300 [1002:6798] [1002:0b00] 00", "0604 [1000:c010] [1000:a096] b0", "5", "12", "OpenCL",
    "NUMALatency", "os", "gp", "10 20 20 10"]))


def _attrs(keys):
    return st.dictionaries(st.sampled_from(keys), values, max_size=5)


def _tree(tag_strategy, keys):
    leaf = st.tuples(tag_strategy, _attrs(keys), st.just([]))
    return st.recursive(leaf, lambda kids: st.tuples(tag_strategy, _attrs(keys), st.lists(kids, max_size=4)),
                        max_leaves=30)


def _render(node):
    from xml.sax.saxutils import quoteattr
    tag, attrs, kids = node
    text = "".join(" %s=%s" % (k, quoteattr(v)) for k, v in sorted(attrs.items()))
    return "<%s%s>%s</%s>" % (tag, text, "".join(_render(k) for k in kids), tag)


@SETTINGS
@given(kids=st.lists(_tree(st.sampled_from(NCCL_TAGS),
                           ["busid", "class", "vendor", "link_speed", "link_width", "numaid", "affinity", "name",
                            "speed", "port", "gdr", "guid", "dev"]), max_size=4))
def test_random_nccl_structures(tmp_path_factory, kids):
    doc = '<system version="1">%s</system>' % "".join(_render(k) for k in kids)
    assert isinstance(outcome("nccl_xml", write(tmp_path_factory.mktemp("nccl"), doc)), dict)


@SETTINGS
@given(kids=st.lists(_tree(st.just("object"),
                           ["type", "os_index", "cpuset", "nodeset", "pci_busid", "pci_type", "pci_link_speed",
                            "osdev_type", "subtype", "name", "local_memory", "bridge_pci", "gp_index"]), max_size=4),
       version=st.sampled_from(["1.0", "2.0", "3.0", "", "junk"]),
       nbobjs=values, indexes=values, u64=st.lists(values, max_size=3))
def test_random_hwloc_structures(tmp_path_factory, kids, version, nbobjs, indexes, u64):
    from xml.sax.saxutils import escape, quoteattr
    dist = '<distances2 type="NUMANode" nbobjs=%s><indexes>%s</indexes>%s</distances2>' % (
        quoteattr(nbobjs), escape(indexes), "".join("<u64values>%s</u64values>" % escape(v) for v in u64))
    doc = '<topology version=%s>%s%s</topology>' % (quoteattr(version), "".join(_render(k) for k in kids), dist)
    assert isinstance(outcome("hwloc_xml", write(tmp_path_factory.mktemp("hwloc"), doc)), dict)
