#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: job_verify
short_description: Run the verification image as an LSF job or a Slurm job step and compare what it sees with the host
version_added: 0.2.0
description:
  - The scheduler's half of the verification that M(hpc.gpu_containers.container_verify) does on Docker - the
    same report (the collection's verification image prints it) comes back through a job, and is compared with
    the node the same way - architecture, and on a GPU node the GPUs by UUID, PCI bus id, minor number and driver.
  - Through LSF (O(lsf)). C(bsub -app <profile> -I -m <node> /verify), submitted on the node, lands in the container
    the application profile describes. On a GPU node the job asks LSF for all of the node's GPUs (C(-gpu num=N)) and
    must see exactly those; then a job that asks for one GPU must see exactly the one LSF allocated.
  - Through Slurm (O(slurm)). C(srun --nodelist=<node> srun-docker <image> /verify), as the user, from the node. On a
    GPU node the step asks for all of the node's GPUs (C(--gres=gpu:N)), then a step for one GPU, as for LSF.
  - Each submission holds until its job ends (C(bsub -I), C(srun)); it runs under C(timeout) and counts as failed
    after its O(lsf.timeout) or O(slurm.timeout).
  - Before 0.2.0 these were the C(lsf) and C(slurm) options of M(hpc.gpu_containers.container_verify).
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
attributes:
  check_mode:
    support: full
    description: Nothing is submitted; RV(passed) is V(null).
  diff_mode:
    support: none
    description: Nothing on the host changes.
  idempotent:
    support: full
    description: A job changes nothing on the host; RV(ignore:changed) is always V(false).
options:
  gpu_facts:
    description:
      - The host's GPU facts, normally C(ansible_facts.gpu_facts) from M(hpc.gpu_containers.gpu_facts). When omitted
        the node counts as having no GPU.
    type: dict
  fail_on_mismatch:
    description:
      - V(true) fails the task when the verdict is negative; V(false) returns RV(passed=false) with the reasons.
    type: bool
    default: true
  lsf:
    description:
      - Run the verification as an interactive LSF job through an application profile. The profile's image must
        print the verification report, as the collection's verification image does.
      - One of O(lsf) and O(slurm).
    type: dict
    suboptions:
      app:
        description: The LSF application profile (C(bsub -app)), for example V(powerai).
        type: str
        required: true
      user:
        description:
          - The user who submits the job when the module runs as root (LSF refuses jobs from root unless
            C(LSF_ROOT_USER=Y)); the user must be able to run Docker jobs.
        type: str
        default: lsfadmin
      host:
        description: The LSF host name of this node (C(bsub -m)); this node's short host name when omitted.
        type: str
      profile:
        description:
          - C(profile.lsf) to source before C(bsub). Without it the login environment (C(/etc/profile.d)) must
            put LSF on the C(PATH).
        type: path
      command:
        description: The job's command inside the profile's container.
        type: list
        elements: str
        default: [/verify]
      timeout:
        description: Seconds to wait for the job to finish; the verification fails after that.
        type: int
        default: 300
      isolation:
        description:
          - On a node with two or more GPUs, also submit a job that asks LSF for one GPU (C(-gpu num=1)); its
            container must see exactly the GPU LSF allocated (by UUID, from the job's C(NVIDIA_VISIBLE_DEVICES)).
            A profile that hands every GPU to every job fails with that reason.
        type: bool
        default: true
  slurm:
    description:
      - Run the verification as a Slurm job step on this node, in the container srun-docker starts for it. The
        image is pulled by srun-docker from the registry with the site's login.
      - One of O(lsf) and O(slurm).
    type: dict
    suboptions:
      image:
        description: The verification image, for example V(registry.example:5000/hpc/verify:1).
        type: str
        required: true
      user:
        description: The user who runs the step (srun-docker refuses root); a member of the docker group.
        type: str
        required: true
      node:
        description: The Slurm node name of this node; its short host name when omitted.
        type: str
      partition:
        description: The partition to run in; Slurm's default partition when omitted.
        type: str
      command:
        description: The step's command inside the container.
        type: list
        elements: str
        default: [/verify]
      srun_docker:
        description: The srun-docker command.
        type: str
        default: srun-docker
      srun:
        description: The srun command.
        type: str
        default: srun
      timeout:
        description: Seconds to wait for each step; the verification fails after that.
        type: int
        default: 300
      isolation:
        description: On a node with two or more GPUs, also run a step with one GPU, which must see only that one.
        type: bool
        default: true
seealso:
  - module: hpc.gpu_containers.container_verify
  - module: hpc.gpu_containers.gpu_facts
"""

EXAMPLES = r"""
- name: Gather GPU facts
  hpc.gpu_containers.gpu_facts:

- name: The verification image through the LSF profile powerai, on this node
  hpc.gpu_containers.job_verify:
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    lsf:
      app: powerai
      profile: /usr/share/lsf/conf/profile.lsf

- name: The same as a Slurm job step through srun-docker, as alice
  hpc.gpu_containers.job_verify:
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    slurm:
      image: registry.cluster:5000/hpc/verify:1
      user: alice
"""

RETURN = r"""
passed:
  description: The verdict; V(null) in check mode.
  returned: always
  type: bool
  sample: true
reasons:
  description: Every mismatch found, each prefixed with C(LSF:) or C(Slurm:); empty when the check passed.
  returned: always
  type: list
  elements: str
  sample: ["LSF: isolation: a job that LSF allocated 1 GPU(s) sees 2 (every GPU of the node: the profile hands all GPUs to every job)"]
lsf:
  description:
    - The run through LSF - the application profile, the host, the job id C(bsub) printed, its exit code, verdict
      and reasons, architecture and GPUs as M(hpc.gpu_containers.container_verify) returns them, and the wall time
      from submission to the job's end.
    - C(isolation) (on nodes with two or more GPUs, with O(lsf.isolation)) - the one-GPU job - its id, exit code,
      the GPUs LSF allocated (C(allocated), as the job's C(NVIDIA_VISIBLE_DEVICES)), wall time and verdict.
  returned: with O(lsf), not in check mode
  type: dict
  sample:
    app: powerai
    host: gpu01
    job_id: 1204
    exit_code: 0
    passed: true
    reasons: []
    architecture: {"node": "x86_64", "container": "x86_64"}
    gpus: {"requested": [], "host": 0, "container": 0, "container_gpus": [], "host_driver_version": null,
           "container_driver_version": null}
    timings: {"total": 1.84}
    output: "Job <1204> is submitted to default queue <interactive>.\n<<Waiting for dispatch ...>>\n..."
slurm:
  description:
    - The run through Slurm - the node, the user, its exit code, verdict and reasons, architecture and GPUs, and
      its wall time; C(isolation), the one-GPU step, as for RV(lsf).
  returned: with O(slurm), not in check mode
  type: dict
  sample:
    node: gpu01
    user: alice
    exit_code: 0
    passed: true
    reasons: []
    architecture: {"node": "x86_64", "container": "x86_64"}
    gpus: {"requested": [], "host": 2, "container": 2, "container_gpus": [], "host_driver_version": "470.182.03",
           "container_driver_version": "470.182.03"}
    timings: {"total": 2.31}
    isolation: {"exit_code": 0, "allocated": "GPU-29017365-4723-b07f-2ddf-a631c231412d", "seconds": 1.9, "passed": true}
"""

import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._job_launch import bsub_argv, srun_container_argv
from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import (
    compare,
    host_gpus,
    isolation_problems,
    parse_bsub_job_id,
    parse_verify_output,
)

# What timeout(1) exits with when it stopped the command (TERM, then KILL after the grace).
TIMED_OUT = (124, 137)
KILL_GRACE = 10


class Finished:
    """A submission that held until its job ended: exit code, output, and its wall time."""

    def __init__(self, returncode, stdout, stderr, seconds):
        self.returncode, self.stdout, self.stderr, self.seconds = returncode, stdout, stderr, seconds


def _round(value):
    return None if value is None else round(value, 3)


def _short_hostname():
    return socket.gethostname().split(".")[0]


class JobVerifier:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.facts = module.params["gpu_facts"] or {}
        self.gpus = host_gpus(self.facts)
        self.machine = os.uname().machine

    def submit(self, argv, timeout):
        """Run a submission that holds until its job ends, under timeout(1); a Finished, or None past ``timeout``."""
        began = time.monotonic()
        rc, out, err = self.module.run_command(
            ["timeout", "--kill-after=%d" % KILL_GRACE, str(timeout)] + argv,
            expand_user_and_vars=False, errors="surrogate_then_replace")
        if rc in TIMED_OUT:
            return None
        return Finished(rc, out, err, time.monotonic() - began)

    def one_gpu(self, job, result, scheduler, noun, extra):
        """The verdict on a one-GPU job or step: it must see exactly the GPU ``scheduler`` gave it."""
        report = parse_verify_output(job.stdout)
        result["isolation"] = dict(extra, exit_code=job.returncode, allocated=report.get("nvidia_visible_devices"),
                                   seconds=_round(job.seconds))
        if job.returncode != 0:
            return ["isolation: the one-GPU %s exited with %d: %s" % (noun, job.returncode, job.stderr.strip()[-500:])]
        problems = isolation_problems(report, self.gpus, 1, scheduler=scheduler)
        result["isolation"]["passed"] = not problems
        return problems

    def verdict(self, result, job, problems_first, isolation):
        """Compare the job's report with the host; then, on a node with two or more GPUs, the one-GPU job."""
        problems, details = compare(self.machine, parse_verify_output(job.stdout), self.gpus, self.facts,
                                    expect_gpus=bool(self.gpus))
        problems = problems_first + problems
        if isolation and len(self.gpus) > 1 and not problems:
            problems += isolation()
        result.update(passed=not problems, reasons=problems, architecture=details["architecture"],
                      gpus=details["gpus"])
        return result

    # ---------------------------------------------------------------- LSF

    def bsub(self, host, gpu_count):
        lsf = self.params["lsf"]
        argv = bsub_argv(lsf["app"], host, lsf["command"], lsf["user"], lsf["profile"], os.geteuid() == 0,
                         gpus=gpu_count)
        return self.submit(argv, lsf["timeout"])

    def lsf(self):
        lsf = self.params["lsf"]
        host = lsf["host"] or _short_hostname()
        timed_out = "the job did not finish within %d s (bsub -app %s -I -m %s)" % (lsf["timeout"], lsf["app"], host)
        result = {"app": lsf["app"], "host": host, "job_id": None, "exit_code": None, "passed": False,
                  "reasons": [], "timings": {"total": None}, "output": ""}
        job = self.bsub(host, len(self.gpus))
        if job is None:
            result["reasons"] = [timed_out]
            return result
        result["timings"]["total"] = _round(job.seconds)
        result.update(exit_code=job.returncode, output=job.stdout, job_id=parse_bsub_job_id(job.stdout))
        if result["job_id"] is None:
            result["reasons"] = ["bsub -app %s did not submit the job (exit code %d): %s"
                                 % (lsf["app"], job.returncode, (job.stderr.strip() or job.stdout.strip())[-500:])]
            return result
        first = ["the job exited with %d: %s" % (job.returncode, job.stderr.strip()[-500:])] if job.returncode else []

        def isolation():
            one = self.bsub(host, 1)
            if one is None:
                return ["isolation: %s" % timed_out]
            return self.one_gpu(one, result, "LSF", "job", {"job_id": parse_bsub_job_id(one.stdout)})

        return self.verdict(result, job, first, lsf["isolation"] and isolation)

    # ---------------------------------------------------------------- Slurm

    def srun(self, node, gpu_count):
        slurm = self.params["slurm"]
        # srun-docker's --no-ssh: one task, no sshd for MPI in the step's container.
        argv = srun_container_argv(slurm["srun_docker"], slurm["image"], slurm["command"], node, gpu_count,
                                   slurm["partition"], slurm["srun"], wrapper_options=["--no-ssh"],
                                   user=slurm["user"], as_root=os.geteuid() == 0, login_shell=True)
        return self.submit(argv, slurm["timeout"])

    def slurm(self):
        slurm = self.params["slurm"]
        node = slurm["node"] or _short_hostname()
        timed_out = "the step did not finish within %d s (srun --nodelist=%s)" % (slurm["timeout"], node)
        result = {"node": node, "user": slurm["user"], "exit_code": None, "passed": False, "reasons": [],
                  "timings": {"total": None}, "output": ""}
        job = self.srun(node, len(self.gpus))
        if job is None:
            result["reasons"] = [timed_out]
            return result
        result["timings"]["total"] = _round(job.seconds)
        result.update(exit_code=job.returncode, output=job.stdout)
        if job.returncode != 0 and not parse_verify_output(job.stdout).get("arch"):
            result["reasons"] = ["the step exited with %d: %s"
                                 % (job.returncode, (job.stderr.strip() or job.stdout.strip())[-500:])]
            return result
        first = ["the step exited with %d: %s" % (job.returncode, job.stderr.strip()[-500:])] if job.returncode else []

        def isolation():
            one = self.srun(node, 1)
            if one is None:
                return ["isolation: %s" % timed_out]
            return self.one_gpu(one, result, "Slurm", "step", {})

        return self.verdict(result, job, first, slurm["isolation"] and isolation)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpu_facts=dict(type="dict"),
            fail_on_mismatch=dict(type="bool", default=True),
            lsf=dict(type="dict", options=dict(
                app=dict(type="str", required=True),
                user=dict(type="str", default="lsfadmin"),
                host=dict(type="str"),
                profile=dict(type="path"),
                command=dict(type="list", elements="str", default=["/verify"]),
                timeout=dict(type="int", default=300),
                isolation=dict(type="bool", default=True),
            )),
            slurm=dict(type="dict", options=dict(
                image=dict(type="str", required=True),
                user=dict(type="str", required=True),
                node=dict(type="str"),
                partition=dict(type="str"),
                command=dict(type="list", elements="str", default=["/verify"]),
                srun_docker=dict(type="str", default="srun-docker"),
                srun=dict(type="str", default="srun"),
                timeout=dict(type="int", default=300),
                isolation=dict(type="bool", default=True),
            )),
        ),
        mutually_exclusive=[("lsf", "slurm")],
        required_one_of=[("lsf", "slurm")],
        supports_check_mode=True,
    )
    scheduler, label = ("lsf", "LSF") if module.params["lsf"] else ("slurm", "Slurm")
    result = {"changed": False, "passed": None, "reasons": []}
    if module.check_mode:
        module.exit_json(msg="check mode: no job was submitted", **result)

    verifier = JobVerifier(module)
    run = verifier.lsf() if scheduler == "lsf" else verifier.slurm()
    result.update({scheduler: run, "passed": run["passed"],
                   "reasons": ["%s: %s" % (label, reason) for reason in run["reasons"]]})
    if not result["passed"] and module.params["fail_on_mismatch"]:
        module.fail_json(msg="verification failed: %s" % "; ".join(result["reasons"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
