# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry_login_failures filter: the failed logins of a docker_login loop, passwords masked."""

from __future__ import annotations

DOCUMENTATION = r"""
name: registry_login_failures
short_description: The failed logins of a docker_login loop, with the passwords masked
version_added: 0.3.0
description:
  - Reads the results of a C(community.docker.docker_login) loop over
    M(hpc.gpu_containers.registry_logins#filter) run with C(failed_when) false, and returns each login that
    failed (it has no C(login_result)) with its message, every password of the loop masked.
  - C(pending) marks a login the site registry refuses in check mode (HTTP 401), as the registry host is only
    given the password when it converges.
options:
  _input:
    description: The loop's C(results).
    type: list
    elements: dict
    required: true
  check_mode:
    description: C(ansible_check_mode).
    type: bool
    default: false
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Refuse a registry this host cannot log in to
  ansible.builtin.fail:
    msg: "{{ logins.results | hpc.gpu_containers.registry_login_failures | map(attribute='message') | join('; ') }}"
"""

RETURN = r"""
_value:
  description: The failed logins.
  type: list
  elements: dict
  contains:
    registry:
      description: The registry.
      type: str
    account:
      description: The local account, or C(the connecting user).
      type: str
    pending:
      description: A check-mode refusal the site registry's converge resolves.
      type: bool
    message:
      description: What failed, passwords masked.
      type: str
"""

from ansible_collections.hpc.gpu_containers.plugins.filter.registry_logins import registry_filter
from ansible_collections.hpc.gpu_containers.plugins.module_utils._registry_login import login_failures


registry_login_failures = registry_filter("registry_login_failures", login_failures)


class FilterModule:
    def filters(self):
        return {"registry_login_failures": registry_login_failures}
