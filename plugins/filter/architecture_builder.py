# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The architecture_builder filter: the host that builds an architecture's images for the others."""

from __future__ import annotations

DOCUMENTATION = r"""
name: architecture_builder
short_description: The host that builds the images of an architecture for the other hosts of that architecture
version_added: 0.3.0
description:
  - The host O(named) gives for the architecture; else the first of O(candidates) that is in the inventory and
    has that architecture (its C(ansible_facts.architecture), any spelling); else O(default).
  - A candidate outside this play (a C(--limit) slice without it, a node the drift fast path left out) ends the
    search - its architecture is not known here, so it is taken to be the builder and the play's hosts only pull
    what it built.
options:
  _input:
    description: The architecture (C(ansible_facts.architecture)).
    type: str
    required: true
  candidates:
    description: The hosts to look at, in order.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  play_hosts:
    description: The hosts of this play (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  inventory_hosts:
    description: The inventory's hosts (C(groups['all'])); other candidates are ignored.
    type: list
    elements: str
    required: true
  named:
    description: Architecture to builder, set by the site.
    type: dict
    default: {}
  default:
    description: The builder when no candidate fits.
    type: str
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
"""

EXAMPLES = r"""
- name: The node that builds this architecture's verification image
  ansible.builtin.set_fact:
    builder: >-
      {{ ansible_facts['architecture'] | hpc.gpu_containers.architecture_builder(groups['docker_hosts'], hostvars,
         ansible_play_hosts_all, groups['all'], default=inventory_hostname) }}
"""

RETURN = r"""
_value:
  description: The builder's inventory name.
  type: str
"""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._platform import architecture_builder as _builder


def architecture_builder(architecture, candidates, hostvars, play_hosts, inventory_hosts, named=None, default=None):
    return _builder(architecture, list(candidates or []), hostvars, list(play_hosts or []),
                    list(inventory_hosts or []), dict(named or {}), default)


class FilterModule:
    def filters(self):
        return {"architecture_builder": architecture_builder}
