# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The go_arch filter: an architecture name in the spelling of image indexes and registries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: go_arch
short_description: An architecture name as OCI image indexes spell it (x86_64 to amd64)
version_added: 0.2.0
description:
  - Turns a machine name (C(uname -m), C(ansible_facts.architecture)) or a distribution's name for it into the
    spelling of OCI image indexes and Docker manifest lists (Go's C(GOARCH)) - C(x86_64) to C(amd64), C(aarch64)
    to C(arm64), C(ppc64el) to C(ppc64le). An unknown name comes back lower-cased and otherwise unchanged.
  - The same mapping as M(hpc.gpu_containers.container_verify) and M(hpc.gpu_containers.registry_image_index)
    use to compare a container's or an index entry's architecture with a node's.
options:
  _input:
    description: The architecture name.
    type: str
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Tag of this node's own image
  ansible.builtin.set_fact:
    arch_tag: "1-{{ ansible_facts['architecture'] | hpc.gpu_containers.go_arch }}"
"""

RETURN = r"""
_value:
  description: The architecture in OCI spelling.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._platform import go_arch as _go_arch


def go_arch(name):
    if name is None or not str(name).strip():
        raise AnsibleFilterError("go_arch: no architecture name given")
    return _go_arch(name)


class FilterModule:
    def filters(self):
        return {"go_arch": go_arch}
