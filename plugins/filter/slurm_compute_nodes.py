# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_compute_nodes filter: each compute node's Slurm name and, where this run has facts, its GPUs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_compute_nodes
short_description: A Slurm cluster's compute nodes by Slurm name, with their GPUs where this run has facts
version_added: 0.3.0
description:
  - For the controller of a Slurm cluster - each compute node's Slurm name (its host variable
    C(slurm_docker_node_name), else its inventory name), the GPUs of the nodes that have GPU facts in this run
    (M(hpc.gpu_containers.gpu_facts); an empty list for a node without GPUs), and the nodes that have none yet (not
    in the play - C(--limit), down).
options:
  _input:
    description: The compute nodes (inventory names).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The compute nodes' GPUs in gres.conf
  hpc.gpu_containers.slurm_gres:
    path: /etc/slurm/gres.conf
    nodes: "{{ (groups['slurm_nodes'] | hpc.gpu_containers.slurm_compute_nodes(hostvars)).gpus }}"
"""

RETURN = r"""
_value:
  description: The nodes.
  type: dict
  contains:
    host_of:
      description: Slurm name to inventory name, for every node.
      type: dict
    gpus:
      description: Slurm name to the node's GPUs (gpu_facts' C(gpus)), for the nodes with GPU facts in this run.
      type: dict
    with_facts:
      description: The inventory names of the nodes with GPU facts in this run.
      type: list
      elements: str
    unseen:
      description: The inventory names of the others.
      type: list
      elements: str
"""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_cluster import compute_nodes


def slurm_compute_nodes(hosts, hostvars):
    return compute_nodes(list(hosts or []), hostvars)


class FilterModule:
    def filters(self):
        return {"slurm_compute_nodes": slurm_compute_nodes}
