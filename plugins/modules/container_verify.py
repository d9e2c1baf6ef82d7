#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: container_verify
short_description: Run a verification container and compare what it sees with the host
version_added: 0.1.0
description:
  - Runs the verification image on a Docker host through the Docker SDK for Python, without ever pulling
    implicitly and without privileges, and returns a verdict.
  - Architecture. The image's C(Architecture) is checked against the node before anything runs, and an
    C(exec format error) at start is reported as a wrong-architecture image; the C(uname -m) printed inside
    the container must match the node.
  - GPUs. When the node has GPUs (O(gpu_facts)), the container is given the requested GPUs the way the node
    is configured (O(gpu_access)) and the UUIDs, PCI bus ids, minor numbers and driver version that
    C(nvidia-smi -q -x) reports inside must equal the host's for exactly the requested GPUs. GPUs are compared
    by UUID because indices restart at 0 inside a container.
  - The image must run C(/verify) (or O(command)) printing the report the collection's verification image
    prints (see the P(hpc.gpu_containers.container_verify#role) role).
  - Through LSF. With O(lsf), the same report is also produced by an LSF job. C(bsub -app <profile> -I -m <node>
    /verify), submitted on the node, lands in the container the application profile describes, and its output
    is compared with the host the same way. On a GPU node the job asks LSF for all of the node's GPUs
    (C(-gpu num=N)) and must see exactly those. RV(passed) is then the verdict of both runs.
  - Never changes anything on the host (the container is always removed), so RV(ignore:changed) is always
    V(false). An explicit pull (O(pull)) only fetches what the registry already holds.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
requirements:
  - Docker SDK for Python (C(python3-docker) on Debian/Ubuntu, C(python3-docker) / C(python-docker) on EL) on the node
attributes:
  check_mode:
    support: full
    description: Nothing is pulled or run; the result says so and RV(passed) is V(null).
  diff_mode:
    support: none
    description: Nothing on the host changes, so there is nothing to diff.
  idempotent:
    support: full
    description: Always RV(ignore:changed=false); the container is removed in every case.
options:
  image:
    description:
      - The verification image, for example V(registry.example:5000/hpc/verify:1).
    type: str
    required: true
  command:
    description:
      - Command to run in the container.
    type: list
    elements: str
    default: [/verify]
  pull:
    description:
      - V(never) uses the local image only and fails when it is missing; V(missing) pulls when it is not
        present; V(always) pulls first (an up-to-date image costs one manifest request). The pull time is
        returned in RV(timings).
    type: str
    choices: [never, missing, always]
    default: missing
  gpu_access:
    description:
      - How GPUs are handed to the container; follow how the node was configured.
      - V(auto), when O(gpu_facts) lists GPUs - V(nvidia_runtime) when Docker lists the runtime O(runtime) (the
        way the LSF Docker profiles reach the GPUs, so the check goes the jobs' way), else V(device_requests).
        V(none) without GPUs. Before 0.2.0 V(auto) always chose V(device_requests).
      - V(device_requests) is C(docker run --gpus) (Docker 19.03+, needs the NVIDIA container toolkit hook).
      - V(nvidia_runtime) sets O(runtime) and C(NVIDIA_VISIBLE_DEVICES).
      - V(cdi) requests C(nvidia.com/gpu=...) CDI devices (Docker 25+ with CDI enabled).
      - V(none) gives no GPU; a container that still sees GPUs fails the check.
    type: str
    choices: [auto, device_requests, nvidia_runtime, cdi, none]
    default: auto
  gpus:
    description:
      - Which host GPUs to request, V(all), GPU indices as the host numbers them, or GPU UUIDs.
    type: list
    elements: str
    default: [all]
  gpu_facts:
    description:
      - The host's GPU facts, normally C(ansible_facts.gpu_facts) from M(hpc.gpu_containers.gpu_facts)
        (C(present), C(driver_version), C(cuda_driver_version), C(gpus) with C(uuid), C(pci_bus_id),
        C(minor_number), C(index)).
      - When omitted the node counts as having no GPU.
    type: dict
  runtime:
    description:
      - Runtime name used with O(gpu_access=nvidia_runtime).
    type: str
    default: nvidia
  timeout:
    description:
      - Seconds to wait for the container to finish; it is killed after that and the check fails.
    type: int
    default: 120
  fail_on_mismatch:
    description:
      - V(true) fails the task when the verdict is negative; V(false) returns RV(passed=false) with the reasons.
      - Bad input (unknown GPU requested, image missing with O(pull=never), Docker unreachable) always fails.
    type: bool
    default: true
  docker_host:
    description:
      - Docker daemon URL; the SDK default (C(DOCKER_HOST) or the local socket) when omitted.
    type: str
  benchmark:
    description:
      - Number of repetitions of a CPU overhead run; V(0) skips it.
      - The same busybox shell loop runs O(benchmark) times on the host (with the image's own static
        C(/bin/busybox), copied out of the container) and O(benchmark) times inside one container; each run is
        timed by busybox C(time). RV(benchmark) gives median, min/max and the container/host ratio of the medians.
      - Needs a static C(/bin/busybox) in the image, as the collection's verification image has.
    type: int
    default: 0
  benchmark_loops:
    description:
      - Iterations of the shell loop in one benchmark run.
    type: int
    default: 300000
  labels:
    description:
      - Extra labels for the verification container (it always carries C(hpc.gpu_containers.verify=true)).
    type: dict
    default: {}
  lsf:
    description:
      - Also run the verification as an interactive LSF job through an application profile (see the description).
      - The profile's image must print the verification report, as the collection's verification image does.
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
        version_added: 0.2.0
  slurm:
    description:
      - Also run the verification as a Slurm job step on this node, in the container srun-docker starts for it
        (C(srun --nodelist=<node> srun-docker <image> /verify), as the user, from the node). On a GPU node the step
        asks Slurm for all of the node's GPUs (C(--gres=gpu:N)) and must see exactly those, then a step with one GPU
        must see exactly the one Slurm allocated. RV(passed) is then the verdict of both runs.
      - The image is O(image), pulled by srun-docker from the registry with the site's login.
    type: dict
    version_added: 0.2.0
    suboptions:
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
notes:
  - The container runs with networking disabled, without C(privileged), and is removed in every case.
seealso:
  - module: hpc.gpu_containers.gpu_facts
"""

EXAMPLES = r"""
- name: Gather GPU facts
  hpc.gpu_containers.gpu_facts:

- name: Verify that a container sees this node's GPUs and architecture
  hpc.gpu_containers.container_verify:
    image: registry.cluster:5000/hpc/verify:1
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    gpu_access: device_requests
    gpus: [all]
  register: verify

- name: Collect the verdict without failing, for a report
  hpc.gpu_containers.container_verify:
    image: registry.cluster:5000/hpc/verify:1
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    gpus: ["GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"]
    fail_on_mismatch: false
"""

RETURN = r"""
passed:
  description: The verdict; V(null) in check mode.
  returned: always
  type: bool
  sample: true
reasons:
  description: Every mismatch found, empty when the check passed.
  returned: always
  type: list
  elements: str
  sample: ["GPUs: requested but not visible in the container: GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"]
image:
  description: The image reference, id and architecture that ran.
  returned: always
  type: dict
  sample: {"ref": "registry.cluster:5000/hpc/verify:1", "id": "sha256:5c1e...", "architecture": "amd64"}
gpu_access:
  description: How GPUs were requested (O(gpu_access) after resolving V(auto)).
  returned: always
  type: str
  sample: device_requests
architecture:
  description: Architecture of the node and as seen inside the container.
  returned: always
  type: dict
  sample: {"node": "x86_64", "container": "x86_64"}
gpus:
  description: GPUs requested on the host and seen in the container.
  returned: always
  type: dict
  sample:
    requested: ["GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"]
    host: 1
    container: 1
    container_gpus:
      - {uuid: "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a", pci_bus_id: "0000:00:04.0", minor_number: 0,
         product_name: "NVIDIA A100-SXM4-40GB"}
    host_driver_version: "510.47.03"
    container_driver_version: "510.47.03"
timings:
  description: Seconds spent pulling, creating, starting and running the container (V(null) when skipped).
  returned: always
  type: dict
  sample: {"pull": 0.21, "create": 0.05, "start": 0.31, "run": 0.42, "total": 1.02}
benchmark:
  description: CPU overhead run (O(benchmark) > 0); seconds per run on the host and in the container.
  returned: when O(benchmark) > 0 and the container ran
  type: dict
  sample:
    host: {runs: 5, median: 0.52, min: 0.51, max: 0.55, times: [0.52, 0.51, 0.55, 0.52, 0.53]}
    container: {runs: 5, median: 0.53, min: 0.52, max: 0.56, times: [0.53, 0.52, 0.56, 0.53, 0.54]}
    ratio: 1.019
exit_code:
  description: Exit code of the verification command.
  returned: when the container ran
  type: int
  sample: 0
output:
  description: What the container printed (stdout), for the record.
  returned: when the container ran
  type: str
  sample: "hpc-verify: 1\narch=x86_64\nnvidia_smi=absent\n"
lsf:
  description:
    - The run through LSF (O(lsf)) - the submission, the job id C(bsub) printed, its verdict and reasons (also
      listed in RV(reasons) with the prefix C(LSF:)), architecture and GPUs as in RV(architecture) and
      RV(gpus), and its wall time from submission to the job's end.
    - C(isolation) (on nodes with two or more GPUs, with O(lsf.isolation)) - the one-GPU job - its id, exit
      code, the GPUs LSF allocated (C(allocated), as the job's C(NVIDIA_VISIBLE_DEVICES)), wall time and verdict.
  returned: when O(lsf) is set, not in check mode
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
    - The run through Slurm (O(slurm)) - the node, the user, its exit code, verdict and reasons (also listed in
      RV(reasons) with the prefix C(Slurm:)), architecture and GPUs as in RV(architecture) and RV(gpus), and its wall
      time; C(isolation), the one-GPU step, as for RV(lsf).
  returned: when O(slurm) is set, not in check mode
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

import io
import os
import socket
import subprocess
import tarfile
import time
import traceback
import uuid

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import (
    VerifyError,
    benchmark_script,
    bsub_argv,
    compare,
    exec_format_problem,
    host_gpus,
    image_arch_problem,
    isolation_problems,
    parse_bsub_job_id,
    parse_times,
    parse_verify_output,
    select_gpus,
    srun_argv,
    summarize_benchmark,
)

DOCKER_IMPORT_ERROR = None
try:
    import docker
    from docker.errors import APIError, DockerException, ImageNotFound, NotFound
    from docker.types import DeviceRequest
except ImportError:
    DOCKER_IMPORT_ERROR = traceback.format_exc()

REQUESTS_IMPORT_ERROR = None
try:
    from requests.exceptions import ConnectionError as RequestsConnectionError
    from requests.exceptions import ReadTimeout
except ImportError:
    REQUESTS_IMPORT_ERROR = traceback.format_exc()

VERIFY_LABEL = "hpc.gpu_containers.verify"


class VerifyFailed(Exception):
    """A failure that ends the run before a verdict (bad input, Docker errors)."""


def _split_ref(ref):
    """``host:5000/ns/img:tag`` -> (``host:5000/ns/img``, ``tag``); digests stay in the repository part."""
    if "@" in ref:
        return ref, None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = ref.rsplit(":", 1)
        return repo, tag
    return ref, "latest"


def resolve_gpu_access(requested, gpus, runtimes=(), runtime="nvidia"):
    """``auto``: the NVIDIA runtime when Docker has it (as the LSF profiles use it), else ``--gpus``."""
    if requested == "auto":
        if not gpus:
            return "none"
        return "nvidia_runtime" if runtime in runtimes else "device_requests"
    return requested


def container_gpu_options(access, selected, runtime, all_requested):
    """create() keyword arguments handing ``selected`` GPUs in the way ``access`` names."""
    if access == "none" or not selected:
        return {}
    uuids = [g["uuid"] for g in selected]
    caps = {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    if access == "device_requests":
        if all_requested:
            request = DeviceRequest(count=-1, capabilities=[["gpu"]])
        else:
            request = DeviceRequest(device_ids=uuids, capabilities=[["gpu"]])
        return {"device_requests": [request], "environment": caps}
    if access == "cdi":
        ids = ["nvidia.com/gpu=all"] if all_requested else ["nvidia.com/gpu=%s" % u for u in uuids]
        return {"device_requests": [DeviceRequest(driver="cdi", device_ids=ids)], "environment": caps}
    env = dict(caps)
    env["NVIDIA_VISIBLE_DEVICES"] = "all" if all_requested else ",".join(uuids)
    return {"runtime": runtime, "environment": env}


def _round(value):
    return None if value is None else round(value, 3)


class Verifier:
    def __init__(self, module, client):
        self.module = module
        self.client = client
        self.params = module.params
        self.timings = {"pull": None, "create": None, "start": None, "run": None, "total": None}

    def get_image(self):
        ref = self.params["image"]
        mode = self.params["pull"]
        image = None
        if mode != "always":
            try:
                image = self.client.images.get(ref)
            except ImageNotFound:
                if mode == "never":
                    raise VerifyFailed("image %s is not present on this node and pull=never" % ref)
        if image is None:
            repo, tag = _split_ref(ref)
            began = time.monotonic()
            try:
                self.client.images.pull(repo, tag=tag)
                image = self.client.images.get(ref)
            except (APIError, ImageNotFound) as exc:
                raise VerifyFailed("pulling %s failed: %s" % (ref, getattr(exc, "explanation", None) or exc))
            self.timings["pull"] = time.monotonic() - began
        return image

    def run_container(self, image, gpu_options):
        labels = {VERIFY_LABEL: "true"}
        labels.update({str(k): str(v) for k, v in (self.params["labels"] or {}).items()})
        name = "hpc-verify-%s" % uuid.uuid4().hex[:12]
        began = time.monotonic()
        try:
            container = self.client.containers.create(
                image.id, command=self.params["command"], name=name, labels=labels,
                network_disabled=True, privileged=False, detach=True, **gpu_options)
        except APIError as exc:
            raise VerifyFailed(self._create_hint(exc))
        self.timings["create"] = time.monotonic() - began
        try:
            began = time.monotonic()
            try:
                container.start()
            except APIError as exc:
                text = str(getattr(exc, "explanation", None) or exc)
                problem = exec_format_problem(text, self.params["image"], os.uname().machine)
                raise VerifyFailed(problem or "starting the verification container failed: %s" % text)
            started = time.monotonic()
            self.timings["start"] = started - began
            try:
                status = container.wait(timeout=self.params["timeout"])
            except (ReadTimeout, RequestsConnectionError):
                container.kill()
                raise VerifyFailed("the verification container did not finish within %d s" % self.params["timeout"])
            self.timings["run"] = time.monotonic() - started
            out = container.logs(stdout=True, stderr=False).decode("utf-8", errors="replace")
            err = container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace")
            return status.get("StatusCode"), out, err
        finally:
            try:
                container.remove(force=True)
            except (APIError, NotFound):
                self.module.warn("could not remove verification container %s" % name)

    def benchmark(self, image):
        """Same busybox loop on the host and in one container, ``benchmark`` times each."""
        reps, loop = self.params["benchmark"], benchmark_script(self.params["benchmark_loops"])
        inner = "for r in $(seq %d); do time -f %%e sh -c '%s'; done" % (reps, loop)
        container = self.client.containers.create(
            image.id, command=["/bin/busybox", "sh", "-c", inner], name="hpc-verify-bench-%s" % uuid.uuid4().hex[:12],
            labels={VERIFY_LABEL: "benchmark"}, network_disabled=True, privileged=False, detach=True)
        try:
            stream, _stat = container.get_archive("/bin/busybox")
            busybox = os.path.join(self.module.tmpdir, "busybox")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                member = tar.getmember("busybox")
                with open(busybox, "wb") as dest:
                    dest.write(tar.extractfile(member).read())
            os.chmod(busybox, 0o700)
            container.start()
            container.wait(timeout=self.params["timeout"])
            inside = parse_times(container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace"))
        except (APIError, NotFound, KeyError, tarfile.TarError, ReadTimeout, RequestsConnectionError) as exc:
            raise VerifyFailed("benchmark: %s (the image needs a static /bin/busybox)" % exc)
        finally:
            try:
                container.remove(force=True)
            except (APIError, NotFound):
                self.module.warn("could not remove benchmark container")
        host = []
        for _rep in range(reps):
            proc = subprocess.run([busybox, "time", "-f", "%e", busybox, "sh", "-c", loop],
                                  capture_output=True, text=True, check=False)
            host.extend(parse_times(proc.stderr))
        return summarize_benchmark(host, inside)

    @staticmethod
    def _run_timed(argv, timeout, timeout_reason, scheduler):
        """Run a submission that holds until its job ends; (proc, seconds) or (None, ``timeout_reason``)."""
        began = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return None, timeout_reason
        except OSError as exc:
            raise VerifyFailed("%s: cannot run %s: %s" % (scheduler, argv[0], exc))
        return proc, time.monotonic() - began

    def _bsub(self, host, gpu_count):
        """Submit the verification as an interactive job; (proc, seconds) or (None, timeout reason)."""
        lsf = self.params["lsf"]
        argv = bsub_argv(lsf["app"], host, lsf["command"], lsf["user"], lsf["profile"], os.geteuid() == 0,
                         gpus=gpu_count)
        return self._run_timed(argv, lsf["timeout"], "the job did not finish within %d s (bsub -app %s -I -m %s)"
                               % (lsf["timeout"], lsf["app"], host), "LSF")

    @staticmethod
    def _one_gpu(proc, seconds, gpus, result, scheduler, noun, extra):
        """The verdict on a one-GPU job or step (``proc``): it must see exactly the GPU ``scheduler`` gave it."""
        if proc is None:
            return ["isolation: %s" % seconds]
        report = parse_verify_output(proc.stdout)
        result["isolation"] = dict(extra, exit_code=proc.returncode, allocated=report.get("nvidia_visible_devices"),
                                   seconds=_round(seconds))
        if proc.returncode != 0:
            return ["isolation: the one-GPU %s exited with %d: %s" % (noun, proc.returncode, proc.stderr.strip()[-500:])]
        problems = isolation_problems(report, gpus, 1, scheduler=scheduler)
        result["isolation"]["passed"] = not problems
        return problems

    def run_lsf(self, node_machine, gpus, facts):
        """The same report through an interactive LSF job of the profile ``lsf.app`` on this node.

        A GPU node's job asks LSF for all of the node's GPUs (``-gpu num=N``) and must see them all;
        with ``lsf.isolation`` a second job asks for one GPU and must see exactly the one LSF gave it.
        """
        lsf = self.params["lsf"]
        host = lsf["host"] or socket.gethostname().split(".")[0]
        result = {"app": lsf["app"], "host": host, "job_id": None, "exit_code": None, "passed": False,
                  "reasons": [], "timings": {"total": None}, "output": ""}
        proc, seconds = self._bsub(host, len(gpus))
        if proc is None:
            result["reasons"] = [seconds]
            return result
        result["timings"]["total"] = _round(seconds)
        result.update(exit_code=proc.returncode, output=proc.stdout, job_id=parse_bsub_job_id(proc.stdout))
        if result["job_id"] is None:
            result["reasons"] = ["bsub -app %s did not submit the job (exit code %d): %s"
                                 % (lsf["app"], proc.returncode, (proc.stderr.strip() or proc.stdout.strip())[-500:])]
            return result
        problems, details = compare(node_machine, parse_verify_output(proc.stdout), gpus, facts,
                                    expect_gpus=bool(gpus))
        if proc.returncode != 0:
            problems.insert(0, "the job exited with %d: %s" % (proc.returncode, proc.stderr.strip()[-500:]))
        if lsf["isolation"] and len(gpus) > 1 and not problems:
            problems += self.isolation(host, gpus, result)
        result.update(passed=not problems, reasons=problems, architecture=details["architecture"],
                      gpus=details["gpus"])
        return result

    def isolation(self, host, gpus, result):
        """A one-GPU job must see exactly the GPU LSF allocated to it, not every GPU of the node."""
        proc, seconds = self._bsub(host, 1)
        extra = {"job_id": parse_bsub_job_id(proc.stdout)} if proc is not None else {}
        return self._one_gpu(proc, seconds, gpus, result, "LSF", "job", extra)

    def _srun(self, node, gpu_count):
        """Run the verification as a Slurm step; (proc, seconds) or (None, timeout reason)."""
        slurm = self.params["slurm"]
        argv = srun_argv(slurm["user"], node, self.params["image"], slurm["command"], slurm["srun_docker"],
                         slurm["partition"], gpus=gpu_count, as_root=os.geteuid() == 0, srun=slurm["srun"])
        return self._run_timed(argv, slurm["timeout"], "the step did not finish within %d s (srun --nodelist=%s)"
                               % (slurm["timeout"], node), "Slurm")

    def run_slurm(self, node_machine, gpus, facts):
        """The same report through a Slurm job step on this node, in the container srun-docker starts.

        A GPU node's step asks for all of the node's GPUs (``--gres=gpu:N``) and must see them all; with
        ``slurm.isolation`` a second step asks for one GPU and must see exactly the one Slurm gave it.
        """
        slurm = self.params["slurm"]
        node = slurm["node"] or socket.gethostname().split(".")[0]
        result = {"node": node, "user": slurm["user"], "exit_code": None, "passed": False, "reasons": [],
                  "timings": {"total": None}, "output": ""}
        proc, seconds = self._srun(node, len(gpus))
        if proc is None:
            result["reasons"] = [seconds]
            return result
        result["timings"]["total"] = _round(seconds)
        result.update(exit_code=proc.returncode, output=proc.stdout)
        report = parse_verify_output(proc.stdout)
        if proc.returncode != 0 and not report.get("arch"):
            result["reasons"] = ["the step exited with %d: %s"
                                 % (proc.returncode, (proc.stderr.strip() or proc.stdout.strip())[-500:])]
            return result
        problems, details = compare(node_machine, report, gpus, facts, expect_gpus=bool(gpus))
        if proc.returncode != 0:
            problems.insert(0, "the step exited with %d: %s" % (proc.returncode, proc.stderr.strip()[-500:]))
        if slurm["isolation"] and len(gpus) > 1 and not problems:
            problems += self.slurm_isolation(node, gpus, result)
        result.update(passed=not problems, reasons=problems, architecture=details["architecture"],
                      gpus=details["gpus"])
        return result

    def slurm_isolation(self, node, gpus, result):
        """A one-GPU step must see exactly the GPU Slurm allocated to it."""
        proc, seconds = self._srun(node, 1)
        return self._one_gpu(proc, seconds, gpus, result, "Slurm", "step", {})

    def _create_hint(self, exc):
        text = str(getattr(exc, "explanation", None) or exc)
        access = self.access
        if "could not select device driver" in text:
            return ("creating the container with GPUs failed: %s; gpu_access=%s needs the NVIDIA container toolkit "
                    "registered with Docker on this node" % (text, access))
        if "unknown or invalid runtime" in text or "Unknown runtime" in text:
            return ("creating the container failed: %s; gpu_access=nvidia_runtime needs runtime %r in daemon.json"
                    % (text, self.params["runtime"]))
        return "creating the verification container failed: %s" % text

    def run(self):
        params = self.params
        node_machine = os.uname().machine
        facts = params["gpu_facts"] or {}
        gpus = host_gpus(facts)
        runtimes = ()
        if params["gpu_access"] == "auto" and gpus:
            runtimes = tuple((self.client.info().get("Runtimes") or {}).keys())
        self.access = resolve_gpu_access(params["gpu_access"], gpus, runtimes, params["runtime"])
        requested = params["gpus"] or ["all"]
        all_requested = [str(x).strip() for x in requested] == ["all"]
        try:
            selected = select_gpus(gpus, requested) if self.access != "none" else []
        except VerifyError as exc:
            raise VerifyFailed(str(exc))
        if self.access != "none" and not gpus:
            raise VerifyFailed("gpu_access=%s but gpu_facts lists no GPU on this node" % self.access)

        result = {
            "changed": False, "passed": None, "reasons": [], "gpu_access": self.access,
            "image": {"ref": params["image"], "id": None, "architecture": None},
            "architecture": {"node": node_machine, "container": None},
            "gpus": {"requested": [g["uuid"] for g in selected], "host": len(selected), "container": None,
                     "container_gpus": [], "host_driver_version": facts.get("driver_version"),
                     "container_driver_version": None},
            "timings": self.timings,
        }
        if self.module.check_mode:
            result["msg"] = "check mode: the verification container was not run"
            return result

        began = time.monotonic()
        self.run_docker(result, node_machine, selected, all_requested, facts)
        self.timings["total"] = time.monotonic() - began
        result["timings"] = {k: _round(v) for k, v in self.timings.items()}
        if params["lsf"]:
            result["lsf"] = self.run_lsf(node_machine, gpus, facts)
            result["reasons"] = result["reasons"] + ["LSF: %s" % reason for reason in result["lsf"]["reasons"]]
            result["passed"] = result["passed"] and result["lsf"]["passed"]
        if params["slurm"]:
            result["slurm"] = self.run_slurm(node_machine, gpus, facts)
            result["reasons"] = result["reasons"] + ["Slurm: %s" % reason for reason in result["slurm"]["reasons"]]
            result["passed"] = result["passed"] and result["slurm"]["passed"]
        return result

    def run_docker(self, result, node_machine, selected, all_requested, facts):
        """The verification container through the Docker SDK; fills in ``result``."""
        params = self.params
        image = self.get_image()
        image_arch = image.attrs.get("Architecture")
        result["image"].update(id=image.id, architecture=image_arch)
        problem = image_arch_problem(params["image"], image_arch, node_machine)
        if problem:
            result.update(passed=False, reasons=[problem])
            return

        exit_code, out, err = self.run_container(
            image, container_gpu_options(self.access, selected, params["runtime"], all_requested))
        result.update(exit_code=exit_code, output=out)
        problem = exec_format_problem(out + "\n" + err, params["image"], node_machine)
        if problem:
            result.update(passed=False, reasons=[problem])
            return

        report = parse_verify_output(out)
        problems, details = compare(node_machine, report, selected, facts, expect_gpus=self.access != "none")
        if exit_code != 0:
            problems.insert(0, "the verification command exited with %s: %s" % (exit_code, err.strip()[-500:]))
        if params["benchmark"] > 0 and not problems:
            result["benchmark"] = self.benchmark(image)
        result["architecture"] = details["architecture"]
        result["gpus"] = details["gpus"]
        result.update(passed=not problems, reasons=problems)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            command=dict(type="list", elements="str", default=["/verify"]),
            pull=dict(type="str", choices=["never", "missing", "always"], default="missing"),
            gpu_access=dict(type="str", choices=["auto", "device_requests", "nvidia_runtime", "cdi", "none"],
                            default="auto"),
            gpus=dict(type="list", elements="str", default=["all"]),
            gpu_facts=dict(type="dict"),
            runtime=dict(type="str", default="nvidia"),
            timeout=dict(type="int", default=120),
            fail_on_mismatch=dict(type="bool", default=True),
            docker_host=dict(type="str"),
            benchmark=dict(type="int", default=0),
            benchmark_loops=dict(type="int", default=300000),
            labels=dict(type="dict", default={}),
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
        supports_check_mode=True,
    )
    if DOCKER_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("docker (Docker SDK for Python, python3-docker)"),
                         exception=DOCKER_IMPORT_ERROR)
    if REQUESTS_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("requests"), exception=REQUESTS_IMPORT_ERROR)

    client = None
    try:
        if module.params["docker_host"]:
            client = docker.DockerClient(base_url=module.params["docker_host"])
        else:
            client = docker.from_env()
        result = Verifier(module, client).run()
    except VerifyFailed as exc:
        module.fail_json(msg=str(exc), changed=False)
    except DockerException as exc:
        module.fail_json(msg="Docker error: %s" % exc, changed=False, exception=traceback.format_exc())
    finally:
        if client is not None:
            client.close()

    if result["passed"] is False and module.params["fail_on_mismatch"]:
        module.fail_json(msg="verification failed: %s" % "; ".join(result["reasons"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
