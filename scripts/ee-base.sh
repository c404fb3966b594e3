#!/usr/bin/env bash
# Build the execution environment's default base image locally, without a registry: a minimal Debian (trixie:
# Python 3.13, so pip picks the newest ansible-core the collection supports) with Python, pip and venv, made by
# mmdebstrap and imported into podman as localhost/gpuops-fabric-ee-base:trixie (the base image ee.sh uses unless
# EE_BASE_IMAGE names another). Where pip must trust a CA of this machine's own (an intercepting proxy: EE_CA_BUNDLE
# or else PIP_CERT names its bundle, else pip's own configuration's global.cert), that bundle, checked to be PEM
# certificates only (scripts/ee-checks.sh), replaces the image's, so the build's pip and apt can fetch.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/gpuops-fabric-ee-base:trixie}
EE_SCRIPT=ee-base
# shellcheck source=scripts/ee-checks.sh
. scripts/ee-checks.sh
ee_check_base "$tag"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hooks=()
if [ -n "$ee_ca_real" ]; then
  # what goes into the image is a copy in this script's own folder, checked again: the bundle cannot change
  # between its check and the upload
  cp -- "$ee_ca_real" "$work/ca-bundle.crt"
  ee_check_ca_bundle "$ee_ca_where (its copy)" "$work/ca-bundle.crt"
  hooks=(--customize-hook="upload $work/ca-bundle.crt /etc/ssl/certs/ca-certificates.crt")
fi
mmdebstrap --quiet --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates "${hooks[@]}" \
  "$ee_base_suite" "$work/rootfs.tar" "$ee_base_mirror"
podman import --quiet "$work/rootfs.tar" "$tag" >/dev/null
echo "ee-base: $tag"
