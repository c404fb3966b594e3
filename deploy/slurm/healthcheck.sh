#!/usr/bin/env bash
# Slurm HealthCheckProgram: the node-local audit's passive profile (one reading, no wait), run by slurmd on each node
# every HealthCheckInterval seconds. slurm.conf:
#   HealthCheckProgram=/usr/local/sbin/gpuops-fabric-healthcheck
#   HealthCheckInterval=900
#   HealthCheckNodeState=ANY,CYCLE
# slurmd kills a HealthCheckProgram after 60 s: this one stops the audit at GPUOPS_FABRIC_TIMEOUT (default 50 s, at
# most 54: a stopped audit is killed 5 s later if it has not ended).
# Slurm does not act on its exit status: with fabric_slurm_drain true in the node's inventory variables, the audit
# drains this node itself when fail findings remain (scontrol on fabric_slurm_host, by default this node) and
# resumes it once they pass, as the central audit does. Output goes to GPUOPS_FABRIC_LOG.
set -u

export GPUOPS_FABRIC_NODE=${GPUOPS_FABRIC_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}
log=${GPUOPS_FABRIC_LOG:-/var/log/gpuops-fabric-healthcheck.log}
audit=${GPUOPS_FABRIC_NODE_AUDIT:-/usr/local/bin/gpuops-fabric-node-audit}
limit=${GPUOPS_FABRIC_TIMEOUT:-50}

if [[ ! $limit =~ ^[0-9]{1,3}$ ]] || [ "$limit" -lt 5 ] || [ "$limit" -gt 54 ]; then
  echo "gpuops-fabric-healthcheck: GPUOPS_FABRIC_TIMEOUT '$limit' is not 5 to 54 seconds" >&2
  exit 64
fi
{
  echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) gpuops.fabric health check of $GPUOPS_FABRIC_NODE"
  timeout --kill-after=5 "$limit" "$audit" -e fabric_node_profile=passive
  status=$?
  [ "$status" -eq 124 ] && echo "gpuops-fabric-healthcheck: the audit ran past ${limit} s and was stopped"
  echo "== exit status $status"
  exit "$status"
} >>"$log" 2>&1
