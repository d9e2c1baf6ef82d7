#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lsf_host
short_description: Add or remove resources on hosts in the Host section of IBM Spectrum LSF lsf.cluster
description:
  - Adds (O(state=present)) or removes (O(state=absent)) items of the C(RESOURCES) column for many hosts
    of the C(Host) section of C(lsf.cluster.<cluster_name>) in one edit.
  - A host covered by a condensed range row (C(host[01-04]), C(host[5:20]), C(hostA[1,3]B[1-3])) is
    edited on that row, never duplicated; the change then applies to every host of the range.
  - In C(RESOURCES) a leading C(!) marks an exclusive resource and C(name=value) a static value; a
    requested item replaces an item with the same name in another form (C(docker) replaces C(!docker)).
    In C(model)/C(type) C(!) means detected automatically.
  - With O(create_missing=true) a host without a row gets one, rendered against the file's own header,
    with C(model)/C(type) C(!), C(server) C(1) and the other columns empty, unless O(model), O(type),
    O(server) are given.
  - With O(static_values=resource_map), the static values of O(host_resources) go to the C(ResourceMap) section
    instead, as C(value@[hosts]) instances of C(LOCATION) (C(x86_64_level (4@[gpu01 gpu02] 3@[gpu03]))), the form
    the OpenLava lineage (OpenLava, volclava) reads - it ignores C(name=value) in C(RESOURCES) - and LSF 10.1 reads
    too; a C(name=value) item of that name leaves the host's row. Other hosts' instances are kept; a
    C(ResourceMap) row whose C(LOCATION) is not made of such instances (C([default]), C([all])) is refused with its
    line; a file without a C(ResourceMap) section gets one after the C(Host) section.
  - Every line the edit does not touch comes back byte-identical; an edited row keeps its spacing.
    A malformed file (a C(Begin) without C(End), a row whose value count does not match the header,
    text outside any section) fails with C(path:line) and is left as it was.
version_added: 0.1.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of the C(lsf.cluster.<cluster_name>) file. It must exist.
    type: path
    required: true
    aliases: [dest]
  hosts:
    description:
      - Host names (as in the C(HOSTNAME) column, case-insensitive), or the single name C(all) for every row.
      - Required with O(resources); not with O(host_resources).
    type: list
    elements: str
  resources:
    description:
      - C(RESOURCES) items, such as C(docker), C(!gpu) or C(ngpus=4).
      - Required with O(hosts); not with O(host_resources).
    type: list
    elements: str
  host_resources:
    description:
      - Where hosts differ, per host its resources in one edit, instead of O(hosts) and O(resources) - host name
        to a mapping of resource name to value. A number or a word gives the static value C(name=value); V(true)
        the Boolean item C(name); V(false) or V(null) removes the resource from the host's row. Names a host's
        mapping leaves out are not touched.
      - Only with O(state=present). O(create_missing), O(model), O(type) and O(server) apply as with O(hosts).
    type: dict
    version_added: 0.2.0
  static_values:
    description:
      - Where the static values (numbers and words) of O(host_resources) go - V(host_row), C(name=value) in the
        host's C(RESOURCES) cell; V(resource_map), C(value@[host]) instances in the C(ResourceMap) section (see the
        description). Boolean items always go to the host's row.
    type: str
    choices: [host_row, resource_map]
    default: host_row
    version_added: 0.3.0
  state:
    description:
      - C(present) adds the items, C(absent) removes items with these names (in any form).
    type: str
    choices: [present, absent]
    default: present
  create_missing:
    description:
      - Add a row for a host that has none (only with O(state=present)).
    type: bool
    default: false
  model:
    description:
      - C(model) of rows added by O(create_missing). Defaults to C(!) (detected).
    type: str
  type:
    description:
      - C(type) of rows added by O(create_missing). Defaults to C(!) (detected).
    type: str
  server:
    description:
      - C(server) of rows added by O(create_missing), C(1) server host, C(0) client. Defaults to C(1).
    type: int
    choices: [0, 1]
attributes:
  platform:
    support: full
    platforms: posix
    description: The LSF configuration host.
notes:
  - Run C(lsadmin reconfig) and C(badmin mbdrestart) after a change, and C(lsadmin limrestart) on changed
    hosts; RV(changed_hosts) lists them.
"""

EXAMPLES = r"""
- name: Give the GPU compute nodes the docker resource
  hpc.gpu_containers.lsf_host:
    path: /opt/lsf/conf/lsf.cluster.cluster1
    hosts: "{{ groups['lsf_compute'] }}"
    resources: [docker]
    create_missing: true

- name: Each node's platform as static values, removing what a node no longer has
  hpc.gpu_containers.lsf_host:
    path: /opt/lsf/conf/lsf.cluster.cluster1
    host_resources:
      gpu01: {cuda_version: 12020, compute_cap_min: 70, x86_64_level: 3}
      gpu02: {cuda_version: 12020, compute_cap_min: 80, x86_64_level: null}

- name: The same values where the OpenLava lineage reads them (a ResourceMap)
  hpc.gpu_containers.lsf_host:
    path: /opt/volclava/etc/lsf.cluster.volclava
    static_values: resource_map
    host_resources:
      gpu01: {docker: true, cuda_version: 12020, x86_64_level: 3}
      gpu02: {docker: true, cuda_version: 12020, x86_64_level: null}
- name: Take docker away from every host
  hpc.gpu_containers.lsf_host:
    path: /opt/lsf/conf/lsf.cluster.cluster1
    hosts: [all]
    resources: [docker]
    state: absent
"""

RETURN = r"""
changed_hosts:
  description: C(HOSTNAME) cells of the rows changed or added (a range row appears as its range), in file order.
  returned: always
  type: list
  elements: str
  sample: [host01, "gpu[01-04]"]
created_hosts:
  description: Hosts that got a new row.
  returned: always
  type: list
  elements: str
  sample: [host05]
changed_resources:
  description: The resources whose C(ResourceMap) row changed, was added or removed (O(static_values=resource_map)).
  returned: always
  type: list
  elements: str
  sample: [x86_64_level]
  version_added: 0.3.0
backup_file:
  description: Name of the backup file, when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /opt/lsf/conf/lsf.cluster.cluster1.2210.2026-01-01@10:00:00~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_cluster_edit import (
    check_host_name,
    check_host_resource,
    edit_hosts,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_resource_map import edit_resource_map
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, exit_edit, input_errors, model_errors


def host_resource_groups(host_resources):
    """host -> {name: value} as edits: [(hosts, items to set, names to remove)], hosts with the same edit together.

    ValueError names the host and the resource that cannot be a RESOURCES item.
    """
    groups = {}
    for host, wanted in host_resources.items():
        check_host_name(host)
        if not isinstance(wanted, dict):
            raise ValueError("host_resources: %s must map resource names to values, not %r" % (host, wanted))
        present, absent = [], []
        for name, value in sorted(wanted.items()):
            if value is None or value is False:
                absent.append(name)
                item = name
            elif value is True:
                present.append(name)
                item = name
            elif isinstance(value, (int, float, str)):
                item = "%s=%s" % (name, value)
                present.append(item)
            else:
                raise ValueError("host_resources: %s: %s must be a number, a word, true, false or null, not %r"
                                 % (host, name, value))
            try:
                check_host_resource(item)
            except ValueError as err:
                raise ValueError("host_resources: %s: %s" % (host, err))
        groups.setdefault((tuple(present), tuple(absent)), []).append(host)
    return [(hosts, list(present), list(absent)) for (present, absent), hosts in groups.items()]


def split_static_values(host_resources):
    """host_resources for the ResourceMap form: ``(row_host_resources, map_values, map_remove)``.

    A static value goes to ``map_values`` (resource -> host -> value), and its name leaves the host's row; a
    removal (false, null) leaves both; a Boolean stays on the row.
    """
    rows, values, remove = {}, {}, {}
    for host, wanted in host_resources.items():
        if not isinstance(wanted, dict):
            rows[host] = wanted
            continue
        rows[host] = {}
        for name, value in wanted.items():
            if value is True:
                rows[host][name] = True
            elif value is None or value is False:
                rows[host][name] = None
                remove.setdefault(name, []).append(host)
            else:
                rows[host][name] = None
                values.setdefault(name, {})[host] = value
    return rows, values, remove


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            hosts=dict(type="list", elements="str"),
            resources=dict(type="list", elements="str"),
            host_resources=dict(type="dict"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            create_missing=dict(type="bool", default=False),
            model=dict(type="str"),
            type=dict(type="str"),
            server=dict(type="int", choices=[0, 1]),
            static_values=dict(type="str", default="host_row", choices=["host_row", "resource_map"]),
            **FILE_EDIT_ARGS,
        ),
        required_one_of=[("hosts", "host_resources")],
        required_together=[("hosts", "resources")],
        mutually_exclusive=[("host_resources", "hosts"), ("host_resources", "resources")],
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    hosts = p["hosts"] or []
    every = [h.lower() for h in hosts] == ["all"]
    map_values, map_remove = {}, {}
    with input_errors(module, path):
        if p["static_values"] == "resource_map" and p["host_resources"] is None:
            raise ValueError("static_values=resource_map works with host_resources only")
        if p["host_resources"] is not None:
            if p["state"] != "present":
                raise ValueError("host_resources works with state=present only (false or null removes a resource)")
            host_resources = p["host_resources"]
            if p["static_values"] == "resource_map":
                host_resources, map_values, map_remove = split_static_values(host_resources)
            edits = host_resource_groups(host_resources)
        else:
            edits = [("all" if every else hosts, p["resources"], [])]
        if not every:
            for host in hosts:
                check_host_name(host)
        for item in p["resources"] or []:
            check_host_resource(item)
        for opt in ("model", "type"):
            value = p[opt]
            if value is not None and (not value or value.split() != [value] or "#" in value):
                raise ValueError("%s must be one word without blanks, line breaks or #, not %r" % (opt, value))

    outcome = {}

    def compute(text):
        changed, created, warnings = [], [], []
        with model_errors(path, LsfSyntaxError):
            for targets, items, removed in edits:
                steps = [(items, p["state"])] if items or not removed else []
                steps += [(removed, "absent")] if removed else []
                for resources, state in steps:
                    text, step_changed, step_created, step_warnings = edit_hosts(
                        text, targets, resources, state=state, create_missing=p["create_missing"],
                        model=p["model"], host_type=p["type"], server=p["server"])
                    changed += [h for h in step_changed if h not in changed]
                    created += [h for h in step_created if h not in created]
                    warnings += [w for w in step_warnings if w not in warnings]
            text, outcome["changed_resources"], map_warnings = edit_resource_map(text, map_values, map_remove)
        warnings += [w for w in map_warnings if w not in warnings]
        outcome["changed_hosts"] = changed
        outcome["created_hosts"] = created
        return text, warnings

    exit_edit(module, path, compute, outcome)


if __name__ == "__main__":
    main()
