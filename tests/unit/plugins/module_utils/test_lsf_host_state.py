# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF host-state model: bhosts -l and bjobs -w output, close comments, what to do."""
from __future__ import annotations

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_host_state as hs

# bhosts -l of LSF 10.1 for two hosts, one closed by an administrator with a comment
BHOSTS_LONG = """\
HOST  gpu01
STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW
closed_Adm      60.00     -     40      3      2      1      0      0      -

 CURRENT LOAD USED FOR SCHEDULING:
              r15s   r1m  r15m    ut    pg    io   ls    it   tmp   swp   mem  slots  ngpus
 Total         0.1   0.2   0.2    4%   0.0    12    1    12  850G  4.0G  370G     37    4.0
 Reserved      0.0   0.0   0.0    0%   0.0     0    0     0    0M    0M    0M      -    0.0

 LOAD THRESHOLD USED FOR SCHEDULING:
           r15s   r1m  r15m   ut      pg    io   ls    it    tmp    swp    mem
 loadSched   -     -     -     -       -     -    -     -     -      -      -
 loadStop    -     -     -     -       -     -    -     -     -      -      -

 ADMIN ACTION COMMENT: "hpc.gpu_containers: restart of dockerd for daemon.json log-opts.max-file"

HOST  gpu02
STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW
ok              60.00     -     40      0      0      0      0      0      -
"""

BJOBS_WIDE = """\
JOBID   USER    STAT  QUEUE      FROM_HOST   EXEC_HOST   JOB_NAME   SUBMIT_TIME
1207    alice   RUN   gpu        login01     gpu01       /bin/sh /srv/train.sh Nov 24 10:00
1208    bob     SSUSP normal     login02     4*gpu01:2*gpu02 mpirun -np 6 ./a.out Nov 24 10:02
1209    carol   PEND  normal     login01     -           sleep 60   Nov 24 10:03
1210    dave    RUN   normal     login01     gpu02.cluster.example ./job Nov 24 10:04
"""


def test_close_comment_is_owner_and_reason_on_one_line():
    assert hs.close_comment("hpc.gpu_containers", "restart of\n dockerd  (daemon.json)") == \
        "hpc.gpu_containers: restart of dockerd (daemon.json)"
    assert hs.close_comment("hpc.gpu_containers", None) == "hpc.gpu_containers:"
    assert len(hs.close_comment("x", "y" * 2000)) == hs.COMMENT_LIMIT


@pytest.mark.parametrize("owner", ["", "a:b", "   "])
def test_close_comment_refuses_an_owner_that_cannot_be_recognised(owner):
    with pytest.raises(ValueError):
        hs.close_comment(owner, "reason")


@pytest.mark.parametrize("comment, owned", [
    ("hpc.gpu_containers: restart", True),
    ('"hpc.gpu_containers: restart"', True),
    ("hpc.gpu_containers:", True),
    ("hpc.gpu_containers restart", False),          # no colon: someone else's words
    ("operator: hpc.gpu_containers: restart", False),
    ("hpc.gpu_containers_old: x", False),
    ("", False),
    (None, False),
])
def test_only_the_owners_comment_is_recognised(comment, owned):
    assert hs.is_owned(comment, "hpc.gpu_containers") is owned


def test_bhosts_long_reads_status_counts_and_comment():
    hosts = hs.parse_bhosts_long(BHOSTS_LONG)
    assert hosts["gpu01"] == {"status": "closed_Adm", "max": 40, "njobs": 3, "run": 2, "ssusp": 1, "ususp": 0,
                              "comment": "hpc.gpu_containers: restart of dockerd for daemon.json log-opts.max-file"}
    assert hosts["gpu02"]["status"] == "ok" and hosts["gpu02"]["comment"] is None


def test_bhosts_long_comment_without_quotes():
    text = BHOSTS_LONG.replace('"hpc.gpu_containers: restart of dockerd for daemon.json log-opts.max-file"',
                               "weekly backup")
    assert hs.parse_bhosts_long(text)["gpu01"]["comment"] == "weekly backup"


def test_bhosts_long_without_a_status_line_is_an_error():
    with pytest.raises(hs.LsfOutputError, match="no STATUS line for host gpu09"):
        hs.parse_bhosts_long("HOST  gpu09\n")


def test_bjobs_wide_rows():
    jobs = hs.parse_bjobs(BJOBS_WIDE)
    assert [job["job"] for job in jobs] == [1207, 1208, 1209, 1210]
    assert jobs[0]["job_name"] == "/bin/sh /srv/train.sh"
    assert jobs[1]["exec_hosts"] == ["gpu01", "gpu02"] and jobs[1]["stat"] == "SSUSP"
    assert jobs[2]["exec_hosts"] == []


@pytest.mark.parametrize("text", ["No unfinished job found\n", "No running job found", "No job found", ""])
def test_bjobs_without_jobs(text):
    assert hs.parse_bjobs(text) == []


def test_no_jobs_message():
    assert hs.no_jobs_message("No unfinished job found")
    assert hs.no_jobs_message("bjobs: No pending job found\n")
    assert not hs.no_jobs_message("bjobs: cannot connect to mbatchd")


def test_bjobs_garbage_is_an_error():
    with pytest.raises(hs.LsfOutputError, match="cannot read"):
        hs.parse_bjobs("JOBID USER STAT\nLSF is down\n")


def test_started_jobs_on_a_host():
    jobs = hs.parse_bjobs(BJOBS_WIDE)
    # running and suspended jobs hold processes; a pending one has no host yet
    assert [job["job"] for job in hs.started_jobs_on(jobs, "gpu01")] == [1207, 1208]
    # host names compare by their short name
    assert [job["job"] for job in hs.started_jobs_on(jobs, "gpu02")] == [1208, 1210]
    assert hs.started_jobs_on(jobs, "gpu03") == []


@pytest.mark.parametrize("state, status, comment, command", [
    ("closed", "ok", None, "hclose"),
    ("drained", "closed_Full", None, "hclose"),          # LSF's own closure is not an administrator's
    ("closed", "closed_Adm", "hpc.gpu_containers: x", None),
    ("drained", "closed_Adm", "operator: disk", None),    # an operator's close is kept, comment and all
    ("open", "closed_Adm", "hpc.gpu_containers: x", "hopen"),
    ("open", "closed_Adm", "operator: disk", None),
    ("open", "closed_Adm", None, None),
    ("open", "ok", None, None),
    ("query", "closed_Adm", "hpc.gpu_containers: x", None),
])
def test_decide(state, status, comment, command):
    got, note = hs.decide(state, status, comment, "hpc.gpu_containers")
    assert got == command and note


def test_decide_names_the_operators_comment():
    dummy, note = hs.decide("open", "closed_Adm", "operator: disk", "hpc.gpu_containers")
    assert "operator: disk" in note and "left closed" in note


def test_decide_unknown_state():
    with pytest.raises(ValueError):
        hs.decide("gone", "ok", None)
