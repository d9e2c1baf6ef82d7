# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_platform_features filter: each compute node's platform as Slurm node features."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_platform_features
short_description: Each compute node's architecture, CPU level, CUDA, driver and GPU compute capabilities as Slurm features
version_added: 0.3.0
description:
  - Turns the GPU facts (M(hpc.gpu_containers.gpu_facts)) of each compute node into Slurm node features
    (C(Features) in slurm.conf), the analogue of the LSF platform resources - its architecture (C(x86_64),
    C(ppc64le)), CPU level (C(x86-64-v3), C(POWER9)), C(cuda12.2) (the newest CUDA its driver supports),
    C(nvidia535) (the driver branch) and C(sm_80) for each compute capability of its GPUs. Jobs ask for them with
    C(sbatch -C "sm_80&cuda12.2").
  - The words are those of the image catalogue's registry index, so a constraint and a variant's requirements say
    the same thing.
  - Returns the pattern of the features it writes too, for M(hpc.gpu_containers.slurm_conf)'s
    O(hpc.gpu_containers.slurm_conf#module:owned_features) - a site's own features of a node are kept.
  - A node without GPU facts (not reached in this run) is left out, so its line stays as it is.
options:
  _input:
    description: Slurm node name to inventory host name.
    type: dict
    required: true
  hostvars:
    description: C(hostvars); each host's C(ansible_facts.gpu_facts) is read from it.
    type: dict
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The compute nodes' platform as Slurm features (the site's own features of each node kept)
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    nodes: "{{ features.nodes }}"
    owned_features: "{{ features.owned }}"
  vars:
    features: "{{ {'gpu01': 'gpu01.example.org'} | hpc.gpu_containers.slurm_platform_features(hostvars) }}"
"""

RETURN = r"""
_value:
  description: C(nodes), Slurm node name to C({Features - the node's features, comma-separated}) (as
    M(hpc.gpu_containers.slurm_conf) takes O(hpc.gpu_containers.slurm_conf#module:nodes)), and C(owned), the regular
    expression that matches every feature this filter writes.
  type: dict
  sample:
    nodes: {gpu01: {Features: "x86_64,x86-64-v3,cuda12.2,nvidia535,sm_80"}}
    owned: "\\A(?:x86_64|ppc64le|aarch64|x86-64-v[1-4]|POWER[0-9]+|cuda[0-9]+\\.[0-9]+|nvidia[0-9]+|sm_[0-9]+)\\Z"
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._hostvars import facts_of
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import ImageCatalogueError, platform
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_platforms import SLURM_FEATURES_OWNED, slurm_features


def slurm_platform_features(host_of, hostvars):
    if not isinstance(host_of, Mapping):
        raise AnsibleFilterError("slurm_platform_features: expected a mapping of Slurm node names to inventory hosts, "
                                 "got %s" % type(host_of).__name__)
    nodes = {}
    for name, host in host_of.items():
        facts = facts_of(hostvars, host).get("gpu_facts")
        if not isinstance(facts, Mapping):
            continue
        try:
            nodes[name] = {"Features": ",".join(slurm_features(platform(dict(facts))))}
        except ImageCatalogueError as err:
            raise AnsibleFilterError("slurm_platform_features: %s: %s" % (name, err))
    return {"nodes": nodes, "owned": SLURM_FEATURES_OWNED}


class FilterModule:
    def filters(self):
        return {"slurm_platform_features": slurm_platform_features}
