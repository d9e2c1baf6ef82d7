# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_junit filter: the verification report as JUnit XML."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_junit
short_description: The verification report of playbooks/verify.yml as JUnit XML
version_added: 0.2.0
description:
  - Turns the verification report (the JSON C(playbooks/verify.yml) writes, C(schema_version) 1) into JUnit XML
    with one test suite per host and one test case per host and check - C(verification) (the verdict, with its
    reasons), C(architecture), C(GPU count), one C(GPU <n> <uuid>) per GPU given to the container and C(LSF job)
    where the verification also ran through LSF. A failed check is a C(<failure>); a host without a verdict
    (unreachable, or failed before the verification) is an C(<error>).
  - The texts come from the report as they are; XML escaping is the serialiser's, and characters XML cannot
    carry are written as C(\\uXXXX).
options:
  _input:
    description: The verification report (C(schema_version), C(generated), C(generated_unix), C(hosts)).
    type: dict
    required: true
seealso:
  - plugin: hpc.gpu_containers.verify_prom
    plugin_type: filter
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: Write the JUnit file beside the JSON report
  ansible.builtin.copy:
    content: "{{ verify_report | hpc.gpu_containers.verify_junit }}"
    dest: verify-report.junit.xml
    mode: "0640"
"""

RETURN = r"""
_value:
  description: The JUnit XML document.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _junit_xml
from ansible_collections.hpc.gpu_containers.plugins.module_utils._report_outputs import check_verify_report, verify_cases


def verify_junit(report):
    try:
        report = check_verify_report(report)
    except ValueError as exc:
        raise AnsibleFilterError("verify_junit: %s" % exc)
    return _junit_xml.render("hpc.gpu_containers verification", verify_cases(report), report.get("generated"))


class FilterModule:
    def filters(self):
        return {"verify_junit": verify_junit}
