#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lsf_conf
short_description: Set or remove parameters in an IBM Spectrum LSF lsf.conf file
description:
  - Sets C(NAME=value) parameters in C(lsf.conf) and removes the ones given as C(null).
  - Lines the edit does not touch come back byte-identical (comments, blank lines, commented-out
    parameters); a changed parameter keeps its indentation, quoting and trailing comment.
  - Values with blanks or characters such as C(;), C(&), C(|), C(<), C(>), C(') or C(#) are written
    double-quoted, as LSF requires; C(Y)/C(N) values are compared case-insensitively.
  - Shell scripts source C(lsf.conf) (C(profile.lsf)), so a written value must mean the same to a shell as
    to LSF and must never run anything. No quoting makes C($), a backquote, a backslash, a double quote, a
    line break or another control character safe for both readers, so a value holding one is refused with
    the parameter named, before the file is read. So is a name such as C(IFS) or C(PATH), which would
    change the shell itself.
  - Parameters named in O(list_keys) (by default C(LSB_RESOURCE_ENFORCE)) hold a set of blank-separated
    words. The same words in another order are no change; with O(merge_lists=true) words the file has
    beyond the ones given are kept.
  - When a parameter is defined more than once LSF uses the last definition, so the module updates
    the last one and warns. Removing a parameter removes every definition.
  - A malformed C(lsf.conf) (blanks around C(=), an unquoted value with blanks, an unterminated quote,
    a line that is not C(NAME=value)) fails with C(path:line) and the file is left as it was.
version_added: 0.1.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of the C(lsf.conf) file. It must exist.
    type: path
    required: true
    aliases: [dest]
  settings:
    description:
      - Parameters to set, as a mapping C(NAME) to value.
      - C(null) removes the parameter.
      - Booleans become C(Y)/C(N), numbers their decimal text, lists are joined with blanks
        (and the result double-quoted).
    type: dict
    required: true
  defaults:
    description:
      - Parameters written only where C(lsf.conf) has no definition of its own and O(settings) does not name
        them, as a mapping C(NAME) to value. A site's own value is kept whatever it is (also C(N)); RV(settings)
        returns the value in effect.
    type: dict
    default: {}
    version_added: 0.3.0
  list_keys:
    description:
      - Parameters whose value is a set of blank-separated words that LSF reads in any order.
      - The default names the one lsf.conf parameter IBM documents that way, C(LSB_RESOURCE_ENFORCE)
        (C(cpu), C(memory), C(gpu) in any order). Do not name parameters whose word order matters,
        such as C(LSF_MASTER_LIST).
      - Words are compared exactly (case matters).
    type: list
    elements: str
    default: [LSB_RESOURCE_ENFORCE]
    version_added: 0.2.0
  merge_lists:
    description:
      - How a value for a parameter in O(list_keys) is applied.
      - V(true) - the words given must be present; words the file has besides them are kept, in the
        file's order, and missing words are appended. A site's C(LSB_RESOURCE_ENFORCE="memory cpu gpu")
        stays as it is when C(cpu memory) is asked for. To take a word out, set the whole value with
        V(false) or remove the parameter with C(null).
      - V(false) - the parameter holds exactly the words given; the same words in another order are still
        no change.
    type: bool
    default: true
    version_added: 0.2.0
attributes:
  platform:
    support: full
    platforms: posix
    description: The LSF configuration host.
notes:
  - Many parameters only take effect after C(lsadmin reconfig), C(badmin mbdrestart) or a daemon
    restart; use RV(changed_keys) to decide which.
"""

EXAMPLES = r"""
- name: Enable the cgroup settings Docker jobs need
  hpc.gpu_containers.lsf_conf:
    path: /opt/lsf/conf/lsf.conf
    settings:
      LSB_RESOURCE_ENFORCE: cpu memory
      LSF_LINUX_CGROUP_ACCT: true
      LSF_PROCESS_TRACKING: true
    backup: true

- name: Make LSB_RESOURCE_ENFORCE exactly cpu and memory (drop any other word the site added)
  hpc.gpu_containers.lsf_conf:
    path: /opt/lsf/conf/lsf.conf
    settings:
      LSB_RESOURCE_ENFORCE: [cpu, memory]
    merge_lists: false

- name: Turn on LSF's GPU syntax unless the site chose its own value
  hpc.gpu_containers.lsf_conf:
    path: /opt/lsf/conf/lsf.conf
    settings: {}
    defaults:
      LSB_GPU_NEW_SYNTAX: extend
      LSF_GPU_AUTOCONFIG: true

- name: Remove a parameter
  hpc.gpu_containers.lsf_conf:
    path: /opt/lsf/conf/lsf.conf
    settings:
      LSF_DOCKER_MOUNT_TMPDIR: null
"""

RETURN = r"""
changed_keys:
  description: Parameters whose value was (or in check mode would be) set or removed, in the order given.
  returned: always
  type: list
  elements: str
  sample: [LSB_RESOURCE_ENFORCE, LSF_PROCESS_TRACKING]
settings:
  description: The effective value of every parameter given in O(settings) or O(defaults), after the edit (C(null) when absent).
  returned: always
  type: dict
  sample: {LSB_RESOURCE_ENFORCE: cpu memory, LSF_PROCESS_TRACKING: "Y"}
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /opt/lsf/conf/lsf.conf.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_conf import (
    SET_VALUED_KEYS,
    LsfSyntaxError,
    check_value,
    get_keys,
    set_keys,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import (
    FILE_EDIT_ARGS,
    exit_edit,
    input_errors,
    model_errors,
    text_value,
)


def normalize(name, value):
    """Ansible value -> lsf.conf text (None stays None)."""
    return text_value(name, value, "Y", "N", " ")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            settings=dict(type="dict", required=True),
            defaults=dict(type="dict", default={}),
            list_keys=dict(type="list", elements="str", default=list(SET_VALUED_KEYS), no_log=False),
            merge_lists=dict(type="bool", default=True),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    settings, defaults = {}, {}
    with input_errors(module, path):
        for given, wanted in ((module.params["settings"], settings), (module.params["defaults"], defaults)):
            for name, value in given.items():
                wanted[name] = normalize(name, value)
                if wanted[name] is not None:
                    check_value(name, wanted[name])

    outcome = {}

    def compute(text):
        with model_errors(path, LsfSyntaxError):
            new_text, changed_keys, warnings = set_keys(text, settings, list_keys=module.params["list_keys"],
                                                        merge_lists=module.params["merge_lists"], defaults=defaults)
        outcome["changed_keys"] = changed_keys
        effective = get_keys(new_text)
        outcome["settings"] = {name: effective.get(name) for name in list(settings) + list(defaults)}
        return new_text, warnings

    exit_edit(module, path, compute, outcome)


if __name__ == "__main__":
    main()
