#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: drift_report_join
short_description: Join the drift reports of several slices of one drift check into one report
version_added: 0.3.0
description:
  - A large site runs its nightly drift check in C(--limit) slices, each with a report directory of its own
    (docs/scale.md). This module reads each slice's C(drift.json) (written by the
    P(hpc.gpu_containers.drift_report#callback) callback) and writes one report, as one run over all their hosts
    would have written it - C(drift.json), C(drift.md) and C(drift.junit.xml) into O(dest), and
    C(hpc_gpu_containers_drift.prom) into O(prom_dir) - so that the dashboards, the alert and the person on
    call read one report.
  - The joined report holds the hosts of every slice, its summary counted again over all of them, and the time
    of the earliest slice. A host in two slices, a report of another C(schema_version), or check-mode reports
    beside a converge's are refused, naming the reports; nothing is written then.
  - The files are written with mode C(0640), through the collection's file-edit transaction (temporary file and
    rename, so node_exporter never reads half a file); a missing O(dest) or O(prom_dir) is created with mode
    C(0750). A rerun over the same reports changes nothing.
  - Runs where the reports are, usually C(localhost) (the controller, or the execution environment that mounts
    the slices' report directories).
  - Under AWX's job slicing the slices of one job template share its environment, so their report directory is
    one pattern (C(HPC_DRIFT_REPORT_DIR=/shared/drift/nightly/$JOB_ID), AWX's job id per slice); join them with
    O(src) a pattern (C(/shared/drift/nightly/*)) and O(remove_src), so that the next night starts from an empty
    directory.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  src:
    description:
      - The slices' reports - each a report directory (its C(drift.json) is read) or a C(drift.json) file.
      - An entry with C(*), C(?) or C([) is a pattern (shell-style, Python's C(glob)); each match is a report, in
        sorted order. A pattern that matches nothing is refused, and so is a report in O(dest) or O(prom_dir).
    type: list
    elements: path
    required: true
  dest:
    description: The directory of the joined C(drift.json), C(drift.md) and C(drift.junit.xml).
    type: path
    required: true
  prom_dir:
    description:
      - The directory of the joined C(hpc_gpu_containers_drift.prom) (node_exporter's textfile directory).
      - Default - O(dest).
    type: path
  remove_src:
    description:
      - After the joined files are written, remove what the P(hpc.gpu_containers.drift_report#callback) callback
        wrote for each joined report (C(drift.json), C(drift.md), C(drift.junit.xml),
        C(hpc_gpu_containers_drift.prom)) and its directory when nothing else is left in it.
      - Nothing is removed when the join fails, or in check mode (RV(removed) lists what would be).
    type: bool
    default: false
    version_added: 0.3.0
attributes:
  check_mode:
    support: full
    description: Reads and joins the reports and says whether the joined files would change; writes nothing.
  diff_mode:
    support: none
    description: The joined C(drift.md) is the readable form; RV(summary) counts what it lists.
  platform:
    support: full
    platforms: posix
    description: Any host where the slices' report directories are readable.
seealso:
  - plugin: hpc.gpu_containers.drift_report
    plugin_type: callback
"""

EXAMPLES = r"""
- name: One report from the nightly slices
  hpc.gpu_containers.drift_report_join:
    src:
      - /var/log/drift/slice00
      - /var/log/drift/slice01
      - /var/log/drift/slice02
    dest: /var/log/drift/site
    prom_dir: /var/lib/node_exporter/textfile
  register: joined
"""

RETURN = r"""
drift:
  description: The joined report lists at least one change.
  returned: success
  type: bool
  sample: true
summary:
  description: The joined report's C(summary), counted over every slice's hosts.
  returned: success
  type: dict
  sample: {hosts_checked: 101, hosts_with_drift: 1, changes: 1, failed_tasks: 0, unreachable_hosts: 0,
           hosts_clean_by_fast_path: 100}
drifted_hosts:
  description: The hosts with drift, sorted.
  returned: success
  type: list
  elements: str
  sample: [gpu017]
report:
  description: The joined C(drift.md).
  returned: success
  type: str
  sample: /var/log/drift/site/drift.md
changed_files:
  description: The joined files written (in check mode, that would be).
  returned: success
  type: list
  elements: str
removed:
  description: The slices' report files removed with O(remove_src) (in check mode, that would be).
  returned: success
  type: list
  elements: str
  version_added: 0.3.0
"""

import glob
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._drift_report import (
    DIR_MODE, FILE_MODE, JUNIT_FILE, MARKDOWN_FILE, PROM_FILE, REPORT_FILE, ReportError, join, load, report_files)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import write_files

PATTERN = re.compile(r"[*?[]")


def report_dir(path):
    """The directory of a report given as its directory or its drift.json."""
    return path if os.path.isdir(path) else os.path.dirname(path)


def report_paths(src, outputs):
    """``src`` with each pattern replaced by its matches; a pattern without one, or a report in one of the
    ``outputs`` directories, is refused."""
    paths = []
    for entry in src:
        matches = sorted(glob.glob(entry)) if PATTERN.search(entry) else [entry]
        if not matches:
            raise ReportError("%s: no report matches this pattern" % entry)
        paths += matches
    outputs = {os.path.realpath(directory) for directory in outputs}
    for path in paths:
        if os.path.realpath(report_dir(path)) in outputs:
            raise ReportError("%s: a report where the joined one is written (dest, prom_dir)" % path)
    return paths


def remove_reports(paths, check_mode):
    """Remove the report files the callback wrote beside each of ``paths``, then each directory left empty; the
    files removed (in check mode: that would be)."""
    removed = []
    for path in paths:
        directory = report_dir(path)
        for name in (REPORT_FILE, MARKDOWN_FILE, JUNIT_FILE, PROM_FILE):
            target = os.path.join(directory, name)
            if os.path.isfile(target) and not os.path.islink(target):
                removed.append(target)
                if not check_mode:
                    os.remove(target)
        if not check_mode and not os.listdir(directory):
            os.rmdir(directory)
    return removed


def read_reports(paths):
    """``(path, report)`` for each report directory or drift.json of ``paths``."""
    out = []
    for path in paths:
        path = os.path.join(path, REPORT_FILE) if os.path.isdir(path) else path
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as err:
            raise ReportError("%s: cannot read the report: %s" % (path, err.strerror))
        out.append((path, load(path, text)))
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "list", "elements": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "prom_dir": {"type": "path"},
            "remove_src": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    src, dest = module.params["src"], module.params["dest"]
    if not src:
        module.fail_json(msg="src: give at least one report")
    prom_dir = module.params["prom_dir"] or dest
    try:
        paths = report_paths(src, [dest, prom_dir])
        report = join(read_reports(paths))
    except ReportError as err:
        module.fail_json(msg=str(err))
    files = [(path, text, FILE_MODE) for path, text in report_files(report, dest, prom_dir)]
    result = write_files(module, files, parent_mode=DIR_MODE)
    result.pop("diff", None)
    result["removed"] = remove_reports(paths, module.check_mode) if module.params["remove_src"] else []
    result["changed"] = bool(result["changed"] or result["removed"])
    module.exit_json(drift=report["drift"], summary=report["summary"],
                     drifted_hosts=sorted(host for host, entry in report["hosts"].items() if entry["changed"]),
                     report=os.path.join(dest, MARKDOWN_FILE), **result)


if __name__ == "__main__":
    main()
