# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts_with_facts filter: the GPU nodes this run has facts for."""

from __future__ import annotations

DOCUMENTATION = r"""
name: hosts_with_facts
short_description: The hosts this run gathered GPU facts on
version_added: 0.3.0
description:
  - Returns the hosts of the list, in its order, that have C(ansible_facts.gpu_facts) (M(hpc.gpu_containers.gpu_facts))
    in this run; with O(daemon_json_path), only those whose C(docker_daemon) fact was read from that daemon.json.
  - A host outside the play (C(--limit), unreachable) or not in the inventory has none. The roles name those hosts
    (the list minus this one) instead of guessing their GPUs.
options:
  _input:
    description: The hosts (inventory names).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  daemon_json_path:
    description: Also require the C(docker_daemon) fact of this daemon.json (M(hpc.gpu_containers.gpu_facts) with
      O(hpc.gpu_containers.gpu_facts#module:docker_daemon_json)).
    type: str
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Name the GPU nodes this run has no facts for
  ansible.builtin.debug:
    msg: "{{ groups['gpu_nodes'] | difference(groups['gpu_nodes'] | hpc.gpu_containers.hosts_with_facts(hostvars)) }}"
"""

RETURN = r"""
_value:
  description: The hosts with GPU facts, in the order of the input.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._gpu_access import hosts_with_facts as _hosts_with_facts


def hosts_with_facts(hosts, hostvars, daemon_json_path=None):
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("hosts_with_facts: expected a list of hosts, got %s" % type(hosts).__name__)
    return _hosts_with_facts(hosts, hostvars, daemon_json_path)


class FilterModule:
    def filters(self):
        return {"hosts_with_facts": hosts_with_facts}
