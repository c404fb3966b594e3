#!/usr/bin/env bash
# Slurm Prolog: the node-local audit's passive profile before each job. slurm.conf:
#   Prolog=/usr/local/sbin/gpuops-fabric-prolog
# A prolog that exits non-zero makes Slurm drain the node and requeue the job: this one exits 1 only when the audit
# ran and its result holds fail findings. An audit that could not run or judge (a wrong setting, unreadable facts, a
# timeout) lets the job start and is logged: a broken check must not drain a fleet. The audit runs with
# fabric_audit_fail_on=never (its exit status then says whether it ran) and keeps its result in
# GPUOPS_FABRIC_STATE_DIR (default /var/lib/gpuops-fabric, fabric_node_state_dir's default), where the fail findings
# are counted. GPUOPS_FABRIC_TIMEOUT (default 30 s) bounds the wait.
set -u

export GPUOPS_FABRIC_NODE=${GPUOPS_FABRIC_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}
log=${GPUOPS_FABRIC_LOG:-/var/log/gpuops-fabric-prolog.log}
audit=${GPUOPS_FABRIC_NODE_AUDIT:-/usr/local/bin/gpuops-fabric-node-audit}
state=${GPUOPS_FABRIC_STATE_DIR:-/var/lib/gpuops-fabric}
limit=${GPUOPS_FABRIC_TIMEOUT:-30}

if [[ ! $limit =~ ^[0-9]{1,3}$ ]] || [ "$limit" -lt 5 ]; then
  echo "gpuops-fabric-prolog: GPUOPS_FABRIC_TIMEOUT '$limit' is not a number of seconds from 5" >>"$log"
  exit 0
fi
# the folder goes into a JSON extra variable: plain path characters only
if [[ ! $state =~ ^/[A-Za-z0-9._/-]{1,200}$ ]]; then
  echo "gpuops-fabric-prolog: GPUOPS_FABRIC_STATE_DIR '$state' is not an absolute path of plain characters" >>"$log"
  exit 0
fi
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) job ${SLURM_JOB_ID:-?} on $GPUOPS_FABRIC_NODE" >>"$log"
timeout --kill-after=5 "$limit" "$audit" -e fabric_node_profile=passive -e fabric_slurm_drain=false \
  -e fabric_audit_fail_on=never -e "{\"fabric_node_state_dir\": \"$state\"}" >>"$log" 2>&1
status=$?
echo "== exit status $status" >>"$log"
if [ "$status" -ne 0 ]; then
  exit 0  # the audit did not run to its verdict: logged, the job starts
fi
fails=$(python3 -c 'import json, sys
report = json.load(open(sys.argv[1]))
print(int(report["summary"]["findings"]["fail"]))' "$state/report.json" 2>>"$log")
if [[ $fails =~ ^[0-9]+$ ]] && [ "$fails" -gt 0 ]; then
  echo "== $fails fail finding(s): the node is drained by Slurm" >>"$log"
  exit 1
fi
exit 0
