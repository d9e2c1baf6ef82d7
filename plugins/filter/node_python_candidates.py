# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_python_candidates filter: the interpreters the node-Python pre-flight tries, in Ansible's order."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_python_candidates
short_description: The interpreters the node-Python pre-flight tries, in Ansible's order
version_added: 0.3.0
description:
  - The configured interpreter alone, or under interpreter discovery (V(auto) and its variants) the distribution
    map's platform Pythons (ansible-core 2.16 only) followed by C(INTERPRETER_PYTHON_FALLBACK).
options:
  _input:
    description: The node's C(ansible_python_interpreter), or C(INTERPRETER_PYTHON).
    type: str
    required: true
  distro_map:
    description: ansible-core 2.16's distribution map (C(_INTERPRETER_PYTHON_DISTRO_MAP)); empty on later releases.
    type: dict
    default: {}
  fallback:
    description: C(INTERPRETER_PYTHON_FALLBACK).
    type: list
    elements: str
    default: []
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The interpreters to try
  ansible.builtin.debug:
    msg: "{{ 'auto' | hpc.gpu_containers.node_python_candidates({}, ['python3', '/usr/bin/python3']) }}"
"""

RETURN = r"""
_value:
  description: The interpreters, in the order Ansible tries them.
  type: list
  elements: str
"""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._node_python import candidates


def node_python_candidates(setting, distro_map=None, fallback=None):
    return candidates(setting, distro_map or {}, list(fallback or []))


class FilterModule:
    def filters(self):
        return {"node_python_candidates": node_python_candidates}
