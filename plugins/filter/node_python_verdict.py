# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_python_verdict filter: the Python a node would run the modules with, and whether it is new enough."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_python_verdict
short_description: The Python a node would run the collection's modules with, and whether it is new enough
version_added: 0.3.0
description:
  - Reads the output of the node-Python pre-flight's probe (playbooks/node_python.yml), picks the interpreter Ansible
    would use (under interpreter discovery a distribution's platform Python first, where ansible-core has a
    distribution map, then the first candidate that runs; else the configured interpreter) and compares its version
    with O(minimum).
  - Returns C(ok), C(python), C(version) and C(msg), a sentence that starts with the host name and, when the node
    fails, gives the fix for its OS.
options:
  _input:
    description:
      - "The probe's output lines: C(os<TAB>ID<TAB>VERSION_ID<TAB>ID_LIKE), then C(py<TAB>version or -<TAB>candidate)
        for each candidate."
    type: list
    elements: str
    required: true
  host:
    description: The node's name, for the message.
    type: str
    required: true
  setting:
    description: The node's C(ansible_python_interpreter), or C(INTERPRETER_PYTHON) (V(auto) and its variants mean
      interpreter discovery).
    type: str
    required: true
  minimum:
    description: The oldest Python version that passes.
    type: str
    default: "3.9"
  distro_map:
    description: ansible-core 2.16's distribution map (C(_INTERPRETER_PYTHON_DISTRO_MAP)); empty on later releases.
    type: dict
    default: {}
  fallback:
    description: C(INTERPRETER_PYTHON_FALLBACK), named in the message when discovery finds nothing.
    type: list
    elements: str
    default: []
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Check the node's Python
  ansible.builtin.assert:
    that: verdict.ok
    fail_msg: "{{ verdict.msg }}"
    success_msg: "{{ verdict.msg }}"
  vars:
    verdict: >-
      {{ probe.stdout_lines | hpc.gpu_containers.node_python_verdict(inventory_hostname, 'auto', minimum='3.9') }}
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    ok:
      description: Whether the interpreter runs and is O(minimum) or newer.
      type: bool
    python:
      description: The interpreter Ansible would use (empty when discovery finds none).
      type: str
    version:
      description: Its version, or V(-) when it does not run.
      type: str
    msg:
      description: One sentence for the node, with the fix when it fails.
      type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._node_python import verdict


def node_python_verdict(stdout_lines, host, setting, minimum="3.9", distro_map=None, fallback=None):
    if isinstance(stdout_lines, (str, bytes)) or not hasattr(stdout_lines, "__iter__"):
        raise AnsibleFilterError("node_python_verdict: expected the probe's stdout_lines, got %s"
                                 % type(stdout_lines).__name__)
    return verdict(list(stdout_lines), host, setting, str(minimum), distro_map or {}, list(fallback or []))


class FilterModule:
    def filters(self):
        return {"node_python_verdict": node_python_verdict}
