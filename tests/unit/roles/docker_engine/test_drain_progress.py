# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_engine's drain (tasks/drain.yml) with ansible-playbook against the recording LSF stubs, and the
hpc.gpu_containers.progress callback's line on each poll: which host, which jobs are left, how long it has waited."""

import re
import threading
import time

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.test_lsf_host_state_module import (  # noqa: F401 pylint: disable=unused-import
    HOST,
    cluster,
)
from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import ROLES, run_playbook

PROGRESS = {"ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.progress"}


def drain_play(lsf, timeout, on_timeout="fail"):
    return [{
        "name": "Drain this host",
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [{
            "name": "The role's drain",
            "ansible.builtin.include_tasks": str(ROLES / "docker_engine" / "tasks" / "drain.yml"),
            "vars": {
                "docker_engine_lsf_drain": True,
                "docker_engine_slurm_drain": False,
                "docker_engine_service_before": {"status": {"ActiveState": "active"}},
                "docker_engine_drain_reason": "engine upgrade",
                "docker_engine_lsf_host": HOST,
                "docker_engine_lsf_profile": str(lsf.profile),
                "docker_engine_lsf_drain_timeout": timeout,
                "docker_engine_lsf_drain_poll": 1,
                "docker_engine_lsf_drain_on_timeout": on_timeout,
            },
        }],
    }]


# The job runs until the drain has checked it a few times (ansible-playbook's start alone can take many seconds on
# a machine busy with other tests, so a fixed run time would be either flaky or long): it waits for a file that a
# thread beside the playbook creates once the stubs' log holds more than POLLS bjobs calls after the hclose (the
# first check reads bjobs twice), so the drain has found the job running at least POLLS - 1 times.
POLLS = 3


def job_until_polled(lsf, tmp_path):
    """Submit a job that ends once the drain has polled it; return the job and the thread that ends it."""
    stop = tmp_path / "end-the-job"
    job = lsf.submit("sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.2; done; echo done', "sh", str(stop))
    lsf.wait_for(job, "RUN")

    def polls():
        try:
            calls = [c["cmd"] if c["cmd"] != "badmin" else c["argv"][0] for c in lsf.calls()]
        except ValueError:  # a line the stub is still writing
            return 0
        return calls[calls.index("hclose"):].count("bjobs") if "hclose" in calls else 0

    def end_after_polls():
        deadline = time.monotonic() + 240
        while polls() <= POLLS and time.monotonic() < deadline:
            time.sleep(0.2)
        stop.touch()
    thread = threading.Thread(target=end_after_polls, daemon=True)
    thread.start()
    return job, thread


def test_each_poll_prints_the_host_the_jobs_left_and_the_time_waited(cluster, tmp_path):  # noqa: F811
    job, ender = job_until_polled(cluster, tmp_path)
    proc = run_playbook(tmp_path, drain_play(cluster, 120), env=PROGRESS)
    ender.join()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    lines = re.findall(r"^PROGRESS \[localhost\] Wait until this host's jobs have ended - (.*)$", proc.stdout, re.M)
    assert len(lines) >= POLLS - 1, proc.stdout[-4000:]
    for line in lines:
        assert re.fullmatch(r"%s: 1 job\(s\) left \(%d\); waited \dm\d\ds of 2m00s \(\d+ check\(s\) left\)"
                            % (re.escape(HOST), job), line), line
    waited = [60 * int(minutes) + int(seconds) for minutes, seconds in
              (re.search(r"waited (\d)m(\d\d)s", line).groups() for line in lines)]
    assert waited == sorted(waited) and waited[0] >= 1  # counted from the close, across the calls
    assert cluster.job(job)["stat"] == "DONE"
    assert [c["argv"][0] for c in cluster.calls("badmin")] == ["hclose"]  # closed once


def test_without_the_callback_no_progress_line(cluster, tmp_path):  # noqa: F811
    _job, ender = job_until_polled(cluster, tmp_path)
    proc = run_playbook(tmp_path, drain_play(cluster, 120))
    ender.join()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "PROGRESS [" not in proc.stdout and "FAILED - RETRYING" in proc.stdout


def test_a_drain_past_its_timeout_fails_with_the_jobs_still_running(cluster, tmp_path):  # noqa: F811
    job = cluster.submit("sleep", "60")
    cluster.wait_for(job, "RUN")
    proc = run_playbook(tmp_path, drain_play(cluster, 8), env=PROGRESS)
    assert proc.returncode == 2, proc.stdout[-4000:]
    assert "%s: 1 job(s) still running after 8 s (%d); the host stays closed" % (HOST, job) in proc.stdout
    assert "PROGRESS [localhost]" in proc.stdout
    assert cluster.state()["status"] == "closed_Adm"
