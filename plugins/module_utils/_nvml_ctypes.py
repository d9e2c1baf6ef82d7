# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""A dependency-free NVML binding: ``ctypes`` over the driver's ``libnvidia-ml.so.1``.

Why not nvidia-ml-py: the GPU facts must work on a fresh node with the role
defaults, air-gapped sites included, on every distribution and architecture the
collection supports (ppc64le too), and the module needs a dozen read-only NVML
calls.  nvidia-ml-py is packaged by no RHEL release and only by recent Debian
ones, and installing it from an index would add a Python package (and an index
or wheel directory) to every node for those dozen calls.  The NVML C ABI these
calls use has been stable since driver 3xx, and the library itself comes with
the driver: where the driver is, this binding works.

:class:`Nvml` has the shape of ``pynvml`` that :func:`_nvml.collect` reads
(``nvmlInit``, ``nvmlDeviceGet*``, ``NVMLError`` with ``.value``), so the
same collection code runs over this binding or over nvidia-ml-py.

Versioned entry points are tried newest first (``nvmlDeviceGetPciInfo_v3``,
``_v2``, then the original), as the ``nvml.h`` macros of each driver age
resolve them; a function a library does not export raises
``NVML_ERROR_FUNCTION_NOT_FOUND`` (13), which the collection reads as
"not supported".
"""

from __future__ import annotations

import ctypes

__all__ = ["LIBRARY", "Nvml", "NVMLError"]

LIBRARY = "libnvidia-ml.so.1"
# How the library is opened; tests put a recorded library behind it.
CDLL = ctypes.CDLL

NVML_SUCCESS = 0
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13

# Buffer sizes from nvml.h (NVML_*_BUFFER_SIZE), with room to spare.
_DRIVER_BUFFER = 80
_NAME_BUFFER = 96
_UUID_BUFFER = 96
_SERIAL_BUFFER = 30


class NVMLError(Exception):
    """An NVML return code other than success; ``value`` is the code (nvml.h)."""

    def __init__(self, value, text=None):
        super().__init__(value)
        self.value = value
        self.text = text

    def __str__(self):
        return self.text or "NVML error %d" % self.value


class _PciInfo(ctypes.Structure):
    """``nvmlPciInfo_t`` as ``nvmlDeviceGetPciInfo_v2``/``_v3`` fill it."""

    _fields_ = [
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    ]


class _PciInfoV1(ctypes.Structure):
    """The original ``nvmlPciInfo_t`` of ``nvmlDeviceGetPciInfo`` (drivers before 390)."""

    _fields_ = [
        ("busId", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("reserved", ctypes.c_uint * 4),
    ]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def _text(raw):
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


class Nvml:
    """NVML through ``ctypes``; ``loader`` opens the library (``ctypes.CDLL`` on a node)."""

    NVMLError = NVMLError
    NVML_DEVICE_MIG_ENABLE = 1
    NVML_FEATURE_ENABLED = 1

    def __init__(self, loader=None, library=LIBRARY):
        self._loader = loader or CDLL
        self._library = library
        self._lib = None

    # -- plumbing --------------------------------------------------------
    def _function(self, *names):
        for name in names:
            try:
                return getattr(self._lib, name)
            except AttributeError:
                continue
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found (%s)" % names[0])

    def _error_text(self, code):
        try:
            describe = self._lib.nvmlErrorString
            describe.restype = ctypes.c_char_p
            return _text(describe(code))
        except Exception:  # an error while describing an error: the code is enough
            return None

    def _call(self, names, *args):
        if self._lib is None:
            raise NVMLError(1, "Uninitialized")
        code = self._function(*names)(*args)
        if code != NVML_SUCCESS:
            raise NVMLError(code, self._error_text(code))

    def _string(self, names, size, *args):
        buf = ctypes.create_string_buffer(size)
        self._call(names, *(args + (buf, ctypes.c_uint(size))))
        return _text(buf.value)

    def _uint(self, names, *args):
        value = ctypes.c_uint()
        self._call(names, *(args + (ctypes.byref(value),)))
        return value.value

    # -- library ---------------------------------------------------------
    def nvmlInit(self):
        try:
            self._lib = self._loader(self._library)
        except OSError as exc:
            raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND, "Library Not Found (%s)" % exc)
        try:
            init = self._function("nvmlInitWithFlags")
            args = (ctypes.c_uint(0),)
        except NVMLError:
            init = self._function("nvmlInit_v2", "nvmlInit")
            args = ()
        code = init(*args)
        if code != NVML_SUCCESS:
            text = self._error_text(code)
            self._lib = None
            raise NVMLError(code, text)

    def nvmlShutdown(self):
        self._call(("nvmlShutdown",))
        self._lib = None

    # -- system ----------------------------------------------------------
    def nvmlSystemGetDriverVersion(self):
        return self._string(("nvmlSystemGetDriverVersion",), _DRIVER_BUFFER)

    def nvmlSystemGetCudaDriverVersion(self):
        value = ctypes.c_int()
        self._call(("nvmlSystemGetCudaDriverVersion",), ctypes.byref(value))
        return value.value

    def nvmlDeviceGetCount(self):
        return self._uint(("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"))

    def nvmlDeviceGetHandleByIndex(self, index):
        handle = ctypes.c_void_p()
        self._call(("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
                   ctypes.c_uint(index), ctypes.byref(handle))
        return handle

    # -- device ----------------------------------------------------------
    def nvmlDeviceGetName(self, handle):
        return self._string(("nvmlDeviceGetName",), _NAME_BUFFER, handle)

    def nvmlDeviceGetUUID(self, handle):
        return self._string(("nvmlDeviceGetUUID",), _UUID_BUFFER, handle)

    def nvmlDeviceGetSerial(self, handle):
        return self._string(("nvmlDeviceGetSerial",), _SERIAL_BUFFER, handle)

    def nvmlDeviceGetPciInfo(self, handle):
        try:
            function = self._function("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2")
            info = _PciInfo()
        except NVMLError:
            function = self._function("nvmlDeviceGetPciInfo")
            info = _PciInfoV1()
        code = function(handle, ctypes.byref(info))
        if code != NVML_SUCCESS:
            raise NVMLError(code, self._error_text(code))
        return info

    def nvmlDeviceGetMemoryInfo(self, handle):
        memory = _Memory()
        self._call(("nvmlDeviceGetMemoryInfo",), handle, ctypes.byref(memory))
        return memory

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call(("nvmlDeviceGetCudaComputeCapability",), handle, ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value

    def nvmlDeviceGetMigMode(self, handle):
        current, pending = ctypes.c_uint(), ctypes.c_uint()
        self._call(("nvmlDeviceGetMigMode",), handle, ctypes.byref(current), ctypes.byref(pending))
        return current.value, pending.value

    def nvmlDeviceGetPersistenceMode(self, handle):
        return self._uint(("nvmlDeviceGetPersistenceMode",), handle)

    def nvmlDeviceGetMinorNumber(self, handle):
        return self._uint(("nvmlDeviceGetMinorNumber",), handle)
