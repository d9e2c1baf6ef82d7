# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lsf_docker_options filter: the docker run options of the Docker application profiles."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lsf_docker_options
short_description: The docker run options of the Docker application profiles, in the runbook's order
version_added: 0.3.0
description:
  - Returns C(base), the options every default profile of the lsf_docker role gets - the GPU options, then
    C(--device=) per extra device, C(--ipc=host), C(--network=host), C(--rm), C(--ulimit=memlock=N:N), a read-only
    C(--volume=) per read-only mount, a C(--volume=) per shared file system, then the site's extra options - and
    C(ngc), the NGC options an image profile adds, without C(--shm-size) (in any spelling) when O(ipc_host) is set
    (the container then has the node's own /dev/shm and Docker ignores the size).
options:
  _input:
    description: The GPU options (the NVIDIA runtime's, or none).
    type: list
    elements: str
    required: true
  devices:
    description: Extra device nodes.
    type: list
    elements: str
    default: []
  ipc_host:
    description: Share the node's IPC namespace.
    type: bool
    default: false
  network_host:
    description: Use the node's network.
    type: bool
    default: false
  remove:
    description: Remove the container when the job ends.
    type: bool
    default: false
  memlock:
    description: The locked-memory limit in bytes; V(null) for none.
    type: int
  readonly_mounts:
    description: Paths mounted read-only at the same place.
    type: list
    elements: str
    default: []
  shared_filesystems:
    description: Paths mounted read-write at the same place.
    type: list
    elements: str
    default: []
  extra:
    description: The site's own options, last.
    type: list
    elements: str
    default: []
  ngc:
    description: The NGC options of image profiles.
    type: list
    elements: str
    default: []
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The profiles' options
  ansible.builtin.debug:
    msg: "{{ ['--runtime=nvidia'] | hpc.gpu_containers.lsf_docker_options(ipc_host=true, remove=true,
             ngc=['--shm-size=1g', '--ulimit=stack=67108864']) }}"
  # {"base": ["--runtime=nvidia", "--ipc=host", "--rm"], "ngc": ["--ulimit=stack=67108864"]}
"""

RETURN = r"""
_value:
  description: The options.
  type: dict
  contains:
    base:
      description: The default profiles' options.
      type: list
      elements: str
    ngc:
      description: The NGC options image profiles add.
      type: list
      elements: str
"""

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_profiles import docker_options


def lsf_docker_options(gpu_options, devices=(), ipc_host=False, network_host=False, remove=False, memlock=None,
                       readonly_mounts=(), shared_filesystems=(), extra=(), ngc=()):
    return docker_options(list(gpu_options or []), list(devices or []), boolean(ipc_host, strict=False),
                          boolean(network_host, strict=False), boolean(remove, strict=False), memlock,
                          list(readonly_mounts or []), list(shared_filesystems or []), list(extra or []),
                          list(ngc or []))


class FilterModule:
    def filters(self):
        return {"lsf_docker_options": lsf_docker_options}
