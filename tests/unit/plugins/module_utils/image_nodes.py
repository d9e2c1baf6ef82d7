# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts results of recorded nodes, for the image-variant tests.

CPU facts come from the recorded /proc/cpuinfo files through the collection's own
``_cpuinfo.parse``; GPU facts either from the test bed's stand-in values files
(molecule/resources/nvidia-standin/gpus/gpuNN.conf, what gpu01 and gpu02 report in
molecule) or from an NVML recording through ``_nvml.collect`` and the collection's
ctypes binding over the recorded library (what gpu_facts itself runs).
"""

import sys
from pathlib import Path

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _cpuinfo, _nvml, _nvml_ctypes

ROOT = Path(__file__).resolve().parents[4]
CPUINFO = ROOT / "tests" / "fixtures" / "cpuinfo"
STANDIN_GPUS = ROOT / "molecule" / "resources" / "nvidia-standin" / "gpus"

BROADWELL = ("x86_64-xeon-e5-2686-v4.txt", "x86_64")
AVX512 = ("x86_64-xeon-avx512-kvm.txt", "x86_64")
POWER8 = ("ppc64le-power8-8335-gta.txt", "ppc64le")
POWER9 = ("ppc64le-power9-powernv.txt", "ppc64le")
POWER10 = ("ppc64le-power10-pseries.txt", "ppc64le")
CORTEX_A53 = ("aarch64-cortex-a53.txt", "arm64")


def cpu(recording):
    name, machine = recording
    return _cpuinfo.parse((CPUINFO / name).read_text(encoding="utf-8"), machine)


def standin_values(node):
    """The stand-in's values file of a test-bed node (``gpu01``) as a dict, comments dropped."""
    values = {}
    for line in (STANDIN_GPUS / ("%s.conf" % node)).read_text(encoding="utf-8").splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            key, _sep, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def standin_facts(node, cpu_recording):
    """What gpu_facts reports on a test-bed node: the stand-in's GPU values and a recorded CPU."""
    values = standin_values(node)
    facts = _nvml.absent(None, "/nonexistent-dev")
    count = int(values["gpu.count"])
    facts.update(
        present=count > 0,
        driver_version=values["driver_version"],
        cuda_driver_version_int=int(values["cuda_driver_version"]),
        cuda_driver_version=_nvml.cuda_version_string(int(values["cuda_driver_version"])),
        count=count,
        gpus=[{
            "index": index,
            "name": values["gpu.%d.name" % index],
            "uuid": values["gpu.%d.uuid" % index],
            "compute_capability": values["gpu.%d.compute_capability" % index],
        } for index in range(count)],
    )
    facts["cpu"] = cpu(cpu_recording)
    return facts


def no_gpu_facts(cpu_recording, reason="NVIDIA kernel driver not loaded"):
    facts = _nvml.absent(reason, "/nonexistent-dev")
    facts["cpu"] = cpu(cpu_recording)
    return facts


def nvml_facts(monkeypatch, recording, cpu_recording):
    """gpu_facts over a recorded libnvidia-ml (tests/fixtures/nvml), through the built-in binding."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fake_libnvml  # pylint: disable=import-outside-toplevel

    lib = fake_libnvml.FakeLibNvml(fake_libnvml.recording(recording))
    with fake_libnvml.installed(monkeypatch, lib):
        facts = _nvml.collect(_nvml_ctypes.Nvml(), "/nonexistent-dev")
    facts["cpu"] = cpu(cpu_recording)
    return facts
