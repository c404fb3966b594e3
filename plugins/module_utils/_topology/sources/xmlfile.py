# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""What both XML topology sources share: the bounded, entity-free XML reader and the notes, limits and PCI helpers
of a Topology built from XML."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat
from xml.etree import ElementTree
from xml.parsers import expat
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.cpulist import parse_cpumask
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError

# The hwloc export of a 4096-core machine with full I/O is a few MB; NCCL's files are tens of KB.
MAX_XML_BYTES = 32 * 1024 * 1024
MAX_XML_DEPTH = 256
MAX_XML_ELEMENTS = 500000


# More PCI functions than any machine enumerates (SR-IOV included); paths are computed per pair.
MAX_PCI_DEVICES = 4096


# Linux allows at most 1024 NUMA nodes (NODES_SHIFT 10): a matrix of 1024 x 1024 values.
MAX_NUMA_NODES = 1024


# Notes kept per file; the rest are counted in one last note.
MAX_WARNINGS = 100
MAX_SHOWN = 40  # characters of a value quoted in a note
_READ_CHUNK = 1024 * 1024
_MAX_XML_BYTES = MAX_XML_BYTES  # older name


# 1.6 Tb/s: above any Ethernet or InfiniBand port shipping today.
MAX_PLAUSIBLE_MBPS = 1600000


# Per-lane rate and usable link bandwidth far above PCIe 7.0 (128 GT/s, x32 = 484 GB/s).
MAX_PLAUSIBLE_GTS = 1024.0
MAX_PLAUSIBLE_GBYTES = 4096.0


class _Refused(Exception):
    """Raised from inside the expat handlers to stop a document that breaks a bound."""


def shown_value(value):
    """A value for a note: repr, cut to a few tens of characters."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...(%d characters)" % len(str(value))


def _read_bounded(path):
    """The bytes of a regular file, at most MAX_XML_BYTES; anything else raises TopologyError."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (IOError, OSError) as exc:
        if exc.errno == errno.EISDIR:
            raise TopologyError("%s: cannot read (a directory, not a regular file)" % path)
        raise TopologyError("%s: cannot read (%s)" % (path, exc))
    try:
        try:
            info = os.fstat(fd)
        except (IOError, OSError) as exc:
            raise TopologyError("%s: cannot read (%s)" % (path, exc))
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a plain file")
            raise TopologyError("%s: cannot read (%s, not a regular file)" % (path, kind))
        if info.st_size > MAX_XML_BYTES:
            raise TopologyError("%s: %d bytes, larger than the %d bytes (%d MiB) read at most; refusing to parse"
                                % (path, info.st_size, MAX_XML_BYTES, MAX_XML_BYTES // (1024 * 1024)))
        chunks, total = [], 0
        while total <= MAX_XML_BYTES:
            try:
                chunk = os.read(fd, min(_READ_CHUNK, MAX_XML_BYTES + 1 - total))
            except (IOError, OSError) as exc:
                raise TopologyError("%s: cannot read (%s)" % (path, exc))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > MAX_XML_BYTES:
        raise TopologyError("%s: larger than the %d bytes (%d MiB) read at most; refusing to parse"
                            % (path, MAX_XML_BYTES, MAX_XML_BYTES // (1024 * 1024)))
    return b"".join(chunks)


# expat's errors at the end of a document that stops early: what an excerpt pasted into an issue looks like
_TRUNCATED = ("no element found", "unclosed token", "partial character")


def parse_xml_bytes(data, path, excerpt=False):
    """Parse bytes into an ElementTree element with the bounds above; problems raise TopologyError.

    ``excerpt``: the document may stop early (the start of a dump pasted into a log or an issue); the elements
    still open at its end are closed, and (root, whether it stopped early) is returned instead of the root."""
    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()
    counts = {"depth": 0, "elements": 0}
    open_tags = []

    def start(tag, attrs):
        counts["depth"] += 1
        counts["elements"] += 1
        if counts["depth"] > MAX_XML_DEPTH:
            raise _Refused("elements nested deeper than %d levels" % MAX_XML_DEPTH)
        if counts["elements"] > MAX_XML_ELEMENTS:
            raise _Refused("more than %d elements" % MAX_XML_ELEMENTS)
        open_tags.append(tag)
        builder.start(tag, attrs)

    def end(tag):
        counts["depth"] -= 1
        open_tags.pop()
        builder.end(tag)

    def entity_declaration(*_args):
        raise _Refused("XML entity declarations are not accepted")

    def skipped_entity(*_args):
        return None  # an entity of an external DTD that is not read: left out

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = entity_declaration
    parser.SkippedEntityHandler = skipped_entity
    try:
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    except (AttributeError, expat.ExpatError):
        pass
    try:
        try:
            parser.Parse(data, True)
        except expat.ExpatError as exc:
            if not (excerpt and open_tags and any(t in str(exc) for t in _TRUNCATED)):
                raise
            for tag in reversed(open_tags):
                builder.end(tag)
            return builder.close(), True
        root = builder.close()
    except _Refused as exc:
        raise TopologyError("%s: %s" % (path, exc))
    except (expat.ExpatError, ValueError, TypeError, AssertionError, IndexError, LookupError) as exc:
        # TreeBuilder.close() asserts that a root element was seen.
        raise TopologyError("%s: malformed XML (%s)" % (path, exc or "no root element"))
    return (root, False) if excerpt else root


def load_xml(path, expected_root):
    """Read and parse an XML file; any problem becomes a TopologyError naming the path."""
    return _load(path, expected_root, False)[0]


def load_xml_excerpt(path, expected_root):
    """(root, whether it stopped early) of an XML document that may be an excerpt: lines before its root element
    (a shell prompt, a ``cat`` command) and an early end (see parse_xml_bytes)."""
    return _load(path, expected_root, True)


def _load(path, expected_root, excerpt):
    data = _read_bounded(path)
    if excerpt:
        start = data.find(b"<" + expected_root.encode("ascii"))
        data = data[start:] if start > 0 else data
    if not data.strip():
        raise TopologyError("%s: malformed XML (empty file)" % path)
    root, truncated = parse_xml_bytes(data, path, excerpt=True) if excerpt else (parse_xml_bytes(data, path), False)
    if root.tag != expected_root:
        tag = root.tag if len(root.tag) <= MAX_SHOWN else root.tag[:MAX_SHOWN] + "..."
        raise TopologyError("%s: root element is <%s>, expected <%s>" % (path, tag, expected_root))
    return root, truncated


class FileNotes:
    """Warnings of one file, at most MAX_WARNINGS of them plus a count of the rest."""

    def __init__(self, topo, path):
        self.topo = topo
        self.path = path
        self.dropped = 0

    def __call__(self, message):
        if len(self.topo.warnings) < MAX_WARNINGS:
            self.topo.warn("%s: %s" % (self.path, message))
        else:
            self.dropped += 1

    def close(self):
        if self.dropped:
            self.topo.warn("%s: %d more notes like the above left out" % (self.path, self.dropped))


def hex_or_none(text, maximum=0xFFFF):
    """Hex text (with or without 0x) -> int up to ``maximum``; anything else None."""
    if text is None:
        return None
    text = str(text).strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if not 0 < len(text) <= 8 or not all(c in "0123456789abcdef" for c in text):
        return None
    value = int(text, 16)
    return value if value <= maximum else None


def small_int(text, maximum):
    """ASCII decimal text -> int in 0..maximum; anything else (other scripts' digits, 400 digits) None."""
    if text is None:
        return None
    text = str(text).strip()
    if not 0 < len(text) <= 20 or not all(c in "0123456789" for c in text):
        return None
    value = int(text)
    return value if value <= maximum else None


def mask_to_cpus(mask):
    if not mask:
        return None
    return parse_cpumask(mask)


def single_node(nodeset, ignore=()):
    nodes = [n for n in (mask_to_cpus(nodeset) or []) if n not in ignore]
    return nodes[0] if len(nodes) == 1 else None


def add_pci(topo, dev, note, state):
    """Put a PCI device in the model unless its bus id is there already (that is noted) or too many are."""
    if dev.address in topo.pci:
        note("PCI bus id %s appears more than once; the first entry is kept, the later one ignored" % dev.address)
        return False
    if len(topo.pci) >= MAX_PCI_DEVICES:
        state["pci_dropped"] = state.get("pci_dropped", 0) + 1
        return False
    topo.pci[dev.address] = dev
    return True


def note_dropped(state, note):
    if state.get("pci_dropped"):
        note("more than %d PCI devices; %d more left out" % (MAX_PCI_DEVICES, state["pci_dropped"]))
