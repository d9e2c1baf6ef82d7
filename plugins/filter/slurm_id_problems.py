# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_id_problems filter: where a Slurm cluster's hosts disagree on the docker group and the job users."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_id_problems
short_description: Where a Slurm cluster's hosts disagree on the docker group's id and the job users' uid:gid
version_added: 0.3.0
description:
  - slurmctld hands a job the group ids of the controller, and a job runs as the same uid on every node. Returns one
    sentence per disagreement - the docker group with different ids, a compute node without it (not in check
    mode), a job user missing on some host, a job user with different uid:gid - and an empty list when the hosts
    agree.
options:
  _input:
    description:
      - "Each host's ids: host name to C(docker_gid) (V(null) without the group) and C(users), which maps each job
        user to C(uid:gid) or V(null) (P(hpc.gpu_containers.passwd_ids#filter))."
    type: dict
    required: true
  users:
    description: The job users.
    type: list
    elements: str
    required: true
  node_hosts:
    description: The compute nodes (the hosts that must have the docker group).
    type: list
    elements: str
    required: true
  group:
    description: The docker group's name.
    type: str
    default: docker
  with_docker:
    description: Whether Docker is among the engines (else the docker group is not checked).
    type: bool
    default: true
  check_mode:
    description: In check mode a node without the docker group is not a problem (Docker may be still to come).
    type: bool
    default: false
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Check that the Slurm hosts agree
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join(' ') }}"
  vars:
    problems: "{{ ids_by_host | hpc.gpu_containers.slurm_id_problems(['alice'], groups['slurm_nodes']) }}"
"""

RETURN = r"""
_value:
  description: One sentence per disagreement.
  type: list
  elements: str
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_ids import id_problems


def slurm_id_problems(ids_by_host, users, node_hosts, group="docker", with_docker=True, check_mode=False):
    if not isinstance(ids_by_host, Mapping):
        raise AnsibleFilterError("slurm_id_problems: expected {host: ids}, got %s" % type(ids_by_host).__name__)
    return id_problems(ids_by_host, list(users or []), list(node_hosts or []), group, with_docker, check_mode)


class FilterModule:
    def filters(self):
        return {"slurm_id_problems": slurm_id_problems}
