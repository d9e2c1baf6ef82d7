# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Draining a batch host before a change under its jobs, whatever the scheduler: the mark the collection leaves,
the wait for the host's jobs, and the line that reports it.

Pure Python, no Ansible. The scheduler models (``_lsf_host_state``, ``_slurm_node_state``) say how a host is
closed and which jobs it runs; this says the rest, once:

* the collection closes a host with the comment (LSF) or reason (Slurm) ``<owner>: <reason>`` and reopens only
  a host whose comment starts with ``<owner>:``; one an operator closed keeps its state and words;
* :func:`wait_for_jobs` asks for the host's jobs until there are none, the timeout (counted from ``since``, so a
  wait cut into several calls keeps one deadline) has passed, or the call has run ``return_after`` seconds;
* :func:`progress_line` is what the ``hpc.gpu_containers.progress`` callback prints on each poll.
"""

from __future__ import annotations

import time

__all__ = ["OWNER", "WAIT_OPTIONS", "close_comment", "is_owned", "wait_for_jobs", "progress_line", "drained"]

OWNER = "hpc.gpu_containers"
# The options of every drain module for the mark and the wait (doc fragment hpc.gpu_containers.host_drain, and
# each module's own on_timeout text).
WAIT_OPTIONS = dict(
    owner=dict(type="str", default=OWNER),
    timeout=dict(type="int", default=3600),
    poll=dict(type="int", default=30),
    on_timeout=dict(type="str", default="fail", choices=["fail", "proceed"]),
    since=dict(type="float"),
    return_after=dict(type="int", default=0),
)


def close_comment(owner, reason, limit=None):
    """``<owner>: <reason>`` on one line (at most ``limit`` characters)."""
    owner = " ".join(str(owner).split())
    reason = " ".join(str(reason or "").split())
    if not owner or ":" in owner:
        raise ValueError("the owner of a close comment must be a non-empty word without ':', not %r" % owner)
    text = "%s: %s" % (owner, reason) if reason else "%s:" % owner
    return text[:limit] if limit else text


def is_owned(comment, owner):
    """True when ``comment`` is a close comment of ``owner`` (``<owner>:`` first, quotes and blanks aside)."""
    if not comment:
        return False
    return comment.strip().strip('"').lstrip().startswith(owner + ":")


def wait_for_jobs(jobs, timeout, poll, since, return_after=0, check_mode=False, clock=time.time, sleep=time.sleep):
    """Ask ``jobs()`` (the ids of the jobs that hold processes on the host) until it lists none, from ``since``
    (unix time) for at most ``timeout`` seconds, and in this call for at most ``return_after`` seconds (0: no
    limit). Check mode asks once. Returns (job ids, seconds waited, timed out, still waiting)."""
    call_began = clock()
    deadline = since + max(timeout, 0)
    while True:
        ids = list(jobs())
        now = clock()
        waited = round(max(now - since, 0.0), 1)
        if not ids or check_mode or now >= deadline:
            return ids, waited, bool(ids) and not check_mode, False
        if return_after > 0 and now - call_began >= return_after:
            return ids, waited, False, True
        sleep(min(max(poll, 1), deadline - now))


def _duration(seconds):
    seconds = int(seconds)
    return "%dm%02ds" % (seconds // 60, seconds % 60)


def progress_line(host, jobs, waited, timeout):
    """The drain's state on one line: the host, the jobs left, how long it has waited of the timeout."""
    if not jobs:
        return "%s: no job left; waited %s" % (host, _duration(waited))
    shown = ", ".join(str(job) for job in jobs[:10]) + (", ..." if len(jobs) > 10 else "")
    return "%s: %d job(s) left (%s); waited %s of %s" % (host, len(jobs), shown, _duration(waited), _duration(timeout))


def drained(jobs, host, params, since, check_mode, held):
    """The wait of ``state=drained`` as every drain module reports it, from the module's parameters
    (:data:`WAIT_OPTIONS`): (result fields, the failure message or None, the warning or None). ``held`` says what
    stays as it is when the wait fails (``the host stays closed (<comment>)``)."""
    ids, waited, timed_out, waiting = wait_for_jobs(jobs, params["timeout"], params["poll"], since,
                                                    params["return_after"], check_mode)
    fields = dict(jobs=ids, waited=waited, timed_out=timed_out, waiting=waiting,
                  progress=progress_line(host, ids, waited, params["timeout"]))
    listed = ", ".join(str(job) for job in ids)
    if timed_out and params["on_timeout"] == "fail":
        return fields, "%s: %d job(s) still running after %d s (%s); %s" % (
            host, len(ids), params["timeout"], listed, held), None
    if timed_out:
        return fields, None, "%s: jobs %s still running after %d s; going on (on_timeout=proceed)" % (
            host, listed, params["timeout"])
    return fields, None, None
