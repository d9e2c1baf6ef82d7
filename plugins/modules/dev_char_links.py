#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dev_char_links
short_description: Give NVIDIA's device nodes their /dev/char links, so GPU containers survive daemon-reload
description:
  - With the systemd cgroup driver, a container's device rules name C(/dev/char/<major>:<minor>) paths, and
    systemd drops the rule of a path that does not exist whenever it re-applies them (every
    C(systemctl daemon-reload), which package installs run), so running containers lose their GPUs (NVML then
    fails with "Unknown Error"). NVIDIA's nodes are made without udev, so they have no such links.
  - Makes C(char/<major>:<minor>) under O(dev_root), pointing to the node (C(../nvidia0)), for every NVIDIA
    character device node there (C(nvidia[0-9]*), C(nvidiactl), C(nvidia-uvm), C(nvidia-uvm-tools),
    C(nvidia-modeset), C(nvidia-nvswitch*), C(nvidia-caps/nvidia-cap*), C(nvidia-caps-imex-channels/channel*)),
    as C(nvidia-ctk system create-dev-char-symlinks --create-all) does.
  - A link that already resolves to the node's numbers is kept; one that resolves elsewhere or nowhere is
    replaced; something at the path that is not a symlink fails the task and nothing is changed.
  - The same hazard reaches podman with the systemd cgroup manager and Slurm's cgroup v2 plugin, and a Docker
    switched to the systemd driver later, so the links are made whatever Docker's cgroup driver is now; like the
    links udev makes for every other device, they change nothing else.
version_added: 0.3.0
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  dev_root:
    description:
      - The device directory.
    type: path
    default: /dev
attributes:
  check_mode:
    support: full
    description: Reports the links it would make or replace (RV(links)) and changes nothing.
  diff_mode:
    support: none
    description: RV(links) names each link and what was done to it.
  idempotent:
    support: full
    description: A second run finds every link resolving to its node and changes nothing.
  platform:
    support: full
    platforms: posix
    description: A GPU node (as root).
"""

EXAMPLES = r"""
- name: NVIDIA's device nodes get their /dev/char links
  hpc.gpu_containers.dev_char_links:
  register: dev_char
"""

RETURN = r"""
links:
  description: Each NVIDIA node's link, with what was done to it (V(ok), V(create), V(replace)).
  returned: always
  type: list
  elements: dict
  sample: [{path: /dev/char/195:0, target: ../nvidia0, device: "195:0", action: create}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._dev_char import DevCharError, apply, plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dev_root=dict(type="path", default="/dev"),
        ),
        supports_check_mode=True,
    )
    try:
        links = plan(module.params["dev_root"])
        if not module.check_mode:
            apply(module.params["dev_root"], links)
    except DevCharError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=any(link["action"] != "ok" for link in links), links=links)


if __name__ == "__main__":
    main()
