#!/usr/bin/env bash
# Build the execution environment (ee/execution-environment.yml): the collection tarball first, then the image
# with podman or docker when one works here, else (or with EE_CONTEXT_ONLY=1) only the build context in ee/context
# (copy it to a machine with a container runtime: `podman build -f Containerfile -t gpuops-fabric-ee ee/context`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/ansible-builder ] || bash scripts/setup.sh
out=${1:-ee/context}
rm -rf ee/dist && mkdir -p ee/dist
.venv/bin/ansible-galaxy collection build --force --output-path ee/dist . >/dev/null
mv ee/dist/gpuops-fabric-*.tar.gz ee/dist/gpuops-fabric.tar.gz
runtime=""
if [ "${EE_CONTEXT_ONLY:-0}" != 1 ]; then
  for candidate in podman docker; do
    # a client without a running daemon (docker here) cannot build
    if command -v "$candidate" >/dev/null && timeout 20 "$candidate" info >/dev/null 2>&1; then
      runtime=$candidate; break
    fi
  done
fi
if [ -n "$runtime" ]; then
  .venv/bin/ansible-builder build --container-runtime "$runtime" -f ee/execution-environment.yml -c "$out" -t gpuops-fabric-ee
else
  .venv/bin/ansible-builder create -f ee/execution-environment.yml -c "$out" --output-filename Containerfile
  echo "ee: build context written to $out (no working podman or docker here, or EE_CONTEXT_ONLY=1)" >&2
fi
