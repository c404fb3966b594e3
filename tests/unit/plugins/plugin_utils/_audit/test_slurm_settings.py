"""The audit's Slurm step: its settings checked before any host (each error names the key, the value and the host)
and the drain plan made from a report (fail findings not waived drain; audited without one may resume; not audited:
neither)."""

import pytest

from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.slurm import drain_plan, settings

HOSTS = ["gpu1", "gpu2", "gpu3", "gpu4"]


def run_vars(**extra):
    base = {"groups": {"all": HOSTS + ["head"]}}
    base.update(extra)
    return base


def each(own=None, hosts=None, drain=True):
    """Every host's vars: fabric_slurm_drain on each (as group_vars/all gives it), with ``own`` merged in."""
    result = dict((h, {"fabric_slurm_drain": drain}) for h in hosts or HOSTS)
    for host, values in (own or {}).items():
        result.setdefault(host, {}).update(values)
    return result


def test_off_unless_asked():
    assert settings({}, HOSTS, {}) == (None, [])
    assert settings({}, HOSTS, each(drain="false")) == (None, [])
    assert settings({}, HOSTS, each(drain=0)) == (None, [])
    assert settings({}, HOSTS, each({"gpu3": {"fabric_slurm_drain": "maybe"}}, drain=False))[1] == [
        "fabric_slurm_drain: 'maybe' is not a boolean (true or false) (host gpu3)"]


def test_each_node_decides_for_itself():
    # the group says true, one node's own vars say false: that node is neither drained nor resumed
    config, errors = settings(run_vars(), HOSTS, each({"gpu1": {"fabric_slurm_drain": False}}))
    assert errors == [] and sorted(config["host_node"]) == ["gpu2", "gpu3", "gpu4"]
    # true on a host other than the play's first counts too (it was read from the first host only)
    config, errors = settings(run_vars(), HOSTS, each({"gpu4": {"fabric_slurm_drain": "yes"}}, drain=False))
    assert errors == [] and config["host_node"] == {"gpu4": "gpu4"}


def test_node_names_default_to_the_inventory_name_and_are_checked():
    config, errors = settings(run_vars(), HOSTS, each({"gpu2": {"fabric_slurm_node_name": "n2"}}))
    assert errors == [] and config["host_node"] == {"gpu1": "gpu1", "gpu2": "n2", "gpu3": "gpu3", "gpu4": "gpu4"}
    assert config["max_percent"] == 10 and config["conf"] is None
    config, errors = settings(run_vars(), HOSTS, each({"gpu4": {"fabric_slurm_node_name": False},
                                                       "gpu3": {"fabric_slurm_node_name": "False"}}))  # INI's false
    assert errors == [] and sorted(config["host_node"]) == ["gpu1", "gpu2"]  # false: no Slurm node
    config, errors = settings(run_vars(), ["gpu1", "gpu2", "gpu[3-9]"], each({
        "gpu1": {"fabric_slurm_node_name": "gpu[1-64]"}, "gpu2": {"fabric_slurm_node_name": "gpu[3-9]"}},
        hosts=["gpu1", "gpu2", "gpu[3-9]"]))
    assert config is None
    assert errors[0].startswith("fabric_slurm_node_name: 'gpu[1-64]' is not one Slurm node name (")
    assert errors[0].endswith("(host gpu1)")
    assert errors[1].endswith("(host gpu2)")
    assert errors[2].endswith("(host gpu[3-9], whose inventory name is used when fabric_slurm_node_name is unset)")
    config, errors = settings(run_vars(), HOSTS, each({"gpu1": {"fabric_slurm_node_name": "n"},
                                                       "gpu3": {"fabric_slurm_node_name": "n"}}))
    assert errors == ["fabric_slurm_node_name: 'n' is the Slurm node of both gpu1 and gpu3"]


@pytest.mark.parametrize("key, value, message", [
    ("fabric_slurm_host", "haed", "fabric_slurm_host: 'haed' is not a host of the inventory (nor localhost)"),
    ("fabric_slurm_host", None, "fabric_slurm_host: None is not a host of the inventory"),
    ("fabric_slurm_drain_max_percent", 0, "fabric_slurm_drain_max_percent: 0 is not a percentage above 0"),
    ("fabric_slurm_drain_max_percent", "lots", "fabric_slurm_drain_max_percent: 'lots' is not a percentage"),
    ("fabric_slurm_drain_max_percent", True, "fabric_slurm_drain_max_percent: True is not a percentage"),
    ("fabric_slurm_drain_max_percent", 101, "fabric_slurm_drain_max_percent: 101 is not a percentage"),
    ("fabric_slurm_conf", "slurm.conf", "fabric_slurm_conf: 'slurm.conf' is not an absolute path"),
])
def test_bad_settings_name_key_and_value(key, value, message):
    config, errors = settings(run_vars(**{key: value}), HOSTS, each())
    assert config is None and len(errors) == 1 and errors[0].startswith(message)


def test_good_settings():
    config, errors = settings(run_vars(fabric_slurm_host="head", fabric_slurm_drain_max_percent="50",
                                       fabric_slurm_conf="/etc/slurm/slurm.conf"), HOSTS, each())
    assert errors == [] and config["max_percent"] == 50.0 and config["conf"] == "/etc/slurm/slurm.conf"


def test_drain_plan_from_a_report():
    config, errors = settings(run_vars(fabric_slurm_drain_max_percent=25), HOSTS,
                              each({"gpu2": {"fabric_slurm_node_name": "n2"}}))
    assert errors == []
    report = {
        "hosts": [{"name": "gpu1", "status": "audited"}, {"name": "gpu2", "status": "audited"},
                  {"name": "gpu3", "status": "unreachable"}, {"name": "gpu4", "status": "audited"},
                  {"name": "other", "status": "audited"}],
        "findings": [
            {"id": "PCIE-001", "severity": "fail", "host": "gpu2", "waived": False},
            {"id": "NET-004", "severity": "fail", "host": "gpu2", "waived": False},
            {"id": "PCIE-001", "severity": "fail", "host": "gpu2", "waived": False},
            {"id": "GDR-002", "severity": "fail", "host": "gpu1", "waived": True},
            {"id": "NET-002", "severity": "warn", "host": "gpu4", "waived": False},
            {"id": "NET-007", "severity": "fail", "host": None, "waived": False},
            {"id": "NET-003", "severity": "fail", "host": "gpu3", "waived": False},
        ]}
    report["outcomes"] = {"gpu1": {"GDR-002": {"status": "findings"}, "NET-003": {"status": "pass"}},
                          "gpu4": {"NET-002": {"status": "findings"}, "NET-003": {"status": "pass"},
                                   "PCIE-001": {"status": "not_applicable"}, "NET-004": {"status": "pass"}}}
    assert drain_plan(report, config) == {"drain": {"n2": ["NET-004", "PCIE-001"]},
                                          "resume": {"gpu1": ["NET-003"], "gpu4": ["NET-003", "NET-004"]},
                                          "unjudged": ["gpu3"], "max_drain_percent": 25, "conf": None}
