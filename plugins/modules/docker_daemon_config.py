#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_daemon_config
short_description: Merge settings into Docker's daemon.json
version_added: 0.1.0
description:
  - Deep-merges O(settings) into Docker's C(daemon.json), keeping every key it was not asked about.
  - Objects merge key by key; a V(null) value deletes the key at that depth; lists such as
    C(insecure-registries) are unioned in order unless O(list_merge=replace); other values replace.
  - O(defaults) only fill in what the file does not have; a value the file has is kept.
  - O(remove) takes items out of lists, leaving the items other tools put there.
  - The file is rewritten only when the merged result differs from the current file as JSON.
    A file that is equal as JSON but formatted differently (for example the sorted, unterminated
    output of C(nvidia-ctk runtime configure)) is left alone, so reruns and C(--check) runs report
    no change. When nothing is to be written to an absent file (only deletions or removals were asked
    for), no file and no directory is created.
  - A changed file keeps its own layout. Values that did not change keep their exact text, and the
    lines around them stay as they were; changed values and new keys follow the file's indentation
    (2 or 4 spaces, tabs, or one compact line), separators, C(\u) escaping and final newline or lack
    of one. A new file gets a 4-space indent and ends with a newline.
  - The write is atomic and keeps the owner and mode of an existing file; a new file gets mode C(0644).
  - A malformed existing file is refused with C(path:line:col) and left untouched. So is a file with
    V(NaN) or V(Infinity), numbers out of range, nesting deeper than 64 levels, or more than 1 MiB.
    The same checks apply to O(settings) and O(remove); their errors name the key,
    for example C(settings.log-opts.max-size).
  - Restarting Docker is left to the caller; RV(restart_required) says when it is needed.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - The daemon configuration file.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description:
      - Keys to merge into the file. Nested objects are merged recursively.
      - A V(null) value removes that key (at any depth) when present.
      - Applied over O(defaults).
      - At least one of O(settings), O(defaults) and O(remove) is required.
    type: dict
  defaults:
    description:
      - Keys written only where the file does not have them, at any depth (an object is filled key by key). A
        value the file has is kept, whatever it is, so a site's own C(log-opts.max-size) stays; put a key in
        O(settings) to replace the file's value.
      - C(log-opts) here belong to the C(log-driver) given here, and are left out when the file or O(settings)
        name another driver (Docker refuses the options of one log driver for another).
      - A V(null) value deletes nothing.
    type: dict
    version_added: 0.2.0
  remove:
    description:
      - Items to take out of lists in the file. The keys lead to the list the way they do in the file
        (top-level C(insecure-registries), or C(runtimes) then C(nvidia) then C(runtimeArgs)), and the
        value there is the list of items to take out. See the examples.
      - Items are compared as JSON values. Other items in the list are kept. A list that loses its
        last item is removed with its key. Keys that are absent or do not hold a list are left alone.
      - Applied after O(settings). An item both added through O(settings) and named here is an error.
    type: dict
    version_added: 0.2.0
  list_merge:
    description:
      - How a list in O(settings) combines with a list already in the file.
      - V(append) keeps the existing items and adds the missing ones in order, so an empty list
        adds nothing; use V(replace) to empty a list.
      - V(replace) makes the file's list exactly the given one.
    type: str
    choices: [append, replace]
    default: append
  validate:
    description:
      - Check the merged file with C(dockerd --validate --config-file <temporary file>) before it
        replaces the real one.
      - V(auto) validates when the installed C(dockerd) has C(--validate) (Docker 23.0 and newer)
        and otherwise skips, saying so in RV(validation).
      - V(always) fails when validation is not possible.
      - V(never) does not validate.
      - Validation runs only when the file is about to be written, so never in check mode.
    type: str
    choices: [auto, always, never]
    default: auto
  dockerd_path:
    description:
      - The C(dockerd) binary used for validation. Looked up on E(PATH) and in C(/usr/bin),
        C(/usr/sbin) and C(/usr/local/bin) when not given.
    type: path
  create_directory:
    description:
      - Create the parent directory (mode C(0755)) when it does not exist.
      - When V(false) and the directory is missing, the module fails.
    type: bool
    default: false
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.docker_daemon), the runtimes the file registers (in check mode, would register).
  platform:
    support: full
    platforms: posix
    description: Linux nodes.
notes:
  - Docker reads C(daemon.json) only at start; C(insecure-registries) and a few other keys also on
    C(SIGHUP). Notify a handler that restarts Docker when RV(restart_required) is true.
  - A reload (C(SIGHUP)) keeps the value of most keys that are no longer in the file (C(insecure-registries),
    C(registry-mirrors), C(labels), C(debug), C(live-restore), C(runtimes), C(default-runtime) ...);
    RV(removed_keys) names them, so that the caller restarts Docker instead.
  - C(nvidia-ctk runtime configure) writes C(args), which Docker ignores; use C(runtimeArgs).
seealso:
  - name: dockerd configuration file reference
    description: All keys daemon.json accepts.
    link: https://docs.docker.com/reference/cli/dockerd/#daemon-configuration-file
"""

EXAMPLES = r"""
- name: Register the NVIDIA runtime, trust the cluster registry, keep everything else
  hpc.gpu_containers.docker_daemon_config:
    settings:
      runtimes:
        nvidia:
          path: nvidia-container-runtime
          runtimeArgs: []
      default-runtime: nvidia
      insecure-registries:
        - registry.cluster.local:5000
      log-driver: json-file
      log-opts:
        max-size: 100m
        max-file: "3"
  notify: Restart docker

- name: The site's own log size stays; what the file lacks is filled in; data-root is what the inventory asks for
  hpc.gpu_containers.docker_daemon_config:
    defaults:
      log-driver: json-file
      log-opts:
        max-size: 100m
        max-file: "5"
    settings:
      data-root: /scratch/docker

- name: Drop a key that an old installer left behind
  hpc.gpu_containers.docker_daemon_config:
    settings:
      experimental: null

- name: The registry serves TLS now; stop trusting it over plain HTTP, keep other tools' entries
  hpc.gpu_containers.docker_daemon_config:
    remove:
      insecure-registries:
        - registry.cluster.local:5000
  notify: Reload docker

- name: Make the list of insecure registries exactly this one
  hpc.gpu_containers.docker_daemon_config:
    settings:
      insecure-registries:
        - registry.cluster.local:5000
    list_merge: replace
"""

RETURN = r"""
path:
  description: The file that was merged into.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
changed_keys:
  description: Dotted paths of the keys added, changed or removed; empty when nothing changed.
  returned: always
  type: list
  elements: str
  sample: [runtimes.nvidia, default-runtime, insecure-registries]
removed_keys:
  description:
    - Dotted paths of the keys the file had and no longer has (or would no longer have in check mode), the
      outermost of a removed object; part of RV(changed_keys).
    - A reload of dockerd (SIGHUP) keeps the value of most keys that are missing from the file, so the caller
      restarts it when one of those went; the docker_engine role's C(restart) entry point decides from them.
  returned: always
  type: list
  elements: str
  sample: [insecure-registries]
  version_added: 0.2.0
restart_required:
  description: True when the file changed (or would change in check mode) and Docker must be restarted to apply it.
  returned: always
  type: bool
  sample: true
config:
  description: The merged configuration, as Docker will read it.
  returned: always
  type: dict
  sample:
    default-runtime: nvidia
    runtimes:
      nvidia:
        path: nvidia-container-runtime
        runtimeArgs: []
validation:
  description:
    - What happened to C(dockerd --validate).
    - C(status) is V(passed), V(skipped) or V(not_needed) (nothing was written);
      C(reason) explains a skip.
  returned: always
  type: dict
  sample:
    status: skipped
    reason: /usr/sbin/dockerd has no --validate option (Docker 23.0 or newer has it)
ansible_facts:
  description: Facts about the file, for roles that depend on what Docker will run.
  returned: success
  type: complex
  contains:
    docker_daemon:
      description:
        - O(path) and the names of the runtimes its C(runtimes) key registers, sorted, after the merge (in check
          mode, as it would be after it).
        - The lsf_docker role reads it to decide how jobs reach the GPUs.
        - The M(hpc.gpu_containers.gpu_facts) module sets the same fact from a file as it is.
      type: dict
      sample: {path: /etc/docker/daemon.json, runtimes: [nvidia]}
      version_added: 0.2.0
backup_file:
  description: The backup copy, when O(backup=true) and the file changed.
  returned: changed and backup requested
  type: str
  sample: /etc/docker/daemon.json.4242.2026-01-01@00:00:00~
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _daemon_json
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, run_edit

_DOCKERD_DIRS = ["/usr/bin", "/usr/sbin", "/usr/local/bin"]


class _Validator:
    """Runs ``dockerd --validate`` on the temp file; probes support lazily."""

    def __init__(self, module, path):
        self.module = module
        self.path = path
        self.mode = module.params["validate"]
        self.status = {"status": "not_needed"}

    def _dockerd(self):
        if self.module.params["dockerd_path"]:
            return self.module.params["dockerd_path"]
        return self.module.get_bin_path("dockerd", opt_dirs=_DOCKERD_DIRS)

    def _skip_or_fail(self, reason):
        if self.mode == "always":
            raise FileEditError("cannot validate: %s" % reason, path=self.path)
        self.status = {"status": "skipped", "reason": reason}

    def __call__(self, tmp_path):
        if self.mode == "never":
            self.status = {"status": "skipped", "reason": "validate=never"}
            return
        dockerd = self._dockerd()
        if not dockerd or not os.access(dockerd, os.X_OK):
            self._skip_or_fail("no dockerd binary found")
            return
        rc, out, err = self.module.run_command([dockerd, "--help"])
        if "--validate" not in out + err:
            self._skip_or_fail("%s has no --validate option (Docker 23.0 or newer has it)" % dockerd)
            return
        rc, out, err = self.module.run_command([dockerd, "--validate", "--config-file", tmp_path])
        if rc != 0:
            detail = (err or out).strip().replace(tmp_path, self.path)
            raise FileEditError("dockerd --validate rejected the merged configuration: %s" % detail, path=self.path)
        self.status = {"status": "passed", "command": "%s --validate --config-file <temporary copy>" % dockerd}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/docker/daemon.json"),
            settings=dict(type="dict"),
            defaults=dict(type="dict"),
            remove=dict(type="dict"),
            list_merge=dict(type="str", choices=list(_daemon_json.LIST_MERGE_MODES), default="append"),
            validate=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            dockerd_path=dict(type="path"),
            create_directory=dict(type="bool", default=False),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
        required_one_of=[["settings", "defaults", "remove"]],
    )
    path = module.params["path"]
    list_merge = module.params["list_merge"]
    try:
        settings, remove = _daemon_json.check_settings(module.params["settings"] or {}, module.params["remove"])
        defaults = _daemon_json.check_defaults(module.params["defaults"])
    except FileEditError as err:
        module.fail_json(msg=str(err), path=path)
    outcome = {"removed_keys": []}

    def compute(text):
        new_text, merged, changed_keys, warnings = _daemon_json.compute(text, settings, list_merge, path, remove,
                                                                        defaults)
        removed = _daemon_json.removed_keys(_daemon_json.parse(text, path), merged) if changed_keys else []
        outcome.update(config=merged, changed_keys=changed_keys, removed_keys=removed)
        return new_text, warnings

    result = {"path": path}

    def finish():
        # The file as it is now (or, in check mode, would be): the runtimes other roles may rely on.
        result["ansible_facts"] = {"docker_daemon": _daemon_json.runtimes_fact(path, outcome.get("config"))}
        module.exit_json(**result)

    validator = _Validator(module, path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        # No directory, so no file: predict the new file directly.
        try:
            new_text, _warnings = compute(None)
        except FileEditError as err:
            module.fail_json(msg=str(err), path=path)
        if new_text is None:
            # Only deletions or removals: nothing to write, no directory to create.
            result.update(changed=False, restart_required=False, validation={"status": "not_needed"}, **outcome)
            finish()
        if not module.params["create_directory"]:
            module.fail_json(msg="%s: directory %s does not exist (set create_directory=true to create it)" % (path, directory), path=path)
        if module.check_mode:
            result.update(changed=True, restart_required=True, validation={"status": "not_needed"}, **outcome)
            if module._diff:
                result["diff"] = {"before": "", "after": new_text, "before_header": "%s (absent)" % path, "after_header": "%s (content)" % path}
            finish()

    result.update(run_edit(module, path, compute, create=True, validate=validator, parent_mode=0o755))
    result.update(outcome)
    result["restart_required"] = result["changed"]
    if result["changed"] and module.check_mode:
        validator.status = {"status": "skipped", "reason": "check mode"}
    result["validation"] = validator.status
    finish()


if __name__ == "__main__":
    main()
