"""Every variable declared once (_intent/declared.py), and the one pre-flight that checks them all: each variable a
role, playbook or action reads is declared; each declared input is refused with a bad value, naming the key, the host
and the value; run-wide settings given differently on two hosts are an error; the roles' argument specs agree with
the declarations."""

import math
import os
import re

import pytest
import yaml

from conftest import REPO

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.inputs import HOST_VARIABLES, host_input
from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import validate_inputs
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import (
    DECLARED, INPUTS, RUN_WIDE, value_problem,
)
from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.variables import preflight

READERS = ("roles", "playbooks", "plugins", "site.yml")


def names_read():
    """Every fabric_ name the roles, playbooks and plugins mention, with one file each was seen in."""
    seen = {}
    for top in READERS:
        path = os.path.join(REPO, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, _s, fs in os.walk(path) for f in fs)
        for name in files:
            if not name.endswith((".yml", ".yaml", ".py", ".j2")):
                continue
            with open(name, encoding="utf-8") as handle:
                for found in re.findall(r"\bfabric_[a-z0-9_]*[a-z0-9]\b", handle.read()):
                    seen.setdefault(found, os.path.relpath(name, REPO))
    return seen


def test_every_variable_read_is_declared():
    # metric names of the Prometheus report and example typos in messages are fabric_ names too, not variables
    not_variables = {"fabric_attachment", "fabric_site_owner"}
    metric = re.compile(r"^fabric_(pcie_link|nic|stability|tcp_retransmit|host|rule)_")
    undeclared = sorted("%s (%s)" % (name, where) for name, where in names_read().items()
                        if name not in DECLARED and name not in not_variables and not metric.match(name))
    assert undeclared == []


def test_the_scan_finds_what_it_must():
    # the check above can fail: the scan sees the probes role's settings and the Slurm step's
    seen = names_read()
    assert {"fabric_probe_duration", "fabric_slurm_drain", "fabric_tuning_sysctl_file"} <= set(seen)


def bad_values(var):
    """Values the declaration must refuse, by kind."""
    if var.kind == "bool":
        return ["maybe", 2, [True]]
    if var.kind in ("int", "float"):
        values = ["five", [1], True]
        if var.low is not None:
            values.append(var.low - 1)
        if var.high is not None:
            values.append(var.high * 10 + 1)
        if var.kind == "float":
            values += [float("nan"), float("inf"), "1e400"]
        else:
            values.append(1.5)
        return values
    if var.kind in ("str", "path"):
        values = [["a"], 5, "bad\nline"]
        if var.kind == "path":
            values.append("relative/path")
        if var.choices or var.pattern is not None:
            values.append("/etc/passwd" if var.kind == "path" else "no such choice!")
        return values
    if var.kind == "list":
        values = ["a text, not a list", [True], [{"a": 1}], [float("nan")]]
        if var.choices:
            values += [["nope"], [1, 2]]
        return values
    if var.kind == "dict":
        return ["a text, not a mapping", [1]]
    raise AssertionError("no bad values for kind %s" % var.kind)


CHECKED_ELSEWHERE = {
    # the audit's own readers, run by the same validate_only pre-flight: a bad value names the key
    "fabric_waivers": ("waivers", "not a list", "fabric_waivers"),
    "fabric_nccl_logs": ("nccl_logs", {"a": 1}, "fabric_nccl_logs"),
}


def test_every_declared_input_has_a_check():
    kinds = set(v.kind for v in INPUTS.values())
    assert kinds <= {"bool", "int", "float", "str", "path", "list", "dict", "any"}
    untyped = sorted(n for n, v in INPUTS.items() if v.kind == "any")
    assert untyped == sorted(set(CHECKED_ELSEWHERE) | {"fabric_slurm_node_name"})


@pytest.mark.parametrize("name", sorted(n for n, v in INPUTS.items() if v.kind != "any"))
def test_a_bad_value_is_refused_naming_key_host_and_value(name):
    var = INPUTS[name]
    for value in bad_values(var):
        hostvars = {"gpu1": {}, "gpu2": {name: value}}
        errors, _warnings = preflight(["gpu1", "gpu2"], hostvars.get)
        mine = [e for e in errors if e.startswith("gpu2: %s: " % name)]
        assert mine, (name, value, errors)
        shown = repr(value)
        assert shown[:60] in mine[0], (mine[0], shown)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_the_default_is_a_value_of_its_own_declaration(name):
    var = INPUTS[name]
    assert value_problem(var, var.default) is None, name


@pytest.mark.parametrize("name", sorted(CHECKED_ELSEWHERE))
def test_untyped_inputs_are_checked_by_the_audit_readers(name):
    key, value, word = CHECKED_ELSEWHERE[name]
    assert HOST_VARIABLES[name] == key
    entry = host_input({name: value, "ansible_facts": {"gpuops_fabric": {"schema_version": 1}}})
    _normalized, errors = validate_inputs({"gpu1": entry})
    assert any(word in e and "gpu1" in e for e in errors), errors


def test_good_values_pass():
    hostvars = {"gpu1": {"fabric_probe_duration": "10", "fabric_probe_min_fraction": 0.5,
                         "fabric_tuning_enabled": "yes", "fabric_probes": ["jumbo", "throughput"],
                         "fabric_tuning_sysctl_file": "/etc/sysctl.d/70-site.conf", "fabric_audit_window": 0,
                         "fabric_network_rollback_timeout": "200", "fabric_nccl_tests_binary": "all_gather_perf"}}
    hostvars["gpu2"] = dict(hostvars["gpu1"])
    assert preflight(["gpu1", "gpu2"], hostvars.get) == ([], [])


@pytest.mark.parametrize("name, value, message", [
    ("fabric_tuning_sysctl_file", "/etc/passwd", "fabric_tuning_sysctl_file: '/etc/passwd' is not in /etc/sysctl.d/"),
    ("fabric_tuning_sysctl_file", "/etc/sysctl.d/../passwd.conf", "is not a file name directly in /etc/sysctl.d/"),
    ("fabric_tuning_sysctl_file", "/etc/sysctl.d/60-x.conf\n", "holds a NUL or a line break"),
    ("fabric_probe_duration", "five", "fabric_probe_duration: 'five' must be a whole number (1..3600)"),
    ("fabric_probe_repeat", 0, "fabric_probe_repeat: 0 must be a whole number (1..10)"),
    ("fabric_probe_max_retransmit_percent", 1000, "fabric_probe_max_retransmit_percent: 1000 must be a percentage"),
    ("fabric_probe_max_goodput_spread_percent", -5, "fabric_probe_max_goodput_spread_percent: -5 must be a percentage"),
    ("fabric_probe_min_fraction", 80, "fabric_probe_min_fraction: 80 must be a finite number (0.01..1)"),
    ("fabric_probe_server_lifetime", 1, "fabric_probe_server_lifetime: 1 must be a whole number (3..86400)"),
    ("fabric_probes", ["jumbo", "thruput"], "fabric_probes: ['jumbo', 'thruput'] holds 'thruput', not among"),
    ("fabric_nccl_tests_binary", "all_reduce_perf; rm -rf /", "fabric_nccl_tests_binary: 'all_reduce_perf; rm"),
    ("fabric_tuning_rtt_ms", float("nan"), "fabric_tuning_rtt_ms: nan must be a finite number"),
    ("fabric_audit_window", 10 ** 400, "fabric_audit_window: 1000"),
])
def test_the_tester_s_cases(name, value, message):
    errors, _warnings = preflight(["gpu1", "gpu2"], {"gpu1": {name: value}, "gpu2": {name: value}}.get)
    assert any(e.startswith("gpu1, gpu2: ") and message in e for e in errors), errors  # one line for both


def test_a_server_lifetime_shorter_than_a_round_names_both_settings():
    hostvars = {"gpu1": {"fabric_probe_server_lifetime": 6, "fabric_probe_duration": 5}}
    errors, _warnings = preflight(["gpu1"], hostvars.get)
    assert errors == ["gpu1: fabric_probe_server_lifetime: 6 is not more than fabric_probe_duration 5 + 1 (each "
                      "round's slot must hold its measurement)"]
    assert "round_timeout" not in errors[0]


def test_the_rdma_probe_needs_its_rounds_and_a_slot_that_holds_it():
    """rdma (and latency) run inside the throughput rounds: asked for without them, the run says so before any host
    is touched; with rdma a round's slot holds iperf3's run and perftest's."""
    errors, _warnings = preflight(["gpu1"], {"gpu1": {"fabric_probes": ["jumbo", "rdma"]}}.get)
    assert errors == ["gpu1: fabric_probes: ['jumbo', 'rdma'] holds rdma but not throughput, which it runs inside "
                      "(add throughput, or leave rdma out)"]
    errors, _warnings = preflight(["gpu1"], {"gpu1": {"fabric_probes": ["latency"]}}.get)
    assert [e for e in errors if "holds latency but not throughput" in e], errors
    errors, _warnings = preflight(["gpu1"], {"gpu1": {"fabric_probes": ["throughput", "rdma"],
                                                      "fabric_probe_server_lifetime": 30,
                                                      "fabric_probe_duration": 5}}.get)
    assert errors == ["gpu1: fabric_probe_server_lifetime: 30 is not more than twice fabric_probe_duration 5 + 25 + 1 "
                      "(with the rdma probe each round's slot holds iperf3's run and perftest's)"]
    assert preflight(["gpu1"], {"gpu1": {"fabric_probes": ["throughput", "rdma"], "fabric_probe_server_lifetime": 37,
                                         "fabric_probe_duration": 5}}.get)[0] == []


def test_run_wide_settings_given_differently_are_an_error():
    hostvars = {"gpu1": {"fabric_probe_duration": 5}, "gpu2": {"fabric_probe_duration": 30}, "gpu3": {}}
    errors, _warnings = preflight(["gpu1", "gpu2", "gpu3"], hostvars.get)
    assert errors == ["fabric_probe_duration: a run-wide setting given differently on the hosts of this run (5.0 on "
                      "gpu1, gpu3; 30.0 on gpu2): set it once, for all of them (group_vars/all or -e)"]
    # the same value written two ways is the same setting; a per-host variable may differ
    hostvars = {"gpu1": {"fabric_probe_duration": "5", "fabric_probes_enabled": "yes", "fabric_slurm_drain": True},
                "gpu2": {"fabric_probe_duration": 5.0, "fabric_probes_enabled": True, "fabric_slurm_drain": False}}
    assert preflight(["gpu1", "gpu2"], hostvars.get) == ([], [])


def test_a_value_that_cannot_be_templated_is_named():
    class Lazy(dict):
        """Ansible's hostvars template a value when it is read; a missing group raises then."""

        def __getitem__(self, key):
            if key == "fabric_slurm_host":
                raise KeyError("'dict object' has no attribute 'slurm_heads'")
            return dict.__getitem__(self, key)

    own = Lazy(fabric_slurm_host="{{ groups.slurm_heads[0] }}")
    errors, _warnings = preflight(["gpu1"], {"gpu1": own}.get)
    assert errors == ["gpu1: fabric_slurm_host: cannot be read: \"'dict object' has no attribute 'slurm_heads'\""]


def test_huge_and_deep_values_are_bounded():
    deep = []
    for _level in range(2000):
        deep = [deep]
    hostvars = {"gpu1": {"fabric_probes": deep, "fabric_tuning_interfaces": ["eth0"] * 100000,
                         "fabric_probe_port": "9" * 100000}}
    errors, _warnings = preflight(["gpu1"], hostvars.get)
    assert len(errors) == 3 and all(len(e) < 600 for e in errors), [e[:100] for e in errors]


SPEC_TYPES = {"bool": ("bool",), "int": ("int",), "float": ("float",), "str": ("str",), "path": ("path", "str"),
              "list": ("list",), "dict": ("dict",)}


def role_options():
    for path in sorted(os.listdir(os.path.join(REPO, "roles"))):
        specs = os.path.join(REPO, "roles", path, "meta", "argument_specs.yml")
        with open(specs) as handle:
            for entry, spec in yaml.safe_load(handle)["argument_specs"].items():
                for name, option in (spec.get("options") or {}).items():
                    yield path, entry, name, option


@pytest.mark.parametrize("role, entry, name, option", list(role_options()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_role_argument_specs_agree_with_the_declarations(role, entry, name, option):
    var = DECLARED.get(name)
    assert var is not None and var.scope != "result", "%s (roles/%s %s) is not declared" % (name, role, entry)
    if var.kind != "any":
        assert option.get("type", "str") in SPEC_TYPES[var.kind], (name, option.get("type"), var.kind)
    if "default" in option:
        declared = var.default
        given = option["default"]
        if isinstance(declared, float) or isinstance(given, float):
            assert math.isclose(float(given), float(declared)), (name, given, declared)
        else:
            assert given == declared, (name, given, declared)
    if option.get("choices") and var.kind != "list":
        assert tuple(option["choices"]) == tuple(var.choices), name


def test_run_wide_names_are_the_documented_ones():
    # the probes are planned once for the run, so their settings are run-wide; each node's own Slurm drain is not
    assert "fabric_probe_duration" in RUN_WIDE and "fabric_slurm_host" in RUN_WIDE
    assert "fabric_slurm_drain" not in RUN_WIDE and "fabric_slurm_node_name" not in RUN_WIDE


def test_the_variables_page_is_made_from_the_declarations():
    from ansible_collections.gpuops.fabric.plugins.plugin_utils._intent.declared import markdown_table
    with open(os.path.join(REPO, "docs", "variables.md"), encoding="utf-8") as handle:
        page = handle.read()
    table = page[page.index("| variable | scope |"):]
    assert table == markdown_table(), "docs/variables.md is not the declaration's table: regenerate it"


def test_what_ansible_itself_takes_is_taken():
    """Values a careless but correct inventory gives (a helper's report): YAML's yes for a yes/no choice, 1 for
    true, an unquoted date, "" from -e key= for an unset nullable setting, numbers in an argument list, null and 0
    for the same run-wide window."""
    import datetime
    hostvars = {"gpu1": {"fabric_facts_nvml": True, "fabric_tuning_enabled": 1, "fabric_audit_today":
                         datetime.date(2027, 1, 1), "fabric_prometheus_textfile_dir": "", "fabric_audit_window": "",
                         "fabric_nccl_tests_args": ["-b", "8M", "-f", 2]},
                "gpu2": {"fabric_facts_nvml": "no", "fabric_audit_window": None, "fabric_audit_today": "2027-01-01",
                         "fabric_nccl_tests_args": ["-b", "8M", "-f", 2]},
                "gpu3": {"fabric_audit_window": 0, "fabric_audit_today": "2027-01-01",
                         "fabric_nccl_tests_args": ["-b", "8M", "-f", 2]}}
    assert preflight(sorted(hostvars), hostvars.get) == ([], [])


def test_text_for_a_list_says_how_to_give_one():
    errors, _warnings = preflight(["gpu1"], {"gpu1": {"fabric_probes": "latency"}}.get)
    assert errors == ["gpu1: fabric_probes: 'latency' must be a list (on the command line: "
                      "-e '{\"fabric_probes\": [...]}')"]


def test_a_template_left_unresolved_is_named_as_such():
    errors, _warnings = preflight(["gpu1"], {"gpu1": {"fabric_expectations": "{{ site_expectations }}"}}.get)
    assert errors == ["gpu1: fabric_expectations: '{{ site_expectations }}' could not be templated (an undefined "
                      "variable in it?)"]


def test_one_line_per_message_and_host_names_that_cannot_forge_a_line():
    hosts = ["n%d" % i for i in range(6)] + ["evil\nn9: fabric_fake: forged"]
    hostvars = dict((h, {"fabric_probe_repeat": 0}) for h in hosts)
    errors, _warnings = preflight(hosts, hostvars.get)
    assert errors == ["'evil\\nn9: fabric_fake: forged', n0, n1 and 4 more: fabric_probe_repeat: 0 must be a "
                      "whole number (1..10)"]
    assert all("\n" not in e for e in errors)
