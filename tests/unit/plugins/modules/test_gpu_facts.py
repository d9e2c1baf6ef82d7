# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts through AnsibleModule, over the real nvidia-ml-py and a recorded libnvidia-ml."""

import sys
from pathlib import Path

import pynvml
import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _node_facts
from ansible_collections.hpc.gpu_containers.plugins.modules import gpu_facts
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
import fake_libnvml  # noqa: E402

CPUINFO = Path(__file__).resolve().parents[3] / "fixtures" / "cpuinfo"


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A POWER9 node: its /proc/cpuinfo and a /dev with two GPUs."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1"):
        (dev / name).write_text("")
    monkeypatch.setattr(gpu_facts, "DEV_ROOT", str(dev))
    monkeypatch.setattr(gpu_facts, "CPUINFO", str(CPUINFO / "ppc64le-power9-powernv.txt"))
    monkeypatch.setattr(_node_facts.platform, "machine", lambda: "ppc64le")
    return dev


def run(capsys, **args):
    result = run_module(gpu_facts, capsys, with_rc=True, **args)
    assert result.pop("_rc") == 0
    return result


def test_power9_v100_node(monkeypatch, capsys, node):
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("v100-sxm2-16gb-x2-power9-418.87.00.json"))
    with fake_libnvml.installed(monkeypatch, lib):
        res = run(capsys, _ansible_check_mode=True)
    facts = res["ansible_facts"]["gpu_facts"]
    assert res["changed"] is False
    assert res["gpu_facts"] == facts
    assert facts["present"] is True and facts["count"] == 2
    assert [g["uuid"] for g in facts["gpus"]] == ["GPU-016b348f-3447-d57f-672a-9144fd65ae30", "GPU-6d5d201f-d34e-70e2-0a6b-e16c7aea6a30"]
    assert [g["device_path"] for g in facts["gpus"]] == [str(node / "nvidia0"), str(node / "nvidia1")]
    assert all(g["device_present"] for g in facts["gpus"])
    assert facts["device_nodes"]["control"] == [str(node / "nvidiactl"), str(node / "nvidia-uvm")]
    assert facts["cpu"]["architecture"] == "ppc64le" and facts["cpu"]["power_generation"] == "POWER9"


def test_driver_not_loaded_is_not_a_failure(monkeypatch, capsys, node):
    lib = fake_libnvml.FakeLibNvml(init_result=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    with fake_libnvml.installed(monkeypatch, lib):
        res = run(capsys)
    facts = res["ansible_facts"]["gpu_facts"]
    assert "failed" not in res
    assert facts["present"] is False and facts["reason"] == "NVIDIA kernel driver not loaded"
    # the device nodes that are there are still reported
    assert facts["device_nodes"]["gpus"] == [str(node / "nvidia0"), str(node / "nvidia1")]


def test_no_library(monkeypatch, capsys, node):
    with fake_libnvml.installed(monkeypatch, None):
        res = run(capsys)
    assert res["gpu_facts"]["present"] is False
    assert "libnvidia-ml.so.1 not found" in res["gpu_facts"]["reason"]


def test_no_python_package_is_needed(monkeypatch, capsys, node):
    """nvidia-ml-py missing from the node changes nothing: the built-in binding reads the library."""
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("v100-sxm2-16gb-x2-power9-418.87.00.json"))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` would now fail
    with fake_libnvml.installed(monkeypatch, lib):
        res = run(capsys)
    assert res["gpu_facts"]["present"] is True and res["gpu_facts"]["count"] == 2
    assert res["gpu_facts"]["cpu"]["power_generation"] == "POWER9"


def test_unknown_option_is_refused(capsys, node):
    res = run_module(gpu_facts, capsys, bogus=1)
    assert res["failed"] is True and "bogus" in res["msg"]


def test_docker_daemon_fact_from_the_file_as_it_is(monkeypatch, capsys, node, tmp_path):
    lib = fake_libnvml.FakeLibNvml(init_result=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    daemon = tmp_path / "daemon.json"
    with fake_libnvml.installed(monkeypatch, lib):
        res = run(capsys)
        assert "docker_daemon" not in res["ansible_facts"]
        res = run(capsys, docker_daemon_json=str(daemon))
        assert res["ansible_facts"]["docker_daemon"] == {"path": str(daemon), "runtimes": []}
        daemon.write_text('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}, "crun": {"path": "crun"}}}\n')
        res = run(capsys, docker_daemon_json=str(daemon))
    assert res["docker_daemon"] == res["ansible_facts"]["docker_daemon"] == {"path": str(daemon), "runtimes": ["crun", "nvidia"]}
    assert res["ansible_facts"]["gpu_facts"]["present"] is False


def test_malformed_daemon_json_fails_naming_file_and_line(monkeypatch, capsys, node, tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text('{\n  "runtimes": {,\n}\n')
    lib = fake_libnvml.FakeLibNvml(init_result=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    with fake_libnvml.installed(monkeypatch, lib):
        res = run_module(gpu_facts, capsys, with_rc=True, docker_daemon_json=str(daemon))
    assert res["_rc"] == 1 and res["failed"] is True
    assert str(daemon) in res["msg"] and ":2:" in res["msg"]
