# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Private to the gpuops.fabric collection: the API may change without notice.
"""A probe's program run with a time limit: ping, the iperf3 client and nccl-tests. AnsibleModule.run_command has
no time limit (a peer that never answers would hold the node's run past its round), keeps all output in memory
(NCCL_DEBUG=INFO from every rank of a launcher run goes to a file instead) and is not meant for the threads the
pings of many peers run in. The argv is always a list, never a shell string; stdin is /dev/null."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
TimeoutExpired = subprocess.TimeoutExpired


def run_bounded(argv, timeout, stdout=PIPE, stderr=PIPE, env=None):
    """Run ``argv`` (a list) for at most ``timeout`` seconds: the completed process (its returncode, stdout and
    stderr as bytes where piped). Raises TimeoutExpired past the limit (the program is killed) and OSError when it
    cannot start."""
    if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty list of strings, not %r" % (argv,))
    # the one place the probes run a program themselves, for the reasons above (ansible-core 2.21's pylint asks for
    # run_command here)
    # pylint: disable-next=ansible-bad-function
    return subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                          timeout=timeout, check=False)
