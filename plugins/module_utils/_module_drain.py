# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Module-side glue between :mod:`_host_drain` and ``AnsibleModule``: the one ``main()`` flow of every drain
module (``lsf_host_state``, ``slurm_node_state``), whatever the scheduler.

:func:`run_drain` reads the host, decides, closes or opens it (in check mode: predicts what that gives), reports
it under the scheduler's own return names and, with ``state=drained``, waits for the host's jobs
(:func:`_host_drain.drained`). A module builds its ``AnsibleModule`` (its own options and
:data:`_host_drain.WAIT_OPTIONS`) and gives it with its :class:`Scheduler`, which says only how its scheduler is
asked and told.
"""

from __future__ import annotations

import socket
import time

from ansible_collections.hpc.gpu_containers.plugins.module_utils._host_drain import close_comment, drained, is_owned

__all__ = ["Scheduler", "run_drain"]


class Scheduler:
    """One host of a scheduler, as :func:`run_drain` asks and tells it. A subclass sets the names and
    implements the methods that raise ``NotImplementedError``.

    The names: ``NAME`` is the option and return key naming the host; ``STATE`` and ``MARK`` are the keys of
    the host's state and comment (reason), in :meth:`state`'s dict and in the result; ``CLOSED`` is the result's
    key for "closed by an administrator"; ``HELD`` words what a failed wait leaves, ``%s`` the mark."""

    NAME = STATE = MARK = CLOSED = HELD = None

    def __init__(self, module, name):
        self.module = module
        self.name = name

    @staticmethod
    def mark(owner, reason):
        """The comment (reason) a close writes: ``<owner>: <reason>``; ValueError for an owner that is not one."""
        return close_comment(owner, reason)

    def fail(self, msg, **extra):
        self.module.fail_json(msg="%s: %s" % (self.name, msg), **dict({self.NAME: self.name}, **extra))

    def state(self):
        """The host's state, a dict with ``STATE`` and ``MARK``; fails the module when it cannot be read."""
        raise NotImplementedError

    def decide(self, wanted, before, owner):
        """``(action, note)`` for the wanted state: the scheduler's action (None: nothing to do), and why."""
        raise NotImplementedError

    def argv(self, action, mark):
        """The command that does ``action``, as the result's ``commands`` lists it."""
        raise NotImplementedError

    def predict(self, before, action, mark):
        """Check mode: the state ``action`` would leave."""
        raise NotImplementedError

    def apply(self, action, argv):
        """Run ``argv`` and return the state read after it; fail (with ``commands=[argv]``) when it did not take."""
        raise NotImplementedError

    def is_closed(self, state):
        """The host is closed (drained) by an administrator in ``state``."""
        raise NotImplementedError

    def jobs(self):
        """The ids of the jobs that hold processes on the host."""
        raise NotImplementedError


def run_drain(module, scheduler):
    """The drain module's ``main()`` after its ``AnsibleModule``: ``scheduler`` is the module's
    :class:`Scheduler` subclass. Exits the module (``exit_json`` or ``fail_json``)."""
    p = module.params
    since = p["since"] if p["since"] is not None else time.time()
    name = p[scheduler.NAME] or socket.gethostname().split(".", 1)[0]
    try:
        mark = scheduler.mark(p["owner"], p["reason"])
    except ValueError as exc:
        module.fail_json(msg=str(exc), **{scheduler.NAME: name})
    host = scheduler(module, name)

    before = host.state()
    action, note = host.decide(p["state"], before, p["owner"])
    commands, after = [], before
    if action:
        argv = host.argv(action, mark)
        commands.append(argv)
        after = host.predict(before, action, mark) if module.check_mode else host.apply(action, argv)

    closed = host.is_closed(after)
    result = {"changed": bool(action), host.NAME: name, host.STATE: after[host.STATE],
              host.MARK: after[host.MARK] or "", host.CLOSED: closed,
              "owned": closed and is_owned(after[host.MARK], p["owner"]),
              "previous": {host.STATE: before[host.STATE], host.MARK: before[host.MARK] or ""}, "note": note,
              "jobs": [], "waited": 0.0, "timed_out": False, "commands": commands, "since": since,
              "waiting": False, "progress": ""}
    if p["state"] == "drained":
        fields, failure, warning = drained(host.jobs, name, p, since, module.check_mode,
                                           host.HELD % result[host.MARK])
        result.update(fields)
        if failure:
            module.fail_json(msg=failure, **result)
        if warning:
            module.warn(warning)
    module.exit_json(**result)
