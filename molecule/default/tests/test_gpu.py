# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU nodes as they really are at the driver boundary, converged with the role defaults.

prepare.yml gives each GPU node the test bed's STAND-IN driver: a libnvidia-ml.so.1 built from C source that
answers NVML with the values recorded from real devices in molecule/resources/nvidia-standin/gpus/<node>.conf
(gpu01: two V100 on an R470 driver; gpu02: four A100 on R535, MIG mode reported), a stand-in nvidia-smi, and
stand-in device nodes. head has no driver at all. Nothing of the collection is replaced: gpu_facts reads the
library through its own ctypes binding, ``auto`` decides the toolkit, the LSF profiles and the starter wrapper
hand each job its GPUs, and the stand-in runtime gives a container only the GPUs NVIDIA_VISIBLE_DEVICES names,
as NVIDIA's runtime does.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import testinfra
import testinfra.utils.ansible_runner
from conftest import LSF_ENVDIR, CLUSTER, adhoc, ansible_tool, stub_calls

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
GPU_NODES = sorted(RUNNER.get_hosts("gpu_nodes"))
CPU_NODES = sorted(set(RUNNER.get_hosts("docker_hosts")) - set(GPU_NODES))
RECORDINGS = Path(__file__).resolve().parents[2] / "resources" / "nvidia-standin" / "gpus"
PLAYBOOKS = Path(__file__).resolve().parents[3] / "playbooks"
LSB_APPLICATIONS = "%s/lsbatch/%s/configdir/lsb.applications" % (LSF_ENVDIR, CLUSTER)


def recorded(node):
    """The values the stand-in NVML library of ``node`` answers with."""
    values = {}
    for line in (RECORDINGS / ("%s.conf" % node)).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            values[key.strip()] = value.split(" #")[0].strip()
    gpus = [{field: values.get("gpu.%d.%s" % (index, field)) for field in
             ("name", "uuid", "pci_bus_id", "minor_number", "mig_mode", "compute_capability")}
            for index in range(int(values["gpu.count"]))]
    return {"driver_version": values["driver_version"], "cuda": int(values["cuda_driver_version"]), "gpus": gpus}


def _node(name):
    return testinfra.get_host("ansible://%s?ansible_inventory=%s" % (name, INVENTORY))


def _run(argv):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)


def _bsub(node, *args):
    """An interactive job submitted by lsfadmin in a login shell on ``node``: (stdout, the stub's job record)."""
    host = _node(node)
    before = len(stub_calls(host))
    command = " ".join(["bsub"] + ["'%s'" % arg for arg in args] + ["-I", "/verify"])
    out = host.run("runuser -u lsfadmin -- bash -lc %s", command)
    assert out.rc == 0, out.stdout[-2000:] + out.stderr[-2000:]
    new = stub_calls(host)[before:]
    jobs = [call for call in new if call["cmd"] == "bsub-job"]
    assert len(jobs) == 1, new
    return out.stdout, jobs[0], [call for call in new if call["cmd"] == "docker-run"]


def _seen(stdout):
    """(UUIDs the container's nvidia-smi lists, the job's NVIDIA_/CUDA_VISIBLE_DEVICES) from the /verify report."""
    lines = dict(line.split("=", 1) for line in stdout.splitlines() if re.match(r"^[a-z_]+=", line))
    match = re.search(r"<\?xml.*?</nvidia_smi_log>", stdout, re.S)
    uuids = [gpu.findtext("uuid") for gpu in ET.fromstring(match.group(0)[match.group(0).index("<nvidia_smi_log"):])
             .findall("gpu")] if match else []
    return uuids, lines.get("nvidia_visible_devices", ""), lines.get("cuda_visible_devices", "")


@pytest.mark.parametrize("node", GPU_NODES)
def test_gpu_facts_report_each_nodes_own_gpus(node):
    rc, result = adhoc(node, "hpc.gpu_containers.gpu_facts")
    facts = result["gpu_facts"]
    want = recorded(node)
    assert rc == 0 and facts["present"] is True, facts
    assert facts["driver_version"] == want["driver_version"]
    assert facts["cuda_driver_version_int"] == want["cuda"]
    assert [g["uuid"] for g in facts["gpus"]] == [g["uuid"] for g in want["gpus"]]
    assert [g["name"] for g in facts["gpus"]] == [g["name"] for g in want["gpus"]]
    assert [g["minor_number"] for g in facts["gpus"]] == [int(g["minor_number"]) for g in want["gpus"]]
    assert [g["compute_capability"] for g in facts["gpus"]] == [g["compute_capability"] for g in want["gpus"]]
    for gpu, rec in zip(facts["gpus"], want["gpus"]):
        assert gpu["mig_mode"]["capable"] is (rec["mig_mode"] != "unsupported"), gpu
        assert gpu["device_present"] is True, gpu           # the stand-in /dev/nvidiaN is there
        assert gpu["errors"] == []


def test_the_gpu_nodes_differ():
    first, second = (recorded(node) for node in GPU_NODES[:2])
    assert len(first["gpus"]) != len(second["gpus"]) and first["driver_version"] != second["driver_version"]


@pytest.mark.parametrize("node", CPU_NODES)
def test_a_node_without_driver_is_a_normal_answer(node):
    rc, result = adhoc(node, "hpc.gpu_containers.gpu_facts")
    assert rc == 0 and result["gpu_facts"]["present"] is False
    assert "libnvidia-ml.so.1 not found" in result["gpu_facts"]["reason"]


@pytest.mark.parametrize("node", GPU_NODES + CPU_NODES)
def test_auto_installed_the_toolkit_exactly_where_gpus_were_found(node):
    installed = _node(node).package("nvidia-container-toolkit").is_installed
    assert installed is (node in GPU_NODES)


# Each NVIDIA character node of a GPU node (the stand-ins share /dev/null's numbers, see the stand-in's README;
# the real numbers are in tests/fixtures/dev_char/) and whether /dev/char/<major>:<minor> resolves to a node
# with the same numbers.
_DEV_CHAR_PROBE = r"""
import glob, json, os, stat
seen = {}
for path in sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*")):
    st = os.lstat(path)
    if not stat.S_ISCHR(st.st_mode):
        continue
    numbers = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
    link = "/dev/char/" + numbers
    try:
        target = os.stat(link)
        ok = stat.S_ISCHR(target.st_mode) and target.st_rdev == st.st_rdev and os.path.islink(link)
    except OSError:
        ok = False
    seen[path] = [numbers, ok]
print(json.dumps(seen))
"""


@pytest.mark.parametrize("node", GPU_NODES)
def test_each_gpu_device_node_has_its_dev_char_link(node):
    """The daemon-reload fix (nvidia_container_runtime_dev_char_links, on by default): without the link,
    systemd drops a running container's device rule for that node at the next daemon-reload."""
    host = _node(node)
    result = host.run("python3 -c %s" % shlex.quote(_DEV_CHAR_PROBE))
    assert result.rc == 0, result.stderr
    seen = json.loads(result.stdout)
    assert "/dev/nvidia0" in seen and "/dev/nvidiactl" in seen, seen
    assert [path for path, (_numbers, ok) in seen.items() if not ok] == [], seen
    rule = host.file("/etc/udev/rules.d/71-nvidia-dev-char.rules")
    assert rule.is_file and rule.mode == 0o644
    assert ('ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", '
            'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"') in rule.content_string


def test_profiles_never_hand_out_every_gpu():
    text = _node(RUNNER.get_hosts("lsf_master")[0]).file(LSB_APPLICATIONS).content_string
    assert "NVIDIA_VISIBLE_DEVICES" not in text and "--runtime=nvidia" in text


@pytest.mark.parametrize("count", [1, 2])
def test_a_gpu_job_sees_exactly_the_gpus_lsf_allocated(count):
    node = GPU_NODES[-1]
    stdout, job, runs = _bsub(node, "-gpu", "num=%d" % count, "-app", "powerai")
    host_uuids = [g["uuid"] for g in recorded(node)["gpus"]]
    assert len(job["gpus"]) == count and job["starter"].endswith("/lsf-docker-starter.py"), job
    uuids, nvidia_visible, cuda_visible = _seen(stdout)
    # by UUID: the container sees the allocated GPUs and no other
    assert sorted(uuids) == sorted(host_uuids[index] for index in job["gpus"]), stdout[-3000:]
    assert nvidia_visible == ",".join(str(index) for index in job["gpus"])
    assert cuda_visible == ",".join(str(index) for index in range(count))
    # the starter handed the container its GPUs through the job environment, by name
    assert len(runs) == 1 and "--env=NVIDIA_VISIBLE_DEVICES" in runs[0]["argv"]
    assert runs[0]["env"]["NVIDIA_VISIBLE_DEVICES"] == nvidia_visible


def test_a_job_without_gpus_gets_none():
    node = GPU_NODES[-1]
    stdout, job, runs = _bsub(node, "-app", "powerai")
    assert job["gpus"] == []
    assert "nvidia_smi=absent" in stdout and _seen(stdout)[1] == "void", stdout[-2000:]


def test_without_lsb_docker_pass_env_a_gpu_job_gets_no_gpu():
    """The starter needs the job's environment, which LSF hands it only with LSB_DOCKER_PASS_ENV=Y (the role
    writes it): under an lsf.conf without the key, the test bed's LSF starts the starter without the job's
    variables, as IBM documents for the default, and the one-GPU job that gets its GPU above gets none."""
    node = GPU_NODES[-1]
    host = _node(node)
    envdir = "/tmp/lsf-envdir-without-pass-env"
    host.run_test("rm -rf %s && mkdir -m 0755 %s && grep -v '^LSB_DOCKER_PASS_ENV=' %s/lsf.conf > %s/lsf.conf"
                  " && chmod 0644 %s/lsf.conf", envdir, envdir, LSF_ENVDIR, envdir, envdir)
    try:
        before = len(stub_calls(host))
        out = host.run("runuser -u lsfadmin -- bash -lc %s",
                       "LSF_ENVDIR=%s bsub -gpu num=1 -app powerai -I /verify" % envdir)
        jobs = [call for call in stub_calls(host)[before:] if call["cmd"] == "bsub-job"]
    finally:
        host.run("rm -rf %s", envdir)
    assert len(jobs) == 1 and len(jobs[0]["gpus"]) == 1, jobs      # LSF allocated one GPU ...
    uuids, nvidia_visible, _cuda = _seen(out.stdout)
    assert "nvidia_smi=absent" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]     # ... the job ran, and
    assert uuids == [] and nvidia_visible == "void", out.stdout[-2000:]                  # got none


@pytest.mark.parametrize("node", GPU_NODES)
def test_the_gpu_device_options_script_passes_each_nodes_own_gpus(node):
    """"devices" mode's options script (installed beside the starter, named by the profiles in that mode): run
    on each GPU node as LSF would, with a hostile environment, it names that node's own GPU device nodes (2 on
    gpu01, 4 on gpu02, not the minors both have) and the control devices, and a container given them has them."""
    host = _node(node)
    minors = [int(gpu["minor_number"]) for gpu in recorded(node)["gpus"]]
    expected = ["/dev/nvidia%d" % minor for minor in sorted(minors)] + [
        path for path in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools") if host.file(path).exists]
    out = host.check_output("runuser -u lsfadmin -- env -i PATH=/nonexistent LD_PRELOAD=/nonexistent/evil.so "
                            "PYTHONPATH=/nonexistent %s/docker/lsf-docker-gpu-devices.py", LSF_ENVDIR)
    assert out.split() == ["--device=%s" % path for path in expected]
    # the options as LSF adds them: split at blanks (testinfra would quote them as one argument)
    seen = host.check_output("docker run --rm " + " ".join(out.split()) +
                             " --entrypoint /bin/busybox head:5000/hpc/verify:1 ls /dev")
    assert sorted(name for name in seen.split() if name.startswith("nvidia")) == sorted(
        os.path.basename(path) for path in expected)


def test_a_profile_that_leaks_every_gpu_fails_verification():
    """A profile of the old kind (NVIDIA_VISIBLE_DEVICES=all, no starter) is caught by the one-GPU job."""
    master = RUNNER.get_hosts("lsf_master")[0]
    node = GPU_NODES[-1]
    image = "%s:5000/hpc/verify:1" % RUNNER.get_hosts("registry")[0]
    options = ["--runtime=nvidia", "--env=NVIDIA_VISIBLE_DEVICES=all", "--rm", "--network=host"]
    leaky = {"name": "powerai_leaky", "container": {"runtime": "docker", "image": image, "options": options}}
    rc, result = adhoc(master, "hpc.gpu_containers.lsf_application",
                       {"path": LSB_APPLICATIONS, "profiles": [leaky]}, become=True)
    assert rc == 0 and result["changed"] is True, result
    try:
        rc, gpu_facts = adhoc(node, "hpc.gpu_containers.gpu_facts")
        rc, result = adhoc(node, "hpc.gpu_containers.job_verify",
                           {"gpu_facts": gpu_facts["gpu_facts"], "lsf": {"app": "powerai_leaky"},
                            "fail_on_mismatch": False}, become=True)
        assert rc == 0 and result["passed"] is False, result
        count = len(recorded(node)["gpus"])
        assert result["reasons"] == ["LSF: isolation: a job that LSF allocated 1 GPU(s) sees %d (every GPU of the "
                                     "node: the profile hands all GPUs to every job)" % count], result["reasons"]
        # the all-GPU job itself passed: only the isolation check tells
        assert result["lsf"]["gpus"]["container"] == count
    finally:
        rc, result = adhoc(master, "hpc.gpu_containers.lsf_application",
                           {"path": LSB_APPLICATIONS, "profiles": [{"name": "powerai_leaky", "state": "absent"}]},
                           become=True)
        assert rc == 0 and result["changed"] is True


def test_a_driver_below_the_minimum_fails_the_preflight_by_name():
    """Only the pre-flight runs (no play has the tag); the minimum sits between the two nodes' drivers."""
    old, new = sorted(GPU_NODES, key=lambda node: [int(p) for p in recorded(node)["driver_version"].split(".")])
    minimum = "%s.0" % recorded(new)["driver_version"].split(".")[0]
    proc = _run([ansible_tool("ansible-playbook"), "-i", INVENTORY, str(PLAYBOOKS / "site.yml"), "--check",
                 "--tags", "preflight-only", "-e", "nvidia_container_runtime_driver_minimum=%s" % minimum])
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert "%s runs NVIDIA driver %s" % (old, recorded(old)["driver_version"]) in output, output[-3000:]
    assert "older than the minimum driver %s" % minimum in output
    assert "%s runs NVIDIA driver" % new not in output
    # the other nodes went on: the LSF pre-flight still ran on the master
    assert re.search(r"TASK \[hpc.gpu_containers.lsf_docker : Find the LSF configuration and the Docker hosts",
                     output), output[-3000:]
