"""The shipped ways to run the node-local audit (deploy/, issue 34), each as far as this machine allows: the systemd
units through systemd-analyze verify (no systemd runs here as PID 1, so systemd-run cannot start them), the shell
wrappers through shellcheck and real runs of the Slurm wrappers and ansible-pull against a real inventory, and the
Kubernetes manifests against the Kubernetes API schema (kubernetes-validate, offline)."""

import os
import shutil
import subprocess
import sys

import yaml

from conftest import REPO, require_tool

DEPLOY = os.path.join(REPO, "deploy")
SCRIPTS = [os.path.join(DEPLOY, "bin", "gpuops-fabric-node-audit")] + [
    os.path.join(DEPLOY, "slurm", n) for n in sorted(os.listdir(os.path.join(DEPLOY, "slurm")))]
UNITS = ("gpuops-fabric-node-audit.service", "gpuops-fabric-node-audit.timer")
MANIFESTS = sorted(os.path.join(DEPLOY, "kubernetes", n) for n in os.listdir(os.path.join(DEPLOY, "kubernetes")))


def systemd_root(tmp_path, units=None):
    """A root with the system's own units (the targets the units name), the wrapper and ours installed."""
    root = tmp_path / "root"
    (root / "usr" / "lib" / "systemd").mkdir(parents=True)
    shutil.copytree("/usr/lib/systemd/system", str(root / "usr" / "lib" / "systemd" / "system"), symlinks=True)
    (root / "usr" / "local" / "bin").mkdir(parents=True)
    shutil.copy2(SCRIPTS[0], str(root / "usr" / "local" / "bin"))
    (root / "etc" / "systemd" / "system").mkdir(parents=True)
    for name in UNITS:
        with open(os.path.join(DEPLOY, "systemd", name)) as handle:
            text = handle.read()
        (root / "etc" / "systemd" / "system" / name).write_text((units or {}).get(name, text))
    return str(root)


def verify(root):
    return subprocess.run(["systemd-analyze", "verify", "--root=" + root] + [
        "/etc/systemd/system/" + n for n in UNITS], capture_output=True, text=True, check=False)


def test_the_systemd_units_verify(tmp_path):
    require_tool("systemd-analyze")
    result = verify(systemd_root(tmp_path))
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr
    # the check can fail: a misspelt key is named
    with open(os.path.join(DEPLOY, "systemd", UNITS[0])) as handle:
        broken = handle.read().replace("Type=oneshot", "Typo=oneshot")
    result = verify(systemd_root(tmp_path / "broken", {UNITS[0]: broken}))
    assert "Unknown key 'Typo'" in result.stdout + result.stderr


def test_the_shell_wrappers_pass_shellcheck():
    require_tool("shellcheck")
    result = subprocess.run(["shellcheck", "--severity=style"] + SCRIPTS, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
    for path in SCRIPTS:
        assert os.access(path, os.X_OK), path


def test_the_kubernetes_manifests_match_the_api_schema(tmp_path):
    validate = os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")
    assert os.path.exists(validate), "tests/requirements.txt installs kubernetes-validate"
    for version in ("1.30.0", "1.34.0"):
        result = subprocess.run([validate, "--strict", "-k", version] + MANIFESTS, capture_output=True, text=True,
                                check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count(" passed for resource ") == len(MANIFESTS), result.stdout
    with open(os.path.join(DEPLOY, "kubernetes", "node-audit-daemonset.yaml")) as handle:
        manifest = yaml.safe_load(handle)
    manifest["spec"]["template"]["spec"]["hostNetwrk"] = True  # the check can fail: a misspelt field is refused
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(manifest))
    result = subprocess.run([validate, "--strict", "-k", "1.30.0", str(bad)], capture_output=True, text=True,
                            check=False)
    assert result.returncode != 0 and "hostNetwrk" in result.stdout + result.stderr


def inventory(tmp_path, root, name="node1", **more):
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {name: dict({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "fabric_facts_root": root, "fabric_node_state_dir": str(tmp_path / "state")}, **more)}}}))
    return str(path)


def wrapper_env(ansible_env, inventory_path, tmp_path, **more):
    env = dict(ansible_env, GPUOPS_FABRIC_INVENTORY=inventory_path, GPUOPS_FABRIC_NODE="node1",
               GPUOPS_FABRIC_NODE_AUDIT=SCRIPTS[0], GPUOPS_FABRIC_LOG=str(tmp_path / "wrapper.log"),
               GPUOPS_FABRIC_STATE_DIR=str(tmp_path / "state"))
    env.update(more)
    return env


def test_the_slurm_wrappers_run_the_audit(ansible_env, roots, tmp_path):
    """healthcheck.sh and prolog.sh as slurmd runs them (root, no terminal): the passive audit of this node, its
    result written, and the exit status each Slurm hook needs (a prolog's non-zero drains the node)."""
    broken = inventory(tmp_path, roots["dgx8-broken"])
    env = wrapper_env(ansible_env, broken, tmp_path)
    health = subprocess.run([os.path.join(DEPLOY, "slurm", "healthcheck.sh")], env=env, capture_output=True,
                            text=True, check=False, timeout=120)
    log = (tmp_path / "wrapper.log").read_text()
    assert health.returncode == 2 and "== exit status 2" in log and "PCIE-001" in log, log[-3000:]
    assert (tmp_path / "state" / "report.json").exists()
    prolog = subprocess.run([os.path.join(DEPLOY, "slurm", "prolog.sh")], env=env, capture_output=True, text=True,
                            check=False, timeout=120)
    log = (tmp_path / "wrapper.log").read_text()
    assert prolog.returncode == 1 and "fail finding(s): the node is drained by Slurm" in log, log[-3000:]
    healthy_dir = tmp_path / "healthy"
    healthy_dir.mkdir()
    healthy = inventory(healthy_dir, roots["dgx8"])
    prolog = subprocess.run([os.path.join(DEPLOY, "slurm", "prolog.sh")], env=wrapper_env(
        ansible_env, healthy, healthy_dir), capture_output=True, text=True, check=False, timeout=120)
    assert prolog.returncode == 0, (healthy_dir / "wrapper.log").read_text()[-3000:]
    # a policy typo, or facts that cannot be read: the audit did not judge the node, so the job starts (logged)
    for name, extra in (("typo", {"fabric_waivers": "all of them"}), ("unreadable", {})):
        folder = tmp_path / name
        folder.mkdir()
        path = inventory(folder, roots["dgx8"] if extra else str(folder / "no-such-root"), **extra)
        prolog = subprocess.run([os.path.join(DEPLOY, "slurm", "prolog.sh")], env=wrapper_env(
            ansible_env, path, folder), capture_output=True, text=True, check=False, timeout=120)
        log = (folder / "wrapper.log").read_text()
        assert prolog.returncode == 0 and "the node is drained" not in log, (name, log[-3000:])
    # a node name that --limit would read as a pattern is refused before ansible runs
    for name in ("*", "node1:node2", "~node", "-x"):
        refused = subprocess.run([SCRIPTS[0]], env=dict(env, GPUOPS_FABRIC_NODE=name), capture_output=True,
                                 text=True, check=False)
        assert refused.returncode == 64 and "is not a host name" in refused.stderr, (name, refused.stderr)
    late = subprocess.run([os.path.join(DEPLOY, "slurm", "healthcheck.sh")], env=dict(env, GPUOPS_FABRIC_TIMEOUT="55"),
                          capture_output=True, text=True, check=False)
    assert late.returncode == 64 and "not 5 to 54 seconds" in late.stderr


def test_ansible_pull_runs_the_node_audit_from_a_repository(ansible_env, roots, tmp_path):
    require_tool("git")
    repo = tmp_path / "config"
    repo.mkdir()
    shutil.copy2(os.path.join(DEPLOY, "ansible-pull", "local.yml"), str(repo / "local.yml"))
    inventory(repo, roots["dgx8-broken"])
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "config"]):
        subprocess.run(git + command, check=True, capture_output=True)
    pull = os.path.join(os.path.dirname(sys.executable), "ansible-pull")
    result = subprocess.run([pull, "-U", "file://" + str(repo), "-d", str(tmp_path / "checkout"), "-i",
                             "inventory.yml", "--limit", "node1", "local.yml"], env=ansible_env, capture_output=True,
                            text=True, check=False, timeout=300)
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-2000:]  # the audit's: fail findings
    assert "PCIE-001" in result.stdout and (repo / "state" / "report.json").exists()
