"""One run on a GPU machine (the device tool's, or any node): the facts gathered live with NVML held against
nvidia-smi's own words, and NCCL's own words judged by the NCCLRUN rules. Needs no Ansible: it imports the
collection's libraries from this checkout.

    python3 scripts/gpu_check.py --out DIR              # live: nvidia-smi, NVML, a one-GPU NCCL all_reduce
    python3 scripts/gpu_check.py --out DIR --replay IN  # the same judgement on outputs captured before

Live, it runs `nvidia-smi -q`, `nvidia-smi topo -m` and a one-GPU torch.distributed all_reduce with NCCL_DEBUG=INFO
and NCCL_TOPO_DUMP_FILE, and writes the raw outputs (nvidia-smi-q.txt, topo-m.txt, nccl.log, nccl-topo.xml,
facts.json) and check.json (the comparison, the parsed NCCL log, the audit's NCCLRUN and GDR findings) to DIR.
--replay reads those raw files from IN instead of running anything (facts.json there, else --root's sysfs). Exits 0
when it could judge, 1 when a comparison disagrees, 2 when it could not run."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RAW = ("nvidia-smi-q.txt", "topo-m.txt", "nccl.log", "nccl-topo.xml", "facts.json")
NCCL_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET,GRAPH"}
ALLREDUCE = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
dist.init_process_group("nccl", rank=0, world_size=1)
t = torch.ones(1 << 22, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print("all_reduce ok: %s" % t[0].item(), flush=True)
dist.destroy_process_group()
"""
# Host <-> GPU copies through the PCIe link (pinned host memory, CUDA events, median of 5 per size): what a bounce
# through host memory costs when GPUDirect RDMA is off (issue 33's model), measured rather than assumed
COPY_BW = """
import json, statistics, torch
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
       "nccl": ".".join(str(p) for p in torch.cuda.nccl.version()), "sizes": []}
for shift in (20, 22, 24, 26, 28, 30):
    n = 1 << shift
    host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    row = {"bytes": n}
    for name, dst, src in (("h2d", dev, host), ("d2h", host, dev), ("d2d", torch.empty_like(dev), dev)):
        times = []
        for _ in range(6):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(); dst.copy_(src, non_blocking=True); stop.record(); torch.cuda.synchronize()
            times.append(start.elapsed_time(stop) / 1000.0)
        row[name + "_GBps"] = round(n / statistics.median(times[1:]) / 1e9, 2)
    out["sizes"].append(row)
print(json.dumps(out, indent=1))
"""
# Outputs kept as captures beside the checked ones (issues 32 and 33): NVLink state, P2P capability, the PCIe tree,
# the kernel's own PCIe bandwidth verdicts; each bounded, a failure noted in extras.json and never fatal
EXTRAS = (
    (["nvidia-smi", "nvlink", "-s"], "nvlink-s.txt"),
    (["nvidia-smi", "nvlink", "-c"], "nvlink-c.txt"),
    (["nvidia-smi", "topo", "-p2p", "r"], "topo-p2p-r.txt"),
    (["nvidia-smi", "topo", "-p2p", "n"], "topo-p2p-n.txt"),
    (["nvidia-smi", "-q", "-x"], "nvidia-smi-q.xml"),
    (["lspci", "-tv"], "lspci-tv.txt"),
    (["lspci", "-vvv"], "lspci-vvv.txt"),
    (["dmesg"], "dmesg.txt"),
)
# sysfs attribute files of each PCI device on a GPU's path to its root (and of every network and RDMA device):
# the hop-by-hop link state of issue 32, in the layout the collection's sysfs reader reads
PCI_FILES = ("class", "vendor", "device", "subsystem_vendor", "subsystem_device", "revision", "numa_node",
             "local_cpulist", "local_cpus", "current_link_speed", "current_link_width", "max_link_speed",
             "max_link_width", "secondary_bus_number", "subordinate_bus_number", "ari_enabled")


def collection_path():
    """A directory holding ansible_collections/gpuops/fabric -> this checkout, on sys.path."""
    base = tempfile.mkdtemp(prefix="gpuops-check-")
    os.makedirs(os.path.join(base, "ansible_collections", "gpuops"))
    os.symlink(REPO, os.path.join(base, "ansible_collections", "gpuops", "fabric"))
    sys.path.insert(0, base)
    return base


def run(argv, out_path, env=None, timeout=300):
    """Run a command, its output into a file; returns (exit status or None, why it did not run)."""
    try:
        with open(out_path, "wb") as sink:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                  env=env, timeout=timeout, check=False)
        return done.returncode, None
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "%s: %s" % (argv[0], exc)


def gather_live(out):
    from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
    problems = []
    try:
        facts = gather(source="sysfs", root="/", nvml="yes")
    except Exception as exc:  # pylint: disable=broad-except
        problems.append("facts with NVML: %s" % exc)
        facts = gather(source="sysfs", root="/", nvml="no")
    for argv, name in ((["nvidia-smi", "-q"], "nvidia-smi-q.txt"), (["nvidia-smi", "topo", "-m"], "topo-m.txt")):
        status, why = run(argv, os.path.join(out, name))
        if status != 0:
            problems.append(why or "%s exited %s" % (" ".join(argv), status))
    env = dict(os.environ, NCCL_TOPO_DUMP_FILE=os.path.join(out, "nccl-topo.xml"), **NCCL_ENV)
    status, why = run([sys.executable, "-c", ALLREDUCE], os.path.join(out, "nccl.log"), env=env)
    if status != 0:
        problems.append(why or "the NCCL all_reduce exited %s (see nccl.log)" % status)
    with open(os.path.join(out, "facts.json"), "w") as handle:
        json.dump(facts, handle, indent=1, sort_keys=True)
    return facts, problems


def pci_paths(sys_root="/sys"):
    """The real paths of every PCI device above a GPU (class 0x03), a NIC (0x02) or an InfiniBand HCA (0x0207),
    the devices themselves included, sorted."""
    keep = set()
    base = os.path.join(sys_root, "bus", "pci", "devices")
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else ():
        path = os.path.realpath(os.path.join(base, name))
        try:
            with open(os.path.join(path, "class")) as handle:
                cls = handle.read(32).strip()
        except OSError:
            continue
        if not cls.startswith(("0x03", "0x02")):
            continue
        while os.path.basename(path).count(":") == 2 and path not in keep:
            keep.add(path)
            path = os.path.dirname(path)
    return sorted(keep)


def capture_extras(out):
    """Write the extra captures under out/extras (raw outputs, copy-bw.json, pci-sysfs.tar.gz); extras.json says
    what ran and how it ended."""
    extras = os.path.join(out, "extras")
    os.makedirs(extras, exist_ok=True)
    done = {}
    for argv, name in EXTRAS:
        if shutil.which(argv[0]) is None:
            done[name] = "%s not installed" % argv[0]
            continue
        status, why = run(argv, os.path.join(extras, name), timeout=60)
        done[name] = why or status
    status, why = run([sys.executable, "-c", COPY_BW], os.path.join(extras, "copy-bw.json"), timeout=180)
    done["copy-bw.json"] = why or status
    copied = 0
    tree = tempfile.mkdtemp(prefix="gpuops-pci-")
    for path in pci_paths():
        target = os.path.join(tree, path.lstrip("/"))
        os.makedirs(target, exist_ok=True)
        for name in PCI_FILES:
            try:
                with open(os.path.join(path, name), "rb") as src:
                    data = src.read(4096)
            except OSError:
                continue
            with open(os.path.join(target, name), "wb") as dst:
                dst.write(data)
            copied += 1
        for link in ("driver", "iommu_group"):
            if os.path.islink(os.path.join(path, link)):
                os.symlink(os.readlink(os.path.join(path, link)), os.path.join(target, link))
        for cls in ("net", "infiniband"):
            if os.path.isdir(os.path.join(path, cls)):
                for name in sorted(os.listdir(os.path.join(path, cls))):
                    os.makedirs(os.path.join(target, cls, name), exist_ok=True)
    # a tarball: sysfs names hold colons, which a checked-in path may not (ansible-test's no-illegal-filenames)
    import tarfile
    with tarfile.open(os.path.join(extras, "pci-sysfs.tar.gz"), "w:gz") as archive:
        if os.path.isdir(os.path.join(tree, "sys")):
            archive.add(os.path.join(tree, "sys"), arcname="sys")
    shutil.rmtree(tree, ignore_errors=True)
    done["pci-sysfs.tar.gz"] = "%d files" % copied
    with open(os.path.join(extras, "extras.json"), "w") as handle:
        json.dump(done, handle, indent=1, sort_keys=True)
    return done


def read(path):
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(64 * 1024 * 1024)


# What changes between two reads of an idle GPU (the link drops to Gen1, P8): reported, not counted as mismatches.
VOLATILE = ("generation.current", "performance_state")


def compare(facts, smi, topo):
    """Each GPU of nvidia-smi -q against the facts (bus id, PCIe generation and width, current and maximum,
    performance state), and nvidia-smi topo -m's GPU-NIC relations against the facts' path types. The link
    generation and performance state of an idle GPU change between reads (nvidia-smi itself wakes it): they are
    listed, not counted as mismatches."""
    rows, mismatches = [], []
    mine = dict((g["address"], g) for g in facts.get("gpus") or [])
    for theirs in smi:
        gpu = mine.get(theirs["address"])
        row = {"gpu": theirs["address"], "in_facts": gpu is not None, "checks": {}}
        if gpu is not None:
            nvml = gpu.get("nvml") or {}
            link = gpu.get("link") or {}
            # NVML's maximum is what GPU and slot allow, as nvidia-smi's "Max"; sysfs's is the GPU's own, as
            # nvidia-smi's "Device Max" (newer drivers)
            sysfs_max = (link.get("max") or {}).get("generation")
            pairs = {
                "generation.current": (nvml.get("current_generation") or (link.get("current") or {}).get("generation"),
                                       theirs["generation"]["current"]),
                "generation.max": (nvml.get("max_generation"), theirs["generation"]["max"]) if nvml.get(
                    "max_generation") else (sysfs_max, theirs["generation"].get("device_max") or
                                            theirs["generation"]["max"]),
                "width.current": (nvml.get("current_width") or (link.get("current") or {}).get("width"),
                                  theirs["width"]["current"]),
                "width.max": (nvml.get("max_width") or (link.get("max") or {}).get("width"), theirs["width"]["max"]),
                "performance_state": (nvml.get("performance_state"), theirs["performance_state"]),
            }
            for name, (ours, said) in sorted(pairs.items()):
                same = None if ours is None or said is None else ours == said
                row["checks"][name] = {"facts": ours, "nvidia_smi": said, "same": same, "volatile": name in VOLATILE}
                if same is False and name not in VOLATILE:
                    mismatches.append("%s %s: facts %s, nvidia-smi %s" % (theirs["address"], name, ours, said))
        else:
            mismatches.append("%s: in nvidia-smi -q, not in the facts" % theirs["address"])
        rows.append(row)
    relations = []
    order = [g["address"] for g in smi]  # nvidia-smi numbers GPUs in the order -q prints them
    paths = dict(((p["gpu"], name), p["type"]) for p in (facts.get("paths") or {}).get("gpu_nic") or []
                 for name in p.get("nic_names") or [])
    for gpu_name, row in sorted(topo.get("rows", {}).items()):
        if not gpu_name.startswith("GPU"):
            continue
        index = int(gpu_name[3:])
        if index >= len(order):
            continue
        for column, relation in sorted(row.items()):
            if not column.startswith("NIC") and not column.startswith("mlx"):
                continue
            nic = topo.get("nic_legend", {}).get(column, column)
            ours = paths.get((order[index], nic))
            same = None if ours is None else ours == relation
            relations.append({"gpu": order[index], "nic": nic, "nvidia_smi": relation, "facts": ours, "same": same})
            if same is False:
                mismatches.append("%s <-> %s: facts %s, nvidia-smi topo -m %s" % (order[index], nic, ours, relation))
    return {"gpus": rows, "relations": relations, "mismatches": mismatches}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--out", required=True, help="where the raw outputs and check.json go")
    parser.add_argument("--replay", help="read the raw outputs from this directory instead of running anything")
    parser.add_argument("--root", default="/", help="with --replay and no facts.json there: a sysfs capture")
    parser.add_argument("--extras", action="store_true", help="live only: also keep the extra captures (extras/)")
    parser.add_argument("--host", default=os.uname()[1].split(".")[0], help="the host name the audit gives")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    base = collection_path()
    try:
        from ansible_collections.gpuops.fabric.plugins.module_utils._probing.nccl_log import parse_nccl_log
        from ansible_collections.gpuops.fabric.plugins.module_utils._topology.sources.nvidia_smi import (
            parse_smi_query, parse_topo_matrix,
        )
        from ansible_collections.gpuops.fabric.plugins.plugin_utils._audit.run import run_audit
        if args.replay:
            problems = []
            for name in RAW:
                if os.path.isfile(os.path.join(args.replay, name)) and \
                        os.path.realpath(args.replay) != os.path.realpath(args.out):
                    shutil.copy(os.path.join(args.replay, name), os.path.join(args.out, name))
            text = read(os.path.join(args.out, "facts.json"))
            if text:
                try:
                    facts = json.loads(text)
                except ValueError as exc:
                    print("problem: facts.json is not JSON: %s" % exc)
                    return 2
                if not isinstance(facts, dict):
                    print("problem: facts.json holds no facts (a %s)" % type(facts).__name__)
                    return 2
            else:
                from ansible_collections.gpuops.fabric.plugins.module_utils._topology.facts import gather
                facts = gather(root=args.root)
        else:
            facts, problems = gather_live(args.out)
            if args.extras:
                capture_extras(args.out)
        comparison = compare(facts, parse_smi_query(read(os.path.join(args.out, "nvidia-smi-q.txt"))),
                             parse_topo_matrix(read(os.path.join(args.out, "topo-m.txt"))))
        logs = [os.path.join(args.out, n) for n in ("nccl.log", "nccl-topo.xml") if os.path.isfile(
            os.path.join(args.out, n))]
        import datetime
        report, errors = run_audit({args.host: {"facts": facts, "status": "audited", "nccl_logs": logs,
                                                "expectations": {"rdma": bool(facts.get("rdma"))}}},
                                   datetime.date.today(), datetime.datetime.now().isoformat())
        findings = [f for f in (report or {}).get("findings", []) if f["id"].startswith(("NCCLRUN", "GDR"))]
        log_text = read(os.path.join(args.out, "nccl.log"))
        result = {"problems": problems + errors, "comparison": comparison, "findings": findings,
                  "nccl": (report or {}).get("nccl"),
                  "nccl_log": parse_nccl_log(log_text.splitlines()) if log_text else None,
                  "nvml": facts.get("nvml")}
        with open(os.path.join(args.out, "check.json"), "w") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
        for line in result["problems"]:
            print("problem: " + line)
        for line in comparison["mismatches"]:
            print("differs: " + line)
        for f in findings:
            print("[%s] %s %s: %s" % (f["severity"], f["id"], f["subject"], f["message"]))
        print("%d GPU(s) compared, %d relation(s), %d mismatch(es), %d finding(s); %s" % (
            len(comparison["gpus"]), len(comparison["relations"]), len(comparison["mismatches"]), len(findings),
            os.path.join(args.out, "check.json")))
        if result["problems"] and not comparison["gpus"]:
            return 2
        return 1 if comparison["mismatches"] else 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
