# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry_logins filter: every registry login of a Docker host."""

from __future__ import annotations

DOCUMENTATION = r"""
name: registry_logins
short_description: Every registry login of a Docker host, for each account
version_added: 0.3.0
description:
  - Returns one entry per registry and account, the site registry first, then the upstream registries
    (O(role=hpc.gpu_containers.container_registry#role:main:container_registry_upstreams)), each for the
    connecting user and for every account of O(accounts).
  - The entries hold the passwords, so only a C(no_log) task may loop over them.
options:
  _input:
    description: The site registry's login (C(registry), C(username), C(password)); V(null) when it asks for none.
    type: dict
  upstreams:
    description: C(container_registry_upstreams).
    type: list
    elements: dict
    required: true
  accounts:
    description: The accounts (M(hpc.gpu_containers.registry_login_accounts#filter)).
    type: list
    elements: dict
    default: []
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Log in to every registry
  community.docker.docker_login:
    registry_url: "{{ item.registry }}"
    username: "{{ item.username }}"
    password: "{{ item.password }}"
    config_path: "{{ item.config_path | default(omit, true) }}"
  no_log: true
  loop: "{{ none | hpc.gpu_containers.registry_logins(container_registry_upstreams) }}"
"""

RETURN = r"""
_value:
  description: The logins.
  type: list
  elements: dict
  contains:
    registry:
      description: The registry (host or host:port).
      type: str
    username:
      description: The account on the registry.
      type: str
    password:
      description: Its password.
      type: str
    managed:
      description: Whether the collection manages the registry's accounts (the site registry).
      type: bool
    account:
      description: The local account whose Docker config gets the login; V(null) for the connecting user.
      type: str
    config_path:
      description: That account's C(~/.docker/config.json); V(null) for the connecting user.
      type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._registry_login import (
    RegistryLoginError, login_entries)


def registry_filter(name, function):
    """``function`` of module_utils/_registry_login.py as the filter ``name``: its errors as the filter's."""
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except RegistryLoginError as exc:
            raise AnsibleFilterError("%s: %s" % (name, exc)) from None
    run.__name__ = name
    return run


registry_logins = registry_filter("registry_logins", login_entries)


class FilterModule:
    def filters(self):
        return {"registry_logins": registry_logins}
