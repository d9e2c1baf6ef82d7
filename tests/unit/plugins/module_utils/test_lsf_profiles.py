# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker application profiles before lsb.applications (module_utils/_lsf_profiles.py)."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_profiles import (
    docker_options,
    image_applications,
    without_shm_size,
)

NGC = ["--shm-size=1g", "--ulimit=stack=67108864", "--shm-size 2g", "--shm-size", "4g", "--shm-sizes=x"]


def test_shm_size_is_dropped_in_every_spelling():
    assert without_shm_size(NGC) == ["--ulimit=stack=67108864", "--shm-sizes=x"]


def test_options_in_the_runbooks_order():
    got = docker_options(["--runtime=nvidia"], devices=["/dev/infiniband/uverbs0"], ipc_host=True, network_host=True,
                         remove=True, memlock=819200000, readonly_mounts=["/etc/passwd"],
                         shared_filesystems=["/gpfs"], extra=["--cap-add=SYS_NICE"], ngc=NGC)
    assert got["base"] == ["--runtime=nvidia", "--device=/dev/infiniband/uverbs0", "--ipc=host", "--network=host",
                           "--rm", "--ulimit=memlock=819200000:819200000", "--volume=/etc/passwd:/etc/passwd:ro",
                           "--volume=/gpfs:/gpfs", "--cap-add=SYS_NICE"]
    # --ipc=host: the node's own /dev/shm, so no size is promised.
    assert got["ngc"] == ["--ulimit=stack=67108864", "--shm-sizes=x"]


def test_without_ipc_host_the_ngc_options_stay():
    got = docker_options(memlock=None, ngc=NGC)
    assert got == {"base": [], "ngc": NGC}


@pytest.mark.parametrize("job_start, image", [(False, "node:deeplearning"), (True, "$LSB_CONTAINER_IMAGE")])
def test_one_profile_per_logical_image(job_start, image):
    apps = [{"name": "dl", "image": "deeplearning"},
            {"name": "plain", "image": "base", "ngc": "no", "description": "mine", "options": ["--init"],
             "parameters": {"RUNLIMIT": "60"}}]
    got = image_applications(apps, ["--rm"], ["--ulimit=stack=1"], ["/s/gpu.py"], "docker",
                             {"RUNLIMIT": "10", "MAX_PREEXEC_RETRY": "1"}, {"user": "default", "starter": "/old"},
                             "/conf/docker", job_start=job_start, node_image=lambda name: "node:" + name)
    assert [a["container"]["image"] for a in got] == [image, image if job_start else "node:base"]
    assert got[0]["description"] == "deeplearning, the variant built for the node"
    assert got[1]["description"] == "mine"
    assert got[0]["container"]["options"] == ["--rm", "--ulimit=stack=1"]
    assert got[1]["container"]["options"] == ["--rm", "--init"]
    assert got[1]["parameters"] == {"RUNLIMIT": "60", "MAX_PREEXEC_RETRY": "1"}
    assert got[0]["exec_driver"] == {"user": "default", "starter": "/conf/docker/lsf-docker-starter-dl.py"}
    assert got[0]["container"]["options_scripts"] == ["/s/gpu.py"]
