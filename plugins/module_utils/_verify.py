# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Verdict of a verification container: pure comparison logic, no Ansible, no Docker.

The verification image runs ``/verify``, which prints a small report::

    hpc-verify: 1
    arch=<uname -m>
    nvidia_smi=present|absent
    nvidia_smi_rc=<exit code>          (only when present)
    --- nvidia-smi -q -x ---
    <?xml ...?> ... </nvidia_smi_log>
    --- end nvidia-smi ---

This module parses that report and the ``nvidia-smi -q -x`` XML inside it, picks
the host GPUs that were requested (``all``, indices, or UUIDs) from the host's
``gpu_facts`` and compares: GPUs by UUID (indices restart at 0 inside a
container, so they are never compared), their PCI bus ids and minor numbers,
the driver version, the number of attached GPUs, and the CPU architecture.

The same report can come back through Slurm (a job step whose container srun-docker starts) or through LSF (the
interactive submission ``bsub -app <profile> -I -m <host> /verify`` that lands in the profile's container): the
command lines are built by ``_job_launch.py``; :func:`parse_bsub_job_id` reads the job id from what ``bsub``
prints before the job's own output.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ._platform import go_arch

__all__ = [
    "VerifyError", "normalize_arch", "go_arch", "parse_verify_output", "parse_nvidia_smi_xml",
    "normalize_bus_id", "host_gpus", "select_gpus", "image_arch_problem", "exec_format_problem",
    "compare", "parse_bsub_job_id", "isolation_problems", "combined_verdict",
]

SMI_BEGIN = "--- nvidia-smi -q -x ---"
SMI_END = "--- end nvidia-smi ---"


class VerifyError(Exception):
    """Bad input to the comparison (an unknown GPU requested, unparsable XML)."""


def normalize_arch(name):
    """Alias of :func:`go_arch`: both sides of an architecture comparison go through it."""
    return go_arch(name)


def parse_verify_output(text):
    """Parse the ``/verify`` report.  Unknown lines are ignored; a missing ``arch=`` is None."""
    result = {"marker": False, "arch": None, "nvidia_smi": False, "nvidia_smi_rc": None,
              "nvidia_smi_xml": None, "nvidia_visible_devices": None, "cuda_visible_devices": None}
    if not text:
        return result
    lines = text.splitlines()
    xml_lines = None
    for line in lines:
        stripped = line.strip()
        if xml_lines is not None:
            if stripped == SMI_END:
                result["nvidia_smi_xml"] = "\n".join(xml_lines)
                xml_lines = None
            else:
                xml_lines.append(line)
            continue
        if stripped == SMI_BEGIN:
            xml_lines = []
        elif stripped.startswith("hpc-verify:"):
            result["marker"] = True
        elif stripped.startswith("arch="):
            result["arch"] = stripped.split("=", 1)[1] or None
        elif stripped.startswith(("nvidia_visible_devices=", "cuda_visible_devices=")):
            key, value = stripped.split("=", 1)
            result[key] = value or None
        elif stripped.startswith("nvidia_smi="):
            result["nvidia_smi"] = stripped.split("=", 1)[1] == "present"
        elif stripped.startswith("nvidia_smi_rc="):
            try:
                result["nvidia_smi_rc"] = int(stripped.split("=", 1)[1])
            except ValueError:
                result["nvidia_smi_rc"] = None
    if xml_lines is not None:  # report cut short: keep what came
        result["nvidia_smi_xml"] = "\n".join(xml_lines)
    return result


def _text(elem, path):
    found = elem.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ("", "N/A") else value


def parse_nvidia_smi_xml(text):
    """The fields of ``nvidia-smi -q -x`` that a verification compares.

    Returns ``driver_version``, ``cuda_version``, ``attached_gpus`` (int) and ``gpus``:
    a list of ``uuid``, ``pci_bus_id`` (normalized), ``minor_number`` (int or None),
    ``product_name``.  ``N/A`` becomes None.  No DTD is fetched or pinned.
    """
    if not text or not text.strip():
        raise VerifyError("empty nvidia-smi XML")
    if "<!ENTITY" in text:
        # nvidia-smi never declares entities; a container that prints some is refused before expat expands them.
        raise VerifyError("nvidia-smi XML with entity declarations is refused")
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise VerifyError("nvidia-smi XML does not parse: %s" % exc)
    if root.tag != "nvidia_smi_log":
        raise VerifyError("nvidia-smi XML root is <%s>, expected <nvidia_smi_log>" % root.tag)
    gpus = []
    for gpu in root.findall("gpu"):
        minor = _text(gpu, "minor_number")
        bus = _text(gpu, "pci/pci_bus_id") or gpu.get("id")
        gpus.append({
            "uuid": _text(gpu, "uuid"),
            "pci_bus_id": normalize_bus_id(bus),
            "minor_number": int(minor) if minor is not None and minor.isdigit() else None,
            "product_name": _text(gpu, "product_name"),
        })
    attached = _text(root, "attached_gpus")
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": int(attached) if attached is not None and attached.isdigit() else len(gpus),
        "gpus": gpus,
    }


_BUS_RE = re.compile(r"^(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


def normalize_bus_id(bus_id):
    """``00000000:3B:00.0`` (NVML, nvidia-smi) and ``0000:3b:00.0`` (sysfs) -> ``0000:3b:00.0``."""
    if bus_id is None:
        return None
    match = _BUS_RE.match(str(bus_id).strip())
    if not match:
        return str(bus_id).strip().lower()
    domain, bus, dev, func = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain or "0", 16), int(bus, 16), int(dev, 16), func)


def _first(mapping, *keys):
    for key in keys:
        value = mapping.get(key)
        if value not in (None, ""):
            return value
    return None


def host_gpus(gpu_facts):
    """The host's GPUs from ``gpu_facts`` as the same shape :func:`parse_nvidia_smi_xml` gives.

    Accepts ``pci_bus_id``/``bus_id``/``pci.bus_id`` and ``minor_number``/``minor`` so it
    reads both the NVML facts and a parsed ``nvidia-smi`` recording.
    """
    if not gpu_facts or not gpu_facts.get("present"):
        return []
    result = []
    for position, gpu in enumerate(gpu_facts.get("gpus") or []):
        pci = gpu.get("pci") if isinstance(gpu.get("pci"), dict) else {}
        minor = _first(gpu, "minor_number", "minor")
        index = gpu.get("index")
        result.append({
            "index": int(index) if index is not None else position,
            "uuid": gpu.get("uuid"),
            "pci_bus_id": normalize_bus_id(_first(gpu, "pci_bus_id", "bus_id") or pci.get("bus_id")),
            "minor_number": int(minor) if minor is not None else None,
            "product_name": _first(gpu, "name", "product_name"),
        })
    return result


def select_gpus(gpus, requested):
    """The host GPUs a request names: ``["all"]``, indices (``"0"``, ``1``) or UUIDs (``GPU-...``)."""
    if not requested or requested in ("all", ["all"]):
        return list(gpus)
    selected = []
    for item in requested:
        token = str(item).strip()
        if token == "all":
            raise VerifyError("'all' cannot be combined with other GPU selectors: %s" % list(requested))
        if token.isdigit():
            match = [g for g in gpus if g["index"] == int(token)]
        else:
            match = [g for g in gpus if (g["uuid"] or "").lower() == token.lower()]
        if not match:
            known = ", ".join("%s=%s" % (g["index"], g["uuid"]) for g in gpus) or "none"
            raise VerifyError("requested GPU %r is not on this host (host GPUs: %s)" % (token, known))
        if match[0] not in selected:
            selected.append(match[0])
    return selected


def image_arch_problem(image_ref, image_arch, node_machine):
    """A clear message when an image's Architecture cannot run on the node, else None."""
    if not image_arch:
        return None
    want = go_arch(node_machine)
    have = go_arch(image_arch)
    if want == have:
        return None
    return ("image %s is built for linux/%s but this node is %s (linux/%s): it would fail with "
            "'exec format error'; build or pull the image for linux/%s"
            % (image_ref, have, node_machine, want, want))


def exec_format_problem(text, image_ref, node_machine):
    """A clear message when a container's output or start error shows an exec format error."""
    if text and "exec format error" in text:
        return ("the entrypoint of %s is not a %s binary (exec format error): the image is built "
                "for another architecture" % (image_ref, node_machine))
    return None


def _cuda_version(value):
    """Host ``cuda_driver_version`` (int 12040, or str "12.4") -> "12.4"."""
    if value in (None, ""):
        return None
    if isinstance(value, int) or str(value).isdigit():
        number = int(value)
        return "%d.%d" % (number // 1000, (number % 1000) // 10)
    return str(value)


def compare(node_machine, report, selected, gpu_facts=None, expect_gpus=True):
    """Compare a parsed ``/verify`` report with the host.

    ``selected`` are the host GPUs (from :func:`select_gpus`) the container was given.
    Returns ``(problems, details)``: a list of human-readable mismatches (empty = passed)
    and what was seen on both sides.
    """
    problems = []
    gpu_facts = gpu_facts or {}
    container_arch = report.get("arch")
    details = {
        "architecture": {"node": node_machine, "container": container_arch},
        "gpus": {
            "requested": [g["uuid"] for g in selected],
            "host": len(selected),
            "container": 0,
            "container_gpus": [],
            "host_driver_version": gpu_facts.get("driver_version"),
            "container_driver_version": None,
        },
    }
    if not report.get("marker"):
        problems.append("the container did not print the verification report (is /verify the image's command?)")
    if container_arch is None:
        problems.append("the container did not report its architecture")
    elif go_arch(container_arch) != go_arch(node_machine):
        problems.append("architecture: the container runs %s but the node is %s" % (container_arch, node_machine))

    smi = None
    if report.get("nvidia_smi") and report.get("nvidia_smi_xml"):
        try:
            smi = parse_nvidia_smi_xml(report["nvidia_smi_xml"])
        except VerifyError as exc:
            problems.append("GPUs: %s" % exc)
    if smi is not None:
        details["gpus"]["container"] = smi["attached_gpus"]
        details["gpus"]["container_gpus"] = smi["gpus"]
        details["gpus"]["container_driver_version"] = smi["driver_version"]

    if not expect_gpus or not selected:
        if smi is not None and smi["attached_gpus"]:
            problems.append("GPUs: the container sees %d GPU(s) although none were requested (%s)"
                            % (smi["attached_gpus"], ", ".join(g["uuid"] or "?" for g in smi["gpus"])))
        return problems, details

    if not report.get("nvidia_smi"):
        problems.append("GPUs: nvidia-smi is not available inside the container, so no GPU was passed in "
                        "(check the NVIDIA runtime/CDI setup and gpu_access)")
        return problems, details
    if report.get("nvidia_smi_rc") not in (0, None):
        problems.append("GPUs: nvidia-smi failed inside the container (exit code %s)" % report["nvidia_smi_rc"])
    if smi is None:
        if not any(p.startswith("GPUs:") for p in problems):
            problems.append("GPUs: nvidia-smi printed no XML inside the container")
        return problems, details

    host_driver = gpu_facts.get("driver_version")
    if host_driver and smi["driver_version"] and host_driver != smi["driver_version"]:
        problems.append("driver: the container sees driver %s but the host runs %s"
                        % (smi["driver_version"], host_driver))
    host_cuda = _cuda_version(gpu_facts.get("cuda_driver_version"))
    if host_cuda and smi["cuda_version"] and host_cuda != smi["cuda_version"]:
        problems.append("driver: the container reports CUDA %s but the host driver supports CUDA %s"
                        % (smi["cuda_version"], host_cuda))
    if smi["attached_gpus"] != len(selected):
        problems.append("GPUs: the container sees %d GPU(s), %d requested" % (smi["attached_gpus"], len(selected)))

    seen = {(g["uuid"] or "").lower(): g for g in smi["gpus"]}
    wanted = {(g["uuid"] or "").lower(): g for g in selected}
    missing = [g["uuid"] for key, g in wanted.items() if key not in seen]
    extra = [g["uuid"] for key, g in seen.items() if key not in wanted]
    if missing:
        problems.append("GPUs: requested but not visible in the container: %s" % ", ".join(missing))
    if extra:
        problems.append("GPUs: visible in the container but not requested: %s" % ", ".join(extra))
    for key, host in wanted.items():
        inside = seen.get(key)
        if inside is None:
            continue
        if host["pci_bus_id"] and inside["pci_bus_id"] and host["pci_bus_id"] != inside["pci_bus_id"]:
            problems.append("GPUs: %s has PCI bus id %s on the host but %s in the container"
                            % (host["uuid"], host["pci_bus_id"], inside["pci_bus_id"]))
        if (host["minor_number"] is not None and inside["minor_number"] is not None
                and host["minor_number"] != inside["minor_number"]):
            problems.append("GPUs: %s is /dev/nvidia%d on the host but /dev/nvidia%d in the container"
                            % (host["uuid"], host["minor_number"], inside["minor_number"]))
    return problems, details


def benchmark_script(loops):
    """Shell loop both sides run: pure CPU work in busybox sh, timed by busybox ``time -f %e``."""
    return "i=0; while [ $i -lt %d ]; do i=$((i+1)); done" % int(loops)


def parse_times(text):
    """Seconds printed one per line by ``time -f %e``; other lines are ignored."""
    times = []
    for line in (text or "").splitlines():
        try:
            times.append(float(line.strip()))
        except ValueError:
            continue
    return times


def _median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def summarize_benchmark(host_times, container_times):
    """Median, spread (min/max) and container/host ratio of the same CPU workload."""
    def side(values):
        if not values:
            return {"runs": 0, "median": None, "min": None, "max": None, "times": []}
        return {"runs": len(values), "median": round(_median(values), 4), "min": min(values), "max": max(values),
                "times": list(values)}
    host, container = side(host_times), side(container_times)
    ratio = None
    if host["median"] and container["median"] is not None:
        ratio = round(container["median"] / host["median"], 3)
    return {"host": host, "container": container, "ratio": ratio}


# What bsub prints on submission: "Job <1234> is submitted to default queue <normal>."
_BSUB_JOB_RE = re.compile(r"^Job <(\d+)> is submitted to ", re.MULTILINE)


def isolation_problems(report, gpus, allocated=1, scheduler="LSF"):
    """What is wrong when a job ``scheduler`` gave ``allocated`` GPU(s) sees another number or other GPUs.

    ``report`` is the parsed report of that job; ``gpus`` the host's GPUs (:func:`host_gpus`).
    The job's own ``NVIDIA_VISIBLE_DEVICES`` names the host GPUs it was handed; the container
    must see exactly those, by UUID.
    """
    problems = []
    smi = None
    if report.get("nvidia_smi") and report.get("nvidia_smi_xml"):
        try:
            smi = parse_nvidia_smi_xml(report["nvidia_smi_xml"])
        except VerifyError as exc:
            return ["isolation: %s" % exc]
    seen = smi["attached_gpus"] if smi else 0
    if seen != allocated:
        leak = " (every GPU of the node: the profile hands all GPUs to every job)" if seen == len(gpus) > allocated else ""
        return ["isolation: a job that %s allocated %d GPU(s) sees %d%s" % (scheduler, allocated, seen, leak)]
    named = [item for item in (report.get("nvidia_visible_devices") or "").split(",") if item.strip()]
    if not named or named[0] in ("all", "none", "void"):
        return ["isolation: the job's NVIDIA_VISIBLE_DEVICES is %r, not the GPUs %s allocated"
                % (report.get("nvidia_visible_devices") or "", scheduler)]
    try:
        expected = select_gpus(gpus, named)
    except VerifyError as exc:
        return ["isolation: %s" % exc]
    want = sorted((g["uuid"] or "").lower() for g in expected)
    have = sorted((g["uuid"] or "").lower() for g in smi["gpus"])
    if want != have:
        problems.append("isolation: %s allocated %s but the container sees %s"
                        % (scheduler, ", ".join(want), ", ".join(have)))
    return problems


def parse_bsub_job_id(text):
    """The job id ``bsub`` reported, or None when it did not submit."""
    match = _BSUB_JOB_RE.search(text or "")
    return int(match.group(1)) if match else None


def combined_verdict(container, job=None, benchmark=None):
    """One host's verification result: the verification container's (``container``), failed too when the job
    through the scheduler (``job``; skipped or None: not run) failed, with both sets of reasons, the job's ``lsf``
    part, and the CPU benchmark's ``host``, ``ratio`` and ``container`` when it ran."""
    job = job if isinstance(job, dict) else {}
    out = dict(container)
    out["passed"] = bool(container.get("passed")) and bool(job.get("passed", True))
    out["reasons"] = list(container.get("reasons") or []) + list(job.get("reasons") or [])
    if "lsf" in job:
        out["lsf"] = job["lsf"]
    if isinstance(benchmark, dict) and "ratio" in benchmark:
        out["benchmark"] = {"host": benchmark.get("host"), "ratio": benchmark["ratio"],
                            "container": benchmark.get("container")}
    return out
