# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_image filter: the local name a node keeps its variant of a logical image under."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_image
short_description: The local name under which each node keeps its variant of a logical image
version_added: 0.3.0
description:
  - Takes a logical image name of the image catalogue and returns C(<repository>/<name in lower case>:node), the
    name the C(image_variants) role's C(node) entry point tags each node's variant with, and which LSF profiles,
    srun-docker and a plain C(docker run) name.
  - Fails when the repository does not start with a registry host (C(localhost), a name with a dot, or
    C(host:port)), or when the name cannot be a Docker repository name.
options:
  _input:
    description: The logical image name.
    type: str
    required: true
  repository:
    description: The node image repository (C(image_variants_node_repository)).
    type: str
    default: localhost/hpc-node
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The image an LSF profile names for the logical image deeplearning
  ansible.builtin.debug:
    msg: "{{ 'deeplearning' | hpc.gpu_containers.node_image }}"   # localhost/hpc-node/deeplearning:node
"""

RETURN = r"""
_value:
  description: The node image name.
  type: str
  sample: localhost/hpc-node/deeplearning:node
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import (
    DEFAULT_NODE_REPOSITORY, CatalogueError, node_image as _node_image)


def node_image(logical_name, repository=DEFAULT_NODE_REPOSITORY):
    try:
        return _node_image(logical_name, repository)
    except CatalogueError as err:
        raise AnsibleFilterError("node_image: %s" % err)


class FilterModule:
    def filters(self):
        return {"node_image": node_image}
