# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi -q -x`` output, in the per-GPU shape of :mod:`_nvml` facts.

A container sees GPUs through nvidia-smi, the host through NVML; this parser
makes the two comparable (match by UUID, then bus id, minor number, driver).

Grammar: ``<nvidia_smi_log>`` holds ``<driver_version>``, ``<cuda_version>``
(absent before driver ~410), ``<attached_gpus>`` and one ``<gpu id="BUS-ID">``
per visible GPU.  Inside a GPU the elements we read are ``product_name``,
``uuid``, ``serial``, ``minor_number``, ``persistence_mode``,
``mig_mode/current_mig|pending_mig``, ``pci/pci_bus_id`` and
``fb_memory_usage/total`` (``"40960 MiB"``).  Any value may be ``N/A``, which
becomes ``None``.  The DOCTYPE names a DTD that is never fetched; the DTD
version changes between drivers and is ignored.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.hpc.gpu_containers.plugins.module_utils._nvml import short_bus_id

__all__ = ["NvidiaSmiError", "parse"]

_NOT_AVAILABLE = ("", "N/A", "Not Supported", "[N/A]", "[Not Supported]")


class NvidiaSmiError(ValueError):
    """The text is not ``nvidia-smi -q -x`` output."""


def _text(element, path):
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in _NOT_AVAILABLE else value


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _mib(value):
    if value is None:
        return None
    number = value.split()[0]
    return _int(number)


def _on_off(value):
    if value is None:
        return None
    return value.lower() == "enabled"


def _gpu(element, index):
    bus_id = _text(element, "pci/pci_bus_id") or element.get("id")
    current = _text(element, "mig_mode/current_mig")
    pending = _text(element, "mig_mode/pending_mig")
    return {
        "index": index,
        "name": _text(element, "product_name"),
        "uuid": _text(element, "uuid"),
        "serial": _text(element, "serial"),
        "pci_bus_id": bus_id,
        "pci_bus_id_short": short_bus_id(bus_id),
        "minor_number": _int(_text(element, "minor_number")),
        "memory_total_mib": _mib(_text(element, "fb_memory_usage/total")),
        "persistence_mode": _on_off(_text(element, "persistence_mode")),
        "mig_mode": {
            "capable": current is not None,
            "current": current.lower() if current else None,
            "pending": pending.lower() if pending else None,
        },
    }


def parse(text):
    """Parse ``nvidia-smi -q -x`` output into driver, CUDA and per-GPU facts."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if "<!ENTITY" in text:
        # nvidia-smi never declares entities; output from inside a container
        # is not trusted enough to let expat expand any.
        raise NvidiaSmiError("not nvidia-smi XML: entity declarations are refused")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise NvidiaSmiError("not nvidia-smi XML: %s" % err)
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiError("not nvidia-smi XML: root element is <%s>, not <nvidia_smi_log>" % root.tag)
    gpus = [_gpu(element, index) for index, element in enumerate(root.findall("gpu"))]
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": _int(_text(root, "attached_gpus")),
        "count": len(gpus),
        "gpus": gpus,
    }
