#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: package_info
short_description: Which packages an install at a version pin would change, from one package database query
version_added: 0.2.0
description:
  - Read only. Asks the node's package database once (C(dpkg-query) on Debian-family nodes, C(rpm) on RHEL-family
    ones) for the packages in O(names) and O(absent), and says which of O(names) are missing, which are installed
    at another version than O(version), which of O(absent) are installed, and the package specs to hand
    M(ansible.builtin.apt) or M(ansible.builtin.dnf), pinned where asked.
  - The node's own database is the one C(/etc/os-release) names (C(ID), else C(ID_LIKE)), so a RHEL node with
    dpkg from EPEL, or a Debian node with rpm, is read through its own package manager's database.
  - The roles install only when RV(install_needed) is true, so a rerun costs one quick query instead of a package
    manager run, and in check mode, where the package manager cannot see a repository this run has not added yet,
    RV(specs), RV(missing) and RV(off_pin) are the prediction.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  names:
    description: The packages that must be installed.
    type: list
    elements: str
    required: true
  version:
    description:
      - The version the O(versioned) packages must have; empty for any version.
      - Compared with dpkg's whole version (with its epoch, for example C(5:24.0.7)), or with rpm's version
        (without epoch and release, for example C(24.0.7)). See O(match).
    type: str
    default: ""
  versioned:
    description: The packages of O(names) the pin applies to; all of O(names) when omitted.
    type: list
    elements: str
  match:
    description:
      - How O(version) matches an installed version.
      - V(prefix), the installed version starts with it; apt gets C(name=<version>*).
      - V(release), the installed version is O(version) or O(version) followed by C(-) and a release (C(1.17.9)
        matches C(1.17.9-1), not C(1.17.90-1)); apt gets C(name=<version>-*).
      - On rpm nodes the spec is C(name-<version>) either way.
    type: str
    choices: [prefix, release]
    default: prefix
  absent:
    description: Packages that must not be installed (conflicting or legacy ones); RV(unwanted) lists those that are.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - hpc.gpu_containers.read_only
attributes:
  platform:
    support: full
    platforms: posix
    description: Nodes with C(dpkg-query) or C(rpm).
notes:
  - Fails, saying so, on a node with neither C(dpkg-query) nor C(rpm).
seealso:
  - module: ansible.builtin.package_facts
    description: Every installed package, when the whole list is wanted.
"""

EXAMPLES = r"""
- name: Look at the engine packages
  hpc.gpu_containers.package_info:
    names: [docker-ce, docker-ce-cli, containerd.io]
    version: "5:24.0.7"
    versioned: [docker-ce, docker-ce-cli]
    absent: [docker.io, podman-docker]
  register: engine_packages

- name: Install them at the pin, only when something is missing or off the pin
  ansible.builtin.apt:
    name: "{{ engine_packages.specs }}"
    allow_downgrade: true
  when: engine_packages.install_needed

- name: The NVIDIA Container Toolkit at 1.17.9, any Debian release of it
  hpc.gpu_containers.package_info:
    names: [nvidia-container-toolkit, nvidia-container-toolkit-base]
    version: 1.17.9
    match: release
"""

RETURN = r"""
manager:
  description: The package database read.
  returned: success
  type: str
  sample: dpkg
installed:
  description: Each package of O(names) and O(absent) with its installed version (dpkg's, or rpm's
    C(EPOCH:VERSION-RELEASE.ARCH)); null when not installed.
  returned: success
  type: dict
  sample: {docker-ce: "5:24.0.7-1~debian.12~bookworm", docker.io: null}
missing:
  description: The packages of O(names) that are not installed.
  returned: success
  type: list
  elements: str
  sample: [containerd.io]
off_pin:
  description: The packages of O(versioned) installed at a version O(version) does not match.
  returned: success
  type: list
  elements: str
  sample: [docker-ce]
unwanted:
  description: The packages of O(absent) that are installed.
  returned: success
  type: list
  elements: str
  sample: [podman-docker]
install_needed:
  description: Whether RV(missing) or RV(off_pin) has a package.
  returned: success
  type: bool
  sample: true
specs:
  description: O(names) as the package manager takes them, pinned where O(version) applies.
  returned: success
  type: list
  elements: str
  sample: ["docker-ce=5:24.0.7*", "docker-ce-cli=5:24.0.7*", containerd.io]
"""

import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _packages


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type="list", elements="str", required=True),
            version=dict(type="str", default=""),
            versioned=dict(type="list", elements="str"),
            match=dict(type="str", choices=list(_packages.MATCHES), default="prefix"),
            absent=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params

    def run(argv):
        if not shutil.which(argv[0]):
            return None, "", ""
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    try:
        manager, installed = _packages.query(params["names"] + params["absent"], run, _packages.node_manager())
        result = _packages.plan(manager, installed, params["names"], params["version"] or "", params["versioned"],
                                params["match"], params["absent"])
    except _packages.PackageError as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=False, manager=manager, **result)


if __name__ == "__main__":
    main()
