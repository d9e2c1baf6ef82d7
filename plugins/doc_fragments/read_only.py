# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that only read the node."""

from __future__ import annotations


class ModuleDocFragment:
    """The attributes of a module that changes nothing."""

    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    description: Reads only; runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to diff.
  idempotent:
    support: full
    description: Changes nothing; the same answer for the same node.
"""
