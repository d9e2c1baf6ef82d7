# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_gpu_map filter: a node's GPUs in the order Slurm numbers them."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_gpu_map
short_description: A node's GPUs in the order Slurm numbers them, with their UUIDs
version_added: 0.2.0
description:
  - Takes the C(gpus) list of M(hpc.gpu_containers.gpu_facts) and returns one entry per GPU, C(index) (Slurm's GPU
    index on the node, as in C(SLURM_JOB_GPUS) and C(SLURM_STEP_GPUS)), C(uuid) and C(file) (C(/dev/nvidia<minor>)).
  - The order is the one Slurm's gres/gpu plugin gives a node's gres.conf lines (by type, then device file), the
    same M(hpc.gpu_containers.slurm_gres) writes, so the job side can turn Slurm's indices into UUIDs.
options:
  _input:
    description: The GPUs (C(gpu_facts.gpus)).
    type: list
    elements: dict
    required: true
  typed:
    description: Whether gres.conf gives the GPUs a C(Type) (O(hpc.gpu_containers.slurm_gres#module:typed)).
    type: bool
    default: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Write the GPU map srun-docker reads
  ansible.builtin.copy:
    content: "{{ ansible_facts.gpu_facts.gpus | hpc.gpu_containers.slurm_gpu_map | to_nice_json }}"
    dest: /etc/srun-docker/gpus.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: "[{index, uuid, file}] in Slurm's index order."
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_gres import gpu_gres


def slurm_gpu_map(gpus, typed=True):
    try:
        return gpu_gres(list(gpus or []), typed)[2]
    except (ValueError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError("slurm_gpu_map: %s" % exc)


class FilterModule:
    def filters(self):
        return {"slurm_gpu_map": slurm_gpu_map}
