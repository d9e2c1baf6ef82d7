# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for ``libnvidia-ml.so.1`` underneath the real nvidia-ml-py.

The real ``pynvml`` module is imported and used unchanged; only the ctypes
library it loads is replaced: ``pynvml.CDLL("libnvidia-ml.so.1")`` returns a
:class:`FakeLibNvml` whose "C functions" fill the ctypes buffers, structs and
out-pointers that pynvml passes them, with values from a recording in
tests/fixtures/nvml/.  Everything above the C boundary (argument marshalling,
``_nvmlCheckReturn``, error classes, bytes/str conversion) is nvidia-ml-py's own.
"""

import ctypes
import json
from contextlib import contextmanager
from pathlib import Path

import pynvml

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _nvml_ctypes

RECORDINGS = Path(__file__).resolve().parents[3] / "fixtures" / "nvml"

_ERROR_STRINGS = {
    pynvml.NVML_ERROR_DRIVER_NOT_LOADED: b"Driver Not Loaded",
    pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH: b"RM has detected an NVML/RM version mismatch.",
    pynvml.NVML_ERROR_GPU_IS_LOST: b"GPU is lost",
    pynvml.NVML_ERROR_NOT_SUPPORTED: b"Not Supported",
    pynvml.NVML_ERROR_NO_PERMISSION: b"Insufficient Permissions",
}


def recording(name):
    return json.loads((RECORDINGS / name).read_text(encoding="utf-8"))


def _code(value):
    """A recorded ``"NVML_ERROR_X"`` string -> its return code, else None."""
    if isinstance(value, str) and value.startswith("NVML_ERROR_"):
        return getattr(pynvml, value)
    return None


class _CFunction:
    """A callable that, like a ctypes function pointer, takes attributes (restype)."""

    def __init__(self, name, impl, calls):
        self.__name__ = name
        self._impl = impl
        self._calls = calls

    def __call__(self, *args):
        self._calls.append(self.__name__)
        return self._impl(*args)


def _out(ref, value):
    ref._obj.value = value


class FakeLibNvml:
    """The C library as NVML would behave with the recorded devices.

    ``init_result`` is what ``nvmlInitWithFlags`` returns (an NVML return
    code); ``missing`` names functions the library does not export.
    """

    def __init__(self, rec=None, init_result=pynvml.NVML_SUCCESS, missing=()):
        self.rec = rec or {"driver_version": "0", "cuda_driver_version": 0, "devices": [], "missing_functions": []}
        self.init_result = init_result
        self.missing = set(missing) | set(self.rec.get("missing_functions", []))
        self.calls = []
        self.initialised = 0
        self._functions = {}
        for name in dir(self):
            if name.startswith("nvml") and name not in self.missing:
                self._functions[name] = _CFunction(name, getattr(self, name), self.calls)

    def __getattribute__(self, name):
        if name.startswith("nvml"):
            if name in object.__getattribute__(self, "missing"):
                raise AttributeError(name)
            functions = object.__getattribute__(self, "__dict__").get("_functions")
            if functions and name in functions:
                return functions[name]
        return object.__getattribute__(self, name)

    # -- helpers ---------------------------------------------------------
    def _device(self, handle):
        index = ctypes.cast(handle, ctypes.c_void_p).value - 1
        return self.rec["devices"][index]

    def _value(self, value, setter):
        code = _code(value)
        if code is not None:
            return code
        setter(value)
        return pynvml.NVML_SUCCESS

    # -- library ---------------------------------------------------------
    def nvmlInitWithFlags(self, flags):
        if self.init_result == pynvml.NVML_SUCCESS:
            self.initialised += 1
        return self.init_result

    def nvmlShutdown(self):
        self.initialised -= 1
        return pynvml.NVML_SUCCESS

    def nvmlErrorString(self, result):
        return _ERROR_STRINGS.get(result, b"Unknown Error")

    # -- system ----------------------------------------------------------
    def nvmlSystemGetDriverVersion(self, buf, size):
        buf.value = self.rec["driver_version"].encode()
        return pynvml.NVML_SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, ref):
        return self._value(self.rec["cuda_driver_version"], lambda v: _out(ref, v))

    def nvmlSystemGetCudaDriverVersion_v2(self, ref):
        return self.nvmlSystemGetCudaDriverVersion(ref)

    def nvmlDeviceGetCount_v2(self, ref):
        _out(ref, len(self.rec["devices"]))
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index, ref):
        if index.value >= len(self.rec["devices"]):
            return pynvml.NVML_ERROR_INVALID_ARGUMENT
        # A non-NULL opaque pointer that encodes the index.
        ctypes.cast(ctypes.pointer(ref._obj), ctypes.POINTER(ctypes.c_void_p)).contents.value = index.value + 1
        return pynvml.NVML_SUCCESS

    # -- device ----------------------------------------------------------
    def _string(self, handle, key, buf):
        def setter(value):
            buf.value = value.encode()
        return self._value(self._device(handle)[key], setter)

    def nvmlDeviceGetName(self, handle, buf, size):
        return self._string(handle, "name", buf)

    def nvmlDeviceGetUUID(self, handle, buf, size):
        return self._string(handle, "uuid", buf)

    def nvmlDeviceGetSerial(self, handle, buf, size):
        return self._string(handle, "serial", buf)

    def nvmlDeviceGetPciInfo_v3(self, handle, ref):
        pci = self._device(handle)["pci"]
        info = ref._obj
        info.busId = pci["bus_id"].encode()
        info.busIdLegacy = pci["bus_id"].encode()
        info.domain = pci["domain"]
        info.bus = pci["bus"]
        info.device = pci["device"]
        info.pciDeviceId = pci["pci_device_id"]
        info.pciSubSystemId = pci.get("pci_subsystem_id", 0)
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetMemoryInfo(self, handle, ref):
        total = self._device(handle)["memory_total_mib"] * 1024 * 1024
        ref._obj.total = total
        ref._obj.free = total
        ref._obj.used = 0
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetCudaComputeCapability(self, handle, major, minor):
        def setter(value):
            _out(major, value[0])
            _out(minor, value[1])
        return self._value(self._device(handle)["compute_capability"], setter)

    def nvmlDeviceGetMigMode(self, handle, current, pending):
        def setter(value):
            _out(current, value[0])
            _out(pending, value[1])
        return self._value(self._device(handle)["mig_mode"], setter)

    def nvmlDeviceGetPersistenceMode(self, handle, ref):
        return self._value(self._device(handle)["persistence_mode"], lambda v: _out(ref, v))

    def nvmlDeviceGetMinorNumber(self, handle, ref):
        return self._value(self._device(handle)["minor_number"], lambda v: _out(ref, v))


def _reset_pynvml():
    pynvml.nvmlLib = None
    pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml._nvmlLib_refcount = 0


@contextmanager
def installed(monkeypatch, lib):
    """Make ``pynvml`` load ``lib`` (or fail to find the library when ``lib`` is None)."""
    def fake_cdll(name, *args, **kwargs):
        assert name == "libnvidia-ml.so.1"
        if lib is None:
            raise OSError("libnvidia-ml.so.1: cannot open shared object file: No such file or directory")
        return lib

    _reset_pynvml()
    monkeypatch.setattr(pynvml, "CDLL", fake_cdll)
    # The collection's own binding opens the library the same way.
    monkeypatch.setattr(_nvml_ctypes, "CDLL", fake_cdll)
    try:
        yield pynvml
    finally:
        _reset_pynvml()
