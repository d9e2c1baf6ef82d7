# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_report filter: the verification report from each host's container_verify result."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_report
short_description: The verification report of playbooks/verify.yml from each host's result
version_added: 0.3.0
description:
  - Builds the verification report (C(schema_version) 1) that C(playbooks/verify.yml) writes as JSON and the
    P(hpc.gpu_containers.verify_summary#filter), P(hpc.gpu_containers.verify_junit#filter) and
    P(hpc.gpu_containers.verify_prom#filter) filters read - per host its verdict (C(passed), V(null) when its
    verification did not run), C(reasons), C(architecture), C(gpus), C(timings), C(image), C(benchmark) and
    C(lsf), from the host's C(container_verify_result).
options:
  _input:
    description: The hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars); each host's C(container_verify_result) is read from it.
    type: dict
    required: true
  generated_unix:
    description: The run's time, Unix seconds.
    type: int
    required: true
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Build the report
  ansible.builtin.set_fact:
    verify_report: "{{ ansible_play_hosts_all | hpc.gpu_containers.verify_report(hostvars, now().timestamp()) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The report (C(schema_version), C(generated), C(generated_unix), C(hosts)).
  type: dict
"""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._hostvars import vars_of
from ansible_collections.hpc.gpu_containers.plugins.module_utils._report_outputs import verify_report as _report


def verify_report(hosts, hostvars, generated_unix):
    return _report(dict((host, vars_of(hostvars, host).get("container_verify_result")) for host in hosts or []), generated_unix)


class FilterModule:
    def filters(self):
        return {"verify_report": verify_report}
