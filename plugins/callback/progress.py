# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: notification
version_added: 0.2.0
short_description: Print a progress line on each retry of a long wait
description:
  - Ansible's default output shows only C(FAILED - RETRYING ... (N retries left)) while an C(until) loop waits.
    This callback adds one line per retry that says what is being waited for and how far it is -
    C(PROGRESS [gpu01] Wait until this host's jobs have ended - gpu01 - 2 job(s) left (1201, 1202); waited 1m05s
    of 60m00s).
  - The text is the C(progress) value of the retried result when the module returns one (as
    M(hpc.gpu_containers.lsf_host_state) does while it drains a host). For an C(async_status) loop (the image pulls
    and builds of the roles run as C(async) tasks) it is how long the job has been running since its task started
    it, and whether it is still running.
  - Nothing else is printed; the text of a result hidden by C(no_log) is never printed.
requirements:
  - Enable it with C(callbacks_enabled = hpc.gpu_containers.progress) in C(ansible.cfg) (the site templates and the
    test bed do) or C(ANSIBLE_CALLBACKS_ENABLED=hpc.gpu_containers.progress).
"""

import time

from ansible.plugins.callback import CallbackBase


def _duration(seconds):
    seconds = int(seconds)
    return "%dm%02ds" % (seconds // 60, seconds % 60)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "hpc.gpu_containers.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._jobs = {}  # async job id -> (time it was started, name of the task that started it)

    def v2_runner_on_ok(self, result):
        res = result._result
        if res.get("ansible_job_id") and res.get("started") and not res.get("finished"):
            # the task's own name (the line names the waiting task with its role already)
            self._jobs[res["ansible_job_id"]] = (time.time(), result._task.name or result._task.get_name())

    def v2_runner_retry(self, result):
        res = result._result
        if "censored" in res or res.get("_ansible_no_log"):
            return
        text = res.get("progress")
        if not isinstance(text, str) or not text:
            job = res.get("ansible_job_id")
            if not job:
                return
            began, started_by = self._jobs.get(job, (None, None))
            state = "finished" if res.get("finished") else "still running"
            text = "%s%s%s" % (started_by + ": " if started_by else "", state,
                               " after %s" % _duration(time.time() - began) if began else "")
        left = res.get("retries", 0) - res.get("attempts", 0)
        self._display.display("PROGRESS [%s] %s - %s (%d check(s) left)" % (
            result._host.get_name(), result._task.get_name(), text.replace("\n", " "), max(left, 0)))
