# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVML facts over a recorded libnvidia-ml, through both bindings.

Every test runs twice: through the real nvidia-ml-py (``pynvml``) and through the
collection's own ctypes binding (``_nvml_ctypes``, what gpu_facts uses), over the
same recorded C library, and must give the same facts.
"""

import os
import sys
import types
from pathlib import Path

import pynvml
import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _nvml, _nvml_ctypes

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_libnvml  # noqa: E402


@pytest.fixture
def devfs(tmp_path):
    """A /dev with the nodes a two-GPU node has (regular files stand in for the char devices)."""
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"):
        (dev / name).write_text("")
    return str(dev)


BINDING = {"name": "pynvml"}


@pytest.fixture(autouse=True, params=["pynvml", "builtin"])
def binding(request):
    BINDING["name"] = request.param
    return request.param


def collect(monkeypatch, lib, dev_root="/nonexistent-dev"):
    with fake_libnvml.installed(monkeypatch, lib) as nvml:
        if BINDING["name"] == "builtin":
            nvml = _nvml_ctypes.Nvml()
        return _nvml.collect(nvml, dev_root)


def test_v100_power9_two_gpus(monkeypatch, devfs):
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("v100-sxm2-16gb-x2-power9-418.87.00.json"))
    facts = collect(monkeypatch, lib, devfs)
    assert facts["present"] is True and facts["reason"] is None
    assert facts["driver_version"] == "418.87.00"
    assert facts["cuda_driver_version"] == "10.1" and facts["cuda_driver_version_int"] == 10010
    assert facts["count"] == 2
    first, second = facts["gpus"]
    assert first == {
        "index": 0,
        "name": "Tesla V100-SXM2-16GB",
        "uuid": "GPU-016b348f-3447-d57f-672a-9144fd65ae30",
        "serial": "0324117166425",
        "pci_bus_id": "00000004:04:00.0",
        "pci_bus_id_short": "0004:04:00.0",
        "pci_device_id": "0x1DB110DE",
        "memory_total_bytes": 16130 * 1024 * 1024,
        "memory_total_mib": 16130,
        "compute_capability": "7.0",
        "compute_capability_major": 7,
        "compute_capability_minor": 0,
        "mig_mode": {"capable": False, "current": None, "pending": None},
        "persistence_mode": True,
        "minor_number": 0,
        "device_path": os.path.join(devfs, "nvidia0"),
        "device_present": True,
        "errors": [],
    }
    assert second["uuid"] == "GPU-6d5d201f-d34e-70e2-0a6b-e16c7aea6a30"
    assert second["pci_bus_id_short"] == "0004:05:00.0" and second["minor_number"] == 1
    assert facts["device_nodes"] == {
        "control": [os.path.join(devfs, n) for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")],
        "caps": [os.path.join(devfs, "nvidia-caps", n) for n in ("nvidia-cap1", "nvidia-cap2")],
        "gpus": [os.path.join(devfs, "nvidia0"), os.path.join(devfs, "nvidia1")],
    }
    # init and shutdown are paired: nothing left initialised
    assert lib.initialised == 0
    assert lib.calls[0] == "nvmlInitWithFlags" and lib.calls[-1] == "nvmlShutdown"


def test_a100_mig_enabled(monkeypatch):
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("a100-sxm4-40gb-mig-510.47.03.json"))
    facts = collect(monkeypatch, lib)
    assert facts["cuda_driver_version"] == "11.6"
    (gpu,) = facts["gpus"]
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB"
    assert gpu["mig_mode"] == {"capable": True, "current": "enabled", "pending": "enabled"}
    assert gpu["compute_capability"] == "8.0"
    assert gpu["persistence_mode"] is False
    assert gpu["pci_bus_id_short"] == "0000:00:04.0"
    assert gpu["memory_total_mib"] == 40960
    assert gpu["device_present"] is False  # no /dev in this test


def test_old_driver_without_cuda_or_mig_calls(monkeypatch):
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("p100-pcie-12gb-x2-375.66.json"))
    facts = collect(monkeypatch, lib)
    assert facts["present"] is True and facts["driver_version"] == "375.66"
    assert facts["cuda_driver_version"] is None and facts["cuda_driver_version_int"] is None
    assert facts["errors"] == []  # an absent function is "not supported", not an error
    assert [g["pci_bus_id_short"] for g in facts["gpus"]] == ["0000:04:00.0", "0000:82:00.0"]
    assert [g["mig_mode"]["capable"] for g in facts["gpus"]] == [False, False]


def test_mig_not_supported_on_a_gpu_that_has_the_call(monkeypatch):
    rec = fake_libnvml.recording("v100-sxm2-16gb-x2-power9-418.87.00.json")
    rec["missing_functions"] = []
    rec["devices"][0]["mig_mode"] = "NVML_ERROR_NOT_SUPPORTED"
    rec["devices"][1]["serial"] = "NVML_ERROR_NOT_SUPPORTED"
    rec["devices"][1]["mig_mode"] = "NVML_ERROR_GPU_IS_LOST"
    facts = collect(monkeypatch, fake_libnvml.FakeLibNvml(rec))
    assert facts["gpus"][0]["mig_mode"]["capable"] is False and facts["gpus"][0]["errors"] == []
    assert facts["gpus"][1]["serial"] is None
    assert facts["gpus"][1]["errors"] == ["mig_mode: GPU is lost"]


def test_no_gpu(monkeypatch):
    rec = fake_libnvml.recording("a100-sxm4-40gb-mig-510.47.03.json")
    rec["devices"] = []
    facts = collect(monkeypatch, fake_libnvml.FakeLibNvml(rec))
    assert facts["present"] is False
    assert facts["reason"] == "NVIDIA driver loaded but no GPU found"
    assert facts["driver_version"] == "510.47.03" and facts["count"] == 0 and facts["gpus"] == []


def test_no_library(monkeypatch, devfs):
    facts = collect(monkeypatch, None, devfs)
    assert facts["present"] is False
    assert facts["reason"] == "NVML library libnvidia-ml.so.1 not found (no NVIDIA driver installed)"
    assert facts["gpus"] == [] and facts["driver_version"] is None
    # device nodes are reported even without the library
    assert facts["device_nodes"]["gpus"] == [os.path.join(devfs, "nvidia0"), os.path.join(devfs, "nvidia1")]


@pytest.mark.parametrize("code, reason", [
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "NVIDIA kernel driver not loaded"),
    (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVIDIA driver/library version mismatch"),
    (pynvml.NVML_ERROR_NO_PERMISSION, "no permission to open the NVIDIA device nodes"),
    (pynvml.NVML_ERROR_UNKNOWN, "NVML initialisation failed: Unknown Error"),
])
def test_init_failures_are_facts_not_failures(monkeypatch, code, reason):
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("a100-sxm4-40gb-mig-510.47.03.json"), init_result=code)
    facts = collect(monkeypatch, lib)
    assert facts["present"] is False
    assert facts["reason"].startswith(reason)
    assert "nvmlShutdown" not in lib.calls  # never initialised, so never shut down


class OldBindings:
    """nvidia-ml-py <= 11.510.69 as seen by a caller: bytes from string getters
    and struct char fields.  Wraps the real module over the fake library."""

    def __init__(self, nvml):
        self._nvml = nvml

    def __getattr__(self, name):
        attr = getattr(self._nvml, name)
        if not (callable(attr) and name.startswith("nvml")):
            return attr

        def wrapper(*args):
            result = attr(*args)
            if isinstance(result, str):
                return result.encode()
            if name == "nvmlDeviceGetPciInfo":
                return types.SimpleNamespace(busId=result.busId.encode(), pciDeviceId=result.pciDeviceId)
            return result
        return wrapper


def test_bytes_from_old_bindings_are_normalised(monkeypatch):
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("a100-sxm4-40gb-mig-510.47.03.json"))
    with fake_libnvml.installed(monkeypatch, lib) as nvml:
        old = OldBindings(nvml)
        old.nvmlInit()
        assert old.nvmlSystemGetDriverVersion() == b"510.47.03"  # the shim really hands out bytes
        old.nvmlShutdown()
        facts = _nvml.collect(old, "/nonexistent-dev")
    assert facts["driver_version"] == "510.47.03"
    gpu = facts["gpus"][0]
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB" and gpu["uuid"].startswith("GPU-27b94a00")
    assert gpu["pci_bus_id"] == "00000000:00:04.0" and gpu["serial"] == "1324321002473"


def test_current_bindings_return_str_from_bytes_buffers(monkeypatch):
    """The fake library writes bytes into ctypes buffers; nvidia-ml-py's own
    convertStrBytes turns them into str: the contract _nvml relies on."""
    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording("a100-sxm4-40gb-mig-510.47.03.json"))
    with fake_libnvml.installed(monkeypatch, lib) as nvml:
        nvml.nvmlInit()
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(0)
            assert nvml.nvmlDeviceGetUUID(handle) == "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
            assert nvml.nvmlDeviceGetPciInfo(handle).busId == "00000000:00:04.0"
            assert nvml.nvmlDeviceGetMigMode(handle) == [1, 1]
        finally:
            nvml.nvmlShutdown()


@pytest.mark.parametrize("bus_id, short", [
    ("00000000:3B:00.0", "0000:3b:00.0"),
    ("0000:82:00.0", "0000:82:00.0"),
    (b"00000035:03:00.0", "0035:03:00.0"),
    ("", ""),
    (None, None),
])
def test_short_bus_id(bus_id, short):
    assert _nvml.short_bus_id(bus_id) == short


def test_cuda_version_string():
    assert _nvml.cuda_version_string(12040) == "12.4"
    assert _nvml.cuda_version_string(11060) == "11.6"
    assert _nvml.cuda_version_string(10010) == "10.1"
    assert _nvml.cuda_version_string(None) is None
