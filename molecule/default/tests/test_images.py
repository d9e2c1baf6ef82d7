# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform-matched images on the test bed (group_vars/all.yml: lsf_docker_image_catalogue).

The logical image ``deeplearning`` has three variants, built on head from files/variants, pushed, recorded and
published as one index with their platform features (image_variants); gpu01 (V100, cc 7.0, driver 470 = CUDA 11.4) and gpu02
(A100, cc 8.0, driver 535 = CUDA 12.2) need different ones, and the CPU-level variant is picked only where the
machine has AVX-512 (x86-64-v4). Each GPU node keeps its variant as localhost/hpc-node/deeplearning:node, which
the profile's image() names: ``bsub -app deeplearning`` runs the variant the rule picks for the node the job lands
on (each variant image prints its own name), and a re-pointed node image is drift. ``hopper`` fits no node:
its job fails at start with the reason of its variant. The LSF files carry each host's platform, and the drift
check reports an edited platform file or catalogue on a node, and a variant replaced in the registry.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import testinfra
import yaml
import testinfra.utils.ansible_runner
from conftest import LSF_ENVDIR, adhoc, ansible_tool

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
GPU_NODES = sorted(RUNNER.get_hosts("gpu_nodes"))
PLAYBOOKS = Path(__file__).resolve().parents[3] / "playbooks"
REPO = "head:5000/hpc/deeplearning"
VARIANTS = ("cuda12-sm80-avx512", "cuda12-sm80", "cuda11-sm70")
PLATFORM = "/etc/hpc-gpu-containers/platform.json"
CATALOGUE = "/etc/hpc-gpu-containers/images.json"
RECORD = "/etc/hpc-gpu-containers/variant-digests.json"
NODE_IMAGE = "localhost/hpc-node/%s:node"
LSF_SHARED = LSF_ENVDIR + "/lsf.shared"
LSF_CLUSTER = LSF_ENVDIR + "/lsf.cluster.gpucluster"


def _node(name):
    return testinfra.get_host("ansible://%s?ansible_inventory=%s" % (name, INVENTORY))


def _machine_level(node):
    """The x86-64 level of the machine, from the node's own /proc/cpuinfo flags (not from the collection)."""
    flags = set(node.check_output("grep -m1 '^flags' /proc/cpuinfo").split(":", 1)[1].split())
    if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags:
        return 4
    return 3 if {"avx2", "bmi2", "fma", "movbe"} <= flags else 2


def _expected(node_name):
    if node_name == "gpu01":
        return "cuda11-sm70"  # the only variant with machine code a V100 runs on a CUDA 11.4 driver
    return "cuda12-sm80-avx512" if _machine_level(_node(node_name)) >= 4 else "cuda12-sm80"


def _bsub(node, name, app, command):
    return node.run("runuser -u lsfadmin -- sh -lc 'exec bsub -app %s -I -m %s %s'" % (app, name, command))


# What a job's container gets from the profile's run options (NGC's: --ipc=host, the memlock and stack ulimits),
# read inside the container by the image's busybox, and the node's own IPC namespace and /dev/shm to compare.
_NGC_PROBE = "echo ipc=$(readlink /proc/self/ns/ipc) stack=$(ulimit -s) memlock=$(ulimit -l) shm=$(stat -f -c %b:%S /dev/shm)"


@pytest.mark.parametrize("name", GPU_NODES)
def test_a_deeplearning_job_gets_the_ngc_run_options(name):
    """The NGC options asserted on the container a job gets: the node's IPC namespace and its /dev/shm (with
    --ipc=host Docker ignores --shm-size, so the profile leaves it out), a 64 MiB stack, the profile's memlock."""
    node = _node(name)
    with open(Path(__file__).resolve().parents[1] / "group_vars" / "all.yml", encoding="utf-8") as handle:
        memlock = int(yaml.safe_load(handle)["lsf_docker_memlock"])
    result = node.run("runuser -u lsfadmin -- sh -lc %s",
                      "exec bsub -app deeplearning -I -m %s /bin/busybox sh -c '%s'" % (name, _NGC_PROBE))
    assert result.rc == 0, result.stdout[-2000:] + result.stderr[-2000:]
    seen = dict(re.findall(r"(ipc|stack|memlock|shm)=(\S+)", result.stdout))
    assert seen["ipc"] == node.check_output("readlink /proc/self/ns/ipc")
    assert seen["shm"] == node.check_output("stat -f -c %b:%S /dev/shm")
    assert seen["stack"] == str(67108864 // 1024)
    assert seen["memlock"] == str(memlock // 1024)
    applications = node.file("%s/lsbatch/gpucluster/configdir/lsb.applications" % LSF_ENVDIR).content_string
    blocks = re.findall(r"(?ms)^\s*Begin Application\b(.*?)^\s*End Application", applications)
    profile = [block for block in blocks if re.search(r"(?m)^\s*NAME\s*=\s*deeplearning\s*$", block)]
    assert len(profile) == 1, "no single deeplearning profile in lsb.applications"
    assert "--shm-size" not in profile[0] and "--ulimit=stack=67108864" in profile[0]


@pytest.mark.parametrize("name", GPU_NODES)
def test_each_gpu_node_runs_the_variant_built_for_it(name):
    node = _node(name)
    result = _bsub(node, name, "deeplearning", "/bin/busybox cat /etc/hpc-variant")
    assert result.rc == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == _expected(name), result.stdout
    # the resolver on the node, as an admin runs it, says the same
    resolved = node.check_output("python3 /usr/local/lib/hpc-gpu-containers/image_variant.py deeplearning")
    assert resolved == "%s:%s" % (REPO, _expected(name))


@pytest.mark.parametrize("name", GPU_NODES)
def test_each_gpu_node_keeps_its_variant_under_the_node_image_the_profile_names(name):
    """The default (lsf_docker_image_selection: node): each node tags its own variant under one local name that the
    profile's image() names, so nothing depends on when LSF's driver reads the image; a plain docker run gets the
    node's variant too. A logical image no variant fits has no node image there."""
    node = _node(name)
    ids = node.check_output("docker image inspect --format '{{.Id}}' %s %s:%s",
                            NODE_IMAGE % "deeplearning", REPO, _expected(name)).split()
    assert len(ids) == 2 and ids[0] == ids[1], ids
    assert node.run("docker image inspect %s", NODE_IMAGE % "hopper").rc != 0
    assert node.check_output("docker run --rm --network=none %s /bin/busybox cat /etc/hpc-variant",
                             NODE_IMAGE % "deeplearning") == _expected(name)
    assert node.check_output("python3 /usr/local/lib/hpc-gpu-containers/image_variant.py --node-image "
                             "localhost/hpc-node deeplearning") == NODE_IMAGE % "deeplearning"
    applications = node.file("%s/lsbatch/gpucluster/configdir/lsb.applications" % LSF_ENVDIR).content_string
    assert "image(%s)" % (NODE_IMAGE % "deeplearning") in applications
    assert "$LSB_CONTAINER_IMAGE" not in applications


def test_a_node_image_pointed_elsewhere_is_drift_that_the_next_run_repairs():
    """Another image tagged as gpu01's node image: the fingerprint differs, the drift check names the tag it would
    move back, and a run moves it back to the node's variant."""
    node = _node("gpu01")
    variant_id = node.check_output("docker image inspect --format '{{.Id}}' %s:%s", REPO, _expected("gpu01"))
    node.run_expect([0], "docker tag head:5000/hpc/verify:1 %s" % (NODE_IMAGE % "deeplearning"))
    try:
        rc, fast_path = adhoc("gpu01", "hpc.gpu_containers.drift_fingerprint",
                              {"inputs": "{{ lookup('hpc.gpu_containers.drift_inputs') }}"}, become=True)
        assert rc == 0 and not fast_path["clean"], fast_path
        assert any(NODE_IMAGE % "deeplearning" in item for item in fast_path["differences"]), fast_path
        drift = _site("gpu01", tags="images")
        assert drift.returncode == 0, drift.stdout[-3000:] + drift.stderr[-3000:]
        assert "Tag each variant under its node image name" in drift.stdout
        assert _changed(drift, "gpu01") > 0, drift.stdout[-3000:]
    finally:
        repair = _site("gpu01", tags="images", check=False)
    assert repair.returncode == 0, repair.stdout[-3000:] + repair.stderr[-3000:]
    assert node.check_output("docker image inspect --format '{{.Id}}' %s", NODE_IMAGE % "deeplearning") == variant_id


def test_the_gpu_nodes_need_different_variants():
    assert len({_expected(name) for name in GPU_NODES}) == len(GPU_NODES) == 2


@pytest.mark.parametrize("name", GPU_NODES)
def test_a_logical_image_no_variant_fits_fails_the_job_at_start(name):
    node = _node(name)
    result = _bsub(node, name, "hopper", "/bin/busybox echo never")
    assert result.rc == 3, result.stdout + result.stderr
    assert "never" not in result.stdout
    message = result.stderr + result.stdout
    assert "hopper: no variant fits %s (x86_64" % name in message, message
    assert "cuda12.4-sm90: needs CUDA 12.4" in message, message


def test_lsf_knows_each_hosts_platform():
    master = _node(sorted(RUNNER.get_hosts("lsf_master"))[0])
    shared = master.file(LSF_SHARED).content_string
    for name in ("x86_64_level", "nvidia_driver", "cuda_version", "compute_cap_min", "compute_cap_max"):
        assert any(line.split()[:2] == [name, "Numeric"] for line in shared.splitlines()), name
    rows = {}
    for line in master.file(LSF_CLUSTER).content_string.splitlines():
        words = line.split()
        if words and words[0] in ("head", "gpu01", "gpu02"):
            rows[words[0]] = line
    assert "cuda_version=11040" in rows["gpu01"] and "compute_cap_min=70" in rows["gpu01"], rows["gpu01"]
    assert "cuda_version=12020" in rows["gpu02"] and "compute_cap_max=80" in rows["gpu02"], rows["gpu02"]
    assert "nvidia_driver=470" in rows["gpu01"] and "nvidia_driver=535" in rows["gpu02"]
    assert "x86_64_level=%d" % _machine_level(_node("head")) in rows["head"]
    assert "cuda_version" not in rows["head"], rows["head"]  # no GPU: no GPU resources
    # the files the job starter reads on the node
    platform = json.loads(_node("gpu02").file(PLATFORM).content_string)
    assert platform["cuda"] == "12.2" and platform["compute_capabilities"] == ["8.0"]
    assert sorted(json.loads(_node("gpu01").file(CATALOGUE).content_string)) == ["deeplearning", "hopper"]


def _site(limit, tags="lsf", check=True):
    """site.yml (in --check --diff) on ``limit`` and the LSF master (which site.yml's pre-flight insists on)."""
    limit = ",".join(sorted(set(RUNNER.get_hosts("lsf_master")) | {limit}))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_FORCE_COLOR", None)  # molecule sets it, and it wins over ANSIBLE_NOCOLOR
    return subprocess.run([ansible_tool("ansible-playbook"), "-i", INVENTORY] + (["--check", "--diff"] if check else [])
                          + ["--tags", tags, "--limit", limit, str(PLAYBOOKS / "site.yml")],
                          env=env, capture_output=True, text=True, check=False)


def _changed(result, name):
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in result.stdout.splitlines()]
    recap = [line.split() for line in lines if line.startswith(name + " ") and "changed=" in line]
    assert recap, "no PLAY RECAP line for %s in:\n%s" % (name, result.stdout[-1500:])
    return int([part for part in recap[-1] if part.startswith("changed=")][0].split("=")[1])


@pytest.mark.parametrize("name, path, edit", [
    ("gpu01", PLATFORM, "sed -i 's/\"11.4\"/\"12.4\"/' %s"),
    ("gpu02", CATALOGUE, "sed -i 's/cuda12-sm80-avx512/cuda12-sm80-avx2/' %s"),
])
def test_an_edited_platform_file_or_catalogue_is_drift(name, path, edit):
    node = _node(name)
    saved = node.check_output("cat %s", path)
    node.run_expect([0], edit % path)
    try:
        assert node.check_output("cat %s", path) != saved
        result = _site(name)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "--- before: %s" % path in result.stdout, result.stdout[-3000:]
        assert _changed(result, name) > 0, result.stdout[-1500:]
    finally:
        node.run_expect([0], "cat > %s <<'HPC_EOF'\n%s\nHPC_EOF" % (path, saved))
    assert node.check_output("cat %s", path) == saved


def _registry(tag, **args):
    rc, result = adhoc("head", "hpc.gpu_containers.registry_image_index", dict(
        registry="head:5000", repository="hpc/deeplearning", tag=tag, username="hpcadmin",
        password="testbed-registry-pw", ca_path="/etc/docker/certs.d/head:5000/ca.crt", **args))
    assert rc == 0, result
    return result


def test_the_variants_are_pushed_recorded_and_published_with_their_features():
    record = json.loads(_node("head").file(RECORD).content_string)
    assert sorted(record) == sorted("%s:%s" % (REPO, variant) for variant in VARIANTS)
    for variant in VARIANTS:
        assert record["%s:%s" % (REPO, variant)] == _registry(variant)["digest"], variant
    index = _registry("variants")
    assert sorted(index["platforms"]) == [
        "linux/amd64+compute_70,cuda11.0,sm_70", "linux/amd64+cuda12.2,sm_80,x86-64-v2",
        "linux/amd64+cuda12.2,sm_80,x86-64-v4"]


def test_a_variant_replaced_in_the_registry_is_drift_and_the_next_run_pushes_it_again():
    """Another image pushed under cuda11-sm70 (from gpu02, which does not run that variant): the drift check on
    head shows the record's diff and the push it would make; a run pushes the built image again."""
    built = _registry("cuda11-sm70")["digest"]
    _node("gpu02").run_expect([0], "docker tag head:5000/hpc/verify:1 %s:cuda11-sm70 && docker push -q %s:cuda11-sm70"
                              % (REPO, REPO))
    try:
        assert _registry("cuda11-sm70")["digest"] != built
        rc, fast_path = adhoc("head", "hpc.gpu_containers.drift_fingerprint",
                              {"inputs": "{{ lookup('hpc.gpu_containers.drift_inputs') }}"}, become=True)
        assert rc == 0 and not fast_path["clean"], fast_path
        assert "manifest:%s:cuda11-sm70" % REPO in fast_path["differences"], fast_path
        drift = _site("head", tags="images")
        assert drift.returncode == 0, drift.stdout[-3000:] + drift.stderr[-3000:]
        assert "--- before: %s" % RECORD in drift.stdout and built in drift.stdout, drift.stdout[-3000:]
        assert "Push each variant the registry does not hold as built here" in drift.stdout
        assert _changed(drift, "head") > 0
    finally:
        repair = _site("head", tags="images", check=False)
        _node("gpu02").run("docker rmi %s:cuda11-sm70" % REPO)
    assert repair.returncode == 0, repair.stdout[-3000:] + repair.stderr[-3000:]
    # the registry holds head's built image again (same image id), and the record says what it holds
    local_id = _node("head").check_output("docker image inspect --format '{{.Id}}' %s:cuda11-sm70" % REPO)
    again = _registry("cuda11-sm70", architecture="x86_64")
    assert again["image"]["config_digest"] == local_id
    record = json.loads(_node("head").file(RECORD).content_string)
    assert record["%s:cuda11-sm70" % REPO] == _registry("cuda11-sm70")["digest"]
    clean = _site("head", tags="images")
    assert clean.returncode == 0 and _changed(clean, "head") == 0, clean.stdout[-3000:]
