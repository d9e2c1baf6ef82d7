# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry_upstream_cas filter: the upstream registries' own CA files."""

from __future__ import annotations

DOCUMENTATION = r"""
name: registry_upstream_cas
short_description: The upstream registries that have a CA of their own, and its file
version_added: 0.3.0
description:
  - Returns a dict of registry name to the CA file on the controller (C(ca_src)) for the entries of
    O(role=hpc.gpu_containers.container_registry#role:main:container_registry_upstreams) that give one. No
    credentials, so a loop over its items shows nothing secret.
  - An entry without a registry name, username or password, or with an unknown key, is an error that names it.
options:
  _input:
    description: C(container_registry_upstreams).
    type: list
    elements: dict
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Trust each upstream registry's CA
  ansible.builtin.copy:
    src: "{{ item.value }}"
    dest: /etc/docker/certs.d/{{ item.key }}/ca.crt
    mode: "0644"
  loop: "{{ container_registry_upstreams | hpc.gpu_containers.registry_upstream_cas | dict2items }}"
"""

RETURN = r"""
_value:
  description: Registry name to CA file.
  type: dict
"""

from ansible_collections.hpc.gpu_containers.plugins.filter.registry_logins import registry_filter
from ansible_collections.hpc.gpu_containers.plugins.module_utils._registry_login import upstream_cas

registry_upstream_cas = registry_filter("registry_upstream_cas", upstream_cas)


class FilterModule:
    def filters(self):
        return {"registry_upstream_cas": registry_upstream_cas}
