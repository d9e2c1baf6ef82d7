# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_gres_edits filter: what the gres.conf edits did, for slurm.conf and the reloads."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_gres_edits
short_description: What the gres.conf edits of a run did - the nodes' Gres for slurm.conf, the changed nodes
version_added: 0.3.0
description:
  - Reads the registered result of the one gres.conf's edit (M(hpc.gpu_containers.slurm_gres)) or, with
    O(per_node), the loop of each node's own edit, and returns each node's C(Gres) for slurm.conf
    (C(node_attributes)), the nodes whose GPUs changed (C(changed_nodes), Slurm names), whether any edit changed
    (C(changed)) and which way it was made (C(per_node)).
options:
  _input:
    description: The registered result of the one gres.conf's edit (skipped in per-node mode).
    type: dict
    required: true
  per_node_results:
    description: The registered loop of each node's own edit (per-node mode).
    type: dict
    default: {}
  per_node:
    description: Whether each node has its own gres.conf.
    type: bool
    default: false
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The nodes' Gres in slurm.conf
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    nodes: "{{ (gres_result | hpc.gpu_containers.slurm_gres_edits).node_attributes }}"
"""

RETURN = r"""
_value:
  description: The edits.
  type: dict
  contains:
    node_attributes:
      description: Slurm name to C({Gres - value}).
      type: dict
    changed_nodes:
      description: The nodes whose GPUs changed.
      type: list
      elements: str
    changed:
      description: Whether an edit changed a file.
      type: bool
    per_node:
      description: O(per_node).
      type: bool
"""

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_cluster import gres_edits


def slurm_gres_edits(single, per_node_results=None, per_node=False):
    return gres_edits(single, per_node_results or {}, boolean(per_node, strict=False))


class FilterModule:
    def filters(self):
        return {"slurm_gres_edits": slurm_gres_edits}
