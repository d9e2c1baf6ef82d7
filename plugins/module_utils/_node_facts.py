# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""This node's GPU and CPU facts, read the one way the collection reads them.

NVML through the collection's ctypes binding (``_nvml_ctypes``, the values turned into facts by ``_nvml``)
and the CPU from ``/proc/cpuinfo`` (``_cpuinfo``). Used by the ``gpu_facts`` module and by
``drift_fingerprint``, so that the drift fast path compares exactly what ``gpu_facts`` reports. No Ansible.
"""

from __future__ import annotations

import platform

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _cpuinfo, _nvml, _nvml_ctypes

CPUINFO = "/proc/cpuinfo"
DEV_ROOT = "/dev"


def read_cpuinfo(path=CPUINFO):
    """The text of ``path``; empty when it cannot be read (no CPU facts is a normal answer)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def gather(dev_root=DEV_ROOT, cpuinfo=CPUINFO):
    """GPU facts (``_nvml.collect``: no driver or no GPU is a normal answer) with the CPU's under ``cpu``."""
    facts = _nvml.collect(_nvml_ctypes.Nvml(), dev_root)
    facts["cpu"] = _cpuinfo.parse(read_cpuinfo(cpuinfo), platform.machine())
    return facts
