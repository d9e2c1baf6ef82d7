#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lsf_resource
short_description: Define or remove a resource in the Resource section of IBM Spectrum LSF lsf.shared
description:
  - Adds, updates or removes one row of the C(Resource) section of C(lsf.shared), or several in one edit
    (O(resources)).
  - A new row is rendered against the file's own header (its columns, in its order, aligned with the
    existing rows); columns the request does not set are written empty (C(()), or C(-) where the file
    uses that). When the file has no C(Resource) section one is appended.
  - Updating an existing row changes only the attributes given, in place, keeping the row's spacing.
  - "New names are checked against IBM's rules (at most 39 characters, no leading digit, none of
    C(: . ( ) [ + - * / ! & | < > @ = ,), not starting with C(inf)/C(nan), not a reserved name such as
    C(mem), C(swp) or C(type))."
  - Every line the edit does not touch comes back byte-identical. A malformed file (a C(Begin) without
    C(End), a row whose value count does not match the header, text outside any section) fails with
    C(path:line) and is left as it was.
version_added: 0.1.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of the C(lsf.shared) file. It must exist.
    type: path
    required: true
    aliases: [dest]
  name:
    description:
      - The resource name (C(RESOURCENAME) column), case-sensitive.
      - Required unless O(resources) is given.
    type: str
  resources:
    description:
      - Several resources in one edit, instead of O(name) and its attributes. Each entry takes the keys
        C(name) (required), C(state), C(type), C(interval), C(increasing), C(consumable), C(release) and
        C(description), as the options of the same names do for one resource.
    type: list
    elements: dict
    version_added: 0.2.0
  state:
    description:
      - C(present) adds or updates the row, C(absent) removes every row with this name.
    type: str
    choices: [present, absent]
    default: present
  type:
    description:
      - The C(TYPE) column. A new row defaults to C(Boolean).
    type: str
    choices: [Boolean, Numeric, String]
  interval:
    description:
      - The C(INTERVAL) column, in seconds, for a dynamic resource reported by an ELIM.
    type: int
  increasing:
    description:
      - The C(INCREASING) column (Numeric resources only; required for a new Numeric resource).
    type: bool
  consumable:
    description:
      - The C(CONSUMABLE) column (Numeric resources only). The header must have this column.
    type: bool
  release:
    description:
      - The C(RELEASE) column (Numeric resources only). The header must have this column.
    type: bool
  description:
    description:
      - The C(DESCRIPTION) column, written in parentheses. Required when the row is new.
      - Must not contain parentheses or C(#).
    type: str
attributes:
  platform:
    support: full
    platforms: posix
    description: The LSF configuration host.
notes:
  - Run C(lsadmin reconfig) and C(badmin mbdrestart) after a change.
"""

EXAMPLES = r"""
- name: Define the docker Boolean resource Docker jobs need
  hpc.gpu_containers.lsf_resource:
    path: /opt/lsf/conf/lsf.shared
    name: docker
    type: Boolean
    description: Docker container

- name: The static Numeric resources that describe each node's platform, in one edit
  hpc.gpu_containers.lsf_resource:
    path: /opt/lsf/conf/lsf.shared
    resources:
      - {name: cuda_version, type: Numeric, increasing: false, description: newest CUDA the driver supports}
      - {name: compute_cap_min, type: Numeric, increasing: false, description: lowest GPU compute capability}

- name: Remove a resource
  hpc.gpu_containers.lsf_resource:
    path: /opt/lsf/conf/lsf.shared
    name: oldres
    state: absent
"""

RETURN = r"""
resource:
  description:
    - The resource row after the edit, keyed by lower-case column name; empty columns are empty
      strings, columns the header lacks are C(null). C(null) when the resource is absent.
  returned: with O(name)
  type: dict
  sample:
    resourcename: docker
    type: Boolean
    interval: ""
    increasing: ""
    consumable: null
    release: null
    description: Docker container
resources:
  description: With O(resources), each resource's row after the edit (as RV(resource)), by name.
  returned: with O(resources)
  type: dict
  version_added: 0.2.0
  sample: {cuda_version: {resourcename: cuda_version, type: Numeric, interval: "", increasing: N,
                          description: newest CUDA the driver supports}}
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /opt/lsf/conf/lsf.shared.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_shared_edit import (
    resource_request,
    edit_resource,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, exit_edit, input_errors, model_errors

SPEC_KEYS = ("type", "interval", "increasing", "consumable", "release", "description")


def requests(params):
    """[(name, state, spec)] of one resource (O(name)) or several (O(resources)); ValueError when one is bad."""
    if params["resources"] is None:
        entries = [dict({k: params[k] for k in SPEC_KEYS}, name=params["name"], state=params["state"])]
    else:
        entries = params["resources"]
    out, seen = [], set()
    for index, entry in enumerate(entries):
        where = "resources[%d]" % index if params["resources"] is not None else "resource"
        unknown = sorted(set(entry) - set(SPEC_KEYS) - {"name", "state"})
        if unknown:
            raise ValueError("%s: unknown key(s) %s (known: name, state, %s)" % (where, ", ".join(unknown), ", ".join(SPEC_KEYS)))
        name, state = entry.get("name"), entry.get("state") or "present"
        if not isinstance(name, str) or not name:
            raise ValueError("%s: name is required" % where)
        if name in seen:
            raise ValueError("%s: %s is given twice" % (where, name))
        seen.add(name)
        if state not in ("present", "absent"):
            raise ValueError("%s: state must be present or absent, not %r" % (where, state))
        spec = {k: entry.get(k) for k in SPEC_KEYS}
        if state == "present":
            try:
                resource_request(spec)
            except ValueError as err:
                raise ValueError("%s (%s): %s" % (where, name, err))
        out.append((name, state, spec))
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            name=dict(type="str"),
            resources=dict(type="list", elements="dict"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            type=dict(type="str", choices=["Boolean", "Numeric", "String"]),
            interval=dict(type="int"),
            increasing=dict(type="bool"),
            consumable=dict(type="bool"),
            release=dict(type="bool"),
            description=dict(type="str"),
            **FILE_EDIT_ARGS,
        ),
        required_one_of=[("name", "resources")],
        mutually_exclusive=[("name", "resources")] + [("resources", key) for key in SPEC_KEYS],
        supports_check_mode=True,
    )
    path = module.params["path"]
    with input_errors(module, path):
        wanted = requests(module.params)

    outcome = {}

    def compute(text):
        rows, warnings = {}, []
        with model_errors(path, LsfSyntaxError):
            for index, (name, state, spec) in enumerate(wanted):
                try:
                    text, rows[name], step_warnings = edit_resource(text, name, state=state, **spec)
                except ValueError as err:
                    if module.params["resources"] is None or isinstance(err, LsfSyntaxError):
                        raise
                    raise ValueError("resources[%d] (%s): %s" % (index, name, err))
                warnings += step_warnings
        if module.params["resources"] is None:
            outcome["resource"] = rows[module.params["name"]]
        else:
            outcome["resources"] = rows
        return text, warnings

    exit_edit(module, path, compute, outcome)


if __name__ == "__main__":
    main()
