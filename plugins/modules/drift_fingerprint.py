#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: drift_fingerprint
short_description: Record what the collection manages on a node, or check in one step that nothing of it changed
version_added: 0.2.0
description:
  - The drift fast path. At the end of a converge, O(state=record) writes to O(path) the list of everything the
    collection manages on the node (O(items)), a digest of each and the digest of the run's inputs (O(inputs),
    from the P(hpc.gpu_containers.drift_inputs#lookup) lookup).
  - O(state=check) recomputes the digests of the recorded items and compares them and O(inputs) with the
    record. RV(clean) is true only when all match; RV(differences) names what differs (never values). It changes
    nothing, also outside check mode, unless O(forget) says so.
  - The record holds digests only, but the inputs digest covers registry passwords, so the file is C(0600).
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  path:
    description: The record file.
    type: path
    default: /var/lib/hpc-gpu-containers/drift-fingerprint.json
  state:
    description: V(record) writes the record (again only when it differs); V(check) compares with it.
    type: str
    choices: [record, check]
    default: check
  inputs:
    description: The digest of the run's inputs (the P(hpc.gpu_containers.drift_inputs#lookup) lookup).
    type: str
    required: true
  forget:
    description:
      - With O(state=check), outside check mode, when the node differs from the record - delete the record, so
        that a run that changes the node and does not reach O(state=record) on it (a failed host) leaves it without
        one, and its next check is a full one. C(site.yml) sets it in a full converge, which records the node
        again at its end.
      - Bookkeeping of the fast path, not configuration - RV(forgotten) says it happened, C(changed) stays false.
    type: bool
    default: false
  items:
    description:
      - What the collection manages on this node, by kind, with O(state=record) (a check reads them from the
        record).
      - C(paths) (files; a directory covers everything below it), C(packages), C(services) (systemd units),
        C(groups) (members), C(images) (local Docker image ids), C(manifests) (the registry's digest of each
        C(registry/repository:tag), asked with the node's Docker login in C(~/.docker/config.json) and its trust in
        C(/etc/docker/certs.d), or plain HTTP for a registry in daemon.json's C(insecure-registries); a registry
        that does not answer, or answers HTTP 429 or 5xx, is asked once more two seconds later), C(node)
        (true - machine, host name, OS release) and C(gpus) (true - the GPU and CPU facts of
        M(hpc.gpu_containers.gpu_facts)).
      - C(members), a mapping of each group to the members the inventory names. Another member of the group is a
        difference, with its name, in every check, also when the converge that recorded the node saw it already.
      - C(json_keys), a mapping of each JSON file to the top-level keys the collection sets in it. Each key's
        value is an item of its own, and the file's C(paths) item covers only its type, mode and owner - a key
        that the site or another tool set is no drift.
      - A list of such mappings (one per role) is merged.
    type: raw
    default: {}
  owned_items:
    description:
      - With O(state=record), what each owner (a role, or a role's entry point) manages on this node - a mapping
        of owner names to O(items) mappings, merged with O(items) into the record, which keeps each item's owners.
        An item two owners name belongs to both.
      - A check then returns RV(owners), the owners of what differs. C(site.yml) records each role under its name,
        and a drift check runs only those roles on a node that differs in nothing else.
    type: dict
    default: {}
    version_added: 0.3.0
attributes:
  check_mode:
    support: full
    description: O(state=record) reports whether the record would change and writes nothing.
  diff_mode:
    support: none
    description: The record holds digests; RV(differences) names what differs.
  idempotent:
    support: full
    description: A second O(state=record) on an unchanged node changes nothing.
notes:
  - One module execution per node, whatever the number of items; the files are read and hashed on the node.
"""

EXAMPLES = r"""
- name: Record what this run manages on the node
  hpc.gpu_containers.drift_fingerprint:
    state: record
    inputs: "{{ lookup('hpc.gpu_containers.drift_inputs') }}"
    items:
      paths: [/etc/docker/daemon.json, /etc/nvidia-container-runtime]
      packages: [docker.io, nvidia-container-toolkit]
      services: [docker]
      groups: [docker]
      node: true
      gpus: true

- name: Record it with the role that manages each item (a check then names the roles of what differs)
  hpc.gpu_containers.drift_fingerprint:
    state: record
    inputs: "{{ lookup('hpc.gpu_containers.drift_inputs') }}"
    owned_items:
      docker_engine:
        paths: [/etc/docker/daemon.json]
        json_keys: {/etc/docker/daemon.json: [log-driver, log-opts]}
        packages: [docker-ce]
      nvidia_container_runtime:
        paths: [/etc/docker/daemon.json]
        json_keys: {/etc/docker/daemon.json: [runtimes]}
        packages: [nvidia-container-toolkit]

- name: The drift fast path
  hpc.gpu_containers.drift_fingerprint:
    inputs: "{{ lookup('hpc.gpu_containers.drift_inputs') }}"
  register: fingerprint

- name: Before a converge that records the node again at its end - a node that differs loses its record
  hpc.gpu_containers.drift_fingerprint:
    inputs: "{{ lookup('hpc.gpu_containers.drift_inputs') }}"
    forget: true
  register: fingerprint
"""

RETURN = r"""
clean:
  description: O(state=check) - the record exists and every item and the inputs match it.
  returned: always
  type: bool
  sample: false
inputs_clean:
  description:
    - The record exists, and the inputs and the node's facts (O(items) C(node) and C(gpus)) match it - whatever
      else differs is what the roles manage on the node, which they put back from the same inputs. C(site.yml)
      leaves the LSF master out when every other node of the run has this (its LSF files describe the nodes from
      their facts and variables).
  returned: always
  type: bool
  sample: true
  version_added: 0.3.0
differences:
  description:
    - What differs from the record (item keys, V(inputs), or V(no record)); with O(state=record), from the record
      before this run.
    - "A group member that the C(members) of O(items) does not name adds C(members:<group> (not named by the
      inventory: <names>)) to every check."
  returned: always
  type: list
  elements: str
  sample: ["json:/etc/docker/daemon.json#log-driver", "service:docker"]
owners:
  description:
    - The owners (O(owned_items) names of the record) of what differs, sorted - V([]) when nothing does.
    - V(null) when something differs that no owner can put back alone - no record, the inputs, the node's or GPUs'
      facts (what the roles read rather than manage), or a record written without O(owned_items).
  returned: always
  type: list
  elements: str
  sample: ["docker_engine"]
  version_added: 0.3.0
forgotten:
  description: O(forget) deleted the record (the node differs from it).
  returned: always
  type: bool
  sample: false
compared:
  description: The number of digests compared or recorded.
  returned: always
  type: int
  sample: 23
"""

import base64
import json
import os
import pwd
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _fingerprint, _node_facts
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_index import digest_of
from ansible_collections.hpc.gpu_containers.plugins.module_utils._registry_api import Registry, RegistryError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import run_edit


def _gpu_facts():
    """What gpu_facts reports on this node."""
    return _node_facts.gather()


DOCKER_CONFIG = None  # the user's ~/.docker/config.json
# A registry that many nodes' checks ask at once may not answer in time, or answer 429 or 5xx: a manifest is asked
# once more after a short wait before that counts as a difference (which sends the node through its full check).
MANIFEST_ATTEMPTS = 2
MANIFEST_RETRY_DELAY = 2
DAEMON_JSON = "/etc/docker/daemon.json"
CERTS_D = "/etc/docker/certs.d"


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _manifest_digest(reference):
    """The registry's digest of ``registry/repository:tag`` as this node's Docker sees the registry."""
    host, dummy, rest = reference.partition("/")
    repository, dummy, tag = rest.rpartition(":")
    config = DOCKER_CONFIG or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".docker", "config.json")
    auth = ((_read_json(config).get("auths") or {}).get(host) or {}).get("auth")
    username, dummy, password = base64.b64decode(auth).decode("utf-8", "replace").partition(":") if auth else ("", "", "")
    ca_path = os.path.join(CERTS_D, host, "ca.crt")
    insecure = host in (_read_json(DAEMON_JSON).get("insecure-registries") or [])
    registry = Registry({"registry": host, "repository": repository, "insecure": insecure, "username": username,
                         "password": password, "ca_path": ca_path if os.path.exists(ca_path) else None,
                         "timeout": 30})
    for attempt in range(MANIFEST_ATTEMPTS):
        if attempt:
            time.sleep(MANIFEST_RETRY_DELAY)
        try:
            _document, body, _media_type = registry.manifest(tag)
        except RegistryError as err:
            if err.transient:
                continue
            break
        return digest_of(body) if body is not None else "absent"
    return "not answered: RegistryError"


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "default": "/var/lib/hpc-gpu-containers/drift-fingerprint.json"},
            "state": {"type": "str", "choices": ["record", "check"], "default": "check"},
            "inputs": {"type": "str", "required": True},
            "items": {"type": "raw", "default": {}},
            "owned_items": {"type": "dict", "default": {}},
            "forget": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    path, inputs = module.params["path"], module.params["inputs"]

    def run(argv):
        if not shutil.which(argv[0]):
            return None, "", ""
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    def current(items):
        return _fingerprint.compute(items, run, _gpu_facts, _manifest_digest)

    try:
        with open(path, encoding="utf-8") as handle:
            before = handle.read()
    except OSError:
        before = None
    record = _fingerprint.load_record(before)

    if module.params["state"] == "check":
        items = record["items"] if record else {}
        try:
            items = _fingerprint.canonical_items(items)
            state = current(items)
        except _fingerprint.FingerprintError:
            record, items = None, {}
            state = {}
        found = _fingerprint.differences(record, inputs, state, _fingerprint.unlisted_members(items))
        forgotten = bool(found and before is not None and module.params["forget"] and not module.check_mode)
        if forgotten:
            try:
                os.unlink(path)
            except OSError as err:
                module.fail_json(msg="cannot delete the drift record %s: %s" % (path, err))
        module.exit_json(changed=False, clean=not found, inputs_clean=_fingerprint.inputs_match(found),
                         differences=found, owners=_fingerprint.owners_of(record, found), compared=len(state),
                         forgotten=forgotten)

    try:
        owned = _fingerprint.canonical_owned(module.params["owned_items"])
        items = _fingerprint.canonical_items([module.params["items"]] + list(owned.values()))
    except _fingerprint.FingerprintError as err:
        module.fail_json(msg="items: %s" % err)
    state = current(items)
    found = _fingerprint.differences(record, inputs, state, _fingerprint.unlisted_members(items))
    text = _fingerprint.record_text(items, inputs, state, owned)
    result = run_edit(module, path, lambda _before: text, create=True, new_mode=0o600, parent_mode=0o755)
    result.pop("diff", None)  # digests: nothing a reader could use
    module.exit_json(clean=not found, inputs_clean=_fingerprint.inputs_match(found), differences=found,
                     owners=_fingerprint.owners_of(record, found), compared=len(state), forgotten=False, **result)


if __name__ == "__main__":
    main()
