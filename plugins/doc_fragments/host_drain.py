# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the modules that close a batch host in its scheduler and wait for its jobs."""

from __future__ import annotations


class ModuleDocFragment:
    """The owner mark and the wait for the host's jobs (module_utils _host_drain)."""

    DOCUMENTATION = r"""
options:
  owner:
    description:
      - The first word of the comments (reasons) this module writes, which marks the hosts it closed. Keep the
        default unless two independent automations close hosts in one cluster.
    type: str
    default: hpc.gpu_containers
  timeout:
    description:
      - Seconds O(state=drained) waits for the host's jobs to end. V(0) asks once and does not wait.
    type: int
    default: 3600
  poll:
    description:
      - Seconds between two looks at the host's jobs while waiting.
    type: int
    default: 30
  since:
    description:
      - Unix time (on the host the module runs on) when the wait for the jobs began, as RV(since) of an earlier
        call returned it; O(timeout) counts from it. When omitted, from the start of this call.
    type: float
  return_after:
    description:
      - With O(state=drained), return after about this many seconds when jobs still run, with RV(waiting=true)
        (not a timeout), so that the caller can show the progress and call again. V(0) waits up to O(timeout) in
        one call.
    type: int
    default: 0
"""
