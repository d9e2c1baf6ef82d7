# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_host_drain: the mark, the wait with one deadline across calls, and the progress line, on a fake clock."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _host_drain as drain


class Clock:
    def __init__(self, start=1000.0):
        self.now = start
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def jobs_until(clock, end, ids=("7",)):
    return lambda: list(ids) if clock.now < end else []


def test_the_mark_and_who_owns_it():
    assert drain.close_comment("hpc.gpu_containers", "restart of\n dockerd") == "hpc.gpu_containers: restart of dockerd"
    assert drain.close_comment("hpc.gpu_containers", "x" * 600, 512) == ("hpc.gpu_containers: " + "x" * 600)[:512]
    assert drain.is_owned('"hpc.gpu_containers: restart" [root@2026-11-27T04:19:59]', "hpc.gpu_containers")
    assert not drain.is_owned("operator: hpc.gpu_containers: no", "hpc.gpu_containers")
    with pytest.raises(ValueError):
        drain.close_comment("a:b", "x")


def test_waits_until_the_jobs_end():
    clock = Clock()
    ids, waited, timed_out, waiting = drain.wait_for_jobs(jobs_until(clock, 1045), 100, 10, clock(), clock=clock,
                                                          sleep=clock.sleep)
    assert (ids, waited, timed_out, waiting) == ([], 50.0, False, False)
    assert clock.slept == [10] * 5


def test_times_out_at_the_deadline_counted_from_since():
    clock = Clock()
    ids, waited, timed_out, waiting = drain.wait_for_jobs(jobs_until(clock, 9999), 30, 20, clock() - 20,
                                                          clock=clock, sleep=clock.sleep)
    assert (ids, timed_out, waiting) == (["7"], True, False)
    assert clock.slept == [10] and waited == 30.0


def test_returns_after_a_slice_while_jobs_run_and_check_mode_asks_once():
    clock = Clock()
    result = drain.wait_for_jobs(jobs_until(clock, 9999), 600, 5, clock(), return_after=12, clock=clock,
                                 sleep=clock.sleep)
    assert result == (["7"], 15.0, False, True)
    clock = Clock()
    assert drain.wait_for_jobs(jobs_until(clock, 9999), 600, 5, clock(), check_mode=True, clock=clock,
                               sleep=clock.sleep) == (["7"], 0.0, False, False)
    assert clock.slept == []


def test_the_progress_line():
    assert drain.progress_line("n1", ["1", "2"], 65, 3600) == "n1: 2 job(s) left (1, 2); waited 1m05s of 60m00s"
    assert drain.progress_line("n1", [], 5, 3600) == "n1: no job left; waited 0m05s"
    assert drain.progress_line("n1", list(range(12)), 0, 60).endswith("(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...); waited 0m00s of 1m00s")


def test_drained_reports_the_wait_and_what_a_timeout_means():
    """The fields, the failure and the warning both drain modules report (a deadline long past: no waiting)."""
    params = dict(timeout=30, poll=10, return_after=0, on_timeout="fail")
    fields, failure, warning = drain.drained(lambda: ["12", "12_3"], "n1", params, 0.0, False,
                                             "the node stays drained (x)")
    assert fields["jobs"] == ["12", "12_3"] and fields["timed_out"] is True and fields["waiting"] is False
    assert fields["progress"].startswith("n1: 2 job(s) left (12, 12_3); waited ")
    assert failure == "n1: 2 job(s) still running after 30 s (12, 12_3); the node stays drained (x)"
    assert warning is None
    _fields, failure, warning = drain.drained(lambda: [7], "h1", dict(params, on_timeout="proceed"), 0.0, False, "-")
    assert failure is None and warning == "h1: jobs 7 still running after 30 s; going on (on_timeout=proceed)"
    fields, failure, warning = drain.drained(lambda: [], "h1", params, 0.0, False, "-")
    assert fields["jobs"] == [] and fields["timed_out"] is False and failure is None and warning is None
