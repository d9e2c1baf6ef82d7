#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: container_benchmark
short_description: Measure a container's CPU overhead against the host with the same busybox loop
version_added: 0.2.0
description:
  - The same busybox shell loop runs O(repetitions) times on the host (with the image's own static
    C(/bin/busybox), copied out of the container) and O(repetitions) times inside one container; busybox C(time)
    times each run. Returns the median, min/max of each side and the container/host ratio of the medians.
  - The image must be on the node (M(hpc.gpu_containers.container_verify) pulls the verification image) and hold
    a static C(/bin/busybox), as the collection's verification image does.
  - Before 0.2.0 this was the C(benchmark) option of M(hpc.gpu_containers.container_verify).
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
requirements:
  - Docker SDK for Python (C(python3-docker)) on the node
attributes:
  check_mode:
    support: full
    description: Nothing runs; RV(host), RV(container) and RV(ratio) are V(null).
  diff_mode:
    support: none
    description: Nothing on the host changes.
  idempotent:
    support: full
    description: The container is removed in every case; RV(ignore:changed) is always V(false).
options:
  image:
    description: The image to run, by reference or id; it is never pulled.
    type: str
    required: true
  repetitions:
    description: Runs of the loop on each side.
    type: int
    default: 5
  loops:
    description: Iterations of the shell loop in one run.
    type: int
    default: 300000
  timeout:
    description: Seconds to wait for the container's runs; the module fails after that.
    type: int
    default: 600
  docker_host:
    description: Docker daemon URL; the SDK default (C(DOCKER_HOST) or the local socket) when omitted.
    type: str
notes:
  - The container runs with networking disabled, without C(privileged), and is removed in every case.
seealso:
  - module: hpc.gpu_containers.container_verify
"""

EXAMPLES = r"""
- name: The container's CPU overhead, 5 runs each side
  hpc.gpu_containers.container_benchmark:
    image: registry.cluster:5000/hpc/verify:1
  register: overhead

- name: Show it
  ansible.builtin.debug:
    msg: "container/host {{ overhead.ratio }} ({{ overhead.container.median }} s / {{ overhead.host.median }} s)"
"""

RETURN = r"""
host:
  description: Seconds per run on the host - runs, median, min, max and each run's time.
  returned: always
  type: dict
  sample: {runs: 5, median: 0.52, min: 0.51, max: 0.55, times: [0.52, 0.51, 0.55, 0.52, 0.53]}
container:
  description: Seconds per run inside the container, as RV(host).
  returned: always
  type: dict
  sample: {runs: 5, median: 0.53, min: 0.52, max: 0.56, times: [0.53, 0.52, 0.56, 0.53, 0.54]}
ratio:
  description: The container's median over the host's.
  returned: always
  type: float
  sample: 1.019
"""

import io
import os
import tarfile
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
    benchmark_script,
    parse_times,
    summarize_benchmark,
)


class BenchmarkFailed(Exception):
    pass


def in_container(module, client, reps, loop):
    """Run the loop ``reps`` times in one container; (its times, the path of its busybox copied to the host)."""
    inner = "for r in $(seq %d); do time -f %%e sh -c '%s'; done" % (reps, loop)
    try:
        container = client.containers.create(
            module.params["image"], command=["/bin/busybox", "sh", "-c", inner],
            name="hpc-verify-bench-%s" % uuid.uuid4().hex[:12], labels={VERIFY_LABEL: "benchmark"},
            network_disabled=True, privileged=False, detach=True)
    except ImageNotFound:
        raise BenchmarkFailed("image %s is not on this node (container_benchmark never pulls)" % module.params["image"])
    except APIError as exc:
        raise BenchmarkFailed("creating the benchmark container failed: %s" % exc)
    try:
        stream, _stat = container.get_archive("/bin/busybox")
        busybox = os.path.join(module.tmpdir, "busybox")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.getmember("busybox")
            with open(busybox, "wb") as dest:
                dest.write(tar.extractfile(member).read())
        os.chmod(busybox, 0o700)
        container.start()
        container.wait(timeout=module.params["timeout"])
        times = parse_times(container.logs(stdout=False, stderr=True).decode("utf-8", errors="replace"))
    except (APIError, NotFound, KeyError, tarfile.TarError, ReadTimeout, RequestsConnectionError) as exc:
        raise BenchmarkFailed("benchmark: %s (the image needs a static /bin/busybox)" % exc)
    finally:
        try:
            container.remove(force=True)
        except (APIError, NotFound):
            module.warn("could not remove the benchmark container")
    return times, busybox


def on_host(module, busybox, reps, loop):
    """The same loop ``reps`` times on the host, with the container's busybox."""
    times = []
    for _rep in range(reps):
        rc, _out, err = module.run_command([busybox, "time", "-f", "%e", busybox, "sh", "-c", loop],
                                           expand_user_and_vars=False)
        if rc != 0:
            raise BenchmarkFailed("benchmark on the host: busybox exited with %d: %s" % (rc, err.strip()[-300:]))
        times.extend(parse_times(err))
    return times


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            repetitions=dict(type="int", default=5),
            loops=dict(type="int", default=300000),
            timeout=dict(type="int", default=600),
            docker_host=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    if module.params["repetitions"] < 1 or module.params["loops"] < 1:
        module.fail_json(msg="repetitions and loops must be at least 1, got %d and %d"
                         % (module.params["repetitions"], module.params["loops"]))
    if module.check_mode:
        module.exit_json(changed=False, host=None, container=None, ratio=None,
                         msg="check mode: the benchmark was not run")
    missing = missing_sdk()
    if missing:
        module.fail_json(msg=missing_required_lib(missing[0]), exception=missing[1])

    reps, loop = module.params["repetitions"], benchmark_script(module.params["loops"])
    client = None
    try:
        client = docker_client(module.params["docker_host"])
        inside, busybox = in_container(module, client, reps, loop)
        host = on_host(module, busybox, reps, loop)
    except BenchmarkFailed as exc:
        module.fail_json(msg=str(exc))
    except DockerException as exc:
        module.fail_json(msg="Docker error: %s" % exc, exception=traceback.format_exc())
    finally:
        if client is not None:
            client.close()
    module.exit_json(changed=False, **summarize_benchmark(host, inside))


if __name__ == "__main__":
    main()
