# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lsf_image_applications filter: one Docker application profile per logical image of the catalogue."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lsf_image_applications
short_description: One Docker application profile per logical image of the image catalogue
version_added: 0.3.0
description:
  - Turns the lsf_docker role's C(lsf_docker_image_applications) into lsb.applications profiles for
    M(hpc.gpu_containers.lsf_application) - each runs the node's own variant of its logical image
    (P(hpc.gpu_containers.node_image#filter)), or with O(job_start) C($LSB_CONTAINER_IMAGE), which the profile's
    own starter (C(<starter_dir>/lsf-docker-starter-<name>.py)) resolves; its options are the default profiles',
    then the NGC options (unless the entry says C(ngc=false)), then its own; its parameters the defaults updated
    by its own.
options:
  _input:
    description: The entries (C(name), C(image), optional C(description), C(ngc), C(options), C(parameters)).
    type: list
    elements: dict
    required: true
  options:
    description: The default profiles' docker run options.
    type: list
    elements: str
    required: true
  ngc_options:
    description: The NGC options.
    type: list
    elements: str
    default: []
  options_scripts:
    description: The options scripts every profile runs.
    type: list
    elements: str
    default: []
  runtime:
    description: The container runtime of the profiles.
    type: str
    default: docker
  parameters:
    description: The default lsb.applications parameters.
    type: dict
    default: {}
  exec_driver:
    description: The EXEC_DRIVER of the default profiles (its C(starter) is replaced by the profile's own).
    type: dict
    required: true
  starter_dir:
    description: The directory of the profiles' starters.
    type: str
    required: true
  job_start:
    description: Resolve the image at job start (C(lsf_docker_image_selection=job_start)).
    type: bool
    default: false
  node_repository:
    description: The repository of the node's own variants.
    type: str
    default: localhost/hpc-node
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The image profiles
  ansible.builtin.debug:
    msg: >-
      {{ [{'name': 'pytorch', 'image': 'hpc/pytorch:24.05'}] | hpc.gpu_containers.lsf_image_applications(
           options=['--rm'], exec_driver={'user': 'default'}, starter_dir='/usr/share/lsf/conf/docker') }}
"""

RETURN = r"""
_value:
  description: The profiles, in the input's order.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import (
    DEFAULT_NODE_REPOSITORY, CatalogueError, node_image)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_profiles import image_applications


def lsf_image_applications(apps, options, exec_driver, starter_dir, ngc_options=(), options_scripts=(),
                           runtime="docker", parameters=None, job_start=False,
                           node_repository=DEFAULT_NODE_REPOSITORY):
    try:
        return image_applications(list(apps or []), list(options), list(ngc_options or []),
                                  list(options_scripts or []), runtime, dict(parameters or {}), dict(exec_driver),
                                  starter_dir, boolean(job_start, strict=False),
                                  lambda image: node_image(image, node_repository))
    except CatalogueError as err:
        raise AnsibleFilterError("lsf_image_applications: %s" % err)
    except (KeyError, TypeError) as err:
        raise AnsibleFilterError("lsf_image_applications: an entry lacks %s" % err)


class FilterModule:
    def filters(self):
        return {"lsf_image_applications": lsf_image_applications}
