#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: registry_htpasswd
short_description: Own a registry's htpasswd file whole, with bcrypt hashes
version_added: 0.2.0
description:
  - Makes an htpasswd file hold exactly the accounts in O(users), one C(name:hash) line each, in list
    order, as the distribution registry reads it (bcrypt only).
  - The file is owned whole. An account in the file that O(users) does not list is removed, so
    taking a user out of the list revokes that account. Comments, blank lines and malformed lines
    are removed too.
  - An account keeps its hash while its password still verifies against it, so a rerun with the same
    list changes nothing and C(--check) predicts exactly. A changed password, or a hash that is not
    bcrypt, gets a new bcrypt hash.
  - Passwords are never returned, and hashes neither. The diff lists the accounts before and after,
    marking each one added, removed or given a new hash.
  - The write is atomic and keeps the owner and mode of an existing file; a new file is created with
    mode C(0600) before O(owner), O(group) and O(mode) are applied.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - ansible.builtin.files
options:
  path:
    description:
      - The htpasswd file. Its directory must exist (in check mode a missing directory predicts a new file).
    type: path
    required: true
  users:
    description:
      - Every account the file holds. An empty list leaves a file with no account (nobody can log in).
      - Names must be unique, must not be empty, must not contain C(:), white space or control
        characters, and must not begin with C(#).
      - Passwords must not be empty, must not contain a NUL character and must be at most 72 bytes
        in UTF-8 (bcrypt ignores what follows).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Account name.
        type: str
        required: true
      password:
        description: Account password, stored only as a bcrypt hash.
        type: str
        required: true
attributes:
  check_mode:
    support: full
    description: Predicts the exact change (which accounts are added, removed or rehashed) and writes nothing.
  diff_mode:
    support: full
    description: Shows the account names before and after, never a password or a hash.
  platform:
    support: full
    platforms: posix
    description: Linux nodes.
requirements:
  - bcrypt (Python library, C(python3-bcrypt)) on the managed node.
notes:
  - The registry reads the file at start; restart it when the task reports a change.
seealso:
  - name: Distribution registry htpasswd authentication
    description: The registry's htpasswd backend, which reads bcrypt entries only.
    link: https://distribution.github.io/distribution/about/configuration/#htpasswd
"""

EXAMPLES = r"""
- name: The registry's accounts, exactly these
  hpc.gpu_containers.registry_htpasswd:
    path: /etc/docker/registry/htpasswd
    users:
      - name: hpcadmin
        password: "{{ vault_registry_password }}"
      - name: ci
        password: "{{ vault_registry_ci_password }}"
    owner: root
    group: docker-registry
    mode: "0640"
  notify: Restart registry
"""

RETURN = r"""
path:
  description: The htpasswd file.
  returned: always
  type: str
  sample: /etc/docker/registry/htpasswd
users:
  description: Names of the accounts the file holds afterwards, in file order.
  returned: always
  type: list
  elements: str
  sample: [hpcadmin, ci]
added:
  description: Accounts that were not in the file.
  returned: always
  type: list
  elements: str
  sample: [ci]
removed:
  description: Accounts that were in the file and are not listed, now revoked.
  returned: always
  type: list
  elements: str
  sample: [olduser]
updated:
  description: Accounts that got a new hash (changed password, or an old hash that was not bcrypt).
  returned: always
  type: list
  elements: str
  sample: [hpcadmin]
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _htpasswd
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import EditResult, FileEditError, edit_file

try:
    import bcrypt
except ImportError:
    bcrypt = None
    BCRYPT_IMPORT_ERROR = traceback.format_exc()
else:
    BCRYPT_IMPORT_ERROR = None

# The cost community.general.htpasswd (passlib) and htpasswd -B -C 12 use.
BCRYPT_ROUNDS = 12


def _make_hash(password):
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(rounds=BCRYPT_ROUNDS)).decode("ascii")


def _verify(password, hash_):
    try:
        return bcrypt.checkpw(password.encode("utf-8"), hash_.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False  # a malformed hash verifies nothing


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            users=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    name=dict(type="str", required=True),
                    password=dict(type="str", required=True, no_log=True),
                ),
            ),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params["path"]
    users = module.params["users"]
    try:
        _htpasswd.check_users(users)
    except _htpasswd.AccountError as err:
        module.fail_json(msg="%s: %s" % (path, err), path=path)
    if bcrypt is None:
        module.fail_json(msg=missing_required_lib("bcrypt"), exception=BCRYPT_IMPORT_ERROR)
    outcome = {}
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory) and not module.check_mode:
        module.fail_json(msg="%s: directory %s does not exist" % (path, directory), path=path)

    def compute(text):
        try:
            new_text, changes, before, after = _htpasswd.compute(text, users, _verify, _make_hash)
        except ValueError as err:
            raise FileEditError(str(err), path=path)
        outcome.update(changes=changes, before=before, after=after)
        return new_text

    try:
        if os.path.isdir(directory):
            edit = edit_file(path, compute, check_mode=module.check_mode, create=True, new_mode=0o600)
        else:
            # Check mode before an earlier task has created the directory: predict a new file.
            edit = EditResult(path, None, compute(None), created=True, changed=True)
    except FileEditError as err:
        module.fail_json(msg=str(err), path=path)
    changes = outcome["changes"]
    result = {
        "path": path,
        "users": [user["name"] for user in users],
        "added": changes.added,
        "removed": changes.removed,
        "updated": sorted(changes.updated),
    }
    file_args = module.load_file_common_arguments(module.params)
    changed = module.set_fs_attributes_if_different(file_args, edit.changed)
    result["changed"] = changed
    if module._diff and edit.changed:
        header = "%s (accounts)" % path
        result["diff"] = {
            "before": outcome["before"],
            "after": outcome["after"],
            "before_header": header if not edit.created else "%s (absent)" % path,
            "after_header": header,
        }
    module.exit_json(**result)


if __name__ == "__main__":
    main()
