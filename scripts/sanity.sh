#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection placed at .../ansible_collections/gpuops/fabric.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
# SANITY_VENV: another virtual environment (its ansible-core) and SANITY_PYTHON its version, for the other end
# of the supported cores
venv=${SANITY_VENV:-$repo/.venv}
PY=$venv/bin/python
# ansible-test bootstraps pip in each sanity venv from a download host we cannot reach: stand in for it.
pip_version=$("$PY" - <<'PYEOF'
import re, ansible_test, os
src = open(os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")).read()
print(re.search(r"pip='([0-9.]+)'", src).group(1))
PYEOF
)
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
cp tests/sanity/get_pip_offline.py "$cache/get_pip_${pip_version//./_}.py"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/gpuops/fabric"
mkdir -p "$dest"
# Exactly the files git would ship: tracked plus new, not ignored.
git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents -P {} "$dest/"
cd "$dest"
git init -q . && git add -A >/dev/null
PATH="$venv/bin:$PATH" ansible-test sanity --venv --python "${SANITY_PYTHON:-3.11}" --color no "$@"
