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
# the newest ansible-core (it needs Python 3.12 or later; this machine image keeps them under /root/.pyenv): the
# integration tests and sanity run on it too (the main environment has the oldest, tests/core-floor-constraints.txt)
newest_python=
for candidate in python3.12 /root/.pyenv/versions/3.12*/bin/python python3.13 /root/.pyenv/versions/3.13*/bin/python; do
  # a pyenv shim answers "command not found" when that version is not selected: try each one
  if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
    newest_python=$candidate; break
  fi
done
core_stamp=.cache/core-newest-venv/.requirements-$(cat tests/core-newest-requirements.txt requirements.txt tests/requirements.txt | sha256sum | cut -c1-16)
if [ -n "$newest_python" ] && [ ! -f "$core_stamp" ]; then
  rm -rf .cache/core-newest-venv
  "$newest_python" -m venv .cache/core-newest-venv
  .cache/core-newest-venv/bin/python -m pip install -q -r tests/core-newest-requirements.txt
  touch "$core_stamp"
fi

echo "== pytest"
python -m pytest tests --durations=25
# the other end of the supported cores (tests/integration/test_ansible_core_range.py in the run above also fails
# without it); tests/unit/roles holds the check of the role pages against Ansible's own validator
if [ ! -x .cache/core-newest-venv/bin/python ]; then
  echo "test: no .cache/core-newest-venv (the newest ansible-core needs Python 3.12 or later)" >&2
  exit 1
fi
# On the newest core: the files that drive ansible-playbook, the action plugins, the callbacks and the role pages
# through every entry point (pre-flight, facts, plan, network, NCCL, site, audit, drift). The test beds that check
# the tools around Ansible rather than Ansible itself run once, on the floor core above: the namespace and VM beds'
# probes, Slurm, switch and tuning runs, molecule, the EE image, the galaxy importer, promtool, the HTML pictures,
# live sysfs and networkd's parser. Running all of tests/integration here again took about 20 of CI's minutes.
echo "== pytest, the integration tests on the newest ansible-core"
PATH="$PWD/.cache/core-newest-venv/bin:$PATH" .cache/core-newest-venv/bin/python -m pytest tests/unit/roles \
  tests/integration/test_ansible.py tests/integration/test_ansible_core_range.py tests/integration/test_audit.py \
  tests/integration/test_bad_facts_inputs.py tests/integration/test_bad_intents.py \
  tests/integration/test_drift_output.py tests/integration/test_nccl_role.py tests/integration/test_network_plan.py \
  tests/integration/test_network_role.py tests/integration/test_plan.py tests/integration/test_site.py \
  tests/integration/test_topology_facts_action.py --durations=10
echo "== ansible-test sanity"
bash scripts/sanity.sh
echo "== ansible-test sanity, newest ansible-core"
SANITY_VENV=$PWD/.cache/core-newest-venv SANITY_PYTHON=$(.cache/core-newest-venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
  bash scripts/sanity.sh
echo "== ansible-lint (production profile)"
ANSIBLE_COLLECTIONS_PATH="$PWD/.cache/collections" ansible-lint
echo "== all tests passed"
