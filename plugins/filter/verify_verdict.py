# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_verdict filter: one host's verification result from its container, job and benchmark results."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_verdict
short_description: One host's verification result from the container's, the scheduler job's and the benchmark's
version_added: 0.3.0
description:
  - Takes the result of the verification container (M(hpc.gpu_containers.container_verify)) and makes it fail too
    when the verification job through the scheduler (M(hpc.gpu_containers.job_verify)) failed, with both sets of
    reasons; adds the job's C(lsf) part and the CPU benchmark's C(host), C(ratio) and C(container)
    (M(hpc.gpu_containers.container_benchmark)) when they ran.
options:
  _input:
    description: The verification container's result.
    type: dict
    required: true
  job:
    description: The scheduler job's result (skipped, or V(null), when it did not run).
    type: dict
  benchmark:
    description: The benchmark's result (skipped, or V(null), when it did not run).
    type: dict
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Keep the verdict
  ansible.builtin.set_fact:
    container_verify_result: "{{ container_result | hpc.gpu_containers.verify_verdict(job=job_result) }}"
"""

RETURN = r"""
_value:
  description: The container's result with C(passed), C(reasons) and, where they ran, C(lsf) and C(benchmark).
  type: dict
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import combined_verdict


def verify_verdict(container, job=None, benchmark=None):
    if not isinstance(container, Mapping):
        raise AnsibleFilterError("verify_verdict: expected the verification container's result, got %s"
                                 % type(container).__name__)
    return combined_verdict(dict(container), dict(job) if isinstance(job, Mapping) else None,
                            dict(benchmark) if isinstance(benchmark, Mapping) else None)


class FilterModule:
    def filters(self):
        return {"verify_verdict": verify_verdict}
