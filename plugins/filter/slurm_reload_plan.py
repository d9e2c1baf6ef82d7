# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_reload_plan filter: which reloads a change of the Slurm configuration needs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_reload_plan
short_description: Which reloads a change of slurm.conf, gres.conf or the docker group needs
version_added: 0.3.0
description:
  - GRES and GresTypes are read by slurmctld and slurmd at start only (C(scontrol reconfigure) leaves the nodes
    without them), and slurmctld caches users' groups until it restarts. So a node whose GPUs changed, a changed
    GresTypes (every node) or a changed docker group membership needs restarts - slurmd of the changed nodes
    around slurmctld - and any other change of the files a reconfigure.
  - Returns C(restart), C(nodes) (the compute nodes whose slurmd restarts, inventory names), C(reconfigure),
    C(check_nodes) (the nodes whose copy of the new files C(slurmd -G) checks before anything is reloaded) and
    C(gpus) (each node's GPU count, Slurm names).
options:
  _input:
    description: The compute nodes (P(hpc.gpu_containers.slurm_compute_nodes#filter)).
    type: dict
    required: true
  gres:
    description: The gres.conf edits (P(hpc.gpu_containers.slurm_gres_edits#filter)).
    type: dict
    required: true
  slurm_conf:
    description: The registered result of slurm.conf's edit (M(hpc.gpu_containers.slurm_conf)).
    type: dict
    required: true
  copies:
    description: The registered loops of the edits of other hosts' copies of the files.
    type: list
    elements: dict
    default: []
  membership:
    description: The registered loop of the docker group membership changes.
    type: dict
    default: {}
  force:
    description: Reload whether or not anything changed.
    type: bool
    default: false
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Work out which reloads the changes need
  ansible.builtin.set_fact:
    plan: >-
      {{ nodes | hpc.gpu_containers.slurm_reload_plan(gres=gres_edits, slurm_conf=slurm_conf_result,
         membership=membership_result) }}
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    restart:
      description: Restart slurmctld (and slurmd of O(_input)'s C(nodes)).
      type: bool
    nodes:
      description: The compute nodes whose slurmd restarts.
      type: list
      elements: str
    reconfigure:
      description: Run C(scontrol reconfigure) (when nothing restarts).
      type: bool
    check_nodes:
      description: The nodes whose copy of the new files is checked first.
      type: list
      elements: str
    gpus:
      description: Each node's GPU count.
      type: dict
"""

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_cluster import reload_plan


def slurm_reload_plan(nodes, gres, slurm_conf, copies=None, membership=None, force=False):
    return reload_plan(nodes, gres, slurm_conf or {}, list(copies or []), membership or {},
                       boolean(force, strict=False))


class FilterModule:
    def filters(self):
        return {"slurm_reload_plan": slurm_reload_plan}
