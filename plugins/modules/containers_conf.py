#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containers_conf
short_description: Set keys in podman's TOML configuration (storage.conf, containers.conf, registries.conf)
description:
  - Sets or removes keys in the TOML files of the containers family (C(/etc/containers/storage.conf),
    C(containers.conf), C(registries.conf) version 2) that podman, buildah and skopeo read.
  - Lines the edit does not touch come back byte-identical (comments, blank lines, commented-out keys, order).
    A key already holding the wanted value (compared as a value, so V('a') equals V("a")) is no change.
  - A key missing from a table the file has is written after that table's last key; a missing table is
    appended at the end of the file.
  - Entries of an array of tables, such as C([[registry]]) in C(registries.conf), are found by their
    C(location) and edited in place, or appended.
version_added: 0.2.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of the TOML file. It is created (mode 0644) when missing.
    type: path
    required: true
    aliases: [dest]
  settings:
    description:
      - Keys to set, as a mapping of table name (dotted, for example V(storage.options.overlay); V("") is the
        root table) to a mapping of key to value.
      - Values may be strings, integers, booleans or lists of them; C(null) removes the key.
    type: dict
    default: {}
  registries:
    description:
      - Entries of C([[registry]]) (C(registries.conf) version 2), each identified by O(registries[].location).
      - Other keys of an existing entry are kept.
    type: list
    elements: dict
    default: []
    suboptions:
      location:
        description: Registry host and port, for example V(head:5000).
        type: str
        required: true
      insecure:
        description: Whether plain HTTP and unverified TLS are allowed; C(null) leaves the key as it is.
        type: bool
      blocked:
        description: Whether pulls from this registry are refused; C(null) leaves the key as it is.
        type: bool
attributes:
  platform:
    support: full
    platforms: posix
    description: A node that runs podman.
"""

EXAMPLES = r"""
- name: Rootless storage on fuse-overlayfs, never vfs
  hpc.gpu_containers.containers_conf:
    path: /etc/containers/storage.conf
    settings:
      storage:
        driver: overlay
      storage.options.overlay:
        mount_program: /usr/bin/fuse-overlayfs

- name: Trust the cluster registry over plain HTTP
  hpc.gpu_containers.containers_conf:
    path: /etc/containers/registries.conf
    registries:
      - location: head:5000
        insecure: true
"""

RETURN = r"""
changed_keys:
  description: The keys (C(table.key), or C(registry[location].key)) that were (or in check mode would be) set or removed.
  returned: always
  type: list
  elements: str
  sample: [storage.driver, storage.options.overlay.mount_program]
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/containers/storage.conf.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._containers_conf import (
    ContainersConfError,
    set_array_entries,
    set_keys,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, model_errors, run_edit


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            settings=dict(type="dict", default={}),
            registries=dict(type="list", elements="dict", default=[], options=dict(
                location=dict(type="str", required=True),
                insecure=dict(type="bool"),
                blocked=dict(type="bool"),
            )),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    settings = module.params["settings"]
    for table, keys in settings.items():
        if not isinstance(keys, dict):
            module.fail_json(msg="%s: settings[%r] must be a mapping of key to value" % (path, table), path=path)
    # A suboption left out means "leave that key alone", not "remove it".
    entries = [{k: v for k, v in entry.items() if v is not None} for entry in module.params["registries"]]
    outcome = {"changed_keys": []}

    def compute(text):
        with model_errors(path, ContainersConfError):
            new_text, changed = set_keys(text, settings)
            if entries:
                new_text, more = set_array_entries(new_text, "registry", "location", entries)
                changed += more
        outcome["changed_keys"] = changed
        return new_text

    result = run_edit(module, path, compute, create=True)
    result.update(outcome)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
