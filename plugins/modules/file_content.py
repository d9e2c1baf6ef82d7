#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: file_content
short_description: Write whole files from their content, several in one task
version_added: 0.2.0
description:
  - Writes each file of O(files) with the content given, through the collection's file-edit transaction
    (lock, temporary file renamed into place, check mode, diff, backup), all in one module execution. The
    roles write their generated files (LSF job starters, the CDI spec) with it instead of one C(template) or
    C(copy) task per file, each of which costs two module executions.
  - A missing file is created with its O(files[].mode), and its missing directory (its own missing parents
    too) with mode C(0755). An existing file keeps its owner and group; its content is replaced when it
    differs, and its mode set to O(files[].mode) when it has another one.
  - A file whose content and mode are as given is left alone, so a rerun changes nothing.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
options:
  files:
    description:
      - The files to write, in this order. A path may appear only once.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: The file. A symlink is followed.
        type: path
        required: true
      content:
        description: Its whole content, written as UTF-8.
        type: str
        required: true
      mode:
        description:
          - Its permissions, an octal string such as V("0755") (quoted in YAML, so that it stays octal).
        type: raw
        default: "0644"
attributes:
  check_mode:
    support: full
    description: Predicts the exact change of each file and writes nothing (a missing directory is not made).
  diff_mode:
    support: full
    description: Shows each file's content before and after.
  platform:
    support: full
    platforms: posix
    description: Any host with a POSIX filesystem.
seealso:
  - module: ansible.builtin.copy
  - module: ansible.builtin.template
"""

EXAMPLES = r"""
- name: Install the job starters (one module execution for all of them)
  hpc.gpu_containers.file_content:
    files:
      - path: /usr/share/lsf/conf/docker/lsf-docker-starter.py
        content: "{{ lookup('ansible.builtin.template', 'lsf-docker-starter.py.j2') }}"
        mode: "0755"
      - path: /usr/share/lsf/conf/docker/README
        content: "Written by Ansible: the Docker job starters of this cluster.\n"

- name: Install the CDI spec, keeping a copy of the one it replaces
  hpc.gpu_containers.file_content:
    files:
      - path: /etc/cdi/nvidia.yaml
        content: "{{ generated.stdout }}\n"
    backup: true
"""

RETURN = r"""
changed_files:
  description: The paths written, or whose mode was set (in check mode, that would be), in the order of O(files).
  returned: always
  type: list
  elements: str
  sample: [/usr/share/lsf/conf/docker/lsf-docker-starter.py]
backup_file:
  description: File to the name of its backup, for each file rewritten with O(backup=true).
  returned: changed and O(backup=true)
  type: dict
  sample: {/etc/cdi/nvidia.yaml: /etc/cdi/nvidia.yaml.2210.2026-01-01@10:00:00~}
"""

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, write_files

_OCTAL = re.compile(r"^0?[0-7]{3,4}$")


def file_mode(value, index):
    """The mode of files[index] as a number; a YAML integer (0755 unquoted reads as 493) is refused."""
    if isinstance(value, str) and _OCTAL.match(value):
        return int(value, 8)
    raise ValueError("files[%d].mode must be an octal string such as \"0755\" (quoted, so that YAML keeps it "
                     "octal), not %r" % (index, value))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str", required=True),
                mode=dict(type="raw", default="0644"),
            )),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    files, seen = [], set()
    for index, spec in enumerate(module.params["files"]):
        try:
            mode = file_mode(spec["mode"], index)
        except ValueError as err:
            module.fail_json(msg=str(err))
        if spec["path"] in seen:
            module.fail_json(msg="files[%d].path: %s is given more than once" % (index, spec["path"]))
        seen.add(spec["path"])
        files.append((spec["path"], spec["content"], mode))
    module.exit_json(**write_files(module, files))


if __name__ == "__main__":
    main()
