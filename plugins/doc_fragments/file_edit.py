# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that edit one file through the collection's file-edit path."""

from __future__ import annotations


class ModuleDocFragment:
    """The O(backup) option of every file-editing module."""

    DOCUMENTATION = r"""
options:
  backup:
    description:
      - Keep a timestamped copy of the file before changing it.
    type: bool
    default: false
"""

    # check and diff mode as the single file-edit transaction gives them
    ATTRIBUTES = r"""
attributes:
  check_mode:
    support: full
    description: Predicts the exact change and writes nothing.
  diff_mode:
    support: full
    description: Shows the file before and after.
"""
