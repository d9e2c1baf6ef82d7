#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: subid_ranges
short_description: Give users subordinate uid or gid ranges for rootless containers
description:
  - Makes every user in O(users) own a range of at least O(count) ids in C(/etc/subuid) or C(/etc/subgid)
    (subuid(5)), which rootless podman (C(newuidmap)/C(newgidmap)) needs.
  - A user who already owns such a range keeps it untouched, so ids already used in that user's container
    storage never move. A new range starts at the lowest multiple of O(count) at or above O(start) that
    overlaps no range in the file, so two users never share an id.
  - Every other line (other users, comments) stays byte-identical. Ranges of different users that already
    overlap in the file are reported as warnings.
version_added: 0.2.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - V(/etc/subuid) or V(/etc/subgid) (or another file of the same format). Created (mode 0644) when missing.
    type: path
    required: true
    aliases: [dest]
  users:
    description:
      - Login names that need a range.
    type: list
    elements: str
    required: true
  count:
    description:
      - Minimum size of each user's range; 65536 covers every uid an ordinary image uses.
    type: int
    default: 65536
  start:
    description:
      - Lowest id a new range may start at; keep it above the site's real uids and gids.
    type: int
    default: 100000
attributes:
  platform:
    support: full
    platforms: posix
    description: A node where users run rootless containers.
"""

EXAMPLES = r"""
- name: Subordinate uids for the users who run rootless podman
  hpc.gpu_containers.subid_ranges:
    path: /etc/subuid
    users: [alice, bob]
"""

RETURN = r"""
ranges:
  description: The range (C(start), C(count)) each listed user owns after the edit.
  returned: always
  type: dict
  sample: {alice: {start: 100000, count: 65536}}
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/subuid.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, exit_edit, model_errors
from ansible_collections.hpc.gpu_containers.plugins.module_utils._subid import SubidError, ensure_ranges


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            users=dict(type="list", elements="str", required=True),
            count=dict(type="int", default=65536),
            start=dict(type="int", default=100000),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    outcome = {"ranges": {}}

    def compute(text):
        with model_errors(path, SubidError):
            new_text, assigned, warnings = ensure_ranges(text, module.params["users"], count=module.params["count"],
                                                         start=module.params["start"])
        outcome["ranges"] = {user: {"start": s, "count": c} for user, (s, c) in assigned.items()}
        return new_text, warnings

    exit_edit(module, path, compute, outcome, create=True)


if __name__ == "__main__":
    main()
