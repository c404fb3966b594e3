"""Benchmark: the hwloc and NCCL XML readers on a normal real capture and on hostile inputs.

Prints, per input, the median time of a full gather and its ratio to the normal capture of the same
reader; asserts nothing (the robustness tests check outcomes, not times). Hostile inputs are made in a
temporary folder: nesting far past the depth bound, a file just under the size bound, one over it,
entity expansion, and the PCI-device bound.

Run: .venv/bin/python benchmarks/xml_readers_bench.py [--runs N]
"""

import argparse
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

import conftest  # noqa: E402  (puts ansible_collections.gpuops.fabric on sys.path)

assert conftest.COLLECTIONS_ROOT in sys.path

from gather_bench import median_seconds  # noqa: E402  (one timing helper for every benchmark)

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources import xmlfile as _xmlsources  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather  # noqa: E402

NORMAL = {
    "nccl_xml": os.path.join(REPO, "tests", "fixtures", "realdata", "rccl-mi300x-8gpu-cx7", "topo_8p_940.xml"),
    "hwloc_xml": os.path.join(REPO, "tests", "fixtures", "realdata", "hwloc-xml-4socket-nics-per-node",
                              "96em64t-4n4d3ca2co-pci.xml"),
}
ROOT = {"nccl_xml": "system", "hwloc_xml": "topology"}


def attempt(source, path):
    try:
        facts = gather(source=source, path=path)
        return "facts, %d notes" % len(facts["warnings"])
    except TopologyError as exc:
        return "refused: " + str(exc).split(": ", 1)[1][:60]


def hostile_inputs(work, source):
    root = ROOT[source]
    inner, close = ("<pci>", "</pci>") if source == "nccl_xml" else ('<object type="Group">', "</object>")
    made = []

    def put(name, data):
        path = os.path.join(work, "%s-%s.xml" % (source, name))
        with open(path, "wb") as handle:
            handle.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        made.append((name, path))
        return path

    put("deep nesting x100000", "<%s>%s%s</%s>" % (root, inner * 100000, close * 100000, root))
    # Just under the size bound: one element with a 32 MiB attribute, read and parsed in full.
    pad = _xmlsources.MAX_XML_BYTES - 64
    put("max-size file (32 MiB)", "<%s pad=\"%s\"/>" % (root, "x" * pad))
    # Just under the size bound, many elements: stopped at the element bound.
    unit = "<e/>"
    put("max-size, many elements", "<%s>%s</%s>" % (root, unit * ((_xmlsources.MAX_XML_BYTES - 64) // len(unit)), root))
    over = os.path.join(work, "%s-over.xml" % source)
    with open(over, "wb") as handle:
        handle.write(b"<%s>" % root.encode())
        handle.truncate(_xmlsources.MAX_XML_BYTES + 1)
    made.append(("over the size bound (sparse)", over))
    laughs = "".join('<!ENTITY l%d "%s">' % (i, ("&l%d;" % (i - 1)) * 10 if i else "lol") for i in range(10))
    put("billion laughs", '<!DOCTYPE %s [%s]><%s a="&l9;"/>' % (root, laughs, root))
    if source == "nccl_xml":
        pcis = "".join('<pci busid="%04x:%02x:00.0" class="0x%s"/>'
                       % (i // 256, i % 256, "030200" if i < 16 else "088000")
                       for i in range(_xmlsources.MAX_PCI_DEVICES + 1000))
        put("5096 PCI devices (16 GPUs)", '<system version="1"><cpu numaid="0" affinity="f">%s</cpu></system>' % pcis)
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="xml-bench-")
    try:
        print("%-10s %-30s %10s %8s  %s" % ("reader", "input", "median ms", "ratio", "outcome"))
        for source in ("nccl_xml", "hwloc_xml"):
            base = median_seconds(lambda: gather(source=source, path=NORMAL[source]), args.runs)
            print("%-10s %-30s %10.2f %8.2f  %s" % (source, "normal: " + os.path.basename(NORMAL[source])[:22],
                                                    base * 1000, 1.0, attempt(source, NORMAL[source])))
            for name, path in hostile_inputs(work, source):
                took = median_seconds(lambda: attempt(source, path), args.runs)
                print("%-10s %-30s %10.2f %8.2f  %s" % (source, name, took * 1000, took / base, attempt(source, path)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
