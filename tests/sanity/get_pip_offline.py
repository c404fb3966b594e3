"""Stand-in for the get-pip.py script ansible-test downloads from ci-files.testing.ansible.com.

That host is not reachable from our CI machines; the package index is. ansible-test runs this file
inside each fresh sanity virtual environment with pip's options and the pinned packages as arguments
(for example ``--disable-pip-version-check pip==24.2 --no-setuptools --no-wheel``). We bootstrap the
pip bundled with Python, then let it install what was asked for from the configured index.
"""

import ensurepip
import os
import subprocess
import sys

ensurepip.bootstrap()
# ensurepip points PIP_CONFIG_FILE at /dev/null, which would hide the machine's index and certificates.
os.environ.pop("PIP_CONFIG_FILE", None)
args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "-q"] + args))
