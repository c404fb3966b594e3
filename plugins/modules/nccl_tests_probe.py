#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nccl_tests_probe
short_description: Run nccl-tests' all_reduce_perf where it is installed and read its bus bandwidth
version_added: 0.1.0
description:
  - Looks for O(binary) in C(PATH) and the usual build directories of nccl-tests. Where it is not installed the
    module says so (RV(installed) false) and succeeds; the audit turns that into an informational finding.
  - Single node by default (C(-g) with the node's GPU count); across nodes with O(launcher), the user's own launcher
    command line (for example C(mpirun -np 16 -H a:8,b:8 -x NCCL_SOCKET_IFNAME)) put in front of the binary.
  - Parses the table nccl-tests prints (both layouts, with and without the C(root) column) into bus bandwidth by
    message size and the C(Avg bus bandwidth) line; bounded by O(timeout).
  - Runs with C(NCCL_DEBUG=INFO) and C(NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH) unless O(env) sets them, and parses
    what NCCL printed (RV(nccl_log)), the network, the NICs and transports it chose, GPUDirect RDMA, its warnings.
    On one node it also sets C(NCCL_TOPO_DUMP_FILE) to a private temporary file and reads NCCL's view of the PCI
    tree from it (RV(nccl_topology)); the audit's NCCLRUN rules compare both with the facts.
author:
  - gpuops.fabric maintainers (@gpuops)
extends_documentation_fragment:
  - gpuops.fabric.attributes
  - gpuops.fabric.attributes.probe
  - gpuops.fabric.attributes.actiongroup
options:
  binary:
    description: The nccl-tests program (a name looked up in C(PATH) and the usual build directories, or a path).
    type: str
    default: all_reduce_perf
  gpus:
    description: GPUs per process (C(-g)); default 1 with O(launcher), else the node's GPU count (from C(nvidia-smi -L)).
    type: int
  args:
    description: Size range and iterations.
    type: list
    elements: str
    default: ["-b", "8M", "-e", "1G", "-f", "2"]
  launcher:
    description: A command line put in front of the binary to run across nodes (split like a shell would).
    type: str
  env:
    description:
      - Extra environment for the run (for example C(NCCL_IB_HCA=mlx5)); C(NCCL_DEBUG), C(NCCL_DEBUG_SUBSYS) and
        C(NCCL_TOPO_DUMP_FILE) given here replace the module's.
    type: dict
    default: {}
  timeout:
    description: Seconds after which the run is stopped.
    type: int
    default: 300
  search_paths:
    description: Directories searched after C(PATH).
    type: list
    elements: path
    default: [/usr/local/bin, /opt/nccl-tests/build, /usr/local/nccl-tests/build, /opt/nccl-tests/bin]
"""

EXAMPLES = r"""
- name: NCCL all-reduce on this node
  gpuops.fabric.nccl_tests_probe:
  register: nccl_tests

- name: Across two nodes with the site's launcher
  gpuops.fabric.nccl_tests_probe:
    launcher: mpirun --allow-run-as-root -np 16 -H node-a:8,node-b:8 -x NCCL_SOCKET_IFNAME
  run_once: true
"""

RETURN = r"""
installed:
  description: Whether the binary was found.
  returned: always
  type: bool
command:
  description: The command line that ran.
  returned: when installed
  type: list
  elements: str
rows:
  description:
    - One entry per message size (bytes, count, type, redop, root, time_us, algbw, busbw, wrong, in_place);
      bandwidths in GB/s as nccl-tests prints them.
  returned: when installed
  type: list
  elements: dict
avg_busbw:
  description: The C(Avg bus bandwidth) line, GB/s.
  returned: when installed
  type: float
max_busbw:
  description: The largest out-of-place bus bandwidth of any size, GB/s.
  returned: when installed
  type: float
ranks:
  description: The ranks nccl-tests listed (rank, host, device, bus, name).
  returned: when installed
  type: list
  elements: dict
error:
  description: Why the run gave no table (exit status, timeout), null when it did.
  returned: when installed
  type: str
nccl_log:
  description:
    - What NCCL printed, parsed (lines, nccl_lines, hosts, and per host a section with version, cuda_driver, network,
      net_devices, gdr, transports, connections, warnings, errors and the evidence lines); see docs/nccl.md.
  returned: when installed and the program ran
  type: dict
nccl_topology:
  description: NCCL's topology dump read as topology facts (gpus, nics, rdma, paths), null without one.
  returned: when installed and the program ran
  type: dict
nccl_topology_error:
  description: Why NCCL's topology dump could not be read, null when it was or none was asked for.
  returned: when installed and the program ran
  type: str
"""

import os  # noqa: E402  (after the documentation, as Ansible modules are laid out)
import shlex  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.gpuops.fabric.plugins.module_utils._probing.bounded import (  # noqa: E402
    STDOUT, TimeoutExpired, end_on_hangup, run_bounded,
)
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log import parse_nccl_log  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_tests import parse_nccl_tests  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.errors import TopologyError  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather  # noqa: E402
from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.ncclxml import DUMP_SUBSETS  # noqa: E402

DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET,GRAPH"}


def find(binary, search_paths):
    if os.sep in binary:
        return binary if os.access(binary, os.X_OK) else None
    for directory in os.environ.get("PATH", "").split(os.pathsep) + list(search_paths):
        path = os.path.join(directory, binary)
        if directory and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def gpu_count(module):
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        return None
    rc, out, _err = module.run_command([smi, "-L"])
    return len([line for line in out.splitlines() if line.startswith("GPU ")]) if rc == 0 else None


OUTPUT_HEAD = 32 * 1024 * 1024  # the output's first 32 MiB (NCCL's init lines) ...
OUTPUT_TAIL = 8 * 1024 * 1024   # ... and its last 8 MiB (nccl-tests' table, the errors of a run that died)


def read_output(path):
    """The program's output as text: all of it, or of a larger output its head and its tail."""
    with open(path, "rb") as handle:
        head = handle.read(OUTPUT_HEAD)
        tail, gap = b"", False
        if len(head) == OUTPUT_HEAD:
            size = os.fstat(handle.fileno()).st_size
            gap = size - OUTPUT_TAIL > OUTPUT_HEAD
            handle.seek(size - OUTPUT_TAIL if gap else OUTPUT_HEAD)
            tail = handle.read(OUTPUT_TAIL)
            if gap:  # the tail starts inside a line
                tail = b"\n" + tail[tail.find(b"\n") + 1:]
    return (head + tail).decode("utf-8", "replace")


def read_dump(path):
    """NCCL's topology dump as facts, or (None, why)."""
    if not path:
        return None, None
    if not os.path.isfile(path):
        return None, "NCCL wrote no topology dump to %s (NCCL older than 2.6, or init failed)" % path
    try:
        return gather(source="nccl_xml", path=path, gather_subset=list(DUMP_SUBSETS)), None
    except TopologyError as exc:
        return None, str(exc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary=dict(type="str", default="all_reduce_perf"),
            gpus=dict(type="int"),
            args=dict(type="list", elements="str", default=["-b", "8M", "-e", "1G", "-f", "2"]),
            launcher=dict(type="str"),
            env=dict(type="dict", default={}),
            timeout=dict(type="int", default=300),
            search_paths=dict(type="list", elements="path",
                              default=["/usr/local/bin", "/opt/nccl-tests/build", "/usr/local/nccl-tests/build",
                                       "/opt/nccl-tests/bin"]),
        ),
        supports_check_mode=True,
    )
    end_on_hangup()
    params = module.params
    if params["timeout"] < 1:
        module.fail_json(msg="timeout: %r must be at least 1" % params["timeout"])
    path = find(params["binary"], params["search_paths"])
    if not path:
        module.exit_json(changed=False, installed=False,
                         msg="%s (nccl-tests) is not installed on this node: NCCL not measured" % params["binary"])
    gpus = params["gpus"]
    if gpus is None:
        gpus = 1 if params["launcher"] else gpu_count(module)
    if not gpus:
        module.exit_json(changed=False, installed=True, rows=[], avg_busbw=None, max_busbw=None, ranks=[],
                         command=[], error="no GPU found (nvidia-smi -L)", msg="no GPU found: NCCL not measured")
    argv = (shlex.split(params["launcher"]) if params["launcher"] else []) + [path] + params["args"] + ["-g", str(gpus)]
    env = dict(os.environ)
    env.update(DEBUG_ENV)
    scratch = tempfile.mkdtemp(prefix="gpuops-nccl-")
    if not params["launcher"]:  # NCCL's rank 0 writes the dump: on this node only when the run is this node's
        env["NCCL_TOPO_DUMP_FILE"] = os.path.join(scratch, "nccl-topo.xml")
    env.update(dict((str(k), str(v)) for k, v in params["env"].items()))
    try:
        # the output goes to a file and is read bounded: with NCCL_DEBUG=INFO every rank of a launcher run talks
        with open(os.path.join(scratch, "output"), "wb") as sink:
            try:
                done = run_bounded(argv, params["timeout"], stdout=sink, stderr=STDOUT, env=env)
                error = "exit status %d" % done.returncode if done.returncode != 0 else None
            except TimeoutExpired:
                error = "stopped after %d s" % params["timeout"]
        output = read_output(os.path.join(scratch, "output"))
        if error and error.startswith("exit status"):
            error = "%s: %s" % (error, output.strip()[-300:])
        topology, topology_error = read_dump(env.get("NCCL_TOPO_DUMP_FILE"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    parsed = parse_nccl_tests(output)
    parsed.update(nccl_log=parse_nccl_log(output.splitlines()), nccl_topology=topology,
                  nccl_topology_error=topology_error)
    if not parsed["rows"] and not error:
        error = "no result table in the output: %s" % output.strip()[-300:]
    msg = ("busbw up to %s GB/s (avg %s)" % (parsed["max_busbw"], parsed["avg_busbw"]) if parsed["rows"]
           else "nccl-tests gave no result: %s" % error)
    module.exit_json(changed=False, installed=True, command=argv, error=error, msg=msg, **parsed)


if __name__ == "__main__":
    main()
