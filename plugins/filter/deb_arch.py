# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deb_arch filter: an architecture name as Debian spells it (apt sources, dpkg)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: deb_arch
short_description: An architecture name as Debian spells it (x86_64 to amd64, ppc64le to ppc64el)
version_added: 0.3.0
description:
  - Turns a machine name (C(uname -m), C(ansible_facts.architecture)) or an OCI name for it into Debian's
    spelling, for apt sources and repository URLs - C(x86_64) to C(amd64), C(aarch64) to C(arm64), C(ppc64le) to
    C(ppc64el). An unknown name comes back lower-cased and otherwise unchanged.
options:
  _input:
    description: The architecture name.
    type: str
    required: true
seealso:
  - plugin: hpc.gpu_containers.go_arch
    plugin_type: filter
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: An apt source for this node's architecture
  ansible.builtin.debug:
    msg: "Architectures: {{ ansible_facts['architecture'] | hpc.gpu_containers.deb_arch }}"
"""

RETURN = r"""
_value:
  description: The architecture in Debian's spelling.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._platform import deb_arch as _deb_arch


def deb_arch(name):
    if name is None or not str(name).strip():
        raise AnsibleFilterError("deb_arch: no architecture name given")
    return _deb_arch(name)


class FilterModule:
    def filters(self):
        return {"deb_arch": deb_arch}
