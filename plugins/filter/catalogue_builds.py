# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The catalogue_builds filter: the variants of an image catalogue one build host makes."""

from __future__ import annotations

DOCUMENTATION = r"""
name: catalogue_builds
short_description: The variants of an image catalogue that a host of one architecture builds
version_added: 0.2.0
description:
  - Takes an image catalogue (as M(hpc.gpu_containers.image_variant) validates it), the variant sources by
    C(logical/variant) name and a host's architecture, and returns the variants of that architecture that have a
    source, in catalogue order, each with its registry, repository, tag and index features.
  - Fails, naming the catalogue's variants, when a source names no variant; and when a source has neither or both
    of C(context) and C(archive).
options:
  _input:
    description: The image catalogue.
    type: dict
    required: true
  sources:
    description: "C(logical/variant) to C({context: dir, args: {}}) (docker build) or C({archive: tar}) (docker load)."
    type: dict
    required: true
  architecture:
    description: The build host's architecture (C(uname -m) or Docker spelling).
    type: str
    required: true
  index_tag:
    description:
      - The tag of each logical image's index of variants. Each entry's C(index) is then
        C(registry/repository:index_tag); without it, C(index) is null.
    type: str
    default: ""
    version_added: 0.2.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Build the variants of this host's architecture
  community.docker.docker_image:
    name: "{{ item.image }}"
    source: build
    build:
      path: "{{ item.source.context }}"
  loop: "{{ lsf_docker_image_catalogue | hpc.gpu_containers.catalogue_builds(sources, ansible_facts['architecture']) }}"
  vars:
    sources:
      deeplearning/cuda12-sm80: {context: /srv/build/deeplearning-cuda12-sm80}
"""

RETURN = r"""
_value:
  description: One entry per variant to build.
  type: list
  elements: dict
  sample:
    - logical: deeplearning
      name: cuda12-sm80
      image: head:5000/hpc/deeplearning:cuda12-sm80
      tag: cuda12-sm80
      registry: head:5000
      repository: hpc/deeplearning
      features: [cuda12.2, sm_80, x86-64-v2]
      source: {context: /srv/build/deeplearning-cuda12-sm80}
      index: head:5000/hpc/deeplearning:variants
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import CatalogueError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_platforms import builds


def catalogue_builds(catalogue, sources, architecture, index_tag=""):
    try:
        return builds(catalogue, sources, architecture, index_tag)
    except CatalogueError as err:
        raise AnsibleFilterError("catalogue_builds: %s" % err)


class FilterModule:
    def filters(self):
        return {"catalogue_builds": catalogue_builds}
