#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_conf
short_description: Set parameters, node and partition attributes in a Slurm slurm.conf file
description:
  - Sets or removes global parameters (C(Key=value)) and attributes of C(NodeName) and C(PartitionName) lines in
    C(slurm.conf), in place.
  - Lines the edit does not touch come back byte-identical (comments, blank lines, continued lines, C(include)
    lines); a changed value keeps its place on the line and the line's trailing comment.
  - Keys are matched case-insensitively, as Slurm reads them; node and partition names exactly. A global
    parameter defined more than once is updated where it is defined last (the definition Slurm uses), with a
    warning.
  - Node names may be host lists (C(gpu[01-04])). When only some nodes of such a line change, the line is split
    - the unchanged nodes keep it, the others get lines of their own right after it, with the same attributes.
    C(NodeName=DEFAULT) lines are taken into account - a value a DEFAULT line already gives is no change.
  - The C(Gres) attribute of a node is a list of GRES; a value given replaces only the GRES names it names
    (C(gpu:a100:4) replaces the node's C(gpu) entries and keeps C(nic:1)); C(gpu:0) removes them.
  - Values that Slurm cannot read back the same (double quotes, C(#), backslashes, line breaks) are refused with
    the key named, before the file is read. Malformed files fail with C(path:line) and are left as they were.
  - Node and partition names are letters, digits, C(.), C(_) and C(-); any other name (a blank, a line break,
    C(=), C(#)) fails the task naming the option, before the file is read.
  - A node or partition that C(slurm.conf) does not define is looked for in the files its C(include) lines name
    (relative to the directory of C(slurm.conf), wildcards expanded, includes of included files followed), or in
    O(nodes_path), and edited in the file that defines it, each file in its own transaction (check mode, diff,
    backup, the file's own lines byte-identical). Every file is checked before any is written.
version_added: 0.2.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
  - hpc.gpu_containers.file_edit.attributes
options:
  path:
    description:
      - Path of C(slurm.conf). It must exist.
    type: path
    required: true
    aliases: [dest]
  settings:
    description:
      - Global parameters, as a mapping C(Key) to value; C(null) removes every definition of the key.
      - Booleans become C(YES)/C(NO), numbers their decimal text, lists are joined with commas.
    type: dict
    default: {}
  list_keys:
    description:
      - Parameters whose value is a comma-separated set. The words given are added to the file's words
        (kept in the file's order); the same words in another order are no change.
    type: list
    elements: str
    default: [GresTypes]
  keep_existing:
    description:
      - Parameters set only when the file lacks them. A different value in the file is kept, with a warning
        (for example a site's own C(Epilog)).
    type: list
    elements: str
    default: []
  nodes:
    description:
      - Attributes of C(NodeName) records, as a mapping node name to a mapping C(Key) to value
        (C(null) removes the attribute from the node's line).
    type: dict
    default: {}
  partitions:
    description:
      - Attributes of C(PartitionName) records, as a mapping partition name to attributes.
    type: dict
    default: {}
  create_missing:
    description:
      - Add a C(NodeName)/C(PartitionName) line for a name the files do not define (to O(nodes_path) when given,
        else to C(slurm.conf)). When false, such a name fails the task.
    type: bool
    default: false
  owned_features:
    description:
      - A regular expression for the node features the task owns. With it, a C(Features) value of O(nodes) replaces
        only the features of the node's line that match it, and the node keeps its other features (the site's own)
        in their order; the same features in another order are no change. Without it, C(Features) is set whole.
      - The P(hpc.gpu_containers.slurm_platform_features#filter) filter returns the pattern of the features it
        writes.
    type: str
    version_added: 0.3.0
  nodes_path:
    description:
      - The file that holds the site's C(NodeName) and C(PartitionName) lines when C(slurm.conf) includes them from
        another file. A name C(slurm.conf) does not define is looked for only there, instead of in the files
        C(slurm.conf)'s C(include) lines name.
    type: path
    version_added: 0.2.0
attributes:
  platform:
    support: full
    platforms: posix
    description: The host that holds slurm.conf (the controller, or every node where each has a copy).
notes:
  - Slurm reads the file only when told to; use RV(changed_keys) and RV(changed_nodes) to decide between
    C(scontrol reconfigure) and restarting the daemons.
seealso:
  - module: hpc.gpu_containers.slurm_gres
"""

EXAMPLES = r"""
- name: GPUs as GRES, and the epilog directory
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    settings:
      GresTypes: gpu
      Epilog: /etc/slurm/epilog.d/*
    keep_existing: [Epilog]
    nodes:
      gpu01: {Gres: "gpu:tesla_v100-sxm2-16gb:2"}
      gpu02: {Gres: "gpu:nvidia_a100-sxm4-40gb:4"}
    backup: true

- name: Nodes kept in a file slurm.conf includes (found by following the include lines)
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    nodes:
      gpu01: {Gres: "gpu:nvidia_a100-sxm4-40gb:4"}

- name: Or in the file the site names
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    nodes_path: /etc/slurm/nodes.conf
    nodes:
      gpu01: {Gres: "gpu:nvidia_a100-sxm4-40gb:4"}

- name: Remove a parameter
  hpc.gpu_containers.slurm_conf:
    path: /etc/slurm/slurm.conf
    settings:
      HealthCheckProgram: null
"""

RETURN = r"""
changed_keys:
  description: Global parameters that were (or in check mode would be) set or removed.
  returned: always
  type: list
  elements: str
  sample: [GresTypes]
changed_nodes:
  description: Nodes whose attributes were (or would be) changed or added.
  returned: always
  type: list
  elements: str
  sample: [gpu01, gpu02]
changed_partitions:
  description: Partitions whose attributes were (or would be) changed or added.
  returned: always
  type: list
  elements: str
  sample: []
settings:
  description: The effective value of every parameter given, after the edit (C(null) when absent).
  returned: always
  type: dict
  sample: {GresTypes: gpu, Epilog: /etc/slurm/epilog.d/*}
changed_files:
  description: The files that were (or in check mode would be) changed - C(slurm.conf), an included file, or both.
  returned: always
  type: list
  elements: str
  sample: [/etc/slurm/nodes.conf]
  version_added: 0.2.0
backup_file:
  description: Name of the backup file of C(slurm.conf), when one was written.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/slurm/slurm.conf.2210.2026-01-01@10:00:00~
backup_files:
  description: For each file backed up (C(slurm.conf) and included files), the name of its backup.
  returned: changed and O(backup=true)
  type: dict
  sample: {/etc/slurm/nodes.conf: /etc/slurm/nodes.conf.2210.2026-01-01@10:00:00~}
  version_added: 0.2.0
"""

import glob
import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import (
    FILE_EDIT_ARGS,
    input_errors,
    model_errors,
    run_edit,
    text_value,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_conf import (
    defined_names,
    include_targets,
    parameters,
    set_parameters,
    set_records,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_syntax import SlurmSyntaxError, check_node_name, check_value

# Slurm stops at this depth of nested includes too.
MAX_INCLUDE_DEPTH = 10
KINDS = (("NodeName", "nodes"), ("PartitionName", "partitions"))


def normalize(name, value):
    """Ansible value -> slurm.conf text (None stays None)."""
    return text_value(name, value, "YES", "NO", ",")


def normalize_records(kind, option, records):
    out = {}
    for name, attrs in (records or {}).items():
        check_node_name(option, name)
        if not isinstance(attrs, dict):
            raise ValueError("%s %s: the attributes must be a mapping" % (kind, name))
        out[name] = {}
        for key, value in attrs.items():
            out[name][key] = normalize("%s %s %s" % (kind, name, key), value)
            if out[name][key] is not None:
                check_value(key, out[name][key])
    return out


def read_text(path):
    """The file's text, None when it does not exist; FileEditError when it cannot be read or is no regular file
    (opened without blocking, so that a FIFO named by an include line cannot hang the task)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileEditError("cannot read: %s" % exc.strerror, path=path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileEditError("not a regular file", path=path)
        with os.fdopen(fd, "rb") as handle:
            fd = None
            data = handle.read()
    except OSError as exc:
        raise FileEditError("cannot read: %s" % exc.strerror, path=path)
    finally:
        if fd is not None:
            os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileEditError("not UTF-8 text (byte %d)" % exc.start, path=path)


def included_files(path, text):
    """The files slurm.conf's include lines name, in the order Slurm reads them, includes of includes followed.

    A relative path is relative to slurm.conf's directory; wildcards are expanded (sorted), a pattern without
    matches names no file.  A file that includes itself, directly or not, fails with ``path:line``.
    """
    base = os.path.dirname(os.path.abspath(path))
    out = []

    def walk(current, current_text, stack):
        with model_errors(current, SlurmSyntaxError):
            targets = include_targets(current_text)
        for lineno, target in targets:
            pattern = target if os.path.isabs(target) else os.path.join(base, target)
            names = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
            for name in names:
                real = os.path.realpath(name)
                if real in stack:
                    raise FileEditError("include %s: the file includes itself" % target, path=current, line=lineno)
                if len(stack) > MAX_INCLUDE_DEPTH:
                    raise FileEditError("include %s: more than %d nested includes" % (target, MAX_INCLUDE_DEPTH),
                                        path=current, line=lineno)
                included = read_text(name)
                if included is None:
                    continue
                if name not in out:
                    out.append(name)
                walk(name, included, stack + [real])

    walk(path, text, [os.path.realpath(path)])
    return out


def route_records(path, records, nodes_path, create_missing):
    """``{file: {kind: {name: attrs}}}``: each node and partition to the file that defines it."""
    routes = {path: {"NodeName": {}, "PartitionName": {}}}
    if not any(records.values()):
        return routes
    text = read_text(path)
    if text is None:
        return {path: records}  # the transaction says the file does not exist
    files = [path] + ([nodes_path] if nodes_path else included_files(path, text))
    texts = {path: text}
    for name in files[1:]:
        texts[name] = read_text(name)
        if texts[name] is None:
            raise FileEditError("file does not exist", path=name)
    defined = {}
    for name in files:
        with model_errors(name, SlurmSyntaxError):
            defined[name] = dict((kind, defined_names(texts[name], kind)) for kind, _option in KINDS)
    for kind, _option in KINDS:
        for record, attrs in records[kind].items():
            where = [name for name in files if record in defined[name][kind]]
            if len(where) > 1:
                raise FileEditError("%s %s is defined in %s and in %s" % (kind, record, where[0], where[1]), path=path)
            if where:
                target = where[0]
            elif create_missing:
                target = nodes_path or path
            elif len(files) > 1:
                raise FileEditError("%s %s is not defined in %s nor in the files it includes (%s)"
                                    % (kind, record, path, ", ".join(files[1:])), path=path)
            else:
                target = path
            routes.setdefault(target, {"NodeName": {}, "PartitionName": {}})[kind][record] = attrs
    return routes


def edit_records(text, records, create_missing, owned_features=None):
    text, changed_nodes, warnings = set_records(text, "NodeName", records["NodeName"], create_missing, owned_features)
    text, changed_partitions, more = set_records(text, "PartitionName", records["PartitionName"], create_missing)
    return text, changed_nodes, changed_partitions, warnings + more


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            settings=dict(type="dict", default={}),
            list_keys=dict(type="list", elements="str", default=["GresTypes"], no_log=False),
            keep_existing=dict(type="list", elements="str", default=[]),
            nodes=dict(type="dict", default={}),
            partitions=dict(type="dict", default={}),
            create_missing=dict(type="bool", default=False),
            nodes_path=dict(type="path"),
            owned_features=dict(type="str"),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    create_missing = module.params["create_missing"]
    owned = module.params["owned_features"]
    try:
        if owned:
            re.compile(owned)
    except re.error as err:
        module.fail_json(msg="owned_features: %r is not a regular expression: %s" % (owned, err), path=path)
    with input_errors(module, path):
        settings = {}
        for name, value in module.params["settings"].items():
            settings[name] = normalize(name, value)
            if settings[name] is not None:
                check_value(name, settings[name])
        records = dict((kind, normalize_records(kind, option, module.params[option])) for kind, option in KINDS)

    try:
        routes = route_records(path, records, module.params["nodes_path"], create_missing)
        # Every file's edit is worked out before any is written: a bad line in one leaves them all as they were.
        for name, routed in routes.items():
            text = read_text(name)
            if text is None:
                continue  # slurm.conf: the transaction says it does not exist
            with model_errors(name, SlurmSyntaxError):
                if name == path:
                    text = set_parameters(text, settings, list_keys=module.params["list_keys"],
                                          keep_existing=module.params["keep_existing"])[0]
                edit_records(text, routed, create_missing, owned)
    except FileEditError as err:
        module.fail_json(msg=str(err), path=path)

    outcome = {"changed_nodes": [], "changed_partitions": []}

    def compute_records(name, routed):
        def compute(text):
            with model_errors(name, SlurmSyntaxError):
                text, changed_nodes, changed_partitions, warnings = edit_records(text, routed, create_missing, owned)
            outcome["changed_nodes"] += changed_nodes
            outcome["changed_partitions"] += changed_partitions
            return text, warnings
        return compute

    def compute_main(text):
        with model_errors(path, SlurmSyntaxError):
            text, changed_keys, warnings = set_parameters(text, settings, list_keys=module.params["list_keys"],
                                                          keep_existing=module.params["keep_existing"])
            text, changed_nodes, changed_partitions, more = edit_records(text, routes[path], create_missing, owned)
            warnings += more
            effective = dict((k.lower(), v) for k, v in parameters(text).items())
        outcome["changed_nodes"] += changed_nodes
        outcome["changed_partitions"] += changed_partitions
        outcome.update(changed_keys=changed_keys,
                       settings=dict((name, effective.get(name.lower())) for name in settings))
        return text, warnings

    results = []
    for name, routed in routes.items():
        if name == path:
            continue
        results.append((name, run_edit(module, name, compute_records(name, routed))))
    results.insert(0, (path, run_edit(module, path, compute_main)))
    result = dict(results[0][1])
    result["changed"] = any(res["changed"] for _name, res in results)
    result["changed_files"] = [name for name, res in results if res["changed"]]
    if len(results) > 1 and "diff" in result:
        result["diff"] = [res["diff"] for _name, res in results]
    backups = dict((name, res["backup_file"]) for name, res in results if "backup_file" in res)
    if backups:
        result["backup_files"] = backups
    result.update(outcome)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
