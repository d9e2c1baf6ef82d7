# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_prom filter: the verification report as a node_exporter textfile."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_prom
short_description: The verification report of playbooks/verify.yml as a node_exporter textfile
version_added: 0.2.0
description:
  - Turns the verification report (the JSON C(playbooks/verify.yml) writes, C(schema_version) 1) into the
    Prometheus text format 0.0.4 that node_exporter's textfile collector reads - per host
    C(hpc_gpu_containers_verify_host_passed), C(hpc_gpu_containers_verify_host_ran) and
    C(hpc_gpu_containers_verify_host_gpus) (label C(side), C(host) or C(container)); per GPU
    C(hpc_gpu_containers_verify_gpu_passed) (labels C(host), C(gpu), C(uuid)); and
    C(hpc_gpu_containers_verify_last_run_timestamp_seconds) and C(hpc_gpu_containers_verify_report_schema_version).
  - Each metric has its C(# HELP) and C(# TYPE) lines; label values are escaped as the format says.
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
- name: Write the node_exporter textfile
  ansible.builtin.copy:
    content: "{{ verify_report | hpc.gpu_containers.verify_prom }}"
    dest: /var/lib/node_exporter/textfile/hpc_gpu_containers_verify.prom
    mode: "0640"
"""

RETURN = r"""
_value:
  description: The textfile.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _prom_textfile
from ansible_collections.hpc.gpu_containers.plugins.module_utils._report_outputs import check_verify_report, verify_families


def verify_prom(report):
    try:
        return _prom_textfile.render(verify_families(check_verify_report(report)))
    except ValueError as exc:
        raise AnsibleFilterError("verify_prom: %s" % exc)


class FilterModule:
    def filters(self):
        return {"verify_prom": verify_prom}
