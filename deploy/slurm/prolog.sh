#!/usr/bin/env bash
# Slurm Prolog: the node-local audit's passive profile before each job. slurm.conf:
#   Prolog=/usr/local/sbin/gpuops-fabric-prolog
# A prolog that exits non-zero makes Slurm drain the node and requeue the job: this one exits 1 only when the audit
# says fail findings remain (exit 2). An audit that could not run (its own error, a timeout) lets the job start and
# is logged: a broken check must not drain a fleet. GPUOPS_FABRIC_TIMEOUT (default 30 s) bounds the wait.
set -u

export GPUOPS_FABRIC_NODE=${GPUOPS_FABRIC_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}
log=${GPUOPS_FABRIC_LOG:-/var/log/gpuops-fabric-prolog.log}
audit=${GPUOPS_FABRIC_NODE_AUDIT:-/usr/local/bin/gpuops-fabric-node-audit}
limit=${GPUOPS_FABRIC_TIMEOUT:-30}

if [[ ! $limit =~ ^[0-9]{1,3}$ ]] || [ "$limit" -lt 5 ]; then
  echo "gpuops-fabric-prolog: GPUOPS_FABRIC_TIMEOUT '$limit' is not a number of seconds from 5" >&2
  exit 0
fi
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) job ${SLURM_JOB_ID:-?} on $GPUOPS_FABRIC_NODE" >>"$log"
timeout --kill-after=5 "$limit" "$audit" -e fabric_node_profile=passive -e fabric_slurm_drain=false >>"$log" 2>&1
status=$?
echo "== exit status $status" >>"$log"
if [ "$status" -eq 2 ]; then
  exit 1  # fail findings: Slurm drains the node (reason "Prolog error") and requeues the job
fi
exit 0
