"""topology_facts' action plugin through real ansible-playbook runs: a task that gives no option gathers as the host's
fabric_facts_* variables say (each host its own capture, YAML's no for nvml taken as "no"), an option the task gives
wins, a bad variable fails that host's task naming the variable and the value, never a traceback, and reuse keeps
what the run holds only when it answers the task (the same place, every subset asked for), and as_json returns the
same facts as one JSON text, setting none. The captures
are the hand-written dgx8 tree and a real hwloc XML (tests/fixtures)."""

import json
import os
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HWLOC = os.path.join(REPO, "tests", "fixtures", "realdata", "hwloc-xml-hp-sl390-3gpu-ib", "24em64t-2n6c2t-pci.xml")
PLAY = """
- name: Gather as the inventory says
  hosts: all
  gather_facts: false
  tasks:
    - name: Gather with no options
      gpuops.fabric.topology_facts: {}
    - name: Keep what was read
      ansible.builtin.copy:
        content: "{{ {'source': ansible_facts.gpuops_fabric.source, 'gpus': ansible_facts.gpuops_fabric.gpus | length,
                     'nvml': ansible_facts.gpuops_fabric.nvml.status} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
    - name: An option given wins over the variable
      gpuops.fabric.topology_facts:
        source: sysfs
        root: "{{ dgx8 }}"
      register: given
    - name: Keep it
      ansible.builtin.copy:
        content: "{{ {'source': given.ansible_facts.gpuops_fabric.source} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}-given.json"
        mode: "0644"
      delegate_to: localhost
    # reuse: what this run holds (read from the dgx8 tree just above) answers a task asking for less from the same
    # place; another place, more subsets, or no reuse read the node again
    - name: Reuse for a subset from the same place
      gpuops.fabric.topology_facts:
        source: sysfs
        root: "{{ dgx8 }}"
        gather_subset: [nic, bond]
        reuse: true
      register: same
    - name: Reuse asked for, but from the inventory's place (the xml host's is its hwloc file)
      gpuops.fabric.topology_facts:
        gather_subset: [nic]
        reuse: "{{ 'yes' }}"
      register: elsewhere
    - name: Reuse a subset for all of them
      gpuops.fabric.topology_facts:
        source: sysfs
        root: "{{ dgx8 }}"
        gather_subset: [nic]
        reuse: true
      register: narrowed
    - name: Then all again with reuse (the facts now hold nic only)
      gpuops.fabric.topology_facts:
        source: sysfs
        root: "{{ dgx8 }}"
        reuse: true
      register: widened
    - name: Keep what each said
      ansible.builtin.copy:
        content: "{{ {'same': same.reused, 'elsewhere': elsewhere.reused, 'narrowed': narrowed.reused,
                     'widened': widened.reused, 'subset': ansible_facts.gpuops_fabric.gather_subset} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}-reuse.json"
        mode: "0644"
      delegate_to: localhost
    # as_json: the same facts as one text, and no facts set (what the audit gathers)
    - name: Gather as a mapping
      gpuops.fabric.topology_facts: {}
    - name: Gather as one JSON text
      gpuops.fabric.topology_facts:
        as_json: true
      register: text
    - name: Keep the comparison
      ansible.builtin.copy:
        content: "{{ {'same': (text.facts_json | from_json) == ansible_facts.gpuops_fabric,
                     'is_text': text.facts_json is string, 'sets_facts': text.ansible_facts is defined
                     and text.ansible_facts != {}, 'schema': (text.facts_json | from_json).schema_version} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}-text.json"
        mode: "0644"
      delegate_to: localhost
    - name: A reuse that is not a boolean
      gpuops.fabric.topology_facts:
        reuse: maybe
      register: odd
      ignore_errors: true
    - name: Keep its message
      ansible.builtin.copy:
        content: "{{ {'failed': odd.failed, 'msg': odd.msg} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}-odd.json"
        mode: "0644"
      delegate_to: localhost
"""


def run(env, tmp_path, hosts, roots):
    (tmp_path / "out").mkdir()
    (tmp_path / "play.yml").write_text(PLAY)
    group = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
             "out": str(tmp_path / "out"), "dgx8": roots["dgx8"]}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"vars": group, "hosts": hosts}}))
    return subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")],
                          env=dict(env, ANSIBLE_STDOUT_CALLBACK="default"), capture_output=True, text=True,
                          timeout=300, cwd=REPO, check=False)


def read(tmp_path, name):
    with open(str(tmp_path / "out" / name)) as handle:
        return json.load(handle)


def test_each_host_gathers_as_its_variables_say(ansible_env, tmp_path, roots):
    hosts = {
        "tree": {"fabric_facts_root": roots["dgx8"], "fabric_facts_nvml": False},  # YAML's no, as a bool
        "xml": {"fabric_facts_source": "hwloc_xml", "fabric_facts_path": HWLOC},
        "bad": {"fabric_facts_source": "sysfs;reboot"},
        "typed": {"fabric_facts_root": ["/"]},
        "broken": {"fabric_facts_root": "{{ 1 // 0 }}"},
    }
    done = run(ansible_env, tmp_path, hosts, roots)
    assert "Traceback" not in done.stdout + done.stderr and "exception occurred" not in done.stdout
    tree, xml = read(tmp_path, "tree.json"), read(tmp_path, "xml.json")
    assert tree["source"] == "sysfs" and tree["gpus"] == 8 and tree["nvml"] == "not_used"
    assert xml["source"] == "hwloc_xml" and xml["gpus"] == 3
    assert read(tmp_path, "xml-given.json")["source"] == "sysfs"  # the task's own option
    assert "fabric_facts_source: 'sysfs;reboot' is not one of" in done.stdout, done.stdout[-3000:]
    assert "fabric_facts_root:" in done.stdout and not os.path.exists(str(tmp_path / "out" / "typed.json"))
    assert "fabric_facts_root: cannot be read" in done.stdout
    for host in ("bad", "typed", "broken"):
        assert not os.path.exists(str(tmp_path / "out" / (host + ".json")))
    # the tree host's inventory place is the dgx8 tree the run read: reused throughout (its facts stay whole); the
    # xml host's is its hwloc file, which is read
    all_subsets = read(tmp_path, "tree-reuse.json")["subset"]
    assert read(tmp_path, "tree-reuse.json") == {"same": True, "elsewhere": True, "narrowed": True, "widened": True,
                                                 "subset": all_subsets}
    assert len(all_subsets) > 5 and "counters" in all_subsets
    xml = read(tmp_path, "xml-reuse.json")  # its hwloc read held nic only, then the tree's nic only: all is read
    assert xml == {"same": True, "elsewhere": False, "narrowed": False, "widened": False, "subset": all_subsets}
    for host in ("tree", "xml"):
        assert read(tmp_path, host + "-text.json") == {"same": True, "is_text": True, "sets_facts": False,
                                                       "schema": 2}, host
        odd = read(tmp_path, host + "-odd.json")
        assert odd["failed"] and odd["msg"] == "topology_facts: reuse: 'maybe' is not a boolean", odd
