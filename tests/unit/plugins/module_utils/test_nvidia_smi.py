# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia-smi -q -x as the verification reads it (``_verify.parse_nvidia_smi_xml``), on recordings of real
devices, and its agreement with the NVML facts of the same devices (the host side of the comparison)."""

import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _nvml
from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import VerifyError, parse_nvidia_smi_xml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fake_libnvml  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"


def xml(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_a100_mig():
    seen = parse_nvidia_smi_xml(xml("a100-sxm4-mig-510.47.03.xml"))
    assert seen["driver_version"] == "510.47.03" and seen["cuda_version"] == "11.6" and seen["attached_gpus"] == 1
    assert seen["gpus"] == [{"uuid": "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a", "pci_bus_id": "0000:00:04.0",
                             "minor_number": 0, "product_name": "NVIDIA A100-SXM4-40GB"}]


def test_old_driver_without_cuda_version():
    seen = parse_nvidia_smi_xml(xml("p100-pcie-12gb-x2-375.66.xml"))
    assert seen["driver_version"] == "375.66" and seen["cuda_version"] is None and seen["attached_gpus"] == 2
    assert [g["minor_number"] for g in seen["gpus"]] == [0, 1]
    assert [g["pci_bus_id"] for g in seen["gpus"]] == ["0000:04:00.0", "0000:82:00.0"]


@pytest.mark.parametrize("smi, recording", [
    ("a100-sxm4-mig-510.47.03.xml", "a100-sxm4-40gb-mig-510.47.03.json"),
    ("p100-pcie-12gb-x2-375.66.xml", "p100-pcie-12gb-x2-375.66.json"),
])
def test_same_devices_look_the_same_through_nvml_and_nvidia_smi(monkeypatch, smi, recording):
    with fake_libnvml.installed(monkeypatch, fake_libnvml.FakeLibNvml(fake_libnvml.recording(recording))) as nvml:
        host = _nvml.collect(nvml, "/nonexistent-dev")
    seen = parse_nvidia_smi_xml(xml(smi))
    assert seen["driver_version"] == host["driver_version"]
    assert seen["cuda_version"] == host["cuda_driver_version"]
    by_uuid = {g["uuid"]: g for g in host["gpus"]}
    for gpu in seen["gpus"]:
        nvml_gpu = by_uuid[gpu["uuid"]]
        assert (gpu["pci_bus_id"], gpu["minor_number"], gpu["product_name"]) == (
            nvml_gpu["pci_bus_id_short"], nvml_gpu["minor_number"], nvml_gpu["name"])


def test_na_values_become_none():
    text = ('<nvidia_smi_log><driver_version>550.54.15</driver_version><attached_gpus>1</attached_gpus>'
            '<gpu id="00000000:3B:00.0"><product_name>NVIDIA GeForce RTX 3090</product_name>'
            '<uuid>GPU-x</uuid><minor_number>N/A</minor_number></gpu></nvidia_smi_log>')
    (gpu,) = parse_nvidia_smi_xml(text)["gpus"]
    assert gpu["minor_number"] is None
    assert gpu["pci_bus_id"] == "0000:3b:00.0"  # from the id attribute when <pci> is absent


@pytest.mark.parametrize("text, message", [
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "does not parse"),
    ("<html><body/></html>", "root is <html>"),
    ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><nvidia_smi_log>&e;</nvidia_smi_log>',
     "entity declarations is refused"),
])
def test_not_nvidia_smi_output(text, message):
    with pytest.raises(VerifyError, match=message):
        parse_nvidia_smi_xml(text)


# The real-GPU lane (`make gpu-check`, tools/gpu-check.py) on a machine with a real H100 and driver 580:
# the facts the collection's own NVML code gathered there, and nvidia-smi -q -x taken on the same machine.
RECORDED = Path(__file__).resolve().parents[3] / "fixtures" / "nvml" / "recorded"
H100 = "2026-11-26-nvidia-h100-80gb-hbm3.json"


def recorded(name):
    import json

    return json.loads((RECORDED / name).read_text(encoding="utf-8"))


def test_real_h100_facts_from_the_real_driver():
    facts = recorded(H100)["gpu_facts"]
    assert facts["present"] and facts["errors"] == [] and facts["reason"] is None
    assert (facts["driver_version"], facts["cuda_driver_version"], facts["count"]) == ("580.159.04", "13.0", 1)
    (gpu,) = facts["gpus"]
    assert (gpu["compute_capability"], gpu["minor_number"], gpu["device_path"]) == ("9.0", 0, "/dev/nvidia0")
    assert gpu["mig_mode"] == {"capable": True, "current": "disabled", "pending": "disabled"}


@pytest.mark.parametrize("smi", ["h100-80gb-hbm3-580.159.04.xml", None])
def test_real_h100_nvml_and_nvidia_smi_agree(smi):
    record = recorded(H100)
    text = xml(smi) if smi else record["nvidia_smi_xml"]
    seen = parse_nvidia_smi_xml(text)
    host = record["gpu_facts"]
    assert (seen["driver_version"], seen["cuda_version"], seen["attached_gpus"]) == (
        host["driver_version"], host["cuda_driver_version"], host["count"])
    (gpu,) = seen["gpus"]
    (nvml_gpu,) = host["gpus"]
    assert (gpu["uuid"], gpu["pci_bus_id"], gpu["minor_number"], gpu["product_name"]) == (
        nvml_gpu["uuid"], nvml_gpu["pci_bus_id_short"], nvml_gpu["minor_number"], nvml_gpu["name"])


def test_real_h100_container_view_is_compared_by_uuid():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils import _verify

    record = recorded(H100)
    facts = record["gpu_facts"]
    report = {"marker": True, "arch": "x86_64", "nvidia_smi": True, "nvidia_smi_rc": 0,
              "nvidia_smi_xml": record["nvidia_smi_xml"]}
    problems, _details = _verify.compare("x86_64", report, _verify.host_gpus(facts), facts)
    assert problems == []
    other = dict(report, nvidia_smi_xml=record["nvidia_smi_xml"].replace(
        facts["gpus"][0]["uuid"], "GPU-00000000-0000-0000-0000-000000000000"))
    problems, _details = _verify.compare("x86_64", other, _verify.host_gpus(facts), facts)
    assert problems
