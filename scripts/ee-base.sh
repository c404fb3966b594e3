#!/usr/bin/env bash
# Build the execution environment's default base image locally, without a registry: a minimal Debian (trixie:
# Python 3.13, so pip picks the newest ansible-core the collection supports) with Python, pip and venv, made by
# mmdebstrap and imported into podman as localhost/gpuops-fabric-ee-base:trixie (the base image ee.sh uses unless
# EE_BASE_IMAGE names another). Where pip must trust a CA of this machine's own (an intercepting proxy: PIP_CERT
# or EE_CA_BUNDLE names its bundle, else pip's own configuration's global.cert), that bundle replaces the image's,
# so the build's pip and apt can fetch.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/gpuops-fabric-ee-base:trixie}
suite=${EE_BASE_SUITE:-trixie}
mirror=${EE_BASE_MIRROR:-http://deb.debian.org/debian}
bundle=${EE_CA_BUNDLE:-${PIP_CERT:-}}
if [ -z "$bundle" ] && [ -x .venv/bin/python ]; then
  bundle=$(.venv/bin/python -m pip config list 2>/dev/null | sed -n "s/^global\.cert='\(.*\)'$/\1/p" | tail -1)
fi
EE_SCRIPT=ee-base
# shellcheck source=scripts/ee-checks.sh
. scripts/ee-checks.sh
ee_check_image "the tag (argument 1)" "$tag"
[[ $suite =~ ^[a-z][a-z0-9-]{0,31}$ ]] || ee_bad EE_BASE_SUITE "$suite" "is not a Debian suite name (trixie, bookworm, ...)"
[[ $mirror =~ ^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/-]*)?$ ]] \
  || ee_bad EE_BASE_MIRROR "$mirror" "is not an http(s) URL of a Debian mirror"
hooks=()
if [ -n "$bundle" ]; then
  # mmdebstrap's upload hook takes its two paths separated by blanks: none inside them
  where="CA bundle (EE_CA_BUNDLE, PIP_CERT or pip's global.cert)"
  [[ $bundle =~ ^[A-Za-z0-9_+./-]+$ ]] || ee_bad "$where" "$bundle" "is not a path of letters, digits and _ + . - /"
  [ -f "$bundle" ] || ee_bad "$where" "$bundle" "is not a file"
  hooks=(--customize-hook="upload $bundle /etc/ssl/certs/ca-certificates.crt")
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mmdebstrap --quiet --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates "${hooks[@]}" \
  "$suite" "$work/rootfs.tar" "$mirror"
podman import --quiet "$work/rootfs.tar" "$tag" >/dev/null
echo "ee-base: $tag"
