# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""CPU facts for choosing a container image, from ``/proc/cpuinfo`` text.

Grammar: ``/proc/cpuinfo`` is blocks of ``key<TAB or spaces>: value`` lines
separated by blank lines, one block per logical CPU (x86, ppc64le) plus, on
ppc64le, a trailing platform block; old aarch64 kernels print one block with
a ``Features`` line.  The first block is representative: heterogeneous flags
across CPUs are not something image choice can use.

* x86_64: the ``flags`` line.  The x86-64 micro-architecture level is the
  highest of v1..v4 whose flag set (x86-64 psABI, Linux flag names: ``pni`` is
  SSE3, ``abm`` is LZCNT) is fully present.
* ppc64le: the ``cpu`` line, e.g. ``POWER9, altivec supported`` or
  ``POWER8 (raw), altivec supported`` -> ``POWER9`` / ``POWER8``.
* aarch64: the ``Features`` line.
"""

from __future__ import annotations

import re

from ._platform import machine

__all__ = ["X86_64_LEVELS", "ISA_FLAGS", "normalize_machine", "parse", "x86_64_level"]

# x86-64 psABI micro-architecture levels, as Linux names the flags.
X86_64_LEVELS = (
    ("v1", frozenset(["lm", "cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2"])),
    ("v2", frozenset(["cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"])),
    ("v3", frozenset(["avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"])),
    ("v4", frozenset(["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"])),
)

# Flags that decide which build of a framework runs (TensorFlow's "compiled to
# use: SSE4.1 SSE4.2 AVX AVX2 FMA" warning, AVX-512 builds that dump core).
ISA_FLAGS = {
    "x86_64": ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512cd", "avx512dq",
               "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"),
    "aarch64": ("asimd", "sve", "sve2", "bf16", "i8mm", "atomics", "fphp", "asimdhp", "asimddp"),
}

_POWER_RE = re.compile(r"\bPOWER(\d+)", re.IGNORECASE)


def normalize_machine(name):
    """``platform.machine()`` / ``uname -m`` / dpkg names -> one spelling (the kernel's)."""
    return machine(name)


def _first_block(text):
    fields = {}
    for line in text.splitlines():
        if not line.strip():
            if fields.get("processor") is not None and ("flags" in fields or "cpu" in fields or "features" in fields):
                break
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key not in fields:
            fields[key] = value.strip()
    return fields


def _platform_fields(text):
    """Keys of the trailing ppc64le platform block (``platform``, ``model``...)."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("platform", "model", "machine"):
            fields[key.strip().lower()] = value.strip()
    return fields


def x86_64_level(flags):
    """The highest x86-64 level (``"v1"``..``"v4"``) all of whose flags are present."""
    have = set(flags)
    level = None
    for name, required in X86_64_LEVELS:
        if not required <= have:
            break
        level = name
    return level


def parse(text, machine):
    """CPU facts from ``/proc/cpuinfo`` text and the kernel's machine name."""
    arch = normalize_machine(machine)
    block = _first_block(text or "")
    facts = {
        "architecture": arch,
        "model_name": None,
        "vendor": None,
        "flags": [],
        "isa_flags": [],
        "x86_64_level": None,
        "power_generation": None,
        "platform": None,
        "machine_model": None,
    }
    if arch == "x86_64":
        flags = block.get("flags", "").split()
        facts["model_name"] = block.get("model name")
        facts["vendor"] = block.get("vendor_id")
        facts["flags"] = flags
        facts["x86_64_level"] = x86_64_level(flags)
    elif arch in ("ppc64le", "ppc64"):
        cpu = block.get("cpu")
        facts["model_name"] = cpu
        facts["vendor"] = "IBM"
        match = _POWER_RE.search(cpu or "")
        if match:
            facts["power_generation"] = "POWER%s" % match.group(1)
        flags = []
        if cpu and "altivec supported" in cpu.lower():
            flags.append("altivec")
        facts["flags"] = flags
        platform = _platform_fields(text or "")
        facts["platform"] = platform.get("platform")
        facts["machine_model"] = platform.get("model")
    elif arch == "aarch64":
        facts["flags"] = block.get("features", "").split()
        facts["vendor"] = block.get("cpu implementer")
        # Old kernels: "Processor : AArch64 Processor rev 3 (aarch64)" before the numbered lines.
        processor = block.get("processor") or ""
        facts["model_name"] = block.get("model name") or (None if processor.isdigit() else processor or None)
    wanted = ISA_FLAGS.get(arch, ())
    facts["isa_flags"] = [flag for flag in wanted if flag in facts["flags"]]
    return facts
