# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test bed's stand-in for the NVIDIA driver boundary (STAND-IN FOR TESTS).

molecule/resources/nvidia-standin/ is installed on the test bed's GPU nodes by
molecule's prepare step only.  Here it is compiled with the machine's C
compiler and driven through the REAL nvidia-ml-py (pynvml), whose ctypes
loader is pointed at the freshly built libnvidia-ml.so.1; the stand-in
nvidia-smi's XML goes through the collection's own parser; the runtime
wrapper rewrites temporary OCI bundles and hands over to a fake runc that
records its argv.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

import pynvml
import pytest
import yaml

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import normalize_bus_id, parse_nvidia_smi_xml

ROOT = Path(__file__).resolve().parents[3]
STANDIN = ROOT / "molecule" / "resources" / "nvidia-standin"
GPUS = STANDIN / "gpus"
RUNTIME = STANDIN / "files" / "nvidia-container-runtime"
CTK = STANDIN / "files" / "nvidia-ctk"
FIXTURE_XML = ROOT / "tests" / "fixtures" / "nvidia_smi" / "a100-sxm4-mig-510.47.03.xml"

# The recorded values (gpus/README.md names their sources), written out here
# so that a wrong edit of a values file fails a test instead of being read
# back through the same parser.
V100_SXM2_16GB = {"name": "Tesla V100-SXM2-16GB", "pci_device_id": 0x1DB110DE, "pci_subsystem_id": 0,
                  "memory_total": 16160 * 1024 * 1024, "compute_capability": (7, 0), "mig_mode": None,
                  "persistence_mode": 1}
A100_SXM4_40GB = {"name": "NVIDIA A100-SXM4-40GB", "pci_device_id": 0x20B010DE, "pci_subsystem_id": 0x134F10DE,
                  "memory_total": 40960 * 1024 * 1024, "compute_capability": (8, 0), "mig_mode": [0, 0],
                  "persistence_mode": 0}


def _gpus(model, devices):
    """A node's GPUs: ``model``'s values, each device's (uuid, serial, bus_id), minor numbers in that order."""
    return [dict(model, uuid=uuid, serial=serial, bus_id=bus_id, minor_number=minor)
            for minor, (uuid, serial, bus_id) in enumerate(devices)]


EXPECTED = {
    "gpu01": {
        "driver_version": "470.182.03",
        "cuda_driver_version": 11040,
        "cuda_version": "11.4",
        "gpus": _gpus(V100_SXM2_16GB, [
            ("GPU-29017365-4723-b07f-2ddf-a631c231412d", "0323817061572", "00000000:06:00.0"),
            ("GPU-fd2c28fd-ba69-958e-e127-93e5f585e4f6", "0323817105293", "00000000:07:00.0"),
        ]),
    },
    "gpu02": {
        "driver_version": "535.129.03",
        "cuda_driver_version": 12020,
        "cuda_version": "12.2",
        "gpus": _gpus(A100_SXM4_40GB, [
            ("GPU-faae5314-b87e-87c0-400b-b7cfb9e7b310", "1323121035405", "00000000:2F:00.0"),
            ("GPU-20af7308-7522-d66f-fe01-fb6f0551a4b9", "1323121013540", "00000000:35:00.0"),
            ("GPU-55be19c4-22e1-4622-c7c5-a617a8001574", "1323121015220", "00000000:62:00.0"),
            ("GPU-8029ef2b-47a3-15f7-cca6-5777783049b4", "1323121015264", "00000000:67:00.0"),
        ]),
    },
}
A100 = EXPECTED["gpu02"]["gpus"]

SYMBOLS = [
    "nvmlInit", "nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString",
    "nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlSystemGetNVMLVersion", "nvmlDeviceGetCount", "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID",
    "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetSerial",
    "nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetMigMode", "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetMinorNumber", "nvmlDeviceGetIndex",
]


# --- building ----------------------------------------------------------------

def _compiler():
    return shutil.which(os.environ.get("CC", "cc"))


def _build(out):
    if not _compiler():
        pytest.skip("#### NO C COMPILER (cc): the NVML stand-in cannot be built, so it is NOT tested. "
                    "Install gcc and libc6-dev. ####")
    proc = subprocess.run(["sh", str(STANDIN / "nvml" / "build.sh"), str(out)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("nvml-standin"))


@pytest.fixture(scope="module")
def lib(built):
    return ctypes.CDLL(str(built / "libnvidia-ml.so.1"))


@contextmanager
def real_pynvml(monkeypatch, library):
    """nvidia-ml-py unchanged, except that its CDLL("libnvidia-ml.so.1") loads ``library``."""
    real_cdll = ctypes.CDLL

    def cdll(name, *args, **kwargs):
        if name == "libnvidia-ml.so.1":
            name = str(library)
        return real_cdll(name, *args, **kwargs)

    def reset():
        pynvml.nvmlLib = None
        pynvml._nvmlGetFunctionPointer_cache = {}
        pynvml._nvmlLib_refcount = 0

    monkeypatch.setattr(pynvml, "CDLL", cdll)
    reset()
    try:
        yield pynvml
    finally:
        while pynvml._nvmlLib_refcount > 0:
            pynvml.nvmlShutdown()
        reset()


@pytest.fixture
def nvml(monkeypatch, built):
    def use(conf):
        monkeypatch.setenv("NVIDIA_STANDIN_NVML_CONF", str(conf))
        return real_pynvml(monkeypatch, built / "libnvidia-ml.so.1")
    return use


def test_build_is_deterministic(built, tmp_path):
    again = _build(tmp_path / "again")
    for name in ("libnvidia-ml.so.1", "nvidia-smi"):
        assert (built / name).read_bytes() == (again / name).read_bytes(), name


def test_exports_what_pynvml_and_a_ctypes_binding_look_up(lib):
    missing = [name for name in SYMBOLS if not hasattr(lib, name)]
    assert not missing


def test_library_soname_and_no_rpath(built):
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("readelf not installed")
    dynamic = subprocess.run([readelf, "-d", str(built / "libnvidia-ml.so.1")], capture_output=True, text=True,
                             check=True).stdout
    assert "Library soname: [libnvidia-ml.so.1]" in dynamic
    smi = subprocess.run([readelf, "-d", str(built / "nvidia-smi")], capture_output=True, text=True,
                         check=True).stdout
    assert "RPATH" not in smi and "RUNPATH" not in smi
    assert "libnvidia-ml" not in smi  # loaded with dlopen, not linked


# --- the library through the real nvidia-ml-py ---------------------------------

def _text(value):
    return value.decode() if isinstance(value, bytes) else value


@pytest.mark.parametrize("node", sorted(EXPECTED))
def test_every_recorded_value_is_answered(nvml, node):
    want = EXPECTED[node]
    with nvml(GPUS / ("%s.conf" % node)) as nv:
        nv.nvmlInit()
        assert _text(nv.nvmlSystemGetDriverVersion()) == want["driver_version"]
        assert nv.nvmlSystemGetCudaDriverVersion() == want["cuda_driver_version"]
        assert nv.nvmlSystemGetCudaDriverVersion_v2() == want["cuda_driver_version"]
        nvml_version = "%d.%s" % (want["cuda_driver_version"] // 1000, want["driver_version"])
        assert _text(nv.nvmlSystemGetNVMLVersion()) == nvml_version
        assert nv.nvmlDeviceGetCount() == len(want["gpus"])
        for index, gpu in enumerate(want["gpus"]):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            assert nv.nvmlDeviceGetIndex(handle) == index
            assert _text(nv.nvmlDeviceGetName(handle)) == gpu["name"]
            assert _text(nv.nvmlDeviceGetUUID(handle)) == gpu["uuid"]
            assert _text(nv.nvmlDeviceGetSerial(handle)) == gpu["serial"]
            pci = nv.nvmlDeviceGetPciInfo(handle)
            assert _text(pci.busId) == gpu["bus_id"]
            domain, bus, rest = gpu["bus_id"].split(":")
            assert _text(pci.busIdLegacy) == "%s:%s:%s" % (domain[-4:], bus, rest)
            assert (pci.domain, pci.bus, pci.device) == (int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16))
            assert pci.pciDeviceId == gpu["pci_device_id"]
            assert pci.pciSubSystemId == gpu["pci_subsystem_id"]
            memory = nv.nvmlDeviceGetMemoryInfo(handle)
            assert (memory.total, memory.used, memory.free) == (gpu["memory_total"], 0, gpu["memory_total"])
            assert nv.nvmlDeviceGetCudaComputeCapability(handle) == gpu["compute_capability"]
            if gpu["mig_mode"] is None:
                with pytest.raises(nv.NVMLError_NotSupported):
                    nv.nvmlDeviceGetMigMode(handle)
            else:
                assert nv.nvmlDeviceGetMigMode(handle) == gpu["mig_mode"]
            assert nv.nvmlDeviceGetPersistenceMode(handle) == gpu["persistence_mode"]
            assert nv.nvmlDeviceGetMinorNumber(handle) == gpu["minor_number"]
            # the same device found by UUID (any case) and by bus id (NVML and sysfs forms)
            for other in (nv.nvmlDeviceGetHandleByUUID(gpu["uuid"]),
                          nv.nvmlDeviceGetHandleByUUID(gpu["uuid"].upper()),
                          nv.nvmlDeviceGetHandleByPciBusId(gpu["bus_id"]),
                          nv.nvmlDeviceGetHandleByPciBusId(normalize_bus_id(gpu["bus_id"]))):
                assert nv.nvmlDeviceGetIndex(other) == index
        with pytest.raises(nv.NVMLError_InvalidArgument):
            nv.nvmlDeviceGetHandleByIndex(len(want["gpus"]))
        with pytest.raises(nv.NVMLError_NotFound):
            nv.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
        with pytest.raises(nv.NVMLError_NotFound):
            nv.nvmlDeviceGetHandleByPciBusId("00000000:FE:00.0")
        nv.nvmlShutdown()


def test_missing_values_file_is_driver_not_loaded(nvml, tmp_path):
    with nvml(tmp_path / "absent.conf") as nv:
        with pytest.raises(nv.NVMLError_DriverNotLoaded) as raised:
            nv.nvmlInit()
        assert str(raised.value) == "Driver Not Loaded"
        with pytest.raises(nv.NVMLError_DriverNotLoaded):
            nv.nvmlInitWithFlags(nv.NVML_INIT_FLAG_NO_GPUS)


def test_every_init_entry_point_reads_the_file(lib, monkeypatch, tmp_path):
    monkeypatch.setenv("NVIDIA_STANDIN_NVML_CONF", str(tmp_path / "absent.conf"))
    for name in ("nvmlInit", "nvmlInit_v2"):
        assert getattr(lib, name)() == pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    assert lib.nvmlInitWithFlags(0) == pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    monkeypatch.setenv("NVIDIA_STANDIN_NVML_CONF", str(GPUS / "gpu01.conf"))
    for name in ("nvmlInit", "nvmlInit_v2"):
        assert getattr(lib, name)() == pynvml.NVML_SUCCESS
        assert lib.nvmlShutdown() == pynvml.NVML_SUCCESS


def test_calls_need_init_and_init_is_reference_counted(lib, monkeypatch):
    count = ctypes.c_uint(99)
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == pynvml.NVML_ERROR_UNINITIALIZED
    assert lib.nvmlShutdown() == pynvml.NVML_ERROR_UNINITIALIZED
    monkeypatch.setenv("NVIDIA_STANDIN_NVML_CONF", str(GPUS / "gpu02.conf"))
    assert lib.nvmlInit_v2() == 0
    assert lib.nvmlInitWithFlags(0) == 0
    assert lib.nvmlShutdown() == 0
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0 and count.value == 4
    assert lib.nvmlShutdown() == 0
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == pynvml.NVML_ERROR_UNINITIALIZED


def test_buffers_handles_and_error_strings(lib, monkeypatch):
    lib.nvmlErrorString.restype = ctypes.c_char_p
    assert lib.nvmlErrorString(9) == b"Driver Not Loaded"
    assert lib.nvmlErrorString(3) == b"Not Supported"
    assert lib.nvmlErrorString(12345) == b"Unknown Error"
    monkeypatch.setenv("NVIDIA_STANDIN_NVML_CONF", str(GPUS / "gpu02.conf"))
    assert lib.nvmlInit_v2() == 0
    try:
        handle = ctypes.c_void_p()
        assert lib.nvmlDeviceGetHandleByIndex_v2(2, ctypes.byref(handle)) == 0
        small = ctypes.create_string_buffer(8)
        assert lib.nvmlDeviceGetName(handle, small, 8) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        exact = ctypes.create_string_buffer(len(A100[2]["name"]) + 1)
        assert lib.nvmlDeviceGetName(handle, exact, len(exact)) == 0 and exact.value == A100[2]["name"].encode()
        bogus = ctypes.c_void_p(handle.value + 1)
        minor = ctypes.c_uint()
        assert lib.nvmlDeviceGetMinorNumber(bogus, ctypes.byref(minor)) == pynvml.NVML_ERROR_INVALID_ARGUMENT
        assert lib.nvmlDeviceGetMinorNumber(None, ctypes.byref(minor)) == pynvml.NVML_ERROR_INVALID_ARGUMENT
        assert lib.nvmlDeviceGetMinorNumber(handle, ctypes.byref(minor)) == 0 and minor.value == 2
    finally:
        lib.nvmlShutdown()


def test_unversioned_pci_info_keeps_the_original_52_byte_layout(lib, monkeypatch):
    """NVIDIA's library keeps the pre-R390 ABI under the unversioned name; _v2/_v3 have busId[32]."""
    monkeypatch.setenv("NVIDIA_STANDIN_NVML_CONF", str(GPUS / "gpu02.conf"))
    assert lib.nvmlInit_v2() == 0
    try:
        handle = ctypes.c_void_p()
        assert lib.nvmlDeviceGetHandleByIndex_v2(1, ctypes.byref(handle)) == 0
        buffer = ctypes.create_string_buffer(b"\xaa" * 68, 68)
        assert lib.nvmlDeviceGetPciInfo(handle, buffer) == 0
        raw = buffer.raw
        assert raw[:16].rstrip(b"\0") == b"0000:35:00.0"
        domain, bus, device, device_id, subsystem_id = (int.from_bytes(raw[16 + 4 * i:20 + 4 * i], sys.byteorder)
                                                        for i in range(5))
        assert (domain, bus, device, device_id, subsystem_id) == (0, 0x35, 0, 0x20B010DE, 0x134F10DE)
        assert raw[36:52] == b"\0" * 16
        assert raw[52:68] == b"\xaa" * 16  # nothing written past the old structure
    finally:
        lib.nvmlShutdown()


@pytest.mark.parametrize("line, reason", [
    ("gpu.0.mig_mode=on", "mig_mode"),
    ("gpu.0.colour=green", "unknown GPU key"),
    ("gpu.7.name=extra", "at or above gpu.count"),
    ("no equals sign", "not key=value"),
])
def test_values_file_that_does_not_parse_is_unknown_error(nvml, tmp_path, capfd, line, reason):
    conf = tmp_path / "bad.conf"
    conf.write_text((GPUS / "gpu01.conf").read_text() + line + "\n")
    with nvml(conf) as nv:
        with pytest.raises(nv.NVMLError_Unknown):
            nv.nvmlInit()
    err = capfd.readouterr().err
    assert str(conf) in err and reason in err


def test_comments_after_values_and_optional_values(nvml, tmp_path):
    conf = tmp_path / "terse.conf"
    conf.write_text(
        "# STAND-IN FOR TESTS\n"
        "driver_version=535.129.03   # after blank space: a comment\n"
        "gpu.count=1\n"
        "gpu.0.name=NVIDIA A100-SXM4-40GB\n"
        "gpu.0.uuid=GPU-faae5314-b87e-87c0-400b-b7cfb9e7b310\n"
        "gpu.0.pci_bus_id=0000:2f:00.0\n"
        "gpu.0.minor_number=5\n"
    )
    with nvml(conf) as nv:
        nv.nvmlInit()
        assert _text(nv.nvmlSystemGetDriverVersion()) == "535.129.03"
        with pytest.raises(nv.NVMLError_NotSupported):
            nv.nvmlSystemGetCudaDriverVersion()
        handle = nv.nvmlDeviceGetHandleByIndex(0)
        assert _text(nv.nvmlDeviceGetPciInfo(handle).busId) == "00000000:2F:00.0"
        assert nv.nvmlDeviceGetMinorNumber(handle) == 5
        for call in (nv.nvmlDeviceGetSerial, nv.nvmlDeviceGetMemoryInfo, nv.nvmlDeviceGetMigMode,
                     nv.nvmlDeviceGetPersistenceMode, nv.nvmlDeviceGetCudaComputeCapability):
            with pytest.raises(nv.NVMLError_NotSupported):
                call(handle)


# --- nvidia-smi ----------------------------------------------------------------

def smi(built, conf, *args):
    env = dict(os.environ, LD_LIBRARY_PATH=str(built), NVIDIA_STANDIN_NVML_CONF=str(conf))
    return subprocess.run([str(built / "nvidia-smi"), *args], capture_output=True, text=True, env=env, check=False)


def _paths(element, prefix=""):
    found = set()
    for child in element:
        path = prefix + "/" + child.tag
        found.add(path)
        found |= _paths(child, path)
    return found


@pytest.mark.parametrize("node", sorted(EXPECTED))
def test_nvidia_smi_xml_is_what_the_library_answers(built, node):
    want = EXPECTED[node]
    proc = smi(built, GPUS / ("%s.conf" % node), "-q", "-x")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parsed = parse_nvidia_smi_xml(proc.stdout)
    assert parsed["driver_version"] == want["driver_version"]
    assert parsed["cuda_version"] == want["cuda_version"]
    assert parsed["attached_gpus"] == len(want["gpus"])
    assert parsed["gpus"] == [
        {"uuid": gpu["uuid"], "pci_bus_id": normalize_bus_id(gpu["bus_id"]), "minor_number": gpu["minor_number"],
         "product_name": gpu["name"]}
        for gpu in want["gpus"]
    ]
    root = ET.fromstring(proc.stdout)
    for element, gpu in zip(root.findall("gpu"), want["gpus"]):
        assert element.get("id") == gpu["bus_id"]
        mig = ("N/A", "N/A") if gpu["mig_mode"] is None else tuple(
            "Enabled" if value else "Disabled" for value in gpu["mig_mode"])
        assert (element.findtext("mig_mode/current_mig"), element.findtext("mig_mode/pending_mig")) == mig
        assert element.findtext("serial") == gpu["serial"]
        assert element.findtext("pci/pci_device_id") == "%08X" % gpu["pci_device_id"]
        assert element.findtext("fb_memory_usage/total") == "%d MiB" % (gpu["memory_total"] >> 20)
    # no element a real nvidia-smi -q -x does not have (the recorded A100 log has them all)
    assert _paths(root) <= _paths(ET.parse(FIXTURE_XML).getroot())


@pytest.mark.parametrize("node", sorted(EXPECTED))
def test_nvidia_smi_list(built, node):
    proc = smi(built, GPUS / ("%s.conf" % node), "-L")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        "GPU %d: %s (UUID: %s)" % (index, gpu["name"], gpu["uuid"]) for index, gpu in enumerate(EXPECTED[node]["gpus"])
    ]


def test_nvidia_smi_without_a_driver(built, tmp_path):
    proc = smi(built, tmp_path / "absent.conf", "-q", "-x")
    assert proc.returncode == 9
    assert proc.stdout.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


def test_nvidia_smi_without_devices(built, tmp_path):
    conf = tmp_path / "none.conf"
    conf.write_text("driver_version=535.129.03\ncuda_driver_version=12020\ngpu.count=0\n")
    proc = smi(built, conf, "-L")
    assert (proc.returncode, proc.stdout) == (6, "No devices were found\n")


def test_nvidia_smi_without_the_library(built, tmp_path):
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has a libnvidia-ml of its own")
    proc = subprocess.run([str(built / "nvidia-smi"), "-L"], capture_output=True, text=True, check=False,
                          env=dict(os.environ, LD_LIBRARY_PATH=str(tmp_path)))
    assert proc.returncode == 12
    assert "couldn't find libnvidia-ml.so library" in proc.stdout


def test_nvidia_smi_rejects_what_it_does_not_know(built):
    proc = smi(built, GPUS / "gpu01.conf", "--query-gpu=name")
    assert proc.returncode == 2


# --- the runtime wrapper -------------------------------------------------------

FAKE_RUNC = """#!{python}
import json, os, sys
with open(os.environ["FAKE_RUNC_LOG"], "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
"""


@pytest.fixture
def node(tmp_path, built):
    """A GPU node as the runtime sees it: values file, device files, library, nvidia-smi, runc."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    runc = bin_dir / "runc"
    runc.write_text(FAKE_RUNC.format(python=sys.executable))
    runc.chmod(0o755)
    dev = tmp_path / "dev"
    dev.mkdir()
    # character devices without mknod: links to /dev/null (c 1:3, the numbers install-node.sh uses)
    for name in ["nvidia%d" % gpu["minor_number"] for gpu in A100] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]:
        (dev / name).symlink_to("/dev/null")
    env = dict(
        os.environ,
        PATH="%s%s%s" % (bin_dir, os.pathsep, os.environ.get("PATH", "")),
        FAKE_RUNC_LOG=str(tmp_path / "runc-calls.jsonl"),
        NVIDIA_STANDIN_NVML_CONF=str(GPUS / "gpu02.conf"),
        NVIDIA_STANDIN_DEV=str(dev),
        NVIDIA_STANDIN_LIB=str(built / "libnvidia-ml.so.1"),
        NVIDIA_STANDIN_SMI=str(built / "nvidia-smi"),
        NVIDIA_STANDIN_RUNTIME_LOG=str(tmp_path / "log" / "runtime.log"),
    )
    return {"tmp": tmp_path, "env": env}


def make_bundle(node, env_list):
    bundle = node["tmp"] / "bundle"
    bundle.mkdir(exist_ok=True)
    spec = {
        "ociVersion": "1.0.2-dev",
        "process": {"args": ["/verify"], "env": ["PATH=/usr/bin:/bin"] + env_list, "cwd": "/"},
        "root": {"path": str(bundle / "rootfs")},
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
        "linux": {"resources": {"devices": [{"allow": False, "access": "rwm"}]}, "namespaces": [{"type": "pid"}]},
    }
    (bundle / "config.json").write_text(json.dumps(spec, indent=4))
    return bundle


def docker_argv(bundle):
    return ["--root", "/var/run/docker/runtime-runc/moby", "--log", "/run/x/log.json", "--log-format", "json",
            "--systemd-cgroup", "create", "--bundle", str(bundle), "--pid-file", "/run/x/init.pid", "abc123"]


def run_runtime(node, args, cwd=None):
    return subprocess.run([sys.executable, str(RUNTIME), *args], capture_output=True, text=True, env=node["env"],
                          cwd=cwd, check=False)


def runc_calls(node):
    path = Path(node["env"]["FAKE_RUNC_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def runtime_log(node):
    return [json.loads(line) for line in Path(node["env"]["NVIDIA_STANDIN_RUNTIME_LOG"]).read_text().splitlines()]


def container_view(bundle):
    spec = json.loads((bundle / "config.json").read_text())
    devices = {device["path"]: device for device in spec["linux"].get("devices") or []}
    mounts = {mount["destination"]: mount for mount in spec["mounts"]}
    return spec, devices, mounts


def create(node, visible, extra_env=()):
    env_list = list(extra_env)
    if visible is not None:
        env_list.append("NVIDIA_VISIBLE_DEVICES=%s" % visible)
    bundle = make_bundle(node, env_list)
    args = docker_argv(bundle)
    proc = run_runtime(node, args)
    return proc, bundle, args


def _lib_dir():
    """Where the runtime mounts the library: the multiarch directory, as NVIDIA's runtime does."""
    machine = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}
    return "/usr/lib/%s/libnvidia-ml.so.1" % (sysconfig.get_config_var("MULTIARCH") or machine[os.uname().machine])


@pytest.mark.parametrize("visible, indices", [
    ("1,3", [1, 3]),
    ("3, 1,1", [1, 3]),  # PCI order, each once
    (A100[3]["uuid"].upper() + "," + A100[1]["uuid"], [1, 3]),
    ("2," + A100[0]["uuid"], [0, 2]),
    ("all", [0, 1, 2, 3]),
])
def test_runtime_gives_the_selected_gpus(node, visible, indices):
    proc, bundle, args = create(node, visible)
    assert proc.returncode == 0, proc.stderr
    assert runc_calls(node) == [args]
    spec, devices, mounts = container_view(bundle)
    minors = [A100[i]["minor_number"] for i in indices]
    expected_devices = ["/dev/nvidia%d" % minor for minor in minors] + [
        "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert sorted(devices) == sorted(expected_devices)
    null = os.stat("/dev/null").st_rdev
    for device in devices.values():
        assert (device["type"], device["major"], device["minor"]) == ("c", os.major(null), os.minor(null))
    allowed = [rule for rule in spec["linux"]["resources"]["devices"] if rule["allow"]]
    assert len(allowed) == len(expected_devices)
    assert all(rule["access"] == "rwm" for rule in allowed)
    # read-only binds of the values file, the library and nvidia-smi
    conf_mount = mounts["/etc/nvidia-standin/nvml.conf"]
    assert conf_mount["options"][:1] == ["ro"] and conf_mount["type"] == "bind"
    assert Path(conf_mount["source"]).parent == bundle
    assert mounts["/usr/bin/nvidia-smi"]["source"] == node["env"]["NVIDIA_STANDIN_SMI"]
    assert mounts[_lib_dir()]["source"] == node["env"]["NVIDIA_STANDIN_LIB"]
    assert all("ro" in mounts[path]["options"] for path in mounts if path != "/proc")
    # the log names the GPUs
    record = runtime_log(node)[-1]
    assert record["command"] == "create"
    assert record["uuids"] == [A100[i]["uuid"] for i in indices]
    assert record["driver_capabilities"] is None


def test_container_values_file_is_what_nvml_in_the_container_sees(node, nvml):
    proc, bundle, unused_args = create(node, A100[3]["uuid"] + ",1")
    assert proc.returncode == 0, proc.stderr
    spec, dummy, mounts = container_view(bundle)
    conf = Path(mounts["/etc/nvidia-standin/nvml.conf"]["source"])
    assert oct(stat.S_IMODE(conf.stat().st_mode)) == oct(0o644)
    assert "STAND-IN FOR TESTS" in conf.read_text()
    with nvml(conf) as nv:
        nv.nvmlInit()
        assert _text(nv.nvmlSystemGetDriverVersion()) == "535.129.03"
        assert nv.nvmlSystemGetCudaDriverVersion() == 12020
        assert nv.nvmlDeviceGetCount() == 2
        seen = []
        for index in range(2):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            seen.append((_text(nv.nvmlDeviceGetUUID(handle)), nv.nvmlDeviceGetMinorNumber(handle),
                         _text(nv.nvmlDeviceGetPciInfo(handle).busId), nv.nvmlDeviceGetMigMode(handle)))
        assert seen == [(A100[i]["uuid"], A100[i]["minor_number"], A100[i]["bus_id"], [0, 0]) for i in (1, 3)]
    # and the stand-in nvidia-smi there reports the same two GPUs
    parsed = parse_nvidia_smi_xml(smi(Path(node["env"]["NVIDIA_STANDIN_LIB"]).parent, conf, "-q", "-x").stdout)
    assert [gpu["uuid"] for gpu in parsed["gpus"]] == [A100[1]["uuid"], A100[3]["uuid"]]
    assert [gpu["minor_number"] for gpu in parsed["gpus"]] == [1, 3]


@pytest.mark.parametrize("visible", [None, "", "void"])
def test_runtime_leaves_a_non_gpu_container_alone(node, visible):
    bundle = make_bundle(node, [] if visible is None else ["NVIDIA_VISIBLE_DEVICES=%s" % visible])
    before = (bundle / "config.json").read_bytes()
    args = docker_argv(bundle)
    proc = run_runtime(node, args)
    assert proc.returncode == 0, proc.stderr
    assert (bundle / "config.json").read_bytes() == before
    assert sorted(path.name for path in bundle.iterdir()) == ["config.json"]
    assert runc_calls(node) == [args]
    assert runtime_log(node)[-1]["decision"].startswith("runc:")


def test_runtime_none_gives_driver_files_and_no_gpu(node, nvml):
    proc, bundle, unused_args = create(node, "none")
    assert proc.returncode == 0, proc.stderr
    dummy, devices, mounts = container_view(bundle)
    assert sorted(devices) == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"]
    assert {"/etc/nvidia-standin/nvml.conf", "/usr/bin/nvidia-smi", _lib_dir()} <= set(mounts)
    with nvml(mounts["/etc/nvidia-standin/nvml.conf"]["source"]) as nv:
        nv.nvmlInit()
        assert nv.nvmlDeviceGetCount() == 0


def test_runtime_rejects_an_unknown_device_like_the_real_one(node):
    unknown = "GPU-00000000-1111-2222-3333-444444444444"
    message = "nvidia-container-cli: device error: %s: unknown device" % unknown
    bundle = make_bundle(node, ["NVIDIA_VISIBLE_DEVICES=0," + unknown])
    runc_log = node["tmp"] / "runc-log.json"
    args = docker_argv(bundle)
    args[args.index("/run/x/log.json")] = str(runc_log)
    proc = run_runtime(node, args)
    assert proc.returncode != 0
    assert message in proc.stderr
    # where containerd looks for the reason a runtime failed (Docker: "OCI runtime create failed: <msg>")
    entry = json.loads(runc_log.read_text().splitlines()[-1])
    assert (entry["level"], entry["msg"]) == ("error", message)
    assert runc_calls(node) == []  # runc never ran
    spec, devices, dummy = container_view(bundle)
    assert not devices
    record = runtime_log(node)[-1]
    assert record["decision"] == "error" and unknown in record["error"]


@pytest.mark.parametrize("visible", ["4", "MIG-0d5e0c1d-9a8c-5b1d-8d0a-0f0c2b0e0a0a", "0:1"])
def test_runtime_rejects_indices_and_ids_the_node_does_not_have(node, visible):
    proc, dummy, dummy2 = create(node, visible)
    assert proc.returncode != 0
    assert "%s: unknown device" % visible in proc.stderr


def test_runtime_respects_driver_capabilities(node):
    proc, bundle, unused_args = create(node, "0", extra_env=["NVIDIA_DRIVER_CAPABILITIES=compute"])
    assert proc.returncode == 0, proc.stderr
    dummy, devices, mounts = container_view(bundle)
    assert "/dev/nvidia0" in devices
    assert set(mounts) == {"/proc"}  # no utility capability: no NVML, no nvidia-smi
    assert runtime_log(node)[-1]["driver_capabilities"] == "compute"
    proc, bundle, unused_args = create(node, "0", extra_env=["NVIDIA_DRIVER_CAPABILITIES=compute,utility"])
    assert "/usr/bin/nvidia-smi" in container_view(bundle)[2]


@pytest.mark.parametrize("args", [
    ["--root", "/r", "start", "abc123"],
    ["--root", "/r", "delete", "--force", "abc123"],
    ["state", "abc123"],
    ["--root", "/r", "kill", "abc123", "9"],
])
def test_other_subcommands_go_to_runc_unchanged(node, args):
    proc = run_runtime(node, args)
    assert proc.returncode == 0, proc.stderr
    assert runc_calls(node) == [args]
    assert runtime_log(node)[-1]["command"] == (args[2] if args[0] == "--root" else args[0])


def test_bundle_flag_forms_and_working_directory(node):
    for form in ("-b", "--bundle=", "default"):
        bundle = make_bundle(node, ["NVIDIA_VISIBLE_DEVICES=0"])
        if form == "default":
            args, cwd = ["create", "abc123"], str(bundle)
        elif form.endswith("="):
            args, cwd = ["create", form + str(bundle), "abc123"], None
        else:
            args, cwd = ["create", form, str(bundle), "abc123"], None
        proc = run_runtime(node, args, cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        assert "/dev/nvidia0" in container_view(bundle)[1], form


def test_bundle_named_create_is_not_a_create(node):
    args = ["--root", "/r", "start", "--bundle", "create"]
    proc = run_runtime(node, args)
    assert proc.returncode == 0, proc.stderr
    assert runtime_log(node)[-1]["command"] == "start"


def test_node_without_the_stand_in_driver_is_plain_runc(node, tmp_path):
    node["env"]["NVIDIA_STANDIN_NVML_CONF"] = str(tmp_path / "absent.conf")
    bundle = make_bundle(node, ["NVIDIA_VISIBLE_DEVICES=all"])
    before = (bundle / "config.json").read_bytes()
    proc = run_runtime(node, docker_argv(bundle))
    assert proc.returncode == 0, proc.stderr
    assert (bundle / "config.json").read_bytes() == before
    assert "no stand-in driver" in runtime_log(node)[-1]["decision"]


def test_missing_device_file_fails_the_create(node):
    (Path(node["env"]["NVIDIA_STANDIN_DEV"]) / "nvidia2").unlink()
    proc, dummy, dummy2 = create(node, "2")
    assert proc.returncode != 0
    assert "nvidia2" in proc.stderr
    assert runc_calls(node) == []


# --- nvidia-ctk cdi generate ---------------------------------------------------

def test_cdi_spec_names_each_gpu_by_index_and_uuid(tmp_path):
    env = dict(os.environ, NVIDIA_STANDIN_NVML_CONF=str(GPUS / "gpu02.conf"),
               NVIDIA_STANDIN_DRIVER_VERSION_FILE=str(tmp_path / "absent"))
    out = subprocess.run(["sh", str(CTK), "--quiet", "cdi", "generate"], capture_output=True, text=True, env=env,
                         check=True).stdout
    spec = yaml.safe_load(out)
    assert spec["kind"] == "nvidia.com/gpu"
    devices = {device["name"]: [node["path"] for node in device["containerEdits"]["deviceNodes"]]
               for device in spec["devices"]}
    expected = {}
    for index, gpu in enumerate(A100):
        expected[str(index)] = expected[gpu["uuid"]] = ["/dev/nvidia%d" % gpu["minor_number"]]
    expected["all"] = ["/dev/nvidia%d" % gpu["minor_number"] for gpu in A100]
    assert devices == expected
    assert [node["path"] for node in spec["containerEdits"]["deviceNodes"]] == [
        "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert spec["containerEdits"]["env"] == ["NVIDIA_STANDIN_DRIVER_VERSION=535.129.03"]
    # a driver-version file (how the molecule tests simulate an upgrade) wins
    (tmp_path / "driver-version").write_text("999.99.99\n")
    env["NVIDIA_STANDIN_DRIVER_VERSION_FILE"] = str(tmp_path / "driver-version")
    out = subprocess.run(["sh", str(CTK), "cdi", "generate"], capture_output=True, text=True, env=env, check=True).stdout
    assert yaml.safe_load(out)["containerEdits"]["env"] == ["NVIDIA_STANDIN_DRIVER_VERSION=999.99.99"]


def test_cdi_spec_without_a_driver_has_only_all(tmp_path):
    env = dict(os.environ, NVIDIA_STANDIN_NVML_CONF=str(tmp_path / "absent.conf"),
               NVIDIA_STANDIN_DRIVER_VERSION_FILE=str(tmp_path / "absent"))
    spec = yaml.safe_load(subprocess.run(["sh", str(CTK), "cdi", "generate"], capture_output=True, text=True, env=env,
                                         check=True).stdout)
    assert [device["name"] for device in spec["devices"]] == ["all"]
    assert "deviceNodes" not in spec["containerEdits"]


def test_every_stand_in_file_says_so():
    files = [path for path in STANDIN.rglob("*") if path.is_file()]
    assert len(files) >= 12
    unlabelled = [str(path.relative_to(ROOT)) for path in files if "STAND-IN FOR TESTS" not in path.read_text()]
    assert not unlabelled


def test_values_files_agree_with_the_readme():
    readme = (GPUS / "README.md").read_text()
    for node_name, want in EXPECTED.items():
        assert "`%s.conf`" % node_name in readme
        assert want["driver_version"] in readme
        for gpu in want["gpus"]:
            assert gpu["uuid"] in readme and gpu["serial"] in readme
    assert re.search(r"gpu01\.conf: assembled from two sources", readme)


def test_runtime_uses_lib64_and_rebuilds_the_ldcache_in_an_rpm_layout_rootfs(node):
    """An RPM-layout image (/usr/lib64, no multiarch directory, an /etc/ld.so.conf): the library goes to
    /usr/lib64 and the container's ld.so.cache is rebuilt with it, as NVIDIA's ldcache hook does."""
    bundle = make_bundle(node, ["NVIDIA_VISIBLE_DEVICES=0"])
    rootfs = bundle / "rootfs"
    (rootfs / "usr" / "lib64").mkdir(parents=True)
    (rootfs / "etc").mkdir()
    (rootfs / "etc" / "ld.so.conf").write_text("/usr/lib64\n")
    proc = run_runtime(node, docker_argv(bundle))
    assert proc.returncode == 0, proc.stderr
    dummy, dummy, mounts = container_view(bundle)
    assert mounts["/usr/lib64/libnvidia-ml.so.1"]["source"] == node["env"]["NVIDIA_STANDIN_LIB"]
    assert _lib_dir() not in mounts
    record = runtime_log(node)[-1]
    assert record["ldcache"] == "ldconfig -r: exit 0", record
    cache = (rootfs / "etc" / "ld.so.cache").read_bytes()
    assert b"/usr/lib64/libnvidia-ml.so.1" in cache


def test_runtime_keeps_the_multiarch_directory_when_the_rootfs_has_it(node):
    bundle = make_bundle(node, ["NVIDIA_VISIBLE_DEVICES=0"])
    rootfs = bundle / "rootfs"
    (rootfs / "usr" / "lib64").mkdir(parents=True)
    (rootfs / _lib_dir().rsplit("/", 1)[0].lstrip("/")).mkdir(parents=True)
    proc = run_runtime(node, docker_argv(bundle))
    assert proc.returncode == 0, proc.stderr
    dummy, dummy, mounts = container_view(bundle)
    assert _lib_dir() in mounts and "/usr/lib64/libnvidia-ml.so.1" not in mounts
    assert "ldcache" not in runtime_log(node)[-1]
