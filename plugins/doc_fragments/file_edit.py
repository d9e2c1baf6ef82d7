# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that edit one file through the collection's file-edit path."""

from __future__ import annotations


class ModuleDocFragment:
    """The O(backup) option and the guarantees of every file-editing module."""

    DOCUMENTATION = r"""
options:
  backup:
    description:
      - Keep a timestamped copy of the file before changing it.
      - The copy is written next to the file under a temporary name and renamed into place, so a
        full disk never leaves a truncated copy behind.
    type: bool
    default: false
notes:
  - Only regular files are edited. A symlink is followed and the file it points to is edited; a
    directory, device, FIFO or socket (also behind a symlink) is refused and left as it is.
  - Concurrent runs on the same file take turns through a lock; a run waits at most 30 seconds for
    it and then fails, naming the file.
  - The new content is written to a temporary file C(.<name>.XXXXXXXX.tmp) next to the file and
    renamed over it, so readers see the old file or the new one, never a partial one. Such temporary
    files left by an interrupted run are removed by a later run once they are older than 10 minutes.
  - Errors of the operating system (permission denied, read-only or full filesystem) fail the task
    with the file's path and the reason; the file is left as it was.
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
