# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The catalogue_build_indexes filter: the indexes a host publishes for the variants it builds."""

from __future__ import annotations

DOCUMENTATION = r"""
name: catalogue_build_indexes
short_description: The registry indexes a host publishes for the image variants it builds
version_added: 0.3.0
description:
  - Groups a host's builds (P(hpc.gpu_containers.catalogue_builds#filter)) by logical image, in the order of each
    one's first variant, for M(hpc.gpu_containers.registry_image_index) - C(logical), C(registry), C(repository),
    C(index) (the index's reference, or V(null) without an index tag), C(images) (the variants' tags) and
    C(features) (tag to its platform features).
options:
  _input:
    description: The builds.
    type: list
    elements: dict
    required: true
seealso:
  - plugin: hpc.gpu_containers.catalogue_builds
    plugin_type: filter
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Publish each logical image's variants as one index
  hpc.gpu_containers.registry_image_index:
    registry: "{{ item.registry }}"
    repository: "{{ item.repository }}"
    tag: variants
    images: "{{ item.images }}"
    features: "{{ item.features }}"
  loop: "{{ builds | hpc.gpu_containers.catalogue_build_indexes }}"
"""

RETURN = r"""
_value:
  description: One entry per logical image.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_index import build_indexes


def catalogue_build_indexes(builds):
    try:
        return build_indexes(list(builds or []))
    except (KeyError, TypeError) as err:
        raise AnsibleFilterError("catalogue_build_indexes: a build lacks %s" % err)


class FilterModule:
    def filters(self):
        return {"catalogue_build_indexes": catalogue_build_indexes}
