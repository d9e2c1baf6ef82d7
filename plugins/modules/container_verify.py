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
  - The same report through a scheduler job is M(hpc.gpu_containers.job_verify) (LSF C(bsub -app), Slurm
    C(srun-docker)); the CPU overhead run is M(hpc.gpu_containers.container_benchmark). Before 0.2.0 this module
    did both, with its C(lsf), C(slurm) and C(benchmark) options.
  - Changes nothing on the host but the image it pulls (the container is always removed); RV(ignore:changed) is
    V(true) only when it pulled the image. An explicit pull (O(pull)) only fetches what the registry already holds.
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
    description: The container is removed in every case; once the image is on the node, a second run pulls nothing.
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
  labels:
    description:
      - Extra labels for the verification container (it always carries C(hpc.gpu_containers.verify=true)).
    type: dict
    default: {}
notes:
  - The container runs with networking disabled, without C(privileged), and is removed in every case.
seealso:
  - module: hpc.gpu_containers.gpu_facts
  - module: hpc.gpu_containers.job_verify
  - module: hpc.gpu_containers.container_benchmark
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
"""

import os
import time
import traceback
import uuid

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.hpc.gpu_containers.plugins.module_utils._docker_sdk import (
    VERIFY_LABEL,
    APIError,
    DockerException,
    ImageNotFound,
    NotFound,
    ReadTimeout,
    RequestsConnectionError,
    docker_client,
    missing_sdk,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import (
    VerifyError,
    compare,
    exec_format_problem,
    host_gpus,
    image_arch_problem,
    parse_verify_output,
    select_gpus,
)

try:
    from docker.types import DeviceRequest
except ImportError:
    DeviceRequest = None  # missing_sdk() names the library before anything runs


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
        self.pulled = False

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
            self.pulled = True
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
        try:
            self.run_docker(result, node_machine, selected, all_requested, facts)
        finally:
            result["changed"] = self.pulled
        self.timings["total"] = time.monotonic() - began
        result["timings"] = {k: _round(v) for k, v in self.timings.items()}
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
            labels=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    missing = missing_sdk()
    if missing:
        module.fail_json(msg=missing_required_lib(missing[0]), exception=missing[1])

    client = None
    verifier = None
    try:
        client = docker_client(module.params["docker_host"])
        verifier = Verifier(module, client)
        result = verifier.run()
    except VerifyFailed as exc:
        module.fail_json(msg=str(exc), changed=verifier is not None and verifier.pulled)
    except DockerException as exc:
        module.fail_json(msg="Docker error: %s" % exc, changed=verifier is not None and verifier.pulled,
                         exception=traceback.format_exc())
    finally:
        if client is not None:
            client.close()

    if result["passed"] is False and module.params["fail_on_mismatch"]:
        module.fail_json(msg="verification failed: %s" % "; ".join(result["reasons"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
