# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site_batches filter: how site.yml cuts the Docker hosts into batches."""

from __future__ import annotations

DOCUMENTATION = r"""
name: site_batches
short_description: How site.yml cuts the Docker hosts into batches (its play's serial)
version_added: 0.3.0
description:
  - On a live cluster the Docker hosts go through the roles a batch at a time, the registry host(s) alone first,
    then batches of O(serial) (or O(default_serial)), so that a change which restarts dockerd closes one batch at
    a time. Every host goes in one batch when nothing can be restarted and the registry builds nothing the others
    pull - check mode, no Docker host of the run needing a change, a new cluster without an engine anywhere and
    without an image catalogue.
  - Returns C(first) (the size of the first batch) and C(rest) (the size of the others), for the play's C(serial).
options:
  _input:
    description: The Docker hosts of the inventory (C(groups['docker_hosts'])).
    type: list
    elements: str
    required: true
  registry_hosts:
    description: The registry hosts (C(groups['registry'])).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  socket_var:
    description: The name of the registered C(stat) of C(/var/run/docker.sock) on each Docker host of the run.
    type: str
    required: true
  check_mode:
    description: C(ansible_check_mode).
    type: bool
    default: false
  run_tags:
    description: C(ansible_run_tags).
    type: list
    elements: str
    default: [all]
  skip_tags:
    description: C(ansible_skip_tags).
    type: list
    elements: str
    default: []
  serial:
    description: The site's batch size (C(hpc_site_serial)); V(null) when not given. Given, it always applies.
    type: raw
  default_serial:
    description: The batch size when the site gives none and hosts may restart.
    type: raw
    default: 25%
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Docker hosts, a batch at a time
  hosts: docker_hosts
  serial:
    - "{{ plan.first }}"
    - "{{ plan.rest }}"
  vars:
    plan: >-
      {{ groups['docker_hosts'] | hpc.gpu_containers.site_batches(groups['registry'], hostvars, 'docker_socket',
         check_mode=ansible_check_mode, serial=hpc_site_serial | default(none)) }}
  roles:
    - hpc.gpu_containers.docker_engine
"""

RETURN = r"""
_value:
  description: The batch sizes.
  type: dict
  contains:
    first:
      description: The first batch (the registry hosts alone, or V(100%)).
      type: raw
    rest:
      description: Every later batch.
      type: raw
"""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._site_batches import batch_plan


def site_batches(docker_hosts, registry_hosts, hostvars, socket_var, check_mode=False, run_tags=None, skip_tags=None,
                 serial=None, default_serial="25%"):
    return batch_plan(list(docker_hosts or []), list(registry_hosts or []), hostvars, socket_var, bool(check_mode),
                      list(run_tags if run_tags is not None else ["all"]), list(skip_tags or []), serial,
                      default_serial)


class FilterModule:
    def filters(self):
        return {"site_batches": site_batches}
