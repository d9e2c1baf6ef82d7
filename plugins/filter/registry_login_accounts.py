# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry_login_accounts filter: the accounts that get the registry logins, from getent passwd lookups."""

from __future__ import annotations

DOCUMENTATION = r"""
name: registry_login_accounts
short_description: The accounts that get the registry logins, with their homes
version_added: 0.3.0
description:
  - Takes the C(results) of an M(ansible.builtin.getent) task with C(database=passwd) and C(fail_key=false)
    looped over the account names (one lookup each, as sssd without enumeration answers LDAP accounts by name
    only), and returns each account's uid, gid, home and C(~/.docker/config.json).
  - An account the host does not have is an error that names it.
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
- name: Look up the accounts
  ansible.builtin.getent:
    database: passwd
    key: "{{ item }}"
    fail_key: false
  loop: [lsfadmin]
  register: lookups

- name: Name the Docker config of each account
  ansible.builtin.debug:
    msg: "{{ lookups.results | hpc.gpu_containers.registry_login_accounts }}"
"""

RETURN = r"""
_value:
  description: The accounts, in the order given.
  type: list
  elements: dict
  contains:
    name:
      description: The account.
      type: str
    uid:
      description: Its uid.
      type: int
    gid:
      description: Its primary gid.
      type: int
    home:
      description: Its home directory.
      type: str
    config:
      description: Its C(~/.docker/config.json).
      type: str
"""

from ansible_collections.hpc.gpu_containers.plugins.filter.registry_logins import registry_filter
from ansible_collections.hpc.gpu_containers.plugins.module_utils._registry_login import login_accounts

registry_login_accounts = registry_filter("registry_login_accounts", login_accounts)


class FilterModule:
    def filters(self):
        return {"registry_login_accounts": registry_login_accounts}
