# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress callback in a real ansible-playbook run: a line per retry of an async_status wait (as the image
pulls and builds of container_verify wait), and nothing from a result hidden by no_log.
(The drain's lines, from lsf_host_state's progress: tests/unit/roles/docker_engine/test_drain_progress.py.)"""

import re

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import run_playbook

PROGRESS = {"ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.progress"}


def _play(no_log=False):
    return [{
        "name": "A long job in the background",
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            # The job outlives the wait, which ends after its third check: two retries whatever the machine's load
            # (a job that ends by itself can end before the second check on a busy machine).
            {"name": "Pull a large image", "ansible.builtin.command": "sleep 60", "async": 120, "poll": 0,
             "register": "job", "changed_when": False},
            {"name": "Wait for the pull", "ansible.builtin.async_status": {"jid": "{{ job.ansible_job_id }}"},
             "register": "res", "until": "res.finished or res.attempts | default(1) >= 3", "retries": 30, "delay": 1,
             "no_log": no_log},
        ],
    }]


def test_each_retry_of_an_async_wait_says_what_and_how_long(tmp_path):
    proc = run_playbook(tmp_path, _play(), env=PROGRESS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    lines = re.findall(r"^PROGRESS \[localhost\] Wait for the pull - (.*)$", proc.stdout, re.M)
    assert len(lines) == 2, proc.stdout
    for line in lines:
        assert re.fullmatch(r"Pull a large image: still running after \dm\d\ds \(\d+ check\(s\) left\)", line), line
    seconds = [60 * int(minutes) + int(secs) for minutes, secs in
               (re.search(r"after (\d)m(\d\d)s", line).groups() for line in lines)]
    assert seconds == sorted(seconds) and seconds[-1] >= 1


def test_no_line_for_a_result_hidden_by_no_log(tmp_path):
    proc = run_playbook(tmp_path, _play(no_log=True), env=PROGRESS)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "FAILED - RETRYING" in proc.stdout and "PROGRESS [" not in proc.stdout
