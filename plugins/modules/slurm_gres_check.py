#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_gres_check
short_description: Check a new slurm.conf and gres.conf with slurmd on a compute node, before Slurm is reloaded
version_added: 0.2.0
description:
  - Writes O(slurm_conf) and O(gres_conf) to a private temporary directory and runs C(slurmd -G -f <slurm.conf>
    -N <node>) there - slurmd reads both files as it would at its start (a syntax error is fatal) and lists the GPUs
    it would offer, looking at this node's device files. So it runs on the compute node, with the files the
    controller is about to use.
  - Fails, with slurmd's own error lines, when slurmd exits with an error, and, with O(gpus), when it lists another
    number of GPUs. Changes nothing.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  slurm_conf:
    description: The text of the new slurm.conf.
    type: str
    required: true
  gres_conf:
    description: The text of the new gres.conf (none when empty).
    type: str
    default: ""
  node:
    description: The Slurm node name of this host (C(slurmd -N)).
    type: str
    required: true
  gpus:
    description: How many GPUs slurmd must list for O(node); not checked when omitted.
    type: int
  slurmd:
    description: The slurmd command.
    type: str
    default: slurmd
  error_hint:
    description: What the failure message tells the user to do next.
    type: str
    default: correct the error, then run again.
extends_documentation_fragment:
  - hpc.gpu_containers.read_only
seealso:
  - module: hpc.gpu_containers.slurm_node_check
"""

EXAMPLES = r"""
- name: Check the new files on a GPU node before slurmctld is restarted
  hpc.gpu_containers.slurm_gres_check:
    slurm_conf: "{{ new_slurm_conf }}"
    gres_conf: "{{ new_gres_conf }}"
    node: slurm-n1
    gpus: 2
  delegate_to: slurm-n1
"""

RETURN = r"""
gpus:
  description: The GPUs slurmd listed (its C(Gres Name=gpu) lines).
  returned: when slurmd ran without an error
  type: int
output:
  description: slurmd's output.
  returned: always
  type: str
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _slurm_nodes


def main():
    module = AnsibleModule(
        argument_spec={
            "slurm_conf": {"type": "str", "required": True},
            "gres_conf": {"type": "str", "default": ""},
            "node": {"type": "str", "required": True},
            "gpus": {"type": "int"},
            "slurmd": {"type": "str", "default": "slurmd"},
            "error_hint": {"type": "str", "default": "correct the error, then run again."},
        },
        supports_check_mode=True,
    )
    params = module.params
    directory = tempfile.mkdtemp(prefix="hpc-slurm-check-")
    try:
        conf = os.path.join(directory, "slurm.conf")
        for name, text in (("slurm.conf", params["slurm_conf"]), ("gres.conf", params["gres_conf"])):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        rc, out, err = module.run_command([params["slurmd"], "-G", "-f", conf, "-N", params["node"]])
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    output = "\n".join(part.strip("\n") for part in (out, err) if part and part.strip())
    problem = _slurm_nodes.slurmd_gres_problem(params["node"], rc, output, params["gpus"])
    if problem:
        module.fail_json(msg="%s. Nothing was reloaded. The edited files are in place: %s" % (problem, params["error_hint"]),
                         output=output)
    module.exit_json(changed=False, gpus=_slurm_nodes.slurmd_gpus(output),
                     output=output)


if __name__ == "__main__":
    main()
