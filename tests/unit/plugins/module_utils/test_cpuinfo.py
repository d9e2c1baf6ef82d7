# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU facts for image choice, from real /proc/cpuinfo samples."""

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _cpuinfo

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "cpuinfo"


def parse(name, machine):
    return _cpuinfo.parse((FIXTURES / name).read_text(encoding="utf-8"), machine)


@pytest.mark.parametrize("name, level, has_avx512", [
    ("x86_64-xeon-e5-2686-v4.txt", "v3", False),
    ("x86_64-xeon-avx512-kvm.txt", "v4", True),
])
def test_x86_64_levels(name, level, has_avx512):
    facts = parse(name, "x86_64")
    assert facts["architecture"] == "x86_64" and facts["vendor"] == "GenuineIntel"
    assert facts["x86_64_level"] == level
    assert {"avx", "avx2", "fma", "sse4_2"} <= set(facts["isa_flags"])
    assert ("avx512f" in facts["isa_flags"]) is has_avx512
    assert facts["power_generation"] is None


def test_broadwell_model_name():
    assert parse("x86_64-xeon-e5-2686-v4.txt", "x86_64")["model_name"] == "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz"


@pytest.mark.parametrize("name, generation, platform", [
    ("ppc64le-power8-8335-gta.txt", "POWER8", "PowerNV"),
    ("ppc64le-power9-powernv.txt", "POWER9", "PowerNV"),
    ("ppc64le-power10-pseries.txt", "POWER10", "pSeries"),
])
def test_power_generations(name, generation, platform):
    facts = parse(name, "ppc64le")
    assert facts["architecture"] == "ppc64le"
    assert facts["power_generation"] == generation
    assert facts["platform"] == platform
    assert facts["flags"] == ["altivec"]
    assert facts["x86_64_level"] is None


def test_power8_machine_model():
    assert parse("ppc64le-power8-8335-gta.txt", "ppc64le")["machine_model"] == "8335-GTA"


def test_aarch64_old_layout():
    facts = parse("aarch64-cortex-a53.txt", "arm64")
    assert facts["architecture"] == "aarch64"
    assert facts["flags"] == ["fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32"]
    assert facts["isa_flags"] == ["asimd"]
    assert facts["vendor"] == "0x41"
    assert facts["model_name"] == "AArch64 Processor rev 3 (aarch64)"


@pytest.mark.parametrize("flags, level", [
    ([], None),
    (["lm", "cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2"], "v1"),
    # v2 without popcnt stays v1; v3 flags without v2 do not count
    (["lm", "cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2", "cx16", "lahf_lm", "pni", "sse4_1", "sse4_2", "ssse3",
      "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"], "v1"),
])
def test_level_rules(flags, level):
    assert _cpuinfo.x86_64_level(flags) == level


@pytest.mark.parametrize("machine, arch", [("AMD64", "x86_64"), ("ppc64el", "ppc64le"), ("arm64", "aarch64"), ("ppc64le", "ppc64le")])
def test_machine_names(machine, arch):
    assert _cpuinfo.normalize_machine(machine) == arch


def test_empty_cpuinfo_keeps_architecture():
    facts = _cpuinfo.parse("", "x86_64")
    assert facts["architecture"] == "x86_64" and facts["x86_64_level"] is None and facts["flags"] == []
