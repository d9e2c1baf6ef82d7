# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The passwd_ids filter: each user's uid:gid from getent lookups."""

from __future__ import annotations

DOCUMENTATION = r"""
name: passwd_ids
short_description: Each user's uid:gid from the registered results of getent passwd lookups
version_added: 0.3.0
description:
  - Takes the C(results) of an C(ansible.builtin.getent) task with C(database=passwd) looped over user names and
    returns a dict of user name to C(uid:gid), with V(null) for a user the host does not have.
options:
  _input:
    description: The registered loop results.
    type: list
    elements: dict
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Look up the users
  ansible.builtin.getent:
    database: passwd
    key: "{{ item }}"
    fail_key: false
  loop: [alice, bob]
  register: lookup

- name: Their ids here
  ansible.builtin.debug:
    msg: "{{ lookup.results | hpc.gpu_containers.passwd_ids }}"
"""

RETURN = r"""
_value:
  description: User name to C(uid:gid), or V(null).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_ids import passwd_ids as _passwd_ids


def passwd_ids(results):
    if not isinstance(results, (list, tuple)):
        raise AnsibleFilterError("passwd_ids: expected the loop's results, got %s" % type(results).__name__)
    return _passwd_ids(results)


class FilterModule:
    def filters(self):
        return {"passwd_ids": passwd_ids}
