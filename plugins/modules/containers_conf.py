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
    C(containers.conf), C(registries.conf)) that podman, buildah and skopeo read.
  - A file that is not TOML (Python's C(tomllib) reads it, or C(tomli) on nodes before Python 3.11; without either,
    a strict reader of the subset these files use) is refused with C(path:line:column) and left byte-identical, and
    so is an edit whose result would not read back.
  - Strings are written with TOML's escapes; values and keys holding control characters, DEL, U+2028, U+2029 or lone
    surrogates are refused.
  - Lines the edit does not touch come back byte-identical (comments, blank lines, commented-out keys, order).
    A key already holding the wanted value (compared as a value, so V('a') equals V("a")) is no change.
  - A key missing from a table the file has is written after that table's last key; a missing table is
    appended at the end of the file.
  - Entries of an array of tables, such as C([[registry]]) in C(registries.conf), are found by their
    C(location) and edited in place, or appended.
  - C(registries.conf) keeps its syntax. A version 1 file (C([registries.insecure]), C([registries.block]) lists) is
    edited in version 1 terms; the containers image library refuses a file that mixes both syntaxes, so such a file
    is refused, and so is a version 1 drop-in in C(registries.conf.d) (the library reads only version 2 there),
    unless O(registries_syntax=v2) converts the file whole.
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
  defaults:
    description:
      - Keys written only where the file has no value for them, same shape as O(settings); a site's own value is
        kept (and named in RV(kept_keys)) unless O(replace_site_values) lists it.
      - A key in both O(settings) and O(defaults) takes the value of O(settings).
    type: dict
    default: {}
    version_added: 0.2.0
  replace_site_values:
    description:
      - For keys of O(defaults), the site values that are never kept, as a mapping of table to key to a list of
        values; for example the C(storage) table's C(driver) with the list V(vfs) and the empty string.
    type: dict
    default: {}
    version_added: 0.2.0
  registries_syntax:
    description:
      - V(keep) edits C(registries.conf) in the syntax it has (version 2 for a new or empty file).
      - V(v2) converts a version 1 file whole first; its search, insecure and blocked registries become
        C(unqualified-search-registries) and C([[registry]]) entries, its comments stay.
    type: str
    choices: [keep, v2]
    default: keep
    version_added: 0.2.0
  registries:
    description:
      - Entries of C([[registry]]) (C(registries.conf) version 2), each identified by O(registries[].location).
      - Other keys of an existing entry are kept.
    type: list
    elements: dict
    default: []
    suboptions:
      location:
        description: Registry host and port, for example V(head:5000) (no scheme).
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

- name: Overlay storage, unless the site chose its own driver (vfs is never kept)
  hpc.gpu_containers.containers_conf:
    path: /etc/containers/storage.conf
    defaults:
      storage:
        driver: overlay
    replace_site_values:
      storage:
        driver: [vfs, ""]

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
kept_keys:
  description: Keys of O(defaults) whose site value differs from the default and was kept.
  returned: always
  type: list
  elements: str
  sample: [storage.driver]
  version_added: 0.2.0
registries_syntax:
  description: The C(registries.conf) syntax the file is written in, V(v1) or V(v2).
  returned: when O(registries) is not empty or O(registries_syntax=v2)
  type: str
  sample: v1
  version_added: 0.2.0
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/containers/storage.conf.2210.2026-01-01@10:00:00~
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._containers_conf import (
    ContainersConfError,
    defaults_to_set,
    set_keys,
    set_registries,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, exit_edit


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            settings=dict(type="dict", default={}),
            defaults=dict(type="dict", default={}),
            replace_site_values=dict(type="dict", default={}),
            registries_syntax=dict(type="str", choices=["keep", "v2"], default="keep"),
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
    settings, defaults = module.params["settings"], module.params["defaults"]
    for option in ("settings", "defaults", "replace_site_values"):
        for table, keys in module.params[option].items():
            if not isinstance(keys, dict):
                module.fail_json(msg="%s: %s[%r] must be a mapping of key to value" % (path, option, table), path=path)
    for table, keys in module.params["replace_site_values"].items():
        for key, values in keys.items():
            if not isinstance(values, list):
                module.fail_json(msg="%s: replace_site_values[%r][%r] must be a list" % (path, table, key), path=path)
    # A suboption left out means "leave that key alone", not "remove it".
    entries = [{k: v for k, v in entry.items() if v is not None} for entry in module.params["registries"]]
    syntax = module.params["registries_syntax"]
    drop_in = os.path.basename(os.path.dirname(os.path.abspath(path))) == "registries.conf.d"
    outcome = {"changed_keys": [], "kept_keys": []}

    def compute(text):
        try:
            wanted, outcome["kept_keys"] = defaults_to_set(text, defaults, module.params["replace_site_values"])
            for table, keys in settings.items():
                wanted.setdefault(table, {}).update(keys)
            new_text, changed = set_keys(text, wanted)
            if entries or syntax == "v2":
                new_text, more, outcome["registries_syntax"] = set_registries(new_text, entries, syntax, drop_in)
                changed += more
        except ContainersConfError as err:
            raise FileEditError(err.msg, path=path, line=err.line, column=err.column)
        outcome["changed_keys"] = changed
        return new_text

    exit_edit(module, path, compute, outcome, create=True)


if __name__ == "__main__":
    main()
