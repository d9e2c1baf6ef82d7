# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/verify.yml on the test bed, from the controller, and the verification's failure cases on real nodes.

* verify.yml passes on every Docker host: the verification image from the private registry runs on the node's
  dockerd, reports the node's architecture, and (GPU nodes, group_vars/gpu_nodes.yml) the same check goes through
  LSF as ``bsub -app powerai -I -m <node> /verify``, which the recording bsub stub runs as LSF's Docker driver
  would (through the profile's starter, ``docker run`` with the profile's options and the job's environment); the
  CPU overhead run gives a ratio per node.
* A profile LSF does not know fails that node with LSF's message, and verify.yml fails.
* A missing image and an image built for another architecture fail with messages that say so.
* The JSON report (schema_version 1) comes with a JUnit file (read with junitparser) and a node_exporter textfile
  (read with prometheus_client's text-format parser) that say the same, node by node and GPU by GPU.

The GPU nodes answer NVML through the test bed's stand-in driver library (values recorded from real devices), and
the stand-in runtime gives a container the GPUs NVIDIA_VISIBLE_DEVICES names: the comparison runs on real plumbing.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from pathlib import Path

import pytest
import testinfra
import testinfra.utils.ansible_runner
from conftest import adhoc, ansible_tool, stub_calls
from junitparser import Failure, JUnitXml
from prometheus_client.parser import text_string_to_metric_families

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
DOCKER_HOSTS = sorted(RUNNER.get_hosts("docker_hosts"))
GPU_NODES = sorted(RUNNER.get_hosts("gpu_nodes"))
PLAYBOOKS = Path(__file__).resolve().parents[3] / "playbooks"
IMAGE = "head:5000/hpc/verify:1"

# Runs on a node: the verification image re-labelled as linux/ppc64le (its config's architecture), as a
# registry would hand a POWER node's image to an x86_64 node; loaded under a local name.
RELABEL = r"""
import io, json, subprocess, sys, tarfile
src, dest, arch = sys.argv[1:4]
saved = subprocess.run(["docker", "save", src], check=True, capture_output=True).stdout
out = io.BytesIO()
with tarfile.open(fileobj=io.BytesIO(saved)) as old, tarfile.open(fileobj=out, mode="w") as new:
    manifest = json.load(old.extractfile("manifest.json"))
    config_name = manifest[0]["Config"]
    for member in old.getmembers():
        if member.name in ("manifest.json", "repositories"):
            continue
        data = old.extractfile(member).read() if member.isfile() else None
        if member.name == config_name:
            config = json.loads(data)
            config["architecture"] = arch
            data = json.dumps(config).encode()
            member.size = len(data)
        new.addfile(member, io.BytesIO(data) if data is not None else None)
    manifest[0]["RepoTags"] = [dest]
    body = json.dumps(manifest).encode()
    info = tarfile.TarInfo("manifest.json")
    info.size = len(body)
    new.addfile(info, io.BytesIO(body))
subprocess.run(["docker", "load"], input=out.getvalue(), check=True, capture_output=True)
"""


def _run(argv, **env):
    # one line per message: YAML results would fold long ones
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json", **env)
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)


def _node(name):
    return testinfra.get_host("ansible://%s?ansible_inventory=%s" % (name, INVENTORY))


def _verify_module(node, **args):
    """container_verify run ad hoc on one node; returns (rc, the module's result)."""
    return adhoc(node, "hpc.gpu_containers.container_verify", args, become=True)


def _bsub_calls(node):
    return [entry for entry in stub_calls(_node(node)) if entry["cmd"] in ("bsub", "bsub-job")]


@pytest.fixture(scope="module")
def verify_dir(tmp_path_factory):
    """Where verify_run writes its reports: verify-report.json and .junit.xml; the .prom file in textfile/."""
    return tmp_path_factory.mktemp("verify")


@pytest.fixture(scope="module")
def verify_run(verify_dir):
    """verify.yml with the overhead run; the bsub records of each GPU node before and after it."""
    report_path = verify_dir / "verify-report.json"
    before = {node: len(_bsub_calls(node)) for node in GPU_NODES}
    proc = _run([ansible_tool("ansible-playbook"), "-i", INVENTORY, str(PLAYBOOKS / "verify.yml"),
                 "-e", "verify_benchmark=true", "-e", "verify_benchmark_repetitions=3",
                 "-e", "container_verify_benchmark_loops=50000", "-e", "verify_report_path=%s" % report_path,
                 "-e", "verify_prom_dir=%s" % (verify_dir / "textfile")])
    after = {node: _bsub_calls(node)[before[node]:] for node in GPU_NODES}
    document = json.loads(report_path.read_text()) if report_path.exists() else None
    assert document is None or document["schema_version"] == 1, document
    return proc, document and document["hosts"], after


def test_verify_playbook_passes_on_every_docker_host(verify_run):
    proc, report, dummy = verify_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert report is not None and sorted(report) == DOCKER_HOSTS
    for node, entry in report.items():
        assert entry["passed"] is True, (node, entry["reasons"])
        assert entry["architecture"]["container"] == entry["architecture"]["node"], node
        assert entry["image"]["ref"] == IMAGE
        assert entry["timings"]["run"] is not None


def test_summary_table_lists_every_node_with_the_overhead_ratio(verify_run):
    proc, report, dummy = verify_run
    assert "node                 arch     gpus h/c   verdict" in proc.stdout
    for node, entry in report.items():
        bench = entry["benchmark"]
        assert bench["host"]["runs"] == 3 and bench["container"]["runs"] == 3, node
        assert bench["ratio"] > 0
        rows = [line for line in proc.stdout.splitlines()
                if re.search(r"(^|[\s'\"])%s +%s +\S+ +PASS " % (node, entry["architecture"]["node"]), line)]
        assert len(rows) == 1 and str(bench["ratio"]) in rows[0], proc.stdout[-3000:]


def test_junit_and_prom_files_say_what_the_json_report_says(verify_run, verify_dir):
    """One JUnit test case per node and check, one per GPU; the textfile's pass per node and result per GPU."""
    dummy, report, dummy2 = verify_run
    document = json.loads((verify_dir / "verify-report.json").read_text())
    assert oct(stat.S_IMODE((verify_dir / "verify-report.json").stat().st_mode)) == "0o640"
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(verify_dir / "verify-report.junit.xml"))}
    assert sorted(suites) == DOCKER_HOSTS
    for node, entry in report.items():
        cases = {case.name: case for case in suites[node]}
        gpu_cases = sorted(name for name in cases if name.startswith("GPU ") and name != "GPU count")
        assert gpu_cases == sorted("GPU %d %s" % (i, uuid) for i, uuid in enumerate(entry["gpus"]["requested"]))
        assert {"verification", "architecture", "GPU count"} <= set(cases)
        assert ("LSF job" in cases) == (entry["lsf"] is not None)
        assert all(case.is_passed for case in cases.values()), node
    prom = verify_dir / "textfile" / "hpc_gpu_containers_verify.prom"
    assert oct(stat.S_IMODE(prom.parent.stat().st_mode)) == "0o750"
    assert oct(stat.S_IMODE(prom.stat().st_mode)) == "0o640"
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    passed = {s.labels["host"]: s.value for s in families["hpc_gpu_containers_verify_host_passed"].samples}
    assert passed == {node: 1.0 for node in DOCKER_HOSTS}
    per_gpu = {(s.labels["host"], s.labels["uuid"]): s.value
               for s in families["hpc_gpu_containers_verify_gpu_passed"].samples}
    assert per_gpu == {(node, uuid): 1.0 for node, entry in report.items() for uuid in entry["gpus"]["requested"]}
    assert len(per_gpu) >= 2 * len(GPU_NODES)
    stamp = families["hpc_gpu_containers_verify_last_run_timestamp_seconds"].samples[0].value
    assert stamp == document["generated_unix"] and abs(time.time() - stamp) < 3600


def test_gpu_nodes_show_all_their_gpus_in_the_container(verify_run):
    """gpus h/c: gpu01 2/2, gpu02 4/4 (the stand-in NVML values), compared by UUID on both paths."""
    proc, report, dummy = verify_run
    for node in GPU_NODES:
        count = _node(node).check_output("grep -c '^gpu\\.[0-9]*\\.uuid=' /etc/nvidia-standin/nvml.conf")
        gpus = report[node]["gpus"]
        assert gpus["host"] == gpus["container"] == int(count) >= 2, (node, gpus)
        assert sorted(g["uuid"] for g in gpus["container_gpus"]) == sorted(gpus["requested"])
        assert re.search(r"%s +\S+ +%s/%s +PASS " % (node, count, count), proc.stdout), proc.stdout[-3000:]
    assert len({report[node]["gpus"]["host"] for node in GPU_NODES}) == len(GPU_NODES)


def test_gpu_nodes_verified_through_lsf(verify_run):
    dummy, report, calls = verify_run
    for node in GPU_NODES:
        lsf = report[node]["lsf"]
        count = report[node]["gpus"]["host"]
        assert lsf["passed"] is True and lsf["app"] == "powerai", (node, lsf)
        assert lsf["architecture"]["container"] == lsf["architecture"]["node"]
        assert lsf["gpus"]["container"] == count
        submitted = [call for call in calls[node] if call["cmd"] == "bsub"]
        jobs = [call for call in calls[node] if call["cmd"] == "bsub-job"]
        # submitted by the Docker driver's user, not root, on that node, into the profile's container: first a job
        # with all of the node's GPUs, then the one-GPU job of the isolation check
        assert [(c["user"], c["argv"]) for c in submitted] == [
            ("lsfadmin", ["-app", "powerai", "-I", "-m", node, "-gpu", "num=%d" % count, "/verify"]),
            ("lsfadmin", ["-app", "powerai", "-I", "-m", node, "-gpu", "num=1", "/verify"])]
        assert len(jobs) == 2 and jobs[0]["job"] == lsf["job_id"] and jobs[1]["job"] == lsf["isolation"]["job_id"]
        assert [len(job["gpus"]) for job in jobs] == [count, 1]
        assert lsf["isolation"]["passed"] is True and lsf["isolation"]["allocated"] == str(jobs[1]["gpus"][0])
        for job in jobs:
            run = job["run"]
            assert run[:2] == ["docker", "run"] and run[-2:] == [IMAGE, "/verify"]
            assert "--runtime=nvidia" in run and "--volume=/etc/passwd:/etc/passwd:ro" in run
            assert job["starter"].endswith("/lsf-docker-starter.py")
    # the CPU-only head has no LSF check (the GPU profile is not for it)
    assert all(report[node]["lsf"] is None for node in DOCKER_HOSTS if node not in GPU_NODES)


def test_a_profile_lsf_does_not_know_fails_the_node_with_lsfs_message(tmp_path):
    node = GPU_NODES[0]
    proc = _run([ansible_tool("ansible-playbook"), "-i", INVENTORY, str(PLAYBOOKS / "verify.yml"), "--limit", node,
                 "-e", "container_verify_lsf_app=nosuchapp", "-e", "verify_report_path=%s" % (tmp_path / "r.json")])
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert ("verification failed on %s: LSF: bsub -app nosuchapp did not submit the job (exit code 255): "
            "nosuchapp: No such application. Job not submitted." % node) in proc.stdout + proc.stderr
    # the per-node table says so too
    assert re.search(r"%s +\S+ +\S+ +FAIL .* FAIL " % node, proc.stdout), proc.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())["hosts"]
    assert report[node]["passed"] is False and report[node]["lsf"]["job_id"] is None
    # the JUnit file has the failed verdict and the failed LSF job as failures, the textfile the failed pass
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(tmp_path / "r.junit.xml"))}
    failed = {case.name for case in suites[node] if any(isinstance(r, Failure) for r in case.result)}
    assert {"verification", "LSF job"} <= failed, failed
    families = {f.name: f for f in text_string_to_metric_families((tmp_path / "hpc_gpu_containers_verify.prom").read_text())}
    assert [(s.labels, s.value) for s in families["hpc_gpu_containers_verify_host_passed"].samples] == [
        ({"host": node}, 0.0)]


def test_missing_image_fails_with_a_clear_message():
    rc, result = _verify_module(GPU_NODES[0], image="head:5000/hpc/verify:absent", pull="missing")
    assert rc != 0 and result["failed"] is True
    assert result["msg"].startswith("pulling head:5000/hpc/verify:absent failed: "), result["msg"]
    assert "manifest unknown" in result["msg"] or "not found" in result["msg"], result["msg"]
    rc, result = _verify_module(GPU_NODES[0], image="hpc-test/verify:absent", pull="never")
    assert rc != 0 and result["msg"] == "image hpc-test/verify:absent is not present on this node and pull=never"


def test_wrong_architecture_image_is_caught_before_it_runs():
    node = GPU_NODES[0]
    target = _node(node)
    wrong = "hpc-test/verify-ppc64le:1"
    target.check_output("python3 -c %s %s %s ppc64le", RELABEL, IMAGE, wrong)
    assert target.check_output("docker image inspect --format '{{.Architecture}}' %s", wrong) == "ppc64le"
    try:
        rc, result = _verify_module(node, image=wrong, pull="never")
        assert rc != 0 and result["passed"] is False
        machine = target.check_output("uname -m")
        go_arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
        assert result["msg"] == (
            "verification failed: image %s is built for linux/ppc64le but this node is %s (linux/%s): it would "
            "fail with 'exec format error'; build or pull the image for linux/%s" % (wrong, machine, go_arch, go_arch))
        # caught from the image's metadata: no container was created
        assert "exit_code" not in result and result["timings"]["create"] is None
    finally:
        target.run("docker image rm %s", wrong)
