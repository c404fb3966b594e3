# -*- coding: utf-8 -*-
# Copyright: gpuops.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Standard documentation fragment
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
"""

    # Should be used together with the standard fragment
    FACTS = r"""
options: {}
attributes:
  facts:
    support: full
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
"""

    # Should be used together with the standard fragment and the FACTS fragment
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    description: Running the action again with the same input gives the same result and changes nothing.
    support: full
"""

    # For a module whose action plugin fills options from the inventory on the controller (the module runs on the node).
    NODE_ACTION = r"""
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details:
      - Options the task does not give are taken from the host's variables named in the description.
"""

    # For actions that run once on the controller (their module file only carries documentation).
    CONTROLLER_ACTION = r"""
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: none
  bypass_host_loop:
    description: Forces a 'global' task that does not execute per host, this bypasses per host templating and serial,
      throttle and other loop considerations.
    support: none
  diff_mode:
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
  idempotent:
    description: Running the action again with the same input gives the same result and changes nothing.
    support: full
"""

    # For the probe modules: they send traffic and start transient processes, but change no configuration.
    PROBE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Probes in check mode too; it sends traffic but changes nothing on any host.
  diff_mode:
    support: none
  idempotent:
    description: Running the module again changes nothing.
    support: full
    details:
      - Changes no configuration; measurements differ between runs.
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
"""

    ACTIONGROUP = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/gpuops.fabric.all) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - gpuops.fabric.all
"""
