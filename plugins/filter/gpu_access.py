# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_access filter: how Docker job containers reach the GPUs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_access
short_description: How Docker job containers reach the GPUs - the NVIDIA runtime, device nodes or none
version_added: 0.3.0
description:
  - Returns the GPU access mode of the Docker job profiles. A mode other than V(auto) is returned as it is.
  - V(auto) becomes V(runtime) when every GPU node with facts registers the NVIDIA runtime (O(runtime)) in the
    daemon.json its C(docker_daemon) fact describes; else V(devices) when some node's
    M(hpc.gpu_containers.gpu_facts) found GPUs, or the site named GPU minors (O(site_minors)); else V(none).
options:
  _input:
    description: The mode asked for.
    type: str
    choices: [auto, runtime, devices, none]
    required: true
  hosts:
    description: The GPU nodes with facts (P(hpc.gpu_containers.hosts_with_facts#filter) with the daemon.json path).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  runtime:
    description: The name the NVIDIA runtime is registered under in daemon.json.
    type: str
    required: true
  site_minors:
    description: GPU minor numbers the site named, for a cluster whose GPU nodes gave no facts.
    type: list
    elements: int
    default: []
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The GPU access of the Docker profiles
  ansible.builtin.set_fact:
    gpu_mode: >-
      {{ 'auto' | hpc.gpu_containers.gpu_access(groups['gpu_nodes'] | hpc.gpu_containers.hosts_with_facts(hostvars,
         daemon_json_path='/etc/docker/daemon.json'), hostvars, runtime='nvidia') }}
"""

RETURN = r"""
_value:
  description: V(runtime), V(devices) or V(none).
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._gpu_access import gpu_access as _gpu_access


def gpu_access(access, hosts, hostvars, runtime, site_minors=()):
    try:
        return _gpu_access(access, list(hosts or []), hostvars, runtime, site_minors)
    except ValueError as exc:
        raise AnsibleFilterError("gpu_access: %s" % exc)


class FilterModule:
    def filters(self):
        return {"gpu_access": gpu_access}
