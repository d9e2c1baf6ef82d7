# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""A Slurm compute node's drain state, and what to do about it.

Pure Python, no Ansible. Read from Slurm's own commands (recorded from Slurm 22.05: tests/fixtures/slurm):

* ``scontrol --oneliner show node <node>`` (parsed by ``_slurm_nodes.parse_nodes``): ``State=`` is the base
  state with ``+``-joined flags - ``IDLE+DRAIN`` (drained), ``MIXED+DRAIN`` or ``ALLOCATED+DRAIN`` (draining:
  jobs still run), ``IDLE``; ``Reason=`` is the text given with the drain, then ``[<user>@<time>]``.
* ``squeue --noheader --nodelist=<node> --states=<JOB_STATES> --format=%i``: one job id per line (``123``,
  ``123_4`` for an array task, ``123+0`` for a heterogeneous component), nothing when none.

``scontrol update NodeName=<node> State=DRAIN Reason=<text>`` drains a node (a drain of a drained node
replaces its reason); ``State=RESUME`` resumes it, and is refused (``Invalid node state specified``) when the
node is not drained. The collection drains with the reason ``<owner>: <reason>`` (``_host_drain``) and resumes
only a node whose reason starts with ``<owner>:`` (see :func:`decide`).
"""

from __future__ import annotations

from ansible_collections.hpc.gpu_containers.plugins.module_utils._host_drain import is_owned

__all__ = ["DRAIN", "JOB_STATES", "flags", "is_drained", "parse_job_ids", "decide"]

DRAIN = "DRAIN"
# Jobs whose processes (and containers) may be on the node: running, suspended, completing (the epilog runs),
# configuring (being started), stopped (SIGSTOP), being signalled, staging out.
JOB_STATES = ("RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "STOPPED", "SIGNALING", "STAGE_OUT")


def flags(state):
    """The words of a ``State=`` value (``MIXED+DRAIN`` -> {MIXED, DRAIN}; sinfo's ``*``/``~`` marks dropped)."""
    return {word.strip("*~#!%$@^-").upper() for word in (state or "").split("+") if word.strip()}


def is_drained(node):
    """The node has the DRAIN flag (drained, or draining while jobs still run)."""
    return DRAIN in flags(node.get("state"))


def parse_job_ids(text):
    """Job ids of ``squeue --noheader --format=%i`` output, in order."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def decide(state, node, owner):
    """What to do for the wanted ``state`` (drain, drained, resume, query), given the node (``parse_nodes``).

    Returns ``(action, note)``: ``DRAIN``, ``RESUME`` or None, and why.

    * drain / drained: a node that is not drained is drained; one drained already is left as it is, whoever
      drained it (an operator's reason is kept: a second drain would replace it).
    * resume: only a node drained with the owner's reason is resumed; one an operator drained stays drained.
    """
    drained, reason = is_drained(node), node.get("reason") or ""
    if state == "query":
        return None, "read only"
    if state in ("drain", "drained"):
        if not drained:
            return DRAIN, "the node is %s" % node.get("state")
        if is_owned(reason, owner):
            return None, "drained already by %s" % owner
        return None, "drained already by an operator (%s); left as it is" % (reason or "no reason")
    if state == "resume":
        if not drained:
            return None, "the node is not drained (%s)" % node.get("state")
        if is_owned(reason, owner):
            return "RESUME", "drained by %s" % owner
        return None, "drained by an operator for another reason (%s); left drained" % (reason or "no reason")
    raise ValueError("unknown state %r" % state)
