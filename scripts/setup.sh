#!/usr/bin/env bash
# Install what the collection, its demo and its tests need on Debian/Ubuntu with Python 3.11:
# system packages (as root, via apt) and a virtual environment in .venv. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(hwloc python3-venv git shellcheck chromium iproute2 netplan.io network-manager
              qemu-system-x86 qemu-utils mmdebstrap e2fsprogs openssh-client
              systemd util-linux openssh-server iperf3 iputils-ping ethtool lldpd
              prometheus prometheus-node-exporter slurmctld slurmd slurm-client munge podman)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing ${missing[*]} with apt" >&2
  $SUDO apt-get update -qq
  # The tests run lldpd (and sshd, iperf3) themselves, inside their own network namespaces. Keep the packages'
  # services from starting on this machine's own interfaces: no LLDP frames on a real network from a test set-up.
  guard=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod 755 /usr/sbin/policy-rc.d
    guard=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  [ -z "$guard" ] || $SUDO rm -f /usr/sbin/policy-rc.d
  if [[ " ${missing[*]} " == *" lldpd "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now lldpd >/dev/null 2>&1 || true
  fi
  # promtool checks the audit's metrics and the tests start a node_exporter of their own on loopback: no Prometheus
  # server or exporter of the packages' listening on this machine's addresses. The same for Slurm: the tests run a
  # munged, slurmctld and slurmd of their own inside namespaces
  for service in prometheus prometheus-node-exporter slurmctld slurmd munge; do
    if [[ " ${missing[*]} " == *" $service "* ]] && [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now "$service" >/dev/null 2>&1 || true
    fi
  done
fi

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else 1)'; then
  echo "setup: Python 3.11 or newer is needed, found $("$PYTHON" --version 2>&1)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# the whole suite runs on the oldest supported ansible-core (tests/core-floor-constraints.txt), which supports
# Python 3.10 to 3.12; with a newer Python the environment gets the newest core that Python allows instead
floor=(-c tests/core-floor-constraints.txt)
if ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info[:2] <= (3, 12) else 1)'; then
  echo "setup: $(.venv/bin/python --version) is newer than the oldest supported ansible-core (2.16) runs on: .venv gets" \
    "the newest core it allows, and the tests do not run at the oldest end here (PYTHON=python3.11 bash scripts/setup.sh" \
    "after removing .venv does)" >&2
  floor=()
fi
stamp=.venv/.requirements-$(cat requirements.txt tests/requirements.txt tests/core-floor-constraints.txt | sha256sum | cut -c1-16)${floor[0]:+-floor}
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r requirements.txt -r tests/requirements.txt "${floor[@]}"
  rm -f .venv/.requirements-*
  touch "$stamp"
fi
.venv/bin/python scripts/fixtures.py .cache/fixtures

# The collection as Ansible sees it once installed: build the tarball and install it.
rm -f .cache/gpuops-fabric-*.tar.gz
.venv/bin/ansible-galaxy collection build --force --output-path .cache . >/dev/null
.venv/bin/ansible-galaxy collection install --force -p .cache/collections .cache/gpuops-fabric-*.tar.gz >/dev/null
