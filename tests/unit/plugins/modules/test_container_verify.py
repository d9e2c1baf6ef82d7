# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_verify against a recording fake of the Docker SDK client (the library boundary)."""
from __future__ import annotations

import pytest
from docker.errors import APIError
from requests.exceptions import ReadTimeout

from ansible_collections.hpc.gpu_containers.plugins.modules import container_verify

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.docker_fakes import CPU_OUTPUT, FACTS, UUID, FakeClient, gpu_output, run_with


@pytest.fixture
def run(monkeypatch, capsys):
    def _run(client, **args):
        return run_with(monkeypatch, capsys, container_verify, client, **args)
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
    # pulling the image is the one change the module makes on the node
    assert res["changed"] is True
    assert run(client, image="r:5000/hpc/verify:1")["changed"] is False


def test_unknown_gpu_and_gpu_access_without_gpus_fail(run):
    res = run(FakeClient(), image="i:1", gpu_facts=FACTS, gpus=["3"])
    assert res["_rc"] == 1 and "requested GPU '3' is not on this host" in res["msg"]
    res = run(FakeClient(), image="i:1", gpu_access="device_requests")
    assert res["_rc"] == 1 and "lists no GPU" in res["msg"]


def test_split_ref():
    assert container_verify._split_ref("reg:5000/a/b:1") == ("reg:5000/a/b", "1")
    assert container_verify._split_ref("reg:5000/a/b") == ("reg:5000/a/b", "latest")
    assert container_verify._split_ref("a@sha256:ab") == ("a@sha256:ab", None)
