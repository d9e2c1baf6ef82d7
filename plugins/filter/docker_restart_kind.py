# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docker_restart_kind filter: whether dockerd takes a change with a reload or needs a restart."""

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_restart_kind
short_description: Whether dockerd takes a change with a reload (SIGHUP) or needs a restart
version_added: 0.3.0
description:
  - Returns V(reload) when the engine is running, no engine package changed, and every changed daemon.json key is
    a top-level key dockerd re-reads on a reload (O(reload_keys); C(runtimes.nvidia) counts as C(runtimes)), and
    every top-level key removed from the file is one whose removal a reload applies (O(reload_clears_keys)) -
    for the others dockerd keeps the value it had. Anything else, and no changed key at all (a package or the
    NVIDIA toolkit changed), is V(restart).
options:
  _input:
    description: Whether the Docker service is active now.
    type: bool
    required: true
  changed_keys:
    description: The daemon.json keys that changed (dotted paths).
    type: list
    elements: str
    required: true
  removed_keys:
    description: The daemon.json keys removed from the file (dotted paths).
    type: list
    elements: str
    default: []
  packages:
    description: The engine packages that changed.
    type: list
    elements: str
    default: []
  reload_keys:
    description: The top-level keys dockerd applies on a reload.
    type: list
    elements: str
    default: []
  reload_clears_keys:
    description: Of those, the keys whose removal a reload applies.
    type: list
    elements: str
    default: []
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Choose between a reload and a restart
  ansible.builtin.set_fact:
    kind: >-
      {{ true | hpc.gpu_containers.docker_restart_kind(['insecure-registries'], reload_keys=['insecure-registries']) }}
"""

RETURN = r"""
_value:
  description: V(reload) or V(restart).
  type: str
"""

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpc.gpu_containers.plugins.module_utils._daemon_json import restart_kind


def docker_restart_kind(active, changed_keys, removed_keys=None, packages=None, reload_keys=None,
                        reload_clears_keys=None):
    return restart_kind(boolean(active, strict=False), list(changed_keys or []), list(removed_keys or []),
                        list(packages or []), list(reload_keys or []), list(reload_clears_keys or []))


class FilterModule:
    def filters(self):
        return {"docker_restart_kind": docker_restart_kind}
