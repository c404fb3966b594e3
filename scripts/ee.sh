#!/usr/bin/env bash
# Build the execution environment (ee/execution-environment.yml): the collection tarball first, then the image
# with podman or docker when one works here, else (or with EE_CONTEXT_ONLY=1) only the build context in ee/context
# (copy it to a machine with a container runtime: `podman build -f Containerfile -t gpuops-fabric-ee ee/context`).
#   EE_BASE_IMAGE   the base (default localhost/gpuops-fabric-ee-base:trixie, made here by scripts/ee-base.sh when
#                   podman lacks it); AWX/AAP users name ee-minimal or their own, with
#   EE_PKGMGR       its package manager (default /usr/bin/apt-get; /usr/bin/microdnf for ee-minimal) and
#   EE_PYCMD        its Python (default /usr/bin/python3)
#   EE_TAG          the image's name (default localhost/gpuops-fabric-ee:latest)
#   EE_ISOLATION    podman build --isolation (chroot where the default cannot run, as on the test machines)
#   EE_CONTEXT_ONLY 1: only the build context, even where podman or docker could build
# and, where the default base is made here, ee-base.sh's EE_BASE_SUITE, EE_BASE_MIRROR and EE_CA_BUNDLE (PIP_CERT).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-ee/context}
default_base=localhost/gpuops-fabric-ee-base:trixie
base=${EE_BASE_IMAGE:-$default_base}
tag=${EE_TAG:-localhost/gpuops-fabric-ee:latest}
EE_SCRIPT=ee
# shellcheck source=scripts/ee-checks.sh
. scripts/ee-checks.sh
ee_check_image EE_BASE_IMAGE "$base"
ee_check_image EE_TAG "$tag"
ee_check_program EE_PKGMGR "${EE_PKGMGR:-}"
ee_check_program EE_PYCMD "${EE_PYCMD:-}"
case "${EE_ISOLATION:-}" in
  ""|oci|chroot|rootless) ;;
  *) ee_bad EE_ISOLATION "$EE_ISOLATION" "is not one of podman's isolations: oci, chroot, rootless" ;;
esac
case "${EE_CONTEXT_ONLY:-}" in
  ""|0|1) ;;
  *) ee_bad EE_CONTEXT_ONLY "$EE_CONTEXT_ONLY" "is not 1 (write only the build context) or 0" ;;
esac
# the build context's folder, where ansible-builder writes its Containerfile and _build
[[ -n $out && $out != -* && $out != *[[:cntrl:]]* ]] \
  || ee_bad "the context folder (argument 1)" "$out" "is not a folder's path (empty, a leading -, control characters)"
[ ! -e "$out" ] || [ -d "$out" ] || ee_bad "the context folder (argument 1)" "$out" "exists and is not a folder"
runtime=""
if [ "${EE_CONTEXT_ONLY:-0}" != 1 ]; then
  for candidate in podman docker; do
    # a client without a running daemon (docker here) cannot build
    if command -v "$candidate" >/dev/null && timeout 20 "$candidate" info >/dev/null 2>&1; then
      runtime=$candidate; break
    fi
  done
fi
# where the default base is to be made here, ee-base.sh's settings are checked now, before anything is written
make_base=0
if [ -n "$runtime" ] && [ "$base" = "$default_base" ] && ! "$runtime" image exists "$base" 2>/dev/null; then
  make_base=1
  ee_check_base "$base"
fi
[ -x .venv/bin/ansible-builder ] || bash scripts/setup.sh
rm -rf ee/dist && mkdir -p ee/dist
.venv/bin/ansible-galaxy collection build --force --output-path ee/dist . >/dev/null
mv ee/dist/gpuops-fabric-*.tar.gz ee/dist/gpuops-fabric.tar.gz
if [ -z "$runtime" ]; then
  .venv/bin/ansible-builder create -f ee/execution-environment.yml -c "$out" --output-filename Containerfile
  echo "ee: build context written to $out (no working podman or docker here, or EE_CONTEXT_ONLY=1)" >&2
  exit 0
fi
[ "$make_base" = 0 ] || bash scripts/ee-base.sh "$base"
args=(--build-arg "EE_BASE_IMAGE=$base")
[ -z "${EE_PKGMGR:-}" ] || args+=(--build-arg "PKGMGR=$EE_PKGMGR")
[ -z "${EE_PYCMD:-}" ] || args+=(--build-arg "PYCMD=$EE_PYCMD")
[ -z "${EE_ISOLATION:-}" ] || args+=("--extra-build-cli-args=--isolation=$EE_ISOLATION")
.venv/bin/ansible-builder build --container-runtime "$runtime" -f ee/execution-environment.yml -c "$out" -t "$tag" \
  "${args[@]}"
echo "ee: $tag (base $base)"
