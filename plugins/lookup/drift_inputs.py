# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift_inputs lookup: one digest of everything on the controller that decides what a converge writes."""

from __future__ import annotations

DOCUMENTATION = r"""
name: drift_inputs
short_description: The digest of a host's inputs to the collection's roles, for the drift fast path
version_added: 0.2.0
description:
  - Returns the sha256 of, for the host the task runs for, every variable the collection's roles read (names
    starting with C(docker_engine_), C(nvidia_container_runtime_), C(container_registry_), C(container_verify_),
    C(lsf_docker_), C(slurm_docker_), C(rootless_runtimes_), C(image_variants_) or C(hpc_), except the run's own
    switches C(hpc_site_serial), C(hpc_site_max_fail_percentage), C(hpc_site_lsf_drain), C(hpc_site_slurm_drain),
    C(hpc_site_lsf_elsewhere), C(hpc_site_sliced) and C(hpc_drift_*) and the roles' C(*_drift_items)), each
    templated; the host's groups; the members of the groups that decide what its roles make; and the content of
    the collection itself (its plugins, roles and playbooks), so that a new release or a local change to the
    collection is an input change.
  - The groups' members that count are the same in any slice of the inventory that holds the host (a C(--limit)
    slice, or AWX's job slicing, whose slices hold only their own hosts). On the LSF master and the Slurm
    controller (C(lsf_master), C(slurm_docker_controller_group)), whose files list the other hosts, every group's
    members; on every other host the members of the registry group (C(container_registry_group), default
    C(registry)), whose first host is its registry, unless the inventory names the registry in
    C(container_registry_server) (then that variable counts, as every variable does).
  - Take it before any role runs (C(site.yml) does, in its first play), so that registered results and facts the
    roles set do not count.
  - Variables are templated without the host's facts (the drift check gathers none); a variable built from facts
    counts by its expression, and the facts themselves are compared on the node by
    M(hpc.gpu_containers.drift_fingerprint) (C(node), C(gpus)). A variable that cannot be templated that way
    counts as its expression (its value as given) and its error's name, the same at converge and at the check.
  - The value feeds M(hpc.gpu_containers.drift_fingerprint) O(hpc.gpu_containers.drift_fingerprint#module:inputs).
options:
  _terms:
    description: Not used.
    required: false
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The drift fast path
  hpc.gpu_containers.drift_fingerprint:
    inputs: "{{ lookup('hpc.gpu_containers.drift_inputs') }}"
"""

RETURN = r"""
_raw:
  description: One sha256, hexadecimal.
  type: list
  elements: str
"""

import hashlib
import json
import os
import re

from ansible.plugins.lookup import LookupBase

PREFIXES = re.compile(r"^(docker_engine|nvidia_container_runtime|container_registry|container_verify|lsf_docker"
                      r"|slurm_docker|rootless_runtimes|image_variants|hpc)_")
# How a run goes, not what it makes: batches, failure tolerance, draining, the slice it is.
RUN_SWITCHES = re.compile(r"^(hpc_site_(serial|max_fail_percentage|lsf_drain|slurm_drain|lsf_elsewhere|sliced)"
                          r"|hpc_drift_.*"
                          r"|.*_drift_items(_.*)?)$")
# What makes the collection: its code and roles; not its tests, benchmarks or documentation.
CONTENT = ("plugins", "roles", "playbooks", "galaxy.yml", "MANIFEST.json")
_COLLECTION_DIGEST = {}


def collection_digest(root):
    """sha256 over the names and contents of the collection's files under ``root`` (once per process)."""
    if root in _COLLECTION_DIGEST:
        return _COLLECTION_DIGEST[root]
    digest = hashlib.sha256()
    for part in CONTENT:
        top = os.path.join(root, part)
        paths = [top] if os.path.isfile(top) else []
        for base, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += [os.path.join(base, name) for name in sorted(files) if not name.endswith(".pyc")]
        for path in paths:
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
    _COLLECTION_DIGEST[root] = digest.hexdigest()
    return _COLLECTION_DIGEST[root]


def member_inputs(group_names, groups, variables):
    """The groups' members that decide what the roles make on a host of ``group_names``, the same in every slice
    of the inventory that holds the host (see DOCUMENTATION)."""
    listing = {"lsf_master", str(variables.get("slurm_docker_controller_group", "slurm_controller"))}
    if listing.intersection(group_names):
        return groups
    if "container_registry_server" in variables:
        return {}
    registry = str(variables.get("container_registry_group", "registry"))
    return {registry: groups.get(registry) or []}


def inputs_digest(values, group_names, groups, collection):
    """The digest of templated variable values, the host's groups, the members of ``groups`` and the collection."""
    document = {"variables": values, "group_names": sorted(group_names),
                "groups": {name: sorted(members) for name, members in sorted(groups.items())},
                "collection": collection}
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=repr).encode()).hexdigest()


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        factless = {name: value for name, value in variables.items()
                    if name != "ansible_facts" and not name.startswith("ansible_")}
        templar = self._templar.copy_with_new_env(available_variables=factless)
        values = {}
        for name in sorted(variables):
            if not PREFIXES.match(name) or RUN_SWITCHES.match(name):
                continue
            try:
                values[name] = templar.template(variables[name])
            # Whatever templating raises counts by the expression and the error's kind (see DOCUMENTATION): another
            # expression that fails the same way is another input.
            except Exception as err:  # pylint: disable=broad-exception-caught
                values[name] = ["<not templated: %s>" % type(err).__name__, variables[name]]
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        group_names = list(variables.get("group_names") or [])
        groups = member_inputs(group_names, dict(variables.get("groups") or {}), variables)
        return [inputs_digest(values, group_names, groups, collection_digest(root))]
