# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""An LSF host's batch state: the output of ``bhosts -l`` and ``bjobs -w``, and what to do about it.

Pure Python, no Ansible.  Text in, structure out.

``bhosts -l <host>`` (IBM LSF 10.1), one block per host::

    block    := 'HOST' <name> NL
                'STATUS' 'CPUF' 'JL/U' 'MAX' 'NJOBS' 'RUN' 'SSUSP' 'USUSP' 'RSV' ... NL
                <status> <cpuf> <jl/u> <max> <njobs> <run> <ssusp> <ususp> <rsv> ... NL
                ... (load and threshold tables)
                [' ADMIN ACTION COMMENT: ' '"' <text> '"']

``closed_Adm`` is the status of a host an administrator (or root) closed with ``badmin hclose``;
the comment is the one given with ``-C``.  Other ``closed_*`` states (``closed_Full``,
``closed_Busy``, ``closed_Excl``, ``closed_Wind`` ...) are LSF's own and go away by themselves.

``bjobs -u all -w -m <host>`` lists the unfinished jobs dispatched to the host::

    header := 'JOBID' 'USER' 'STAT' 'QUEUE' 'FROM_HOST' 'EXEC_HOST' 'JOB_NAME' 'SUBMIT_TIME'
    row    := <id> <user> <stat> <queue> <from_host> <exec_host> <job name ...> <submit time ...>

``EXEC_HOST`` is ``host``, ``N*host`` or ``host1:host2:...``; a job with no execution host yet shows ``-``.
With no job to list, LSF prints ``No unfinished job found`` (or ``No running job found`` ...) instead.

The collection marks the hosts it closes with a comment ``<owner>: <reason>`` and reopens a host
only when its close comment starts with ``<owner>:`` (see :func:`decide`).
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._host_drain import OWNER, is_owned
from ansible_collections.hpc.gpu_containers.plugins.module_utils._host_drain import close_comment as _close_comment

__all__ = [
    "LsfOutputError", "OWNER", "ADMIN_CLOSED", "STARTED_STATES", "COMMENT_LIMIT",
    "close_comment", "is_owned", "parse_bhosts_long", "parse_bjobs", "no_jobs_message",
    "started_jobs_on", "decide",
]

ADMIN_CLOSED = "closed_Adm"
# Jobs that hold processes (and containers) on their execution host: running,
# suspended by the system or the user, being provisioned, waiting in a chunk, or
# unknown to mbatchd while sbatchd is out of reach (they may still run).
STARTED_STATES = frozenset(("RUN", "PROV", "SSUSP", "USUSP", "WAIT", "UNKWN"))
# LSF keeps an administrator comment of up to 512 characters.
COMMENT_LIMIT = 512

_NO_JOBS = re.compile(r"\bNo (?:\w+ )?jobs? found\b", re.IGNORECASE)


class LsfOutputError(ValueError):
    """LSF printed something this model cannot read."""


def close_comment(owner, reason):
    """The ``badmin hclose -C`` comment: ``<owner>: <reason>`` on one line, at most 512 characters."""
    return _close_comment(owner, reason, COMMENT_LIMIT)


def _int(word):
    try:
        return int(word)
    except ValueError:
        return None


def parse_bhosts_long(text):
    """{host: {status, max, njobs, run, ssusp, ususp, comment}} from ``bhosts -l`` output."""
    hosts, current, expect_values = {}, None, False
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "HOST" and len(words) == 2:
            current = hosts.setdefault(words[1], {"status": None, "max": None, "njobs": None, "run": None,
                                                  "ssusp": None, "ususp": None, "comment": None})
            expect_values = False
        elif current is None:
            continue
        elif words[0] == "STATUS" and "NJOBS" in words:
            expect_values = words
        elif expect_values:
            values = dict(zip(expect_values, words))
            current["status"] = values.get("STATUS")
            for key in ("MAX", "NJOBS", "RUN", "SSUSP", "USUSP"):
                current[key.lower()] = _int(values.get(key, "-"))
            expect_values = False
        elif line.strip().startswith("ADMIN ACTION COMMENT:"):
            comment = line.split(":", 1)[1].strip()
            if len(comment) >= 2 and comment[0] == comment[-1] == '"':
                comment = comment[1:-1]
            current["comment"] = comment
    for name, host in hosts.items():
        if host["status"] is None:
            raise LsfOutputError("bhosts -l: no STATUS line for host %s" % name)
    return hosts


def no_jobs_message(text):
    """True when LSF says there is no job to list (``No unfinished job found`` ...)."""
    return bool(_NO_JOBS.search(text or ""))


def parse_bjobs(text):
    """The jobs of ``bjobs -w`` output: [{job, user, stat, queue, from_host, exec_hosts, job_name}]."""
    jobs, header = [], None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "JOBID":
            header = words
            continue
        if no_jobs_message(line):
            continue
        if not words[0].isdigit() or len(words) < 6:
            raise LsfOutputError("bjobs: cannot read the line %r" % line.strip())
        exec_field = words[5]
        exec_hosts = [] if exec_field == "-" else [part.split("*", 1)[-1] for part in exec_field.split(":") if part]
        jobs.append({
            "job": int(words[0]), "user": words[1], "stat": words[2], "queue": words[3],
            "from_host": words[4], "exec_hosts": exec_hosts,
            # the job name runs up to the submit time (three words: "Nov 24 10:00")
            "job_name": " ".join(words[6:-3]) if header and len(words) > 9 else " ".join(words[6:]),
        })
    return jobs


def started_jobs_on(jobs, host):
    """The jobs of ``jobs`` that hold processes on ``host`` (:data:`STARTED_STATES`)."""
    short = host.split(".", 1)[0]
    return [job for job in jobs if job["stat"] in STARTED_STATES
            and any(name == host or name.split(".", 1)[0] == short for name in job["exec_hosts"])]


def decide(state, status, comment, owner=OWNER):
    """What to do for the wanted ``state`` (open, closed, drained, query), given the host's status and comment.

    Returns ``(command, note)``: ``hclose``, ``hopen`` or None, and why.

    * closed / drained: a host that is open (or closed by LSF itself) is closed; a host an
      administrator closed already is left as it is, whoever closed it (its comment is kept).
    * open: only a host closed with the owner's comment is opened; one an administrator
      closed for another reason stays closed.
    """
    admin_closed = status == ADMIN_CLOSED
    if state == "query":
        return None, "read only"
    if state in ("closed", "drained"):
        if not admin_closed:
            return "hclose", "the host is %s" % status
        if is_owned(comment, owner):
            return None, "closed already by %s" % owner
        return None, "closed already by an administrator (%s); left as it is" % (comment or "no comment")
    if state == "open":
        if not admin_closed:
            return None, "the host is not closed by an administrator (%s)" % status
        if is_owned(comment, owner):
            return "hopen", "closed by %s" % owner
        return None, "closed by an administrator for another reason (%s); left closed" % (comment or "no comment")
    raise ValueError("unknown state %r" % state)
