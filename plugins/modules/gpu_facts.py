#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather NVIDIA GPU and CPU facts for container placement and image choice
version_added: 0.1.0
description:
  - Reads the NVIDIA driver through NVML, calling the driver's own C(libnvidia-ml.so.1) through a small
    built-in C(ctypes) binding, so nothing has to be installed on the node besides the driver.
    It reports the driver version, CUDA driver version and, per GPU, index, name, UUID, serial, PCI bus id, total
    memory, compute capability, MIG mode (current and pending), persistence mode and minor number
    with its C(/dev/nvidiaN) node.
  - Lists the NVIDIA control device nodes present (C(/dev/nvidiactl), C(/dev/nvidia-uvm),
    C(/dev/nvidia-uvm-tools), C(/dev/nvidia-modeset), C(/dev/nvidia-caps/*)).
  - Adds the CPU facts used to pick an image (architecture, ISA flags, x86-64 level v1 to v4, and the
    POWER generation on ppc64le).
  - A node without GPUs is a normal case. No bindings, no library, driver not loaded,
    driver/library version mismatch, no permission and zero GPUs all give C(present=false) with a
    C(reason); the module never fails for them.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  docker_daemon_json:
    description:
      - Also read this Docker daemon configuration file and set C(ansible_facts.docker_daemon), the path and the
        names of the runtimes it registers (the same fact M(hpc.gpu_containers.docker_daemon_config) sets).
      - A missing file registers no runtime; a malformed one fails the module, naming the file and line.
    type: path
    version_added: 0.2.0
extends_documentation_fragment:
  - hpc.gpu_containers.read_only
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.gpu_facts), and C(ansible_facts.docker_daemon) when O(docker_daemon_json) is given.
  platform:
    support: full
    platforms: posix
    description: Linux nodes.
notes:
  - No Python package is needed on the node (nvidia-ml-py is not used), only the NVIDIA driver's
    C(libnvidia-ml.so.1). A node without it reports C(present=false) with the reason
    C(NVML library libnvidia-ml.so.1 not found).
  - NVML and C(nvidia-smi) number GPUs by PCI order, CUDA by speed unless C(CUDA_DEVICE_ORDER=PCI_BUS_ID);
    compare GPUs by UUID.
"""

EXAMPLES = r"""
- name: Gather GPU facts
  hpc.gpu_containers.gpu_facts:

- name: Only GPU nodes get the NVIDIA runtime
  ansible.builtin.include_role:
    name: hpc.gpu_containers.nvidia_container_runtime
  when: ansible_facts.gpu_facts.present | bool

- name: GPU facts, and whether Docker has the NVIDIA runtime
  hpc.gpu_containers.gpu_facts:
    docker_daemon_json: /etc/docker/daemon.json

- name: Explain why a node has no GPU facts
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }}: {{ ansible_facts.gpu_facts.reason }}"
  when: not (ansible_facts.gpu_facts.present | bool)
"""

RETURN = r"""
docker_daemon:
  description: The Docker daemon configuration's path and the names of the runtimes it registers, sorted; also set
    as C(ansible_facts.docker_daemon).
  returned: when O(docker_daemon_json) is given
  type: dict
  sample: {path: /etc/docker/daemon.json, runtimes: [nvidia]}
  version_added: 0.2.0
gpu_facts:
  description: The facts; also set as C(ansible_facts.gpu_facts).
  returned: always
  type: dict
  contains:
    present:
      description: True when NVML answered and at least one GPU was found.
      type: bool
      sample: true
    reason:
      description: Why O(ignore:present) is false; null when GPUs were found.
      type: str
      sample: NVIDIA kernel driver not loaded
    driver_version:
      description: The NVIDIA driver version.
      type: str
      sample: 550.54.15
    cuda_driver_version:
      description: The highest CUDA version the driver supports, C(major.minor).
      type: str
      sample: "12.4"
    cuda_driver_version_int:
      description: The same as NVML's integer (C(1000*major + 10*minor)).
      type: int
      sample: 12040
    count:
      description: Number of GPUs NVML reports.
      type: int
      sample: 2
    gpus:
      description: One entry per GPU, in NVML index order.
      type: list
      elements: dict
      sample:
        - index: 0
          name: Tesla V100-SXM2-16GB
          uuid: GPU-016b348f-3447-d57f-672a-9144fd65ae30
          serial: "0324117166425"
          pci_bus_id: "00000004:04:00.0"
          pci_bus_id_short: "0004:04:00.0"
          pci_device_id: "0x1DB110DE"
          memory_total_bytes: 16913530880
          memory_total_mib: 16130
          compute_capability: "7.0"
          compute_capability_major: 7
          compute_capability_minor: 0
          mig_mode: {capable: false, current: null, pending: null}
          persistence_mode: true
          minor_number: 0
          device_path: /dev/nvidia0
          device_present: true
          errors: []
    device_nodes:
      description: NVIDIA device nodes present, as C(control), C(caps) and C(gpus) lists of paths.
      type: dict
      sample:
        control: [/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools]
        caps: []
        gpus: [/dev/nvidia0, /dev/nvidia1]
    errors:
      description: NVML calls that failed for another reason than "not supported".
      type: list
      elements: str
      sample: []
    cpu:
      description: CPU facts for image choice.
      type: dict
      sample:
        architecture: ppc64le
        model_name: POWER9, altivec supported
        vendor: IBM
        flags: [altivec]
        isa_flags: []
        x86_64_level: null
        power_generation: POWER9
        platform: PowerNV
        machine_model: 8335-GTH
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _daemon_json, _node_facts
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError

CPUINFO = _node_facts.CPUINFO
DEV_ROOT = _node_facts.DEV_ROOT


def gather():
    """Facts for this node: NVML through the built-in ctypes binding, CPU from /proc."""
    return _node_facts.gather(DEV_ROOT, CPUINFO)


def main():
    module = AnsibleModule(argument_spec=dict(docker_daemon_json=dict(type="path")), supports_check_mode=True)
    facts = gather()
    result = {"changed": False, "gpu_facts": facts, "ansible_facts": {"gpu_facts": facts}}
    if module.params["docker_daemon_json"]:
        try:
            daemon = _daemon_json.read_fact(module.params["docker_daemon_json"])
        except FileEditError as err:
            module.fail_json(msg=str(err), gpu_facts=facts)
        result["docker_daemon"] = result["ansible_facts"]["docker_daemon"] = daemon
    module.exit_json(**result)


if __name__ == "__main__":
    main()
