#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node_check
short_description: Wait until Slurm's compute nodes have registered, and check that each has its GPUs
version_added: 0.2.0
description:
  - Asks slurmctld (C(scontrol --oneliner show node <nodes>)) every O(delay) seconds until each of O(nodes) has
    registered (its state is no longer C(UNKNOWN) or C(NOT_RESPONDING)), or until O(timeout). A node drained or
    refused for its GRES is not waited for - that state does not change by itself.
  - Then fails, naming each, when a node is not known to slurmctld, has not registered, shows another number of
    GPUs in its C(Gres) than O(gpus) gives it (with O(gres)), or was drained for its GRES. Changes nothing.
  - Run it on the Slurm controller after slurmctld was restarted or reconfigured.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  nodes:
    description: Slurm node names.
    type: list
    elements: str
    required: true
  gpus:
    description: GPUs per node name; a node not named here must show none.
    type: dict
    default: {}
  gres:
    description: Check each node's GPU count (off when Slurm does not manage GPUs as GRES).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the nodes to register.
    type: int
    default: 120
  delay:
    description: Seconds between two questions to slurmctld.
    type: int
    default: 3
  scontrol:
    description: The scontrol command.
    type: str
    default: scontrol
extends_documentation_fragment:
  - hpc.gpu_containers.read_only
seealso:
  - module: hpc.gpu_containers.slurm_gres_check
"""

EXAMPLES = r"""
- name: Every compute node back, with its GPUs
  hpc.gpu_containers.slurm_node_check:
    nodes: [slurm-n1, slurm-n2]
    gpus: {slurm-n1: 2, slurm-n2: 4}
    timeout: 120
"""

RETURN = r"""
nodes:
  description: What slurmctld showed of each node at the end - name, state, gres, gpus, reason.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "slurm-n1", "state": "IDLE", "gres": "gpu:tesla_v100-sxm2-16gb:2", "gpus": 2, "reason": null}]
waited:
  description: Seconds spent waiting for the nodes to register.
  returned: always
  type: float
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _slurm_nodes


def main():
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "str", "required": True},
            "gpus": {"type": "dict", "default": {}},
            "gres": {"type": "bool", "default": True},
            "timeout": {"type": "int", "default": 120},
            "delay": {"type": "int", "default": 3},
            "scontrol": {"type": "str", "default": "scontrol"},
        },
        supports_check_mode=True,
    )
    params = module.params
    names = params["nodes"]
    try:
        gpus = {name: int(count) for name, count in params["gpus"].items()}
    except (TypeError, ValueError):
        module.fail_json(msg="gpus: each value must be a number of GPUs, got %r" % (params["gpus"],))
    began = time.monotonic()
    while True:
        rc, out, err = module.run_command([params["scontrol"], "--oneliner", "show", "node", ",".join(names)])
        nodes = _slurm_nodes.parse_nodes(out)
        if rc == 0 and not _slurm_nodes.waiting(nodes, names):
            break
        if time.monotonic() - began + params["delay"] > params["timeout"]:
            break
        time.sleep(params["delay"])
    result = {"changed": False, "nodes": nodes, "waited": round(time.monotonic() - began, 1)}
    found = _slurm_nodes.problems(nodes, names, gpus, params["gres"])
    if found:
        detail = (" scontrol: %s" % (err or out).strip()) if rc != 0 and not nodes else ""
        module.fail_json(msg="After the reload Slurm does not show these nodes with their GPUs, or drained them: %s.%s"
                         % ("; ".join(found), detail), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
