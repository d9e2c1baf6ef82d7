# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lsf_platform_resources filter: each Docker host's platform as static LSF Numeric resources."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lsf_platform_resources
short_description: Each host's CPU level, driver, CUDA version and GPU compute capabilities as LSF resources
version_added: 0.2.0
description:
  - Turns the GPU facts (M(hpc.gpu_containers.gpu_facts)) of each host into the static Numeric LSF resources that
    describe its platform - C(x86_64_level) (1 to 4), C(power_generation) (8, 9, 10), C(nvidia_driver) (the
    driver branch), C(cuda_version) (1000 x major + 10 x minor of the newest CUDA the driver supports),
    C(compute_cap_min) and C(compute_cap_max) (10 x major + minor) - and returns the resource definitions for
    lsf.shared with them.
  - Every host gets every name - a value, or V(null) for a resource it lacks (no GPU, unknown CPU level) so that
    M(hpc.gpu_containers.lsf_host) removes a value the host no longer has. A host without GPU facts (not reached
    in this run, or no inventory host is that LSF host) is left out, so its line stays as it is.
  - The same encodings as the image catalogue's (the C(image_variant) module), so C(bsub -R) strings and the
    catalogue's requirements say the same thing.
options:
  _input:
    description: The hosts (inventory names, which are the LSF host names).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars); each host's C(ansible_facts.gpu_facts) is read from it.
    type: dict
    required: true
  inventory_hosts:
    description:
      - The inventory hosts the LSF hosts are (the Docker hosts group). An LSF host is the one of them with its
        name, else the one whose own short host name (C(ansible_facts.hostname)) it is - for an inventory of FQDNs
        or aliases. Default - O(_input).
    type: list
    elements: str
  boolean:
    description:
      - A Boolean resource every host of O(_input) gets (V(true)) before its platform values, such as the
        C(docker) resource of the lsf_docker role; then every host of O(_input) is in C(hosts), with or without
        GPU facts.
    type: str
    version_added: 0.3.0
  platform_values:
    description:
      - V(false) leaves the platform resources out - no C(definitions), and C(hosts) holds only O(boolean).
    type: bool
    default: true
    version_added: 0.3.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The platform resources in lsf.cluster
  hpc.gpu_containers.lsf_host:
    path: /opt/lsf/conf/lsf.cluster.cluster1
    host_resources: "{{ (groups['docker_hosts'] | hpc.gpu_containers.lsf_platform_resources(hostvars)).hosts }}"
"""

RETURN = r"""
_value:
  description:
    - C(definitions), the lsf.shared rows (as M(hpc.gpu_containers.lsf_resource) takes them in
      O(hpc.gpu_containers.lsf_resource#module:resources)), and C(hosts), host name to resource name to value or
      V(null).
  type: dict
  sample:
    definitions: [{name: cuda_version, type: Numeric, increasing: false, description: newest CUDA ...}]
    hosts: {gpu01: {x86_64_level: 3, power_generation: null, nvidia_driver: 470, cuda_version: 11040,
                    compute_cap_min: 70, compute_cap_max: 70}}
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._hostvars import facts_of
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import ImageCatalogueError, platform
from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_platforms import LSF_RESOURCES, lsf_resources


def _inventory_host(name, hostvars, candidates):
    """The inventory host that is LSF host ``name``: by inventory name, else by its own short host name."""
    if name in candidates:
        return name
    for host in candidates:
        facts = facts_of(hostvars, host)
        if name in (facts.get("hostname"), str(facts.get("nodename") or "").split(".", maxsplit=1)[0]):
            return host
    return None


def lsf_platform_resources(hosts, hostvars, inventory_hosts=None, boolean=None, platform_values=True):
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("lsf_platform_resources: expected a list of hosts, got %s" % type(hosts).__name__)
    candidates = list(inventory_hosts if inventory_hosts is not None else hosts)
    names = [definition["name"] for definition in LSF_RESOURCES]
    out = {}
    for name in hosts if platform_values else []:
        host = _inventory_host(name, hostvars, candidates)
        facts = facts_of(hostvars, host).get("gpu_facts") if host else None
        if not isinstance(facts, Mapping):
            continue
        try:
            values = lsf_resources(platform(dict(facts)))
        except ImageCatalogueError as err:
            raise AnsibleFilterError("lsf_platform_resources: %s: %s" % (name, err))
        out[name] = dict((resource, values.get(resource)) for resource in names)
    if boolean:
        out = dict((name, dict({boolean: True}, **out.get(name, {}))) for name in hosts)
    definitions = [dict(definition) for definition in LSF_RESOURCES] if platform_values else []
    return {"definitions": definitions, "hosts": out}


class FilterModule:
    def filters(self):
        return {"lsf_platform_resources": lsf_platform_resources}
