#!/usr/bin/env bash
# The main job on the demo inventory: install, then audit captured machines, hand-written nodes and
# this machine: gather topology facts, evaluate the checklist, write reports to ./fabric-report.
# No GPU needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export ANSIBLE_COLLECTIONS_PATH="$PWD/.cache/collections"
export ANSIBLE_STDOUT_CALLBACK=default ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_NOCOLOR=${ANSIBLE_NOCOLOR:-}
exec .venv/bin/ansible-playbook -i demo/inventory.yml gpuops.fabric.audit "$@"
