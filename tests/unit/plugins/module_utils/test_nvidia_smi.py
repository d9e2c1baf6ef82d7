# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia-smi -q -x parsing, and agreement with the NVML facts of the same devices."""

import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _nvidia_smi, _nvml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_libnvml  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"


def xml(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_a100_mig():
    facts = _nvidia_smi.parse(xml("a100-sxm4-mig-510.47.03.xml"))
    assert facts["driver_version"] == "510.47.03"
    assert facts["cuda_version"] == "11.6"
    assert facts["attached_gpus"] == 1 and facts["count"] == 1
    assert facts["gpus"][0] == {
        "index": 0,
        "name": "NVIDIA A100-SXM4-40GB",
        "uuid": "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a",
        "serial": "1324321002473",
        "pci_bus_id": "00000000:00:04.0",
        "pci_bus_id_short": "0000:00:04.0",
        "minor_number": 0,
        "memory_total_mib": 40960,  # the GPU's, not a MIG device's 19968
        "persistence_mode": False,
        "mig_mode": {"capable": True, "current": "enabled", "pending": "enabled"},
    }


def test_old_driver_without_cuda_version_or_mig():
    facts = _nvidia_smi.parse(xml("p100-pcie-12gb-x2-375.66.xml").encode())  # bytes are accepted too
    assert facts["driver_version"] == "375.66" and facts["cuda_version"] is None
    assert facts["count"] == 2 == facts["attached_gpus"]
    assert [g["minor_number"] for g in facts["gpus"]] == [0, 1]
    assert [g["pci_bus_id_short"] for g in facts["gpus"]] == ["0000:04:00.0", "0000:82:00.0"]
    assert [g["memory_total_mib"] for g in facts["gpus"]] == [11567, 12290]
    assert facts["gpus"][1]["mig_mode"] == {"capable": False, "current": None, "pending": None}


@pytest.mark.parametrize("smi, recording", [
    ("a100-sxm4-mig-510.47.03.xml", "a100-sxm4-40gb-mig-510.47.03.json"),
    ("p100-pcie-12gb-x2-375.66.xml", "p100-pcie-12gb-x2-375.66.json"),
])
def test_same_devices_look_the_same_through_nvml_and_nvidia_smi(monkeypatch, smi, recording):
    with fake_libnvml.installed(monkeypatch, fake_libnvml.FakeLibNvml(fake_libnvml.recording(recording))) as nvml:
        host = _nvml.collect(nvml, "/nonexistent-dev")
    seen = _nvidia_smi.parse(xml(smi))
    assert seen["driver_version"] == host["driver_version"]
    assert seen["cuda_version"] == host["cuda_driver_version"]
    keys = ("uuid", "name", "serial", "pci_bus_id_short", "minor_number", "memory_total_mib", "persistence_mode", "mig_mode")
    by_uuid = {g["uuid"]: g for g in host["gpus"]}
    for gpu in seen["gpus"]:
        assert {k: gpu[k] for k in keys} == {k: by_uuid[gpu["uuid"]][k] for k in keys}


def test_na_values_become_none():
    text = ('<nvidia_smi_log><driver_version>550.54.15</driver_version><attached_gpus>1</attached_gpus>'
            '<gpu id="00000000:3B:00.0"><product_name>NVIDIA GeForce RTX 3090</product_name><serial>N/A</serial>'
            '<uuid>GPU-x</uuid><minor_number>N/A</minor_number><persistence_mode>N/A</persistence_mode>'
            '<mig_mode><current_mig>N/A</current_mig><pending_mig>N/A</pending_mig></mig_mode></gpu></nvidia_smi_log>')
    (gpu,) = _nvidia_smi.parse(text)["gpus"]
    assert gpu["serial"] is None and gpu["minor_number"] is None and gpu["persistence_mode"] is None
    assert gpu["mig_mode"]["capable"] is False
    assert gpu["pci_bus_id"] == "00000000:3B:00.0"  # from the id attribute when <pci> is absent
    assert gpu["pci_bus_id_short"] == "0000:3b:00.0"


@pytest.mark.parametrize("text, message", [
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "not nvidia-smi XML"),
    ("<html><body/></html>", "root element is <html>"),
    ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><nvidia_smi_log>&e;</nvidia_smi_log>', "entity declarations are refused"),
])
def test_not_nvidia_smi_output(text, message):
    with pytest.raises(_nvidia_smi.NvidiaSmiError, match=message):
        _nvidia_smi.parse(text)
