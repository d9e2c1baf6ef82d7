# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The catalogue_image_index filter: a logical image's variants as the arguments of registry_image_index."""

from __future__ import annotations

DOCUMENTATION = r"""
name: catalogue_image_index
short_description: A logical image's variants as one registry index, each entry with its platform features
version_added: 0.2.0
description:
  - Takes an image catalogue (as M(hpc.gpu_containers.image_variant) validates it) and a logical image name, and
    returns the registry, repository, the variants' tags and, per tag, what the variant needs beyond its
    architecture as OCI C(platform.features) words - its CPU level (C(x86-64-v4), C(POWER9)), C(cuda12.2),
    C(driver535.54.03), C(sm_80) per compute capability with machine code, and C(compute_80) for the PTX of the
    highest - ready for M(hpc.gpu_containers.registry_image_index).
  - Fails when the variants are not tags of one repository in one registry.
options:
  _input:
    description: The image catalogue.
    type: dict
    required: true
  logical_name:
    description: The logical image.
    type: str
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Publish the variants of deeplearning as one index, deeplearning:variants
  hpc.gpu_containers.registry_image_index:
    registry: "{{ index.registry }}"
    repository: "{{ index.repository }}"
    tag: variants
    images: "{{ index.images }}"
    features: "{{ index.features }}"
  vars:
    index: "{{ lsf_docker_image_catalogue | hpc.gpu_containers.catalogue_image_index('deeplearning') }}"
"""

RETURN = r"""
_value:
  description: C(registry), C(repository), C(images) (the tags) and C(features) (tag to its list of features).
  type: dict
  sample:
    registry: head:5000
    repository: hpc/deeplearning
    images: [cuda12-sm80, cuda11-sm70]
    features: {cuda12-sm80: [cuda12.2, sm_80, x86-64-v2], cuda11-sm70: [compute_70, cuda11.0, sm_70]}
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import CatalogueError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_platforms import image_index


def catalogue_image_index(catalogue, logical_name):
    try:
        return image_index(catalogue, logical_name)
    except CatalogueError as err:
        raise AnsibleFilterError("catalogue_image_index: %s" % err)


class FilterModule:
    def filters(self):
        return {"catalogue_image_index": catalogue_image_index}
