"""The node result (issue 34): one document per node per audit, report.json's ``nodes``, and the aggregate's merge.
An inventory judged whole and the same inventory judged in three slices, then merged, give the same report; a result
that is cut short, of another schema, from the future, stale, duplicated, for a host outside the inventory, not a
file or with an invalid policy is named, and the rest are still judged."""

import copy
import datetime
import json
import os

import pytest

from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit import node_result
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.formats import REPORT_RENDERERS as RENDERERS
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.reports.json_report import render_json
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import combine, run_audit

TODAY = datetime.date(2027, 1, 1)
NOW = "2027-01-01T00:00:00+00:00"
NOW_TIME = node_result.parse_time(NOW)
SECTIONS = ("hosts", "summary", "outcomes", "measurements", "cabling", "nccl", "stability", "counters", "links",
            "allowed", "topology", "nodes")


@pytest.fixture(scope="module")
def inventory(healthy, broken, realdata):
    """Hosts that differ (speed, MTU, cards, addresses), one unreachable, waivers on one: inventory rules fire."""
    sl390 = gather(source="hwloc_xml", path=realdata("hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml"))
    waivers = [{"rule": "PCIE-001", "hosts": "b*", "reason": "riser on order", "expires": datetime.date(2027, 2, 1)},
               {"rule": "NET-002", "hosts": "b2", "reason": "a waiver of an inventory rule's finding",
                "expires": "2027-02-01"}]
    expect = {"nics": [{"name": "*"}]}
    return {
        "a1": {"facts": healthy, "expectations": expect}, "a2": {"facts": healthy, "expectations": expect},
        "b1": {"facts": broken, "waivers": waivers, "expectations": expect},
        "b2": {"facts": broken, "waivers": waivers, "expectations": expect}, "sl390": {"facts": sl390},
        "gone": {"facts": None, "status": "unreachable", "reason": "ssh: connection refused"},
    }


def audit(inputs):
    report, errors = run_audit(inputs, TODAY, NOW, "0.1.0")
    assert errors == []
    return report


def key(finding):
    return (finding["host"] or "", finding["id"], str(finding["subject"]), finding["severity"], finding["waived"],
            finding["message"])


def comparable(report):
    return json.loads(json.dumps(dict((k, report[k]) for k in SECTIONS), sort_keys=True, default=str))


def test_slices_merged_give_the_whole_audit(inventory, tmp_path):
    whole = audit(inventory)
    ids = set(f["id"] for f in whole["findings"])
    assert {"NET-002", "PCIE-001"} <= ids and any(f["waived"] for f in whole["findings"])
    assert any(f["waived"] and f["id"] == "NET-002" for f in whole["findings"])
    assert [n["host"] for n in whole["nodes"]] == sorted(inventory)
    for index, part in enumerate((("a1", "b1"), ("a2", "b2", "gone"), ("sl390",))):
        report = audit(dict((h, inventory[h]) for h in part))
        folder = tmp_path / ("slice-%d" % index)
        folder.mkdir()
        (folder / "report.json").write_text(render_json(report))
    docs, sources, lines = node_result.collect([str(tmp_path)], sorted(inventory), NOW_TIME, 3600)
    assert lines == [] and sorted(docs) == sorted(inventory)
    assert sources["sl390"] == str(tmp_path / "slice-2" / "report.json") + " (nodes[0])"
    merged, policy_lines = combine(docs, TODAY, NOW, "0.1.0")
    assert policy_lines == []
    assert sorted(map(key, merged["findings"])) == sorted(map(key, whole["findings"]))
    assert comparable(merged) == comparable(whole)
    # the inventory rules judged the merged set: NET-002 names hosts of different slices
    assert any(f["id"] == "NET-002" for f in merged["findings"])


def test_a_node_result_reads_back_as_it_was_judged(inventory, tmp_path):
    report = audit(inventory)
    doc = next(n for n in report["nodes"] if n["host"] == "b1")
    assert doc["schema"] == node_result.SCHEMA and doc["schema_version"] == node_result.SCHEMA_VERSION
    assert doc["status"] == "audited" and doc["facts"] and doc["inputs"]["waivers"][0]["expires"] == "2027-02-01"
    assert doc["boot_id"] == (doc["facts"].get("counters") or {}).get("boot_id")
    assert all(f["host"] == "b1" for f in doc["findings"]) and any(f["waived"] for f in doc["findings"])
    assert node_result.check(json.loads(json.dumps(doc)), NOW_TIME, 3600) is None
    gone = next(n for n in report["nodes"] if n["host"] == "gone")
    assert (gone["status"], gone["reason"], gone["facts"]) == ("unreachable", "ssh: connection refused", None)
    path = tmp_path / "b1.json"
    path.write_text(json.dumps(doc))
    docs, _sources, lines = node_result.collect([str(path)], ["b1"], NOW_TIME)
    assert lines == [] and docs["b1"] == json.loads(json.dumps(doc))


def _write(folder, name, value):
    path = folder / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


def test_bad_node_results_are_named_and_the_rest_judged(inventory, tmp_path):
    report = audit(inventory)
    good = dict((n["host"], n) for n in json.loads(json.dumps(report["nodes"])))
    folder = tmp_path / "results"
    folder.mkdir()
    _write(folder, "a1.json", good["a1"])
    named = {
        "cut.json": (json.dumps(good["a2"])[:5000], "not JSON, or cut short"),
        "other.json": (dict(good["a2"], schema="someone/else"), "schema 'someone/else', not gpuops.fabric/node-result"),
        "newer.json": (dict(good["a2"], schema_version=2), "schema version 2, this collection reads 1 (written by a "
                                                           "newer gpuops.fabric)"),
        "future.json": (dict(good["a2"], generated_at="2027-01-02T00:00:00Z"), "from the future"),
        "stale.json": (dict(good["a2"], generated_at="2026-12-30T00:00:00+00:00"), "stale: generated_at"),
        "stranger.json": (dict(good["a2"], host="not-ours"), "host not-ours is not in the inventory"),
        "untitled.json": (dict(good["b1"], findings=[dict(good["b1"]["findings"][0], title=3)]),
                          "a finding's title ("),
        "bare-waiver.json": (dict(good["b1"], findings=[dict(good["b1"]["findings"][0], waived=True, waiver=None)]),
                             "is waived without its waiver"),
        "odd-reason.json": (dict(good["a2"], outcomes={"PCIE-001": {"status": "pass", "reason": 5}}),
                            "has a reason that is not text"),
        "odd-logs.json": (dict(good["a2"], observed={"nccl_logs": 5, "baseline": None}), "observed nccl_logs is not"),
        "nameless.json": (dict(good["a2"], host="a\nb"), "is not a name"),
        "shapeless.json": (dict(good["a2"], findings=[{"id": "X"}]), "a finding has no severity"),
        "other-host.json": (dict(good["a2"], findings=[dict(good["b1"]["findings"][0])]), "names host 'b1', not a2"),
        "no-facts.json": (dict(good["a2"], facts=None), "audited, but without facts"),
        # facts of schema 1 (before paths named their links by device): judged by nobody, named
        "old-facts.json": (dict(good["a2"], facts=dict(good["a2"]["facts"], schema_version=1)),
                           "facts of schema version 1, this collection reads 2"),
        "deep.json": ("[" * 100000 + "]" * 100000, "not JSON"),
        "list.json": ([1, 2], "not a node result"),
        "old-report.json": ({"summary": {}, "hosts": []}, "report.json without node results"),
        "bad-nodes.json": ({"summary": {}, "nodes": {}}, "report.json whose nodes is not a list"),
        "binary.json": ("\xff\xfe\x00garbage", "not JSON"),
    }
    paths = dict((name, _write(folder, name, value)) for name, (value, _why) in named.items())
    os.symlink(paths["list.json"], str(folder / "link.json"))
    os.mkfifo(str(folder / "fifo.json"))
    # a duplicate: an older result of b1 (in a slice's report.json) beside a newer one; two results of b2 at one time
    # that differ; a node's file named for another host (in a shared folder, one node cannot replace another's)
    older = dict(good["b1"], generated_at="2026-12-31T23:00:00+00:00")
    (folder / "slice").mkdir()
    _write(folder / "slice", "report.json", {"summary": {}, "nodes": [older, dict(good["b2"], reason="edited")]})
    _write(folder, "b1.json", good["b1"])
    _write(folder, "b2.json", good["b2"])
    _write(folder, "a2.json", dict(good["b1"]))
    # a policy that no longer validates: the host is failed, named
    _write(folder, "sl390.json", dict(good["sl390"], inputs=dict(good["sl390"]["inputs"], waivers="all of them")))
    docs, _sources, lines = node_result.collect([str(folder)], sorted(inventory), NOW_TIME, 3600)
    text = "\n".join(lines)
    for name, (_value, why) in named.items():
        assert any(line.startswith(paths[name] + ":") and why in line for line in lines), (name, text)
    assert "%s: unreadable (a symbolic link, not followed)" % (folder / "link.json") in lines or \
        "%s: a symbolic link, not followed" % (folder / "link.json") in lines, text
    assert "%s: not a regular file" % (folder / "fifo.json") in lines, text
    duplicate = "%s (nodes[0]): a duplicate for b1, older than %s (left out)" % (
        folder / "slice" / "report.json", folder / "b1.json")
    assert duplicate in lines, text
    assert any(line.startswith("b2: 2 results that differ, stamped at the same time") for line in lines), text
    assert "%s: holds the result of host b1: a node's result file is named HOST.json" % (folder / "a2.json") in lines
    assert sorted(docs) == ["a1", "b1", "sl390"]
    missing = dict((h, "no usable node result") for h in inventory if h not in docs)
    merged, policy_lines = combine(docs, TODAY, NOW, "0.1.0", missing)
    assert policy_lines and policy_lines[0].startswith("sl390: its node result holds a policy that is invalid")
    for render in RENDERERS.values():  # every report renders what was merged
        assert render(merged)
    status = dict((h["name"], h["status"]) for h in merged["hosts"])
    assert status == {"a1": "audited", "a2": "failed", "b1": "audited", "b2": "failed", "gone": "failed",
                      "sl390": "failed"}
    assert any(f["host"] == "b1" and f["id"] == "PCIE-001" for f in merged["findings"])


def test_a_folder_and_its_limits(tmp_path, monkeypatch):
    """Folders: *.json at the top and each subfolder's report.json, nothing else; a file over the size limit is
    refused before it is parsed; at most MAX_FILES files are read."""
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "deeper" / "inner").mkdir(parents=True)
    (tmp_path / "deeper" / "inner" / "report.json").write_text("{}")
    (tmp_path / "slice").mkdir()
    (tmp_path / "slice" / "report.json").write_text("{}")
    (tmp_path / ".hidden.json").write_text("{}")
    assert node_result.files([str(tmp_path)]) == [(str(tmp_path / "slice" / "report.json"), None)]
    assert node_result.files([str(tmp_path / "missing")]) == [(str(tmp_path / "missing"), "does not exist")]
    (tmp_path / "big.json").write_text(" " * 2048)
    assert node_result.read_json(str(tmp_path / "big.json"), 1024) == (None, "larger than 0 MiB")
    monkeypatch.setattr(node_result, "MAX_FILES", 1)
    (tmp_path / "a.json").write_text("{}")
    found = node_result.files([str(tmp_path)])
    assert found[-1] == (str(tmp_path), "more than 1 files: the rest were not read")


def test_what_a_node_result_keeps_is_plain_json():
    value = {"t": (1, 2), "d": datetime.date(2027, 1, 1), 3: {"x"}, "n": None, "deep": copy.deepcopy([[[[1]]]])}
    assert node_result.plain(value) == {"t": [1, 2], "d": "2027-01-01", "3": "{'x'}", "n": None, "deep": [[[[1]]]]}


def test_report_json_holds_a_node_per_line_and_reads_back(inventory):
    report = audit(inventory)
    text = render_json(report)
    assert json.loads(text) == json.loads(json.dumps(report, default=str))
    node_lines = [line for line in text.splitlines() if line.startswith('    {"schema":"gpuops.fabric/node-result"')]
    assert len(node_lines) == len(inventory)
    assert text.index('"summary": {\n') < text.index('  "nodes": [\n')  # the rest stays indented for people


def test_a_node_reads_its_last_result_as_its_baseline(inventory, tmp_path):
    report = audit(inventory)
    path = tmp_path / "report.json"
    assert node_result.previous_reading(str(path), "b1", NOW_TIME) is None  # the first run: none, no warning
    path.write_text(render_json(report))
    reading = node_result.previous_reading(str(path), "b1", NOW_TIME)
    assert reading["problem"] is None and reading["generated_at"] == NOW
    assert reading["counters"] == {"b1": inventory["b1"]["facts"]["counters"]}
    # judged with it: the stability rows say the growth is over the time since that result
    again, errors = run_audit({"b1": dict(inventory["b1"], previous=reading)}, TODAY, "2027-01-01T01:00:00+00:00",
                              "0.1.0")
    assert errors == [] and again["baseline"] == [{"path": str(path), "generated_at": NOW, "hosts": 1,
                                                   "usable": True}]
    for text, why in (('{"summary": {}, "nodes": []}', "a file without a result for b1"), ("{", "not JSON, or cut short"),
                      (json.dumps(dict(next(n for n in report["nodes"] if n["host"] == "b1"),
                                       generated_at="2099-01-01T00:00:00Z")), "from the future"),
                      (json.dumps(next(n for n in report["nodes"] if n["host"] == "gone")),
                       "a file without a result for b1")):
        path.write_text(text)
        assert why in node_result.previous_reading(str(path), "b1", NOW_TIME)["problem"], text[:80]
    # a node's result from before facts schema 2 (the collection upgraded between two runs): its counters are read
    b1 = next(n for n in report["nodes"] if n["host"] == "b1")
    path.write_text(json.dumps(dict(b1, facts=dict(b1["facts"], schema_version=1))))
    assert node_result.previous_reading(str(path), "b1", NOW_TIME)["counters"] == {"b1": b1["facts"]["counters"]}
    path.write_text(json.dumps(dict(b1, facts={"schema_version": 2, "pci": []})))
    assert node_result.previous_reading(str(path), "b1", NOW_TIME)["problem"] == "a result without counters (audited)"


@pytest.mark.parametrize("host, ok", [("gpu017", True), ("node-1.rack_2", True), ("a" * 200, True),
                                      ("a" * 201, False), (".hidden", False), ("-rf", False), ("a/b", False),
                                      ("..", False), ("a b", False), ("", False), ("n\u00e9", False), (None, False)])
def test_which_names_can_name_a_result_file(host, ok):
    assert (node_result.file_name_problem(host) is None) == ok


def test_what_a_result_holds_that_this_collection_cannot_use(inventory, tmp_path):
    """Rules another version of the collection has (named, left out), observations beyond the kept ones (ignored: they
    never replace the checked policy), LLDP facts no reader gives, a log several hosts judged in separate runs."""
    report = audit(inventory)
    docs = dict((n["host"], n) for n in json.loads(json.dumps(report["nodes"])))
    b1 = docs["b1"]
    b1["outcomes"]["PCIE-099"] = {"status": "pass", "reason": None}
    b1["findings"].append(dict(b1["findings"][0], id="PCIE-099"))
    b1["observed"]["networks"] = 5
    b1["facts"]["lldp"] = {"ports": {"eth0": [1, {"vlans": "x", "aggregation": 3}]}}
    log = {"path": "/shared/run.log", "kind": "log", "error": None, "parsed": None, "facts": None, "named_by": 1}
    for host in ("a1", "a2"):
        docs[host]["observed"]["nccl_logs"] = [dict(log)]
    merged, lines = combine(docs, TODAY, NOW, "0.1.0")
    assert "b1: its node result names rules this gpuops.fabric does not have (PCIE-099): left out" in lines
    assert "PCIE-099" not in merged["outcomes"]["b1"] and not [f for f in merged["findings"] if f["id"] == "PCIE-099"]
    assert ("the NCCL log /shared/run.log is named by 2 hosts (a1, a2) that judged it in separate runs as named by 1: "
            "an audit of them together judges each host's part of it") in lines
    assert [r for r in merged["cabling"] if r["host"] == "b1"] == [
        {"host": "b1", "port": "eth0", "switch": None, "switch_port": None, "vlans": [], "aggregation": None,
         "mfs": None}]
    for render in RENDERERS.values():
        assert render(merged)


def test_many_results_for_one_host_are_compared_once_each(tmp_path):
    """Duplicates are told apart by their text, not pairwise: thousands of results for one host in one file are
    read in about the time of reading them (the line names the first few)."""
    import time
    report = {"summary": {}, "nodes": []}
    base = {"schema": node_result.SCHEMA, "schema_version": 1, "host": "h", "generated_at": NOW, "status": "failed",
            "reason": None, "facts": None, "inputs": {}, "observed": {}, "findings": [], "facts_warnings": [],
            "outcomes": {}, "tool": {}, "producer": {}}
    report["nodes"] = [dict(base, reason="r%d" % i) for i in range(5000)]
    (tmp_path / "report.json").write_text(json.dumps(report))
    start = time.perf_counter()
    docs, _sources, lines = node_result.collect([str(tmp_path)], ["h"], NOW_TIME)
    assert time.perf_counter() - start < 30  # pairwise, this was minutes; the benchmark has the real figure
    assert docs == {} and lines[-1].startswith("h: 5000 results that differ, stamped at the same time (")
    assert lines[-1].endswith(" and more): none is used") and len(lines[-1]) < 400


def test_the_budget_of_an_aggregate(tmp_path):
    (tmp_path / "a.json").write_text(" " * 100 + "{}")
    (tmp_path / "b.json").write_text(" " * 100 + "{}")
    _docs, _sources, lines = node_result.collect([str(tmp_path)], ["a", "b"], NOW_TIME, budget=150)
    assert lines[0] == "%s: not a node result (a JSON object)" % (tmp_path / "a.json") or "schema" in lines[0]
    assert lines[1].startswith("%s: not read: the aggregate reads at most" % (tmp_path / "b.json")), lines


def test_collect_leaves_the_cycle_collector_as_it_found_it(tmp_path):
    """collect pauses Python's cycle collector while it reads (the reading grew faster than the documents with it on)
    and gives it back as it was: on, off, or after a read that raised."""
    import gc

    hosts, when = ["node1"], node_result.parse_time("2026-12-06T00:00:00+00:00")
    assert gc.isenabled()
    node_result.collect([str(tmp_path)], hosts, when)
    assert gc.isenabled()
    gc.disable()
    try:
        node_result.collect([str(tmp_path)], hosts, when)
        assert not gc.isenabled()
    finally:
        gc.enable()
    (tmp_path / "node1.json").write_text("{}")
    with pytest.raises(TypeError):  # a programming error inside: raised, and the collector on again
        node_result.collect([str(tmp_path)], hosts, when, budget="not a number")
    assert gc.isenabled()
