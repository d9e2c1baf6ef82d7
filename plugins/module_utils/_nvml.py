# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""GPU facts from NVML, through any object shaped like nvidia-ml-py's ``pynvml``.

Pure Python: :func:`collect` takes the NVML bindings as an argument (the real
``pynvml`` module on a node, a fake in tests) and never imports them itself.

What counts as "no GPU" rather than a failure: no library, driver not loaded,
driver/library version mismatch, no permission, zero devices.  Each gives
``present: false`` and a ``reason``.  Fields a device does not support (MIG on a
V100, serial on a GeForce, anything an old driver lacks) are ``None``.

Strings are normalised to ``str``: bindings up to 11.510.69 return ``bytes``
from string getters and struct char fields, later ones ``str``.
"""

from __future__ import annotations

import glob
import os

__all__ = ["CONTROL_DEVICES", "absent", "collect", "cuda_version_string", "device_nodes", "short_bus_id", "to_text"]

# NVML return codes (nvml.h); the bindings expose them as NVML_ERROR_* too,
# but a fake or a very old binding may not define all of them.
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18

_UNSUPPORTED = (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND)

_INIT_REASONS = {
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML library libnvidia-ml.so.1 not found (no NVIDIA driver installed)",
    NVML_ERROR_DRIVER_NOT_LOADED: "NVIDIA kernel driver not loaded",
    NVML_ERROR_LIB_RM_VERSION_MISMATCH: ("NVIDIA driver/library version mismatch: the loaded kernel module and "
                                         "libnvidia-ml differ (driver updated without a reboot or module reload)"),
    NVML_ERROR_NO_PERMISSION: "no permission to open the NVIDIA device nodes",
}

CONTROL_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")


def to_text(value):
    """``bytes`` from old bindings become ``str``; everything else is unchanged."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def short_bus_id(bus_id):
    """NVML's ``00000000:3B:00.0`` as sysfs/lspci write it: ``0000:3b:00.0``.

    Old drivers already report a 4-digit domain; both forms map to the same text.
    """
    bus_id = to_text(bus_id)
    if not bus_id or ":" not in bus_id:
        return bus_id
    domain, rest = bus_id.split(":", 1)
    try:
        domain = "%04x" % int(domain, 16)
    except ValueError:
        return bus_id.lower()
    return ("%s:%s" % (domain, rest)).lower()


def cuda_version_string(version):
    """NVML's integer CUDA driver version (12040) as ``"12.4"``."""
    if version is None:
        return None
    return "%d.%d" % (version // 1000, (version % 1000) // 10)


def device_nodes(dev_root="/dev"):
    """The NVIDIA device nodes present under ``dev_root``."""
    control = [os.path.join(dev_root, name) for name in CONTROL_DEVICES
               if os.path.exists(os.path.join(dev_root, name))]
    caps = sorted(glob.glob(os.path.join(dev_root, "nvidia-caps", "*")))
    gpus = sorted((p for p in glob.glob(os.path.join(dev_root, "nvidia[0-9]*"))
                   if os.path.basename(p)[len("nvidia"):].isdigit()),
                  key=lambda p: int(os.path.basename(p)[len("nvidia"):]))
    return {"control": control, "caps": caps, "gpus": gpus}


def absent(reason, dev_root="/dev"):
    """The facts of a node where NVML gives no GPU."""
    return {
        "present": False,
        "reason": reason,
        "driver_version": None,
        "cuda_driver_version": None,
        "cuda_driver_version_int": None,
        "count": 0,
        "gpus": [],
        "device_nodes": device_nodes(dev_root),
        "errors": [],
    }


def _error_code(nvml, err):
    return getattr(err, "value", None)


def _describe(nvml, err):
    code = _error_code(nvml, err)
    try:
        text = str(err)
    except Exception:  # str() of an NVMLError calls back into the library
        text = "NVML error %s" % code
    return code, text


class _Reader:
    """Calls NVML getters, turning "not supported" into ``None``."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.errors = []

    def get(self, label, func, *args):
        try:
            return func(*args)
        except self.nvml.NVMLError as err:
            code, text = _describe(self.nvml, err)
            if code not in _UNSUPPORTED:
                self.errors.append("%s: %s" % (label, text))
            return None


def _gpu(nvml, index, dev_root):
    reader = _Reader(nvml)
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as err:
        return {"index": index, "error": _describe(nvml, err)[1]}

    name = to_text(reader.get("name", nvml.nvmlDeviceGetName, handle))
    uuid = to_text(reader.get("uuid", nvml.nvmlDeviceGetUUID, handle))
    serial = to_text(reader.get("serial", nvml.nvmlDeviceGetSerial, handle))

    pci = reader.get("pci", nvml.nvmlDeviceGetPciInfo, handle)
    bus_id = to_text(getattr(pci, "busId", None)) if pci is not None else None
    device_id = getattr(pci, "pciDeviceId", None) if pci is not None else None

    memory = reader.get("memory", nvml.nvmlDeviceGetMemoryInfo, handle)
    memory_total = getattr(memory, "total", None) if memory is not None else None

    capability = reader.get("compute_capability", nvml.nvmlDeviceGetCudaComputeCapability, handle)
    if capability is not None:
        cc_major, cc_minor = int(capability[0]), int(capability[1])
        compute_capability = "%d.%d" % (cc_major, cc_minor)
    else:
        cc_major = cc_minor = compute_capability = None

    mig = reader.get("mig_mode", getattr(nvml, "nvmlDeviceGetMigMode", _missing(nvml)), handle)
    enabled = getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)
    if mig is not None:
        mig_mode = {"capable": True,
                    "current": "enabled" if mig[0] == enabled else "disabled",
                    "pending": "enabled" if mig[1] == enabled else "disabled"}
    else:
        mig_mode = {"capable": False, "current": None, "pending": None}

    persistence = reader.get("persistence_mode", nvml.nvmlDeviceGetPersistenceMode, handle)
    minor = reader.get("minor_number", nvml.nvmlDeviceGetMinorNumber, handle)
    device_path = os.path.join(dev_root, "nvidia%d" % minor) if minor is not None else None

    return {
        "index": index,
        "name": name,
        "uuid": uuid,
        "serial": serial,
        "pci_bus_id": bus_id,
        "pci_bus_id_short": short_bus_id(bus_id),
        "pci_device_id": "0x%08X" % device_id if device_id is not None else None,
        "memory_total_bytes": memory_total,
        "memory_total_mib": memory_total // (1024 * 1024) if memory_total is not None else None,
        "compute_capability": compute_capability,
        "compute_capability_major": cc_major,
        "compute_capability_minor": cc_minor,
        "mig_mode": mig_mode,
        "persistence_mode": None if persistence is None else persistence == getattr(nvml, "NVML_FEATURE_ENABLED", 1),
        "minor_number": minor,
        "device_path": device_path,
        "device_present": os.path.exists(device_path) if device_path else False,
        "errors": reader.errors,
    }


def _missing(nvml):
    """Stand-in for a getter an old binding does not have at all."""
    def getter(*_args):
        raise nvml.NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
    return getter


def collect(nvml, dev_root="/dev"):
    """Gather GPU facts through ``nvml`` (the ``pynvml`` module or a stand-in)."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        code, text = _describe(nvml, err)
        return absent(_INIT_REASONS.get(code, "NVML initialisation failed: %s" % text), dev_root)

    try:
        reader = _Reader(nvml)
        facts = absent(None, dev_root)
        facts["driver_version"] = to_text(reader.get("driver_version", nvml.nvmlSystemGetDriverVersion))
        cuda = reader.get("cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion)
        facts["cuda_driver_version_int"] = cuda
        facts["cuda_driver_version"] = cuda_version_string(cuda)
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as err:
            facts["reason"] = "cannot count GPUs: %s" % _describe(nvml, err)[1]
            facts["errors"] = reader.errors
            return facts
        facts["count"] = count
        facts["gpus"] = [_gpu(nvml, index, dev_root) for index in range(count)]
        facts["present"] = count > 0
        if count == 0:
            facts["reason"] = "NVIDIA driver loaded but no GPU found"
        facts["errors"] = reader.errors
        return facts
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass  # the facts are gathered; a failing shutdown changes none of them
