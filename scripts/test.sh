#!/usr/bin/env bash
# The whole test suite: install, then pytest (unit, fuzz, hwloc cross-check, the collection run by
# ansible itself), ansible-test sanity, and ansible-lint with the production profile.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

echo "== pytest"
python -m pytest tests --durations=25
echo "== ansible-test sanity"
bash scripts/sanity.sh
echo "== ansible-lint (production profile)"
ANSIBLE_COLLECTIONS_PATH="$PWD/.cache/collections" ansible-lint
echo "== all tests passed"
