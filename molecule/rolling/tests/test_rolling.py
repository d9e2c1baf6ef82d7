# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster after the rolling changes of side_effect.yml (molecule verify).

side_effect.yml checked each step as it happened (check_rolling.py); this
looks at where they left the nodes: live restore on, gpu01 and head open
again, gpu02 still closed with its operator's comment, no job left running,
and the long-running job's container ended by itself.
"""
from __future__ import annotations

import json

OPERATOR_COMMENT = "operator: fan replacement, keep closed"


def lsf(host, command):
    """An LSF command in a login shell (profile.lsf puts the commands on PATH)."""
    return host.run("bash -lc %s", command)


def lsf_name(host):
    return host.check_output("hostname -s")


def test_live_restore_is_on(host):
    config = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert config["live-restore"] is True
    assert host.check_output("docker info --format '{{.LiveRestoreEnabled}}'") == "true"


def test_host_state_after_the_rolling_changes(host):
    name = lsf_name(host)
    out = lsf(host, "bhosts -l %s" % name)
    assert out.rc == 0, out.stderr
    status = out.stdout.splitlines()[2].split()[0]
    if name == "gpu02":
        # closed by its operator before the run: the collection never reopened it
        assert status == "closed_Adm"
        assert ' ADMIN ACTION COMMENT: "%s"' % OPERATOR_COMMENT in out.stdout
    else:
        # closed by the collection around its restarts, reopened once verified
        assert status == "ok", out.stdout


def test_bhosts_lists_every_docker_host(host):
    out = lsf(host, "bhosts -w")
    rows = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()[1:] if line.strip()}
    assert rows == {"head": "ok", "gpu01": "ok", "gpu02": "closed_Adm"}


def test_no_job_left_running_on_the_host(host):
    out = lsf(host, "bjobs -u all -w -r -m %s" % lsf_name(host))
    assert out.rc != 0 and "No running job found" in out.stderr, out.stdout


def test_the_long_running_job_ended_by_itself(host):
    if lsf_name(host) != "gpu01":
        return
    out = lsf(host, "bjobs -u all -w -a -m gpu01")
    batch = [line.split() for line in out.stdout.splitlines()[1:] if "/srv/rolling/job.sh" in line]
    assert batch and all(row[2] == "DONE" for row in batch), out.stdout
    assert "rolling-job-finished" in host.file("/tmp/rolling-job.out").content_string


def test_gpu_scheduling_true_enforces_gpus_and_a_job_gets_the_gpus_lsf_allocated(host):
    """lsf_docker_gpu_scheduling: true (this scenario) wrote LSF's GPU set, enforcement included; a two-GPU job
    then reaches the starter with LSF's renumbered CUDA_VISIBLE_DEVICES and the host's numbers in
    CUDA_VISIBLE_DEVICES_ORIG, and its container gets exactly those GPUs."""
    if lsf_name(host) != "gpu01":
        return
    conf = dict(line.split("=", 1) for line in host.file("/usr/share/lsf/conf/lsf.conf").content_string.splitlines()
                if "=" in line and not line.lstrip().startswith("#"))
    assert conf["LSB_RESOURCE_ENFORCE"].strip('"').split() == ["cpu", "memory", "gpu"]
    assert conf["LSB_GPU_NEW_SYNTAX"] == "extend" and conf["LSF_GPU_AUTOCONFIG"] == "Y"
    out = host.run("runuser -u lsfadmin -- bash -lc %s", "bsub -gpu num=2 -app powerai -I -m gpu01 /verify")
    assert out.rc == 0, out.stdout[-2000:] + out.stderr[-2000:]
    seen = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line and line[:1].isalpha())
    assert seen.get("nvidia_visible_devices") == "0,1", out.stdout[-2000:]
    assert seen.get("cuda_visible_devices") == "0,1", out.stdout[-2000:]
    assert out.stdout.count("<uuid>GPU-") == 2, out.stdout[-3000:]
