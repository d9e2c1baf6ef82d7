#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_conf
short_description: Set parameters, node and partition attributes in a Slurm slurm.conf file
description:
  - Sets or removes global parameters (C(Key=value)) and attributes of C(NodeName) and C(PartitionName) lines in
    C(slurm.conf), in place.
  - Lines the edit does not touch come back byte-identical (comments, blank lines, continued lines, C(include)
    lines); a changed value keeps its place on the line and the line's trailing comment.
  - Keys are matched case-insensitively, as Slurm reads them; node and partition names exactly. A global
    parameter defined more than once is updated where it is defined last (the definition Slurm uses), with a
    warning.
  - Node names may be host lists (C(gpu[01-04])). When only some nodes of such a line change, the line is split
    - the unchanged nodes keep it, the others get lines of their own right after it, with the same attributes.
    C(NodeName=DEFAULT) lines are taken into account - a value a DEFAULT line already gives is no change.
  - The C(Gres) attribute of a node is a list of GRES; a value given replaces only the GRES names it names
    (C(gpu:a100:4) replaces the node's C(gpu) entries and keeps C(nic:1)); C(gpu:0) removes them.
  - Values that Slurm cannot read back the same (double quotes, C(#), backslashes, line breaks) are refused with
    the key named, before the file is read. Malformed files fail with C(path:line) and are left as they were.
version_added: 0.2.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of C(slurm.conf). It must exist.
    type: path
    required: true
    aliases: [dest]
  settings:
    description:
      - Global parameters, as a mapping C(Key) to value; C(null) removes every definition of the key.
      - Booleans become C(YES)/C(NO), numbers their decimal text, lists are joined with commas.
    type: dict
    default: {}
  list_keys:
    description:
      - Parameters whose value is a comma-separated set. The words given are added to the file's words
        (kept in the file's order); the same words in another order are no change.
    type: list
    elements: str
    default: [GresTypes]
  keep_existing:
    description:
      - Parameters set only when the file lacks them. A different value in the file is kept, with a warning
        (for example a site's own C(Epilog)).
    type: list
    elements: str
    default: []
  nodes:
    description:
      - Attributes of C(NodeName) records, as a mapping node name to a mapping C(Key) to value
        (C(null) removes the attribute from the node's line).
    type: dict
    default: {}
  partitions:
    description:
      - Attributes of C(PartitionName) records, as a mapping partition name to attributes.
    type: dict
    default: {}
  create_missing:
    description:
      - Add a C(NodeName)/C(PartitionName) line for a name the file does not define. When false, such a name
        fails the task.
    type: bool
    default: false
attributes:
  platform:
    support: full
    platforms: posix
    description: The host that holds slurm.conf (the controller, or every node where each has a copy).
notes:
  - Slurm reads the file only when told to; use RV(changed_keys) and RV(changed_nodes) to decide between
    C(scontrol reconfigure) and restarting the daemons.
seealso:
  - module: hpc.gpu_containers.slurm_gres
"""

EXAMPLES = r"""
- name: GPUs as GRES, and the epilog directory
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    settings:
      GresTypes: gpu
      Epilog: /etc/slurm/epilog.d/*
    keep_existing: [Epilog]
    nodes:
      gpu01: {Gres: "gpu:tesla_v100-sxm2-16gb:2"}
      gpu02: {Gres: "gpu:nvidia_a100-sxm4-40gb:4"}
    backup: true

- name: Remove a parameter
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    settings:
      HealthCheckProgram: null
"""

RETURN = r"""
changed_keys:
  description: Global parameters that were (or in check mode would be) set or removed.
  returned: always
  type: list
  elements: str
  sample: [GresTypes]
changed_nodes:
  description: Nodes whose attributes were (or would be) changed or added.
  returned: always
  type: list
  elements: str
  sample: [gpu01, gpu02]
changed_partitions:
  description: Partitions whose attributes were (or would be) changed or added.
  returned: always
  type: list
  elements: str
  sample: []
settings:
  description: The effective value of every parameter given, after the edit (C(null) when absent).
  returned: always
  type: dict
  sample: {GresTypes: gpu, Epilog: /etc/slurm/epilog.d/*}
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/slurm/slurm.conf.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, model_errors, run_edit, text_value
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_conf import (
    SlurmSyntaxError,
    check_value,
    parameters,
    set_parameters,
    set_records,
)


def normalize(name, value):
    """Ansible value -> slurm.conf text (None stays None)."""
    return text_value(name, value, "YES", "NO", ",")


def normalize_records(kind, records):
    out = {}
    for name, attrs in (records or {}).items():
        if not isinstance(attrs, dict):
            raise ValueError("%s %s: the attributes must be a mapping" % (kind, name))
        out[str(name)] = {}
        for key, value in attrs.items():
            out[str(name)][key] = normalize("%s %s %s" % (kind, name, key), value)
            if out[str(name)][key] is not None:
                check_value(key, out[str(name)][key])
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            settings=dict(type="dict", default={}),
            list_keys=dict(type="list", elements="str", default=["GresTypes"], no_log=False),
            keep_existing=dict(type="list", elements="str", default=[]),
            nodes=dict(type="dict", default={}),
            partitions=dict(type="dict", default={}),
            create_missing=dict(type="bool", default=False),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    try:
        settings = {}
        for name, value in module.params["settings"].items():
            settings[name] = normalize(name, value)
            if settings[name] is not None:
                check_value(name, settings[name])
        nodes = normalize_records("NodeName", module.params["nodes"])
        partitions = normalize_records("PartitionName", module.params["partitions"])
    except ValueError as err:
        module.fail_json(msg="%s: %s" % (path, err), path=path)

    outcome = {}

    def compute(text):
        with model_errors(path, SlurmSyntaxError):
            text, changed_keys, warnings = set_parameters(text, settings, list_keys=module.params["list_keys"],
                                                          keep_existing=module.params["keep_existing"])
            text, changed_nodes, more = set_records(text, "NodeName", nodes, module.params["create_missing"])
            warnings += more
            text, changed_partitions, more = set_records(text, "PartitionName", partitions,
                                                         module.params["create_missing"])
            warnings += more
            effective = dict((k.lower(), v) for k, v in parameters(text).items())
        outcome.update(changed_keys=changed_keys, changed_nodes=changed_nodes, changed_partitions=changed_partitions,
                       settings=dict((name, effective.get(name.lower())) for name in settings))
        return text, warnings

    result = run_edit(module, path, compute)
    result.update(outcome)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
