# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_summary filter: the verification report as the table playbooks/verify.yml prints."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_summary
short_description: The verification report of playbooks/verify.yml as a table, one line per host
version_added: 0.3.0
description:
  - Turns the verification report (the JSON C(playbooks/verify.yml) writes, C(schema_version) 1) into the lines
    of the summary it prints - a header, then per host its architecture, the GPUs seen on the host and in the
    container, the verdict (C(PASS), C(FAIL), or C(not run) for a host without a verdict), the container's pull,
    create, start and run times in seconds, the check through LSF and the CPU benchmark's container/host ratio,
    and each reason the host failed, indented under its line.
options:
  _input:
    description: The verification report (C(schema_version), C(generated), C(generated_unix), C(hosts)).
    type: dict
    required: true
seealso:
  - plugin: hpc.gpu_containers.verify_junit
    plugin_type: filter
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Print the summary
  ansible.builtin.debug:
    msg: "{{ verify_report | hpc.gpu_containers.verify_summary }}"
"""

RETURN = r"""
_value:
  description: The table's lines.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._report_outputs import (
    check_verify_report,
    verify_summary as _verify_summary,
)


def verify_summary(report):
    try:
        report = check_verify_report(report)
    except ValueError as exc:
        raise AnsibleFilterError("verify_summary: %s" % exc)
    return _verify_summary(report)


class FilterModule:
    def filters(self):
        return {"verify_summary": verify_summary}
