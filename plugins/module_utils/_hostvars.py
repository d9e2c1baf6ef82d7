# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""One host's variables and facts, read from ``hostvars`` by the filters that look across the cluster.

Pure Python, no Ansible: ``hostvars`` is any mapping of host name to that host's variables (Ansible's own, whose
values are templated as they are read, or a plain dict in the unit tests). A host outside the inventory, or one
whose variables are not a mapping, reads as having none.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["facts_of", "vars_of"]


def vars_of(hostvars, host):
    """The variables of an inventory host, or {} (not in the inventory)."""
    try:
        found = hostvars[host]
    except (KeyError, TypeError):
        return {}
    return found if hasattr(found, "get") else {}


def facts_of(hostvars, host):
    """``ansible_facts`` of an inventory host, or {} (no facts in this run, or not in the inventory)."""
    facts = vars_of(hostvars, host).get("ansible_facts")
    return facts if isinstance(facts, Mapping) else {}
