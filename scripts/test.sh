#!/usr/bin/env bash
# The whole test suite: install, then pytest (unit, fuzz, hwloc cross-check, the collection run by
# ansible itself), ansible-test sanity, and ansible-lint with the production profile.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
# galaxy-importer for tests/integration/test_publishable.py, apart from the main environment (it pins its own)
importer_stamp=.cache/importer-venv/.requirements-$(sha256sum < tests/importer-requirements.txt | cut -c1-16)
if [ ! -f "$importer_stamp" ]; then
  rm -rf .cache/importer-venv
  python -m venv .cache/importer-venv
  .cache/importer-venv/bin/python -m pip install -q -r tests/importer-requirements.txt
  touch "$importer_stamp"
fi

echo "== pytest"
python -m pytest tests --durations=25
echo "== ansible-test sanity"
bash scripts/sanity.sh
echo "== ansible-lint (production profile)"
ANSIBLE_COLLECTIONS_PATH="$PWD/.cache/collections" ansible-lint
echo "== all tests passed"
