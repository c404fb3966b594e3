"""The node-local audit (issue 34): a node judges itself with connection local, keeps its result under its state
folder as the next run's baseline, shares it with the aggregate, writes nothing under --check, and refuses a run it
cannot judge (more than one host, another connection, a name that cannot name a file) before writing anything."""

import json
import os

import yaml

from conftest import ansible_playbook


def inventory(tmp_path, hosts, group=None):
    path = tmp_path / "inventory.yml"
    variables = dict({"ansible_python_interpreter": "{{ ansible_playbook_python }}"}, **(group or {}))
    path.write_text(yaml.safe_dump({"all": {"vars": variables, "hosts": hosts}}))
    return str(path)


def node_audit(env, inventory_path, *extra):
    return ansible_playbook(env, inventory_path, "gpuops.fabric.node_audit", *extra)


def load(path):
    with open(path) as handle:
        return json.load(handle)


def test_a_node_judges_itself_and_keeps_its_result(ansible_env, roots, tmp_path):
    state, shared = tmp_path / "state", tmp_path / "shared"
    shared.mkdir()
    inv = inventory(tmp_path, {"node1": {"ansible_connection": "local", "fabric_facts_root": roots["dgx8-broken"],
                                         "fabric_node_state_dir": str(state), "fabric_node_results_dir": str(shared)}})
    first = node_audit(ansible_env, inv)
    assert first.returncode == 2, first.stdout[-3000:]  # fail findings: the exit status Slurm's wrappers read
    report = load(str(state / "report.json"))
    assert sorted(os.listdir(str(state))) == ["metrics.prom", "report.json"]
    doc = load(str(shared / "node1.json"))
    assert doc == report["nodes"][0] and doc["producer"] == {"mode": "node-local", "profile": "passive"}
    assert any(f["id"] == "PCIE-001" for f in doc["findings"]) and report["baseline"] == []

    second = node_audit(ansible_env, inv)
    assert second.returncode == 2
    again = load(str(state / "report.json"))
    assert again["baseline"] == [{"path": str(state / "report.json"), "generated_at": report["generated_at"],
                                  "hosts": 1, "usable": True}]
    rows = report["stability"], again["stability"]
    assert rows[1][0]["basis"] != rows[0][0]["basis"], rows

    before = (state / "report.json").read_bytes(), (shared / "node1.json").read_bytes()
    checked = node_audit(ansible_env, inv, "--check")
    assert checked.returncode == 2 and "PCIE-001" in checked.stdout
    assert ((state / "report.json").read_bytes(), (shared / "node1.json").read_bytes()) == before

    merged = ansible_playbook(ansible_env, inv, "gpuops.fabric.aggregate", "-e",
                              json.dumps({"fabric_aggregate_paths": [str(shared)]}),
                              "-e", "fabric_report_dir=" + str(tmp_path / "merged"), "-e", "fabric_audit_fail_on=never")
    assert merged.returncode == 0, merged.stdout[-3000:]
    aggregate = load(str(tmp_path / "merged" / "report.json"))
    assert sorted((f["id"], f["subject"]) for f in aggregate["findings"]) == sorted(
        (f["id"], f["subject"]) for f in again["findings"])

    # a state file that is not a result: named, judged without a baseline, replaced by this run's result
    (state / "report.json").write_text('{"schema": "gpuops.fabric/node-result", "schema_vers')
    damaged = node_audit(ansible_env, inv)
    assert damaged.returncode == 2
    flat = "".join((damaged.stdout + damaged.stderr).split())
    assert "".join(("%s is not JSON, or cut short" % (state / "report.json")).split()) in flat, damaged.stderr[-2000:]
    assert load(str(state / "report.json"))["baseline"][0]["usable"] is False

    # the full profile reads the counters twice, fabric_audit_window apart, and judges the growth in between
    full = node_audit(ansible_env, inv, "-e", "fabric_node_profile=full", "-e", "fabric_audit_window=1")
    assert full.returncode == 2 and "Wait fabric_audit_window seconds" in full.stdout
    windowed = load(str(state / "report.json"))
    assert windowed["nodes"][0]["producer"]["profile"] == "full" and windowed["baseline"] == []
    assert windowed["stability"][0]["window_s"] >= 1, windowed["stability"]


def test_what_the_node_audit_refuses(ansible_env, roots, tmp_path):
    state = tmp_path / "state"
    own = {"fabric_facts_root": roots["dgx8"], "fabric_node_state_dir": str(state)}
    two = inventory(tmp_path, {"a": dict(own, ansible_connection="local"), "b": dict(own, ansible_connection="local")})
    result = node_audit(ansible_env, two)
    assert result.returncode != 0 and "2 hosts in the play (a, b); limit the run to this node" in result.stdout
    odd = inventory(tmp_path, {"odd name": dict(own, ansible_connection="ssh", ansible_host="127.0.0.1",
                                                fabric_node_results_dir=str(tmp_path / "absent"))})
    result = node_audit(ansible_env, odd, "-c", "local")
    output = " ".join(result.stdout.split())
    assert result.returncode != 0
    for said in ("inventory_hostname: host 'odd name' cannot name a file",
                 "ansible_connection is 'ssh': the node-local audit reads and writes on the machine it runs on",
                 "fabric_node_results_dir: '%s' is not a folder on this node" % (tmp_path / "absent")):
        assert said in output, (said, output[-2000:])
    assert not state.exists()
