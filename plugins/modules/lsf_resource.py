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
  - Adds, updates or removes one row of the C(Resource) section of C(lsf.shared).
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
    type: str
    required: true
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
  returned: always
  type: dict
  sample:
    resourcename: docker
    type: Boolean
    interval: ""
    increasing: ""
    consumable: null
    release: null
    description: Docker container
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /opt/lsf/conf/lsf.shared.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    LsfSyntaxError,
    resource_request,
    edit_resource,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import model_errors, run_edit

SPEC_KEYS = ("type", "interval", "increasing", "consumable", "release", "description")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            name=dict(type="str", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            type=dict(type="str", choices=["Boolean", "Numeric", "String"]),
            interval=dict(type="int"),
            increasing=dict(type="bool"),
            consumable=dict(type="bool"),
            release=dict(type="bool"),
            description=dict(type="str"),
            backup=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    name = module.params["name"]
    state = module.params["state"]
    spec = {k: module.params[k] for k in SPEC_KEYS}
    if state == "present":
        try:
            resource_request(spec)
        except ValueError as err:
            module.fail_json(msg="%s: %s" % (path, err), path=path)

    outcome = {}

    def compute(text):
        with model_errors(path, LsfSyntaxError):
            new_text, row, warnings = edit_resource(text, name, state=state, **spec)
        outcome["resource"] = row
        return new_text, warnings

    result = run_edit(module, path, compute)
    result.update(outcome)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
