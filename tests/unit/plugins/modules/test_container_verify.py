# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_verify against a recording fake of the Docker SDK client (the library boundary)."""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from docker.errors import APIError, ImageNotFound
from requests.exceptions import ReadTimeout

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import SMI_BEGIN, SMI_END
from ansible_collections.hpc.gpu_containers.plugins.modules import container_verify

XML = (Path(__file__).parents[1] / "module_utils" / "fixtures" / "nvidia_smi_a100-sxm4-mig.xml").read_text()
UUID = "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
FACTS = {"present": True, "driver_version": "510.47.03", "cuda_driver_version": 11060,
         "gpus": [{"index": 0, "uuid": UUID, "pci_bus_id": "00000000:00:04.0", "minor_number": 0}]}
MACHINE = os.uname().machine


def gpu_output(arch=MACHINE):
    return "hpc-verify: 1\narch=%s\nnvidia_smi=present\nnvidia_smi_rc=0\n%s\n%s\n%s\n" % (arch, SMI_BEGIN, XML, SMI_END)


CPU_OUTPUT = "hpc-verify: 1\narch=%s\nnvidia_smi=absent\n" % MACHINE


class FakeImage:
    def __init__(self, arch):
        self.id = "sha256:feed"
        self.attrs = {"Architecture": arch}


class FakeContainer:
    def __init__(self, client, out, err, code, wait_error=None, start_error=None):
        self.client = client
        self.out, self.err, self.code = out, err, code
        self.wait_error, self.start_error = wait_error, start_error

    def start(self):
        self.client.calls.append("start")
        if self.start_error:
            raise self.start_error

    def wait(self, timeout):
        self.client.calls.append("wait:%s" % timeout)
        if self.wait_error:
            raise self.wait_error
        return {"StatusCode": self.code}

    def kill(self):
        self.client.calls.append("kill")

    def logs(self, stdout, stderr):
        return (self.out if stdout else self.err).encode()

    def remove(self, force):
        self.client.calls.append("remove")

    def get_archive(self, path):
        """A tar of a stand-in busybox that prints one timing like ``time -f %e``."""
        self.client.calls.append("get_archive:%s" % path)
        script = b"#!/bin/sh\necho 0.40 >&2\n"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("busybox")
            info.size, info.mode = len(script), 0o755
            tar.addfile(info, io.BytesIO(script))
        return [buf.getvalue()], {"name": "busybox"}


class FakeClient:
    """Records every call; holds one local image (or none)."""

    def __init__(self, arch="amd64" if MACHINE == "x86_64" else MACHINE, present=True, out=CPU_OUTPUT, err="",
                 code=0, runtimes=("runc",), **container_kw):
        self.calls = []
        self.runtimes = runtimes
        self.created = None
        self.arch, self.present = arch, present
        self.out, self.err, self.code = out, err, code
        self.container_kw = container_kw
        self.images = self
        self.containers = self

    def info(self):
        self.calls.append("info")
        return {"Runtimes": dict((name, {"path": name}) for name in self.runtimes)}

    # images.*
    def get(self, ref):
        self.calls.append("get")
        if not self.present:
            raise ImageNotFound("no such image")
        return FakeImage(self.arch)

    def pull(self, repo, tag=None):
        self.calls.append("pull:%s:%s" % (repo, tag))
        self.present = True

    # containers.*
    def create(self, image, **kwargs):
        self.calls.append("create")
        self.created = kwargs
        if kwargs.get("labels", {}).get("hpc.gpu_containers.verify") == "benchmark":
            self.bench_command = kwargs["command"]
            return FakeContainer(self, "", "0.20\n0.20\n0.50\n", 0)
        return FakeContainer(self, self.out, self.err, self.code, **self.container_kw)

    def close(self):
        self.calls.append("close")


@pytest.fixture
def run(monkeypatch, capsys):
    def _run(client, **args):
        monkeypatch.setattr(container_verify.docker, "from_env", lambda: client)
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exc:
                container_verify.main()
        out = json.loads(capsys.readouterr().out)
        out["_rc"] = exc.value.code
        return out
    return _run


def test_check_mode_runs_nothing(run):
    client = FakeClient()
    res = run(client, image="r:5000/hpc/verify:1", gpu_facts=FACTS, _ansible_check_mode=True)
    assert res["changed"] is False and res["passed"] is None
    assert res["gpu_access"] == "device_requests"
    assert client.calls == ["info", "close"]  # only reads: which runtimes Docker has


def test_cpu_node_passes_and_container_is_removed(run):
    client = FakeClient()
    res = run(client, image="r:5000/hpc/verify:1")
    assert res["_rc"] == 0 and res["passed"] is True and res["changed"] is False
    assert res["gpu_access"] == "none"
    assert client.calls[-2:] == ["remove", "close"]
    assert "device_requests" not in client.created and "runtime" not in client.created
    assert client.created["privileged"] is False and client.created["network_disabled"] is True
    assert client.created["labels"]["hpc.gpu_containers.verify"] == "true"
    assert set(res["timings"]) == {"pull", "create", "start", "run", "total"}
    assert res["timings"]["pull"] is None and res["timings"]["run"] is not None


def test_gpu_node_device_requests_all(run):
    client = FakeClient(out=gpu_output())
    res = run(client, image="r:5000/hpc/verify:1", gpu_facts=FACTS)
    assert res["passed"] is True, res["reasons"]
    request = client.created["device_requests"][0]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
    assert res["gpus"]["requested"] == [UUID] and res["gpus"]["container"] == 1


def test_auto_takes_the_nvidia_runtime_when_docker_has_it(run):
    """auto goes the way the LSF profiles go: --runtime=nvidia and NVIDIA_VISIBLE_DEVICES, when Docker has it."""
    client = FakeClient(out=gpu_output(), runtimes=("runc", "nvidia"))
    res = run(client, image="r:5000/hpc/verify:1", gpu_facts=FACTS)
    assert res["passed"] is True and res["gpu_access"] == "nvidia_runtime"
    assert client.created["runtime"] == "nvidia" and client.created["environment"]["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert "device_requests" not in client.created


def test_gpu_node_by_uuid_with_nvidia_runtime(run):
    client = FakeClient(out=gpu_output())
    res = run(client, image="r:5000/hpc/verify:1", gpu_facts=FACTS, gpus=["0"], gpu_access="nvidia_runtime")
    assert res["passed"] is True
    assert client.created["runtime"] == "nvidia"
    assert client.created["environment"]["NVIDIA_VISIBLE_DEVICES"] == UUID


def test_gpu_node_cdi(run):
    client = FakeClient(out=gpu_output())
    run(client, image="r:5000/hpc/verify:1", gpu_facts=FACTS, gpus=[UUID], gpu_access="cdi")
    request = client.created["device_requests"][0]
    assert request["Driver"] == "cdi" and request["DeviceIDs"] == ["nvidia.com/gpu=%s" % UUID]


def test_gpu_missing_in_container_fails(run):
    client = FakeClient(out=CPU_OUTPUT)
    res = run(client, image="r:5000/hpc/verify:1", gpu_facts=FACTS)
    assert res["_rc"] == 1 and res["failed"] is True
    assert "nvidia-smi is not available inside the container" in res["msg"]
    res = run(FakeClient(out=CPU_OUTPUT), image="r:5000/hpc/verify:1", gpu_facts=FACTS, fail_on_mismatch=False)
    assert res["_rc"] == 0 and res["passed"] is False and len(res["reasons"]) == 1


def test_wrong_architecture_caught_before_running(run):
    client = FakeClient(arch="s390x")
    res = run(client, image="r:5000/hpc/verify:1", fail_on_mismatch=False)
    assert res["passed"] is False
    assert "built for linux/s390x" in res["reasons"][0]
    assert "create" not in client.calls


def test_exec_format_error_reported(run):
    client = FakeClient(out="", err="exec /verify: exec format error\n", code=1)
    res = run(client, image="r:5000/hpc/verify:1")
    assert res["_rc"] == 1 and "exec format error" in res["msg"] and "another architecture" in res["msg"]
    assert "remove" in client.calls


def test_timeout_kills_and_removes(run):
    client = FakeClient(wait_error=ReadTimeout("read timed out"))
    res = run(client, image="r:5000/hpc/verify:1", timeout=5)
    assert res["_rc"] == 1 and "did not finish within 5 s" in res["msg"]
    assert client.calls[-4:] == ["wait:5", "kill", "remove", "close"]


def test_start_error_with_exec_format(run):
    client = FakeClient(start_error=APIError("oci runtime error", explanation="exec: \"/verify\": exec format error"))
    res = run(client, image="r:5000/hpc/verify:1")
    assert "exec format error" in res["msg"] and "remove" in client.calls


def test_pull_never_with_missing_image_fails(run):
    client = FakeClient(present=False)
    res = run(client, image="r:5000/hpc/verify:1", pull="never")
    assert res["_rc"] == 1 and "not present on this node and pull=never" in res["msg"]
    assert not any(c.startswith("pull") for c in client.calls)


def test_pull_missing_pulls_with_timing(run):
    client = FakeClient(present=False)
    res = run(client, image="r:5000/hpc/verify:1")
    assert "pull:r:5000/hpc/verify:1" in client.calls
    assert res["passed"] is True and res["timings"]["pull"] is not None


def test_unknown_gpu_and_gpu_access_without_gpus_fail(run):
    res = run(FakeClient(), image="i:1", gpu_facts=FACTS, gpus=["3"])
    assert res["_rc"] == 1 and "requested GPU '3' is not on this host" in res["msg"]
    res = run(FakeClient(), image="i:1", gpu_access="device_requests")
    assert res["_rc"] == 1 and "lists no GPU" in res["msg"]


def test_split_ref():
    assert container_verify._split_ref("reg:5000/a/b:1") == ("reg:5000/a/b", "1")
    assert container_verify._split_ref("reg:5000/a/b") == ("reg:5000/a/b", "latest")
    assert container_verify._split_ref("a@sha256:ab") == ("a@sha256:ab", None)


def test_benchmark_same_loop_host_and_container(run):
    client = FakeClient()
    res = run(client, image="r:5000/hpc/verify:1", benchmark=3, benchmark_loops=1000)
    assert res["passed"] is True
    bench = res["benchmark"]
    assert bench["container"]["times"] == [0.2, 0.2, 0.5] and bench["container"]["median"] == 0.2
    assert bench["host"]["times"] == [0.4, 0.4, 0.4]
    assert bench["ratio"] == 0.5
    assert "seq 3" in client.bench_command[-1] and "-lt 1000 ]" in client.bench_command[-1]
    assert "get_archive:/bin/busybox" in client.calls
    assert client.calls.count("remove") == 2


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
    res = run(FakeClient(), image="r:5000/hpc/verify:1", lsf=option)
    assert res["_rc"] == 0 and res["passed"] is True, res
    assert log.read_text().splitlines() == ["-app", "powerai", "-I", "-m", "gpu01", "/verify", "--"]
    job = res["lsf"]
    assert job["job_id"] == 4711 and job["passed"] is True and job["exit_code"] == 0
    assert job["architecture"] == {"node": MACHINE, "container": MACHINE}
    assert job["timings"]["total"] is not None


def test_lsf_job_that_misses_the_gpus_fails_the_node(run, lsf, monkeypatch):
    option, dummy = lsf
    # Docker sees the GPU; the LSF job's container does not (a profile without GPU access)
    res = run(FakeClient(out=gpu_output()), image="r:5000/hpc/verify:1", gpu_facts=FACTS, lsf=option,
              fail_on_mismatch=False)
    assert res["passed"] is False and res["lsf"]["passed"] is False
    assert res["reasons"] == ["LSF: GPUs: nvidia-smi is not available inside the container, so no GPU was passed "
                              "in (check the NVIDIA runtime/CDI setup and gpu_access)"]
    monkeypatch.setenv("BSUB_JOB_OUTPUT", gpu_output())
    res = run(FakeClient(out=gpu_output()), image="r:5000/hpc/verify:1", gpu_facts=FACTS, lsf=option)
    assert res["passed"] is True and res["lsf"]["gpus"]["container_gpus"][0]["uuid"] == UUID


def test_lsf_refused_submission_and_failed_job_are_reasons(run, lsf, monkeypatch):
    option, dummy = lsf
    monkeypatch.setenv("BSUB_REFUSE", "powerai: No such application. Job not submitted.")
    res = run(FakeClient(), image="r:5000/hpc/verify:1", lsf=option)
    assert res["_rc"] == 1 and res["lsf"]["job_id"] is None
    assert "LSF: bsub -app powerai did not submit the job (exit code 255): powerai: No such application" in res["msg"]
    monkeypatch.delenv("BSUB_REFUSE")
    monkeypatch.setenv("BSUB_JOB_RC", "3")
    res = run(FakeClient(), image="r:5000/hpc/verify:1", lsf=option, fail_on_mismatch=False)
    assert res["passed"] is False and res["lsf"]["exit_code"] == 3
    assert res["reasons"][0].startswith("LSF: the job exited with 3")


def test_lsf_job_past_its_timeout_fails(run, lsf, monkeypatch):
    option, dummy = lsf
    monkeypatch.setenv("BSUB_SLEEP", "5")
    res = run(FakeClient(), image="r:5000/hpc/verify:1", lsf=dict(option, timeout=1), fail_on_mismatch=False)
    assert res["passed"] is False
    assert res["reasons"] == ["LSF: the job did not finish within 1 s (bsub -app powerai -I -m gpu01)"]


def test_lsf_not_submitted_in_check_mode(run, lsf):
    option, log = lsf
    res = run(FakeClient(), image="r:5000/hpc/verify:1", lsf=option, _ansible_check_mode=True)
    assert res["passed"] is None and "lsf" not in res and not log.exists()


SECOND = "GPU-0b5d9b0c-6f3e-4c55-9c2a-5d3e1f0a7b11"
SECOND_GPU = {"index": 1, "uuid": SECOND, "pci_bus_id": "00000000:3B:00.0", "minor_number": 1}
TWO_FACTS = dict(FACTS, gpus=FACTS["gpus"] + [SECOND_GPU])


def two_gpu_output():
    start, end = XML.index("<gpu "), XML.index("</gpu>") + len("</gpu>")
    second = (XML[start:end].replace(UUID, SECOND).replace("00000000:00:04.0", "00000000:3B:00.0")
              .replace("<minor_number>0", "<minor_number>1"))
    xml = (XML[:end] + "\n" + second + XML[end:]).replace("<attached_gpus>1</", "<attached_gpus>2</")
    return "hpc-verify: 1\narch=%s\nnvidia_visible_devices=0,1\nnvidia_smi=present\nnvidia_smi_rc=0\n%s\n%s\n%s\n" % (
        MACHINE, SMI_BEGIN, xml, SMI_END)


@pytest.mark.parametrize("one_gpu_job, passed, reason", [
    # the one-GPU job sees the GPU LSF gave it (index 1 on the host, the second UUID)
    (lambda: gpu_output().replace(UUID, SECOND).replace("00000000:00:04.0", "00000000:3B:00.0")
     .replace("<minor_number>0", "<minor_number>1").replace("nvidia_smi=present", "nvidia_visible_devices=1\nnvidia_smi=present"),
     True, None),
    # a profile that hands every GPU to every job
    (two_gpu_output, False,
     "LSF: isolation: a job that LSF allocated 1 GPU(s) sees 2 (every GPU of the node: the profile hands all GPUs "
     "to every job)"),
], ids=["isolated", "leaks-every-gpu"])
def test_lsf_one_gpu_job_must_see_only_its_gpu(run, lsf, monkeypatch, one_gpu_job, passed, reason):
    option, log = lsf
    monkeypatch.setenv("BSUB_JOB_OUTPUT", two_gpu_output())
    monkeypatch.setenv("BSUB_ONE_GPU_OUTPUT", one_gpu_job())
    res = run(FakeClient(out=two_gpu_output()), image="r:5000/hpc/verify:1", gpu_facts=TWO_FACTS, gpus=["all"],
              gpu_access="device_requests", lsf=option, fail_on_mismatch=False)
    jobs = log.read_text().split("--\n")[:-1]
    assert [job.splitlines()[4:] for job in jobs] == [["gpu01", "-gpu", "num=2", "/verify"],
                                                      ["gpu01", "-gpu", "num=1", "/verify"]]
    assert res["lsf"]["isolation"]["passed"] is passed
    assert res["passed"] is passed
    if reason:
        assert res["reasons"] == [reason]
    # without isolation, only the all-GPU job is submitted
    log.unlink()
    res = run(FakeClient(out=two_gpu_output()), image="r:5000/hpc/verify:1", gpu_facts=TWO_FACTS,
              gpu_access="device_requests", lsf=dict(option, isolation=False), fail_on_mismatch=False)
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
            "srun": str(srun), "srun_docker": "/usr/local/bin/srun-docker"}, log


def steps(log):
    return [job.splitlines() for job in log.read_text().split("==\n")[:-1]]


def test_slurm_step_gives_the_same_verdict(run, slurm):
    option, log = slurm
    res = run(FakeClient(), image="r:5000/hpc/verify:1", slurm=option)
    assert res["_rc"] == 0 and res["passed"] is True, res
    assert steps(log) == [["--nodes=1", "--ntasks=1", "--nodelist=gpu01", "--job-name=hpc-verify",
                           "/usr/local/bin/srun-docker", "--no-ssh", "r:5000/hpc/verify:1", "--", "/verify"]]
    assert res["slurm"]["passed"] is True and res["slurm"]["architecture"] == {"node": MACHINE, "container": MACHINE}


def test_slurm_step_failures_are_reasons(run, slurm, monkeypatch):
    option, log = slurm
    monkeypatch.setenv("SRUN_FAIL", "srun: error: Unable to allocate resources: Invalid node name specified")
    res = run(FakeClient(), image="r:5000/hpc/verify:1", slurm=option, fail_on_mismatch=False)
    assert res["passed"] is False
    assert res["reasons"] == ["Slurm: the step exited with 1: srun: error: Unable to allocate resources: Invalid node "
                              "name specified"]
    res = run(FakeClient(), image="r:5000/hpc/verify:1", slurm=option, _ansible_check_mode=True)
    assert "slurm" not in res


@pytest.mark.parametrize("one_gpu_step, passed, reason", [
    (lambda: gpu_output().replace(UUID, SECOND).replace("00000000:00:04.0", "00000000:3B:00.0")
     .replace("<minor_number>0", "<minor_number>1")
     .replace("nvidia_smi=present", "nvidia_visible_devices=%s\nnvidia_smi=present" % SECOND), True, None),
    (two_gpu_output, False,
     "Slurm: isolation: a job that Slurm allocated 1 GPU(s) sees 2 (every GPU of the node: the profile hands all "
     "GPUs to every job)"),
], ids=["isolated", "leaks-every-gpu"])
def test_slurm_one_gpu_step_must_see_only_its_gpu(run, slurm, monkeypatch, one_gpu_step, passed, reason):
    option, log = slurm
    monkeypatch.setenv("SRUN_STEP_OUTPUT", two_gpu_output())
    monkeypatch.setenv("SRUN_ONE_GPU_OUTPUT", one_gpu_step())
    res = run(FakeClient(out=two_gpu_output()), image="r:5000/hpc/verify:1", gpu_facts=TWO_FACTS,
              gpu_access="device_requests", slurm=option, fail_on_mismatch=False)
    assert [step[4] for step in steps(log)] == ["--gres=gpu:2", "--gres=gpu:1"]
    assert res["slurm"]["isolation"]["passed"] is passed and res["passed"] is passed
    if reason:
        assert res["reasons"] == [reason]
