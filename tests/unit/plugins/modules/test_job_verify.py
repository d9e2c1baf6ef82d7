# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""job_verify with recording bsub and srun stand-ins at the process boundary."""
from __future__ import annotations

import os

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import job_verify

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import SMI_BEGIN, SMI_END
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.docker_fakes import (
    CPU_OUTPUT,
    FACTS,
    MACHINE,
    UUID,
    XML,
    gpu_output,
    run_with,
)


@pytest.fixture
def run(monkeypatch, capsys):
    def _run(**args):
        return run_with(monkeypatch, capsys, job_verify, None, **args)
    return _run


# --- the same verification through LSF: a recording bsub at the process boundary ---------------------

BSUB = """#!/bin/sh
# recording stand-in for bsub: logs its argv, prints the submission line, then the job output
printf '%s\\n' "$@" >> "$BSUB_LOG"
echo "--" >> "$BSUB_LOG"
[ -n "$BSUB_REFUSE" ] && { echo "$BSUB_REFUSE" >&2; exit 255; }
echo "Job <4711> is submitted to default queue <interactive>."
echo "<<Waiting for dispatch ...>>"
echo "<<Starting on $(hostname)>>"
[ -n "$BSUB_SLEEP" ] && sleep "$BSUB_SLEEP"
case " $* " in
    *" num=1 "*) [ -n "$BSUB_ONE_GPU_OUTPUT" ] && { printf '%b' "$BSUB_ONE_GPU_OUTPUT"; exit 0; } ;;
esac
printf '%b' "$BSUB_JOB_OUTPUT"
exit "${BSUB_JOB_RC:-0}"
"""


@pytest.fixture
def lsf(tmp_path, monkeypatch):
    """A profile.lsf that puts the recording bsub first on the PATH; returns (lsf option, log path)."""
    bindir = tmp_path / "lsfbin"
    bindir.mkdir()
    (bindir / "bsub").write_text(BSUB)
    (bindir / "bsub").chmod(0o755)
    profile = tmp_path / "profile.lsf"
    profile.write_text('PATH="%s:$PATH"; export PATH\n' % bindir)
    log = tmp_path / "bsub.log"
    monkeypatch.setenv("BSUB_LOG", str(log))
    monkeypatch.setenv("BSUB_JOB_OUTPUT", CPU_OUTPUT)
    # user root: the module submits directly instead of through runuser (the test runner has no lsfadmin)
    return {"app": "powerai", "user": os.environ.get("USER", "root") if os.geteuid() else "root",
            "host": "gpu01", "profile": str(profile)}, log


def test_lsf_job_gives_the_same_verdict_and_its_submission(run, lsf):
    option, log = lsf
    res = run(lsf=option)
    assert res["_rc"] == 0 and res["passed"] is True, res
    assert log.read_text().splitlines() == ["-app", "powerai", "-I", "-m", "gpu01", "/verify", "--"]
    job = res["lsf"]
    assert job["job_id"] == 4711 and job["passed"] is True and job["exit_code"] == 0
    assert job["architecture"] == {"node": MACHINE, "container": MACHINE}
    assert job["timings"]["total"] is not None


def test_lsf_job_that_misses_the_gpus_fails_the_node(run, lsf, monkeypatch):
    option, dummy = lsf
    # Docker sees the GPU; the LSF job's container does not (a profile without GPU access)
    res = run(gpu_facts=FACTS, lsf=option,
              fail_on_mismatch=False)
    assert res["passed"] is False and res["lsf"]["passed"] is False
    assert res["reasons"] == ["LSF: GPUs: nvidia-smi is not available inside the container, so no GPU was passed "
                              "in (check the NVIDIA runtime/CDI setup and gpu_access)"]
    monkeypatch.setenv("BSUB_JOB_OUTPUT", gpu_output())
    res = run(gpu_facts=FACTS, lsf=option)
    assert res["passed"] is True and res["lsf"]["gpus"]["container_gpus"][0]["uuid"] == UUID


def test_lsf_refused_submission_and_failed_job_are_reasons(run, lsf, monkeypatch):
    option, dummy = lsf
    monkeypatch.setenv("BSUB_REFUSE", "powerai: No such application. Job not submitted.")
    res = run(lsf=option)
    assert res["_rc"] == 1 and res["lsf"]["job_id"] is None
    assert "LSF: bsub -app powerai did not submit the job (exit code 255): powerai: No such application" in res["msg"]
    monkeypatch.delenv("BSUB_REFUSE")
    monkeypatch.setenv("BSUB_JOB_RC", "3")
    res = run(lsf=option, fail_on_mismatch=False)
    assert res["passed"] is False and res["lsf"]["exit_code"] == 3
    assert res["reasons"][0].startswith("LSF: the job exited with 3")


def test_lsf_job_past_its_timeout_fails(run, lsf, monkeypatch):
    option, dummy = lsf
    monkeypatch.setenv("BSUB_SLEEP", "5")
    res = run(lsf=dict(option, timeout=1), fail_on_mismatch=False)
    assert res["passed"] is False
    assert res["reasons"] == ["LSF: the job did not finish within 1 s (bsub -app powerai -I -m gpu01)"]


def test_lsf_not_submitted_in_check_mode(run, lsf):
    option, log = lsf
    res = run(lsf=option, _ansible_check_mode=True)
    assert res["passed"] is None and "lsf" not in res and not log.exists()


SECOND = "GPU-0b5d9b0c-6f3e-4c55-9c2a-5d3e1f0a7b11"
SECOND_GPU = {"index": 1, "uuid": SECOND, "pci_bus_id": "00000000:3B:00.0", "minor_number": 1}
TWO_FACTS = dict(FACTS, gpus=FACTS["gpus"] + [SECOND_GPU])


def as_second_gpu(text):
    """``text`` about the node's first GPU, told of its second (index 1) instead."""
    return text.replace(UUID, SECOND).replace("00000000:00:04.0", "00000000:3B:00.0").replace("<minor_number>0", "<minor_number>1")


def second_gpu_output(visible):
    """What a one-GPU job or step that was given the second GPU (NVIDIA_VISIBLE_DEVICES ``visible``) prints."""
    return as_second_gpu(gpu_output()).replace("nvidia_smi=present", "nvidia_visible_devices=%s\nnvidia_smi=present" % visible)


def leak_reason(scheduler):
    return ("%s: isolation: a job that %s allocated 1 GPU(s) sees 2 (every GPU of the node: the profile hands all GPUs "
            "to every job)" % (scheduler, scheduler))


def two_gpu_output():
    start, end = XML.index("<gpu "), XML.index("</gpu>") + len("</gpu>")
    second = as_second_gpu(XML[start:end])
    xml = (XML[:end] + "\n" + second + XML[end:]).replace("<attached_gpus>1</", "<attached_gpus>2</")
    return "hpc-verify: 1\narch=%s\nnvidia_visible_devices=0,1\nnvidia_smi=present\nnvidia_smi_rc=0\n%s\n%s\n%s\n" % (
        MACHINE, SMI_BEGIN, xml, SMI_END)


@pytest.mark.parametrize("one_gpu_job, passed, reason", [
    # the one-GPU job sees the GPU LSF gave it (index 1 on the host, the second UUID)
    (lambda: second_gpu_output("1"), True, None),
    # a profile that hands every GPU to every job
    (two_gpu_output, False, leak_reason("LSF")),
], ids=["isolated", "leaks-every-gpu"])
def test_lsf_one_gpu_job_must_see_only_its_gpu(run, lsf, monkeypatch, one_gpu_job, passed, reason):
    option, log = lsf
    monkeypatch.setenv("BSUB_JOB_OUTPUT", two_gpu_output())
    monkeypatch.setenv("BSUB_ONE_GPU_OUTPUT", one_gpu_job())
    res = run(gpu_facts=TWO_FACTS, lsf=option, fail_on_mismatch=False)
    jobs = log.read_text().split("--\n")[:-1]
    assert [job.splitlines()[4:] for job in jobs] == [["gpu01", "-gpu", "num=2", "/verify"],
                                                      ["gpu01", "-gpu", "num=1", "/verify"]]
    assert res["lsf"]["isolation"]["passed"] is passed
    assert res["passed"] is passed
    if reason:
        assert res["reasons"] == [reason]
    # without isolation, only the all-GPU job is submitted
    log.unlink()
    res = run(gpu_facts=TWO_FACTS, lsf=dict(option, isolation=False), fail_on_mismatch=False)
    assert res["passed"] is True and log.read_text().count("--\n") == 1


# --- the same verification through Slurm: a recording srun at the process boundary --------------------

SRUN = """#!/bin/sh
# recording stand-in for srun: logs its argv, then prints what the step's container would
printf '%s\\n' "$@" >> "$SRUN_LOG"
echo "==" >> "$SRUN_LOG"
case " $* " in
    *" --gres=gpu:1 "*) [ -n "$SRUN_ONE_GPU_OUTPUT" ] && { printf '%b' "$SRUN_ONE_GPU_OUTPUT"; exit 0; } ;;
esac
[ -n "$SRUN_FAIL" ] && { echo "$SRUN_FAIL" >&2; exit 1; }
printf '%b' "$SRUN_STEP_OUTPUT"
"""


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """A recording srun; returns (slurm option, log path)."""
    srun = tmp_path / "srun"
    srun.write_text(SRUN)
    srun.chmod(0o755)
    log = tmp_path / "srun.log"
    monkeypatch.setenv("SRUN_LOG", str(log))
    monkeypatch.setenv("SRUN_STEP_OUTPUT", CPU_OUTPUT)
    # user root: the module runs srun directly instead of through runuser (the test runner has no job user)
    return {"user": os.environ.get("USER", "root") if os.geteuid() else "root", "node": "gpu01",
            "srun": str(srun), "srun_docker": "/usr/local/bin/srun-docker", "image": "r:5000/hpc/verify:1"}, log


def steps(log):
    return [job.splitlines() for job in log.read_text().split("==\n")[:-1]]


def test_slurm_step_gives_the_same_verdict(run, slurm):
    option, log = slurm
    res = run(slurm=option)
    assert res["_rc"] == 0 and res["passed"] is True, res
    assert steps(log) == [["--nodes=1", "--ntasks=1", "--nodelist=gpu01", "--job-name=hpc-verify",
                           "/usr/local/bin/srun-docker", "--no-ssh", "r:5000/hpc/verify:1", "--", "/verify"]]
    assert res["slurm"]["passed"] is True and res["slurm"]["architecture"] == {"node": MACHINE, "container": MACHINE}


def test_slurm_step_failures_are_reasons(run, slurm, monkeypatch):
    option, log = slurm
    monkeypatch.setenv("SRUN_FAIL", "srun: error: Unable to allocate resources: Invalid node name specified")
    res = run(slurm=option, fail_on_mismatch=False)
    assert res["passed"] is False
    assert res["reasons"] == ["Slurm: the step exited with 1: srun: error: Unable to allocate resources: Invalid node "
                              "name specified"]
    res = run(slurm=option, _ansible_check_mode=True)
    assert "slurm" not in res


@pytest.mark.parametrize("one_gpu_step, passed, reason", [
    (lambda: second_gpu_output(SECOND), True, None),
    (two_gpu_output, False, leak_reason("Slurm")),
], ids=["isolated", "leaks-every-gpu"])
def test_slurm_one_gpu_step_must_see_only_its_gpu(run, slurm, monkeypatch, one_gpu_step, passed, reason):
    option, log = slurm
    monkeypatch.setenv("SRUN_STEP_OUTPUT", two_gpu_output())
    monkeypatch.setenv("SRUN_ONE_GPU_OUTPUT", one_gpu_step())
    res = run(gpu_facts=TWO_FACTS, slurm=option, fail_on_mismatch=False)
    assert [step[4] for step in steps(log)] == ["--gres=gpu:2", "--gres=gpu:1"]
    assert res["slurm"]["isolation"]["passed"] is passed and res["passed"] is passed
    if reason:
        assert res["reasons"] == [reason]
