# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""What Slurm says about its compute nodes after a configuration change, read from its own commands.

Pure Python, no Ansible. Two outputs (recorded examples: tests/fixtures/slurm):

* ``slurmd -G -f slurm.conf -N <node>``: slurmd reads slurm.conf and gres.conf as at its start (an error
  is fatal: exit status 1, ``error:``/``fatal:`` lines) and prints one ``Gres Name=gpu ...`` line per GPU
  it would offer on that node;
* ``scontrol --oneliner show node <names>``: one ``NodeName=... State=... Gres=... [Reason=...]`` line per
  node; a name slurmctld does not know gives ``Node <name> not found`` and exit status 1.
"""

from __future__ import annotations

import re

_GPU_LINE = re.compile(r"\bGres Name=gpu\b")
_ERROR_LINE = re.compile(r"error|fatal", re.IGNORECASE)
_NAME = re.compile(r"(?:^|\s)NodeName=(\S+)")
_STATE = re.compile(r"\sState=(\S+)")
_GRES = re.compile(r"\sGres=(\S*)")
_REASON = re.compile(r"\sReason=(.*)$")
_GPU_COUNT = re.compile(r"gpu(?::[^:,(]+)?:(\d+)")
# Not registered (yet): slurmctld has not heard from the node's slurmd since it started.
_WAITING = re.compile(r"NOT_RESPONDING|UNKNOWN")
_REFUSED = re.compile(r"DRAIN|INVALID_REG")


def slurmd_gpus(output):
    """The GPUs a ``slurmd -G`` run listed."""
    return sum(1 for line in (output or "").splitlines() if _GPU_LINE.search(line))


def slurmd_gres_problem(node, rc, output, gpus=None):
    """What is wrong with a ``slurmd -G`` run on ``node`` (None when nothing): its exit status with its error
    lines, or, with ``gpus``, another number of GPUs than the node has."""
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    if rc != 0:
        errors = " / ".join(line for line in lines if _ERROR_LINE.search(line))
        return "%s: slurmd -G exited %d: %s" % (node, rc, errors or " / ".join(lines) or "no output")
    found = slurmd_gpus(output)
    if gpus is not None and found != gpus:
        return "%s: slurmd -G lists %d GPU(s), the node has %d: %s" % (node, found, gpus, " / ".join(lines))
    return None


def gpu_count(gres):
    """GPUs in a Gres value (``gpu:tesla_v100-sxm2-16gb:2``, ``gpu:2,gpu:a100:1(S:0)``); 0 for ``(null)``."""
    return sum(int(count) for count in _GPU_COUNT.findall(gres or ""))


def parse_nodes(text):
    """The nodes of ``scontrol --oneliner show node``: name, state, gres, gpus, reason (None without)."""
    nodes = []
    for line in (text or "").splitlines():
        name = _NAME.search(line)
        if not name:
            continue
        state, gres, reason = _STATE.search(line), _GRES.search(line), _REASON.search(line)
        gres_value = gres.group(1) if gres and gres.group(1) else "(null)"
        nodes.append({"name": name.group(1), "state": state.group(1) if state else "",
                      "gres": gres_value, "gpus": gpu_count(gres_value),
                      "reason": reason.group(1).strip() if reason else None})
    return nodes


def waiting(nodes, names):
    """Names of ``names`` not registered yet: not listed, or in a state slurmctld has not heard of them in.
    A node drained or refused for its GRES is not waiting: that state does not change by itself."""
    by_name = {node["name"]: node for node in nodes}
    out = []
    for name in names:
        node = by_name.get(name)
        if node is None or (_WAITING.search(node["state"]) and not refused_for_gres(node)):
            out.append(name)
    return out


def refused_for_gres(node):
    return bool(_REFUSED.search(node["state"])) and (node["reason"] or "").startswith("gres")


def problems(nodes, names, gpus=None, check_gres=True):
    """One line per node of ``names`` that is not there with its GPUs: not known or not registered, another
    GPU count than ``gpus`` names (0 for a node it does not name; with ``check_gres``), drained for its GRES."""
    gpus = gpus or {}
    by_name = {node["name"]: node for node in nodes}
    unregistered = set(waiting(nodes, names))
    out = []
    for name in names:
        node = by_name.get(name)
        if node is None:
            out.append("%s is not known to slurmctld" % name)
        elif name in unregistered:
            out.append("%s State=%s (its slurmd has not registered)" % (name, node["state"]))
        elif check_gres and node["gpus"] != int(gpus.get(name, 0)):
            out.append("%s Gres=%s (expected %d GPUs)%s" % (name, node["gres"], int(gpus.get(name, 0)),
                                                            " Reason=%s" % node["reason"] if node["reason"] else ""))
        elif refused_for_gres(node):
            out.append("%s State=%s Reason=%s" % (name, node["state"], node["reason"]))
    return out
