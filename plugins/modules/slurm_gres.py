#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_gres
short_description: Describe nodes' GPUs in a Slurm gres.conf file, from their GPU facts
description:
  - Makes the C(Name=gpu) lines of each node given in C(gres.conf) describe exactly that node's GPUs, as
    M(hpc.gpu_containers.gpu_facts) found them - one line per GPU, C(NodeName=<node> Name=gpu Type=<type>
    File=/dev/nvidia<minor>), in the order Slurm numbers a node's GPUs (by type, then device file), so that
    Slurm's GPU index I (C(SLURM_JOB_GPUS), C(SLURM_STEP_GPUS)) is the I-th line of the node.
  - The type is the GPU's name as Slurm's C(AutoDetect=nvml) spells it (C(NVIDIA A100-SXM4-40GB) becomes
    C(nvidia_a100-sxm4-40gb)); O(typed=false) leaves types out.
  - What a node has is compared by meaning, not text - device ranges (C(File=/dev/nvidia[0-3])), C(Count), node
    ranges (C(NodeName=gpu[01-04])) and several nodes on one line are read as the GPUs they give each node; the same
    GPUs in another spelling are no change (the file stays byte-identical).
  - When a node's GPUs differ, only that node's lines change. A GPU that stays keeps its line and the site's own
    settings on it (C(CPUs), C(Cores), C(Links), C(Flags), C(AutoDetect), C(MultipleFiles), any other key); an own
    line whose GPUs all stay is edited in place (its trailing comment stays), one whose GPUs partly go is replaced
    by one line per GPU that stays, with the same settings. A line naming several nodes loses the node from its
    C(NodeName) list and the other nodes keep it as it was; lines of other nodes, other GRES and comments stay
    byte-identical.
  - A C(Name=gpu) line without C(NodeName) gives its GPUs to every node that reads the file. In a per-node file
    (O(per_node)) such lines are the node's own and are edited; otherwise they fail the task with C(path:line).
  - Returns the C(Gres) value for each node's C(slurm.conf) line (RV(gres)) and the GPUs by Slurm index
    (RV(devices)), so M(hpc.gpu_containers.slurm_conf) and the job side agree with the file.
version_added: 0.2.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of C(gres.conf), in the directory of C(slurm.conf). Created (mode 0644) when missing.
    type: path
    required: true
    aliases: [dest]
  nodes:
    description:
      - Slurm node name to the node's GPUs, each a mapping with C(name), C(uuid) and C(minor_number) (the
        C(gpus) list of M(hpc.gpu_containers.gpu_facts)). An empty list removes the node's C(gpu) lines.
      - A node name is letters, digits, C(.), C(_) and C(-); any other name (a blank, a line break) fails the task
        before the file is read.
    type: dict
    required: true
  typed:
    description:
      - Give every line a C(Type) (the GPU's model), so jobs can ask for C(--gres=gpu:<type>:N).
    type: bool
    default: true
  per_node:
    description:
      - The file is one node's own C(gres.conf) (each node keeps its own copy, its lines without C(NodeName)).
        O(nodes) must then name that one node; its lines are those without C(NodeName) and those naming it, and new
        lines are written without C(NodeName).
      - When not given, a file with C(Name=gpu) lines none of which has a C(NodeName) is taken as per node if
        O(nodes) names one node; C(false) always refuses lines without C(NodeName).
    type: bool
    version_added: 0.2.0
attributes:
  platform:
    support: full
    platforms: posix
    description: The host that holds gres.conf (the controller in configless mode or with a shared directory).
seealso:
  - module: hpc.gpu_containers.slurm_conf
  - module: hpc.gpu_containers.gpu_facts
"""

EXAMPLES = r"""
- name: Describe the GPU nodes' GPUs in gres.conf
  hpc.gpu_containers.slurm_gres:
    path: /etc/slurm/gres.conf
    nodes:
      gpu01: "{{ hostvars['gpu01'].ansible_facts.gpu_facts.gpus }}"
      gpu02: "{{ hostvars['gpu02'].ansible_facts.gpu_facts.gpus }}"
  register: gres

- name: A node's own gres.conf (each node keeps its copy, without NodeName)
  hpc.gpu_containers.slurm_gres:
    path: /etc/slurm/gres.conf
    per_node: true
    nodes: "{{ {slurm_node_name: ansible_facts.gpu_facts.gpus} }}"

- name: And the matching Gres of the nodes in slurm.conf
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    settings: {GresTypes: gpu}
    nodes: "{{ gres.node_attributes }}"
"""

RETURN = r"""
changed_nodes:
  description: Nodes whose lines were (or in check mode would be) changed.
  returned: always
  type: list
  elements: str
  sample: [gpu02]
gres:
  description: For each node, the C(Gres=) value of its C(slurm.conf) line (C(gpu:0) for a node without GPUs).
  returned: always
  type: dict
  sample: {gpu01: "gpu:tesla_v100-sxm2-16gb:2", gpu02: "gpu:nvidia_a100-sxm4-40gb:4"}
node_attributes:
  description: RV(gres) as the O(hpc.gpu_containers.slurm_conf#module:nodes) option of M(hpc.gpu_containers.slurm_conf) takes it.
  returned: always
  type: dict
  sample: {gpu01: {Gres: "gpu:tesla_v100-sxm2-16gb:2"}}
devices:
  description: For each node, its GPUs in Slurm's index order, with UUID and device file.
  returned: always
  type: dict
  sample:
    gpu01:
      - {index: 0, uuid: GPU-29017365-4723-b07f-2ddf-a631c231412d, file: /dev/nvidia0}
      - {index: 1, uuid: GPU-fd2c28fd-ba69-958e-e127-93e5f585e4f6, file: /dev/nvidia1}
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/slurm/gres.conf.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, input_errors, model_errors, run_edit
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_gres import gpu_gres, set_gres
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_syntax import SlurmSyntaxError, check_node_name


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            nodes=dict(type="dict", required=True),
            typed=dict(type="bool", default=True),
            per_node=dict(type="bool"),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    records, gres, devices = {}, {}, {}
    with input_errors(module, path):
        if module.params["per_node"] and len(module.params["nodes"]) != 1:
            raise ValueError("per_node: a per-node gres.conf describes one node; %d are given"
                             % len(module.params["nodes"]))
        for node, gpus in module.params["nodes"].items():
            check_node_name("nodes", node)
            if not isinstance(gpus, list) or not all(isinstance(gpu, dict) for gpu in gpus):
                raise ValueError("nodes.%s must be a list of GPUs (gpu_facts gpus)" % node)
            records[node], gres[node], devices[node] = gpu_gres(gpus, module.params["typed"])

    outcome = {}

    def compute(text):
        with model_errors(path, SlurmSyntaxError):
            new_text, changed_nodes, warnings = set_gres(text or "", records, per_node=module.params["per_node"])
        outcome["changed_nodes"] = changed_nodes
        if text is None and not changed_nodes:
            return None, warnings
        return new_text, warnings

    result = run_edit(module, path, compute, create=True)
    result.update(outcome, gres=gres, devices=devices,
                  node_attributes=dict((node, {"Gres": value}) for node, value in gres.items()))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
