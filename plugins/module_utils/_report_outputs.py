# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The drift and verification reports as JUnit test cases and as Prometheus metric families.

Both reports are JSON documents with a ``schema_version`` (:data:`DRIFT_SCHEMA_VERSION`,
:data:`VERIFY_SCHEMA_VERSION`). The version is raised when a key is removed or renamed or its meaning changes, so
a reader that knows version N can refuse a report of another version instead of misreading it; new keys are
added without a raise.

The test cases and metrics are built from the JSON report alone (what the report redacted stays redacted),
so the three files of one run always tell the same story. :mod:`._junit_xml` and :mod:`._prom_textfile`
turn them into text.

Nothing here imports Ansible.
"""

from __future__ import annotations

import time

DRIFT_SCHEMA_VERSION = 1
VERIFY_SCHEMA_VERSION = 1
MAX_TEXT = 4000


def _short(text, limit=MAX_TEXT):
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + "\n... cut after %d characters" % limit


def _change_name(change):
    name = change["task"]
    if change.get("item") is not None:
        name += " (item: %s)" % change["item"]
    if change.get("handler"):
        name += " [handler]"
    return name


def drift_cases(report):
    """One test case per host and check: each change a failure, each failed task an error, each unreachable
    host an error; a host with neither passes its test case ``no drift``."""
    cases = []
    for host in sorted(report["hosts"]):
        entry = report["hosts"][host]
        for change in entry.get("changed") or []:
            summary = "would change %s" % (change.get("target") or change["task"])
            cases.append({"classname": host, "name": _change_name(change),
                          "failure": {"type": "drift", "message": summary,
                                      "text": _short(change.get("diff") or summary)}})
        for failure in entry.get("failed") or []:
            cases.append({"classname": host, "name": failure["task"],
                          "error": {"type": "failed", "message": _short(failure.get("msg"), 1000),
                                    "text": _short(failure.get("msg"))}})
        if not entry.get("changed") and not entry.get("failed"):
            fast = entry.get("fast_path") or {}
            how = ("matched the fingerprint of the last full converge"
                   if fast.get("clean") and not fast.get("full_check") else "checked in full")
            cases.append({"classname": host, "name": "no drift", "output": how})
    for host in sorted(report.get("unreachable") or {}):
        cases.append({"classname": host, "name": "reachable",
                      "error": {"type": "unreachable", "message": _short(report["unreachable"][host], 1000)}})
    return cases


def drift_families(report):
    """Metric families of a drift report: per host drift state, differences, failed tasks, reachability;
    the time of the run."""
    hosts = sorted(report["hosts"])
    unreachable = sorted(report.get("unreachable") or {})
    labels = [{"host": host} for host in hosts]
    entries = [report["hosts"][host] for host in hosts]
    return [
        ("drift_host_drifted", "gauge", "1 when the last drift check found drift on the host, else 0.",
         [(label, 1 if entry.get("changed") else 0) for label, entry in zip(labels, entries)]),
        ("drift_host_differences", "gauge", "Differences (would-be changes) the last drift check found on the host.",
         [(label, len(entry.get("changed") or [])) for label, entry in zip(labels, entries)]),
        ("drift_host_failed_tasks", "gauge", "Tasks that failed on the host in the last drift check.",
         [(label, len(entry.get("failed") or [])) for label, entry in zip(labels, entries)]),
        ("drift_host_unreachable", "gauge", "1 when the host was unreachable in the last drift check, else 0.",
         [(label, 0) for label in labels] + [({"host": host}, 1) for host in unreachable]),
        ("drift_hosts_drifted", "gauge", "Hosts with drift in the last drift check.",
         [({}, report["summary"]["hosts_with_drift"])]),
        ("drift_last_run_timestamp_seconds", "gauge", "When the last drift check ran (unix seconds).",
         [({}, report["generated_unix"])]),
        ("drift_report_schema_version", "gauge", "schema_version of the drift report JSON.",
         [({}, report["schema_version"])]),
    ]


def _gpu_results(entry):
    """(uuid, index, seen in the container) for each GPU the host gave the container."""
    gpus = entry.get("gpus") or {}
    seen = {str(g.get("uuid") or "").lower() for g in gpus.get("container_gpus") or []}
    return [(uuid, position, str(uuid).lower() in seen) for position, uuid in enumerate(gpus.get("requested") or [])]


def verify_cases(report):
    """One test case per host and check (verdict, architecture, GPU count, each GPU, LSF when it ran)."""
    cases = []
    for host in sorted(report["hosts"]):
        entry = report["hosts"][host]
        reasons = entry.get("reasons") or []
        verdict = {"classname": host, "name": "verification"}
        if entry.get("passed") is None:  # no verdict: the host was unreachable or failed before the verification
            verdict["error"] = {"type": "not run", "message": _short("; ".join(reasons) or
                                                                     "the verification did not run", 1000)}
        elif not entry["passed"]:
            verdict["failure"] = {"type": "verification", "message": _short("; ".join(reasons) or "failed", 1000),
                                  "text": _short("\n".join(reasons))}
        cases.append(verdict)
        arch = entry.get("architecture") or {}
        if arch:
            case = {"classname": host, "name": "architecture",
                    "output": "node %s, container %s" % (arch.get("node"), arch.get("container"))}
            problems = [r for r in reasons if r.startswith("architecture")]
            if problems or arch.get("container") is None:
                message = "; ".join(problems) or "the container did not report it"
                case["failure"] = {"type": "architecture", "message": _short(message, 1000)}
            cases.append(case)
        gpus = entry.get("gpus") or {}
        if gpus:
            case = {"classname": host, "name": "GPU count",
                    "output": "host %s, container %s" % (gpus.get("host"), gpus.get("container"))}
            if gpus.get("host") != gpus.get("container"):
                case["failure"] = {"type": "gpus", "message": "the container sees %s GPU(s), %s requested"
                                   % (gpus.get("container"), gpus.get("host"))}
            cases.append(case)
        for uuid, position, visible in _gpu_results(entry):
            case = {"classname": host, "name": "GPU %d %s" % (position, uuid)}
            if not visible:
                case["failure"] = {"type": "gpu", "message": "GPU %s is not visible in the container" % uuid}
            cases.append(case)
        lsf = entry.get("lsf")
        if lsf:
            case = {"classname": host, "name": "LSF job", "time": (lsf.get("timings") or {}).get("total") or 0}
            if not lsf.get("passed"):
                case["failure"] = {"type": "lsf", "message": _short("; ".join(lsf.get("reasons") or []) or "failed",
                                                                    1000)}
            cases.append(case)
    return cases


def verify_families(report):
    """Metric families of a verification report: per host pass and GPU counts, per GPU result, the run's time."""
    hosts = sorted(report["hosts"])
    passed, ran, gpu_counts, per_gpu = [], [], [], []
    for host in hosts:
        entry = report["hosts"][host]
        ran.append(({"host": host}, 0 if entry.get("passed") is None else 1))
        passed.append(({"host": host}, 1 if entry.get("passed") else 0))
        gpus = entry.get("gpus") or {}
        for side in ("host", "container"):
            if isinstance(gpus.get(side), int):
                gpu_counts.append(({"host": host, "side": side}, gpus[side]))
        for uuid, position, visible in _gpu_results(entry):
            per_gpu.append(({"host": host, "gpu": str(position), "uuid": uuid}, 1 if visible else 0))
    return [
        ("verify_host_passed", "gauge", "1 when the last verification passed on the host, else 0.", passed),
        ("verify_host_ran", "gauge", "1 when the verification ran on the host, 0 when it could not run.", ran),
        ("verify_host_gpus", "gauge", "GPUs given to the verification container (side=host) and seen in it "
         "(side=container).", gpu_counts),
        ("verify_gpu_passed", "gauge", "1 when the GPU was visible in the verification container, else 0.", per_gpu),
        ("verify_last_run_timestamp_seconds", "gauge", "When the last verification ran (unix seconds).",
         [({}, report["generated_unix"])]),
        ("verify_report_schema_version", "gauge", "schema_version of the verification report JSON.",
         [({}, report["schema_version"])]),
    ]


def check_verify_report(report):
    """``report`` when it is a verification report of :data:`VERIFY_SCHEMA_VERSION`, else ValueError."""
    if not isinstance(report, dict) or not isinstance(report.get("hosts"), dict):
        raise ValueError("the input is not a verification report (no 'hosts' mapping)")
    if report.get("schema_version") != VERIFY_SCHEMA_VERSION:
        raise ValueError("verification report schema_version %r, expected %d"
                         % (report.get("schema_version"), VERIFY_SCHEMA_VERSION))
    if not isinstance(report.get("generated_unix"), (int, float)):
        raise ValueError("the verification report has no generated_unix time")
    return report


SUMMARY_FORMAT = "%-20s %-8s %-10s %-8s %-6s %-6s %-6s %-6s %-12s %s"


def verify_summary(report):
    """The verification report as the lines verify.yml prints: a header, then per host its architecture, GPUs seen
    on the host and in the container, verdict, container timings (s), the check through LSF and the CPU benchmark's
    container/host ratio, each host's reasons indented under it."""
    lines = [SUMMARY_FORMAT % ("node", "arch", "gpus h/c", "verdict", "pull", "create", "start", "run", "lsf (s)",
                               "cpu c/h (s)")]
    for node, entry in report["hosts"].items():
        timings = entry.get("timings") or {}
        gpus = entry.get("gpus") or {}
        lsf = entry.get("lsf")
        bench = entry.get("benchmark")
        passed = entry.get("passed")
        lines.append(SUMMARY_FORMAT % (
            node, (entry.get("architecture") or {}).get("node", "?"),
            "%s/%s" % (gpus.get("host", "?"), gpus.get("container", "?")),
            "not run" if passed is None else ("PASS" if passed else "FAIL"),
            timings.get("pull") or "-", timings.get("create") or "-", timings.get("start") or "-",
            timings.get("run") or "-",
            "%s %s" % ("PASS" if lsf.get("passed") else "FAIL", (lsf.get("timings") or {}).get("total") or "-")
            if lsf else "-",
            "%s (%s/%s)" % (bench["ratio"], bench["host"]["median"], bench["container"]["median"]) if bench else "-"))
        lines += ["    %s" % reason for reason in entry.get("reasons") or []]
    return lines


# The keys of a host's entry in the verification report, and their values when its verification did not run.
VERIFY_HOST_KEYS = (("passed", None), ("reasons", []), ("architecture", {}), ("gpus", {}), ("timings", {}),
                    ("image", {}), ("benchmark", None), ("lsf", None))


def verify_report(results, generated_unix):
    """The verification report (:data:`VERIFY_SCHEMA_VERSION`) from each host's container_verify result (``{host:
    result or None}``; None or a missing key: its verification did not run) and the run's time (Unix seconds)."""
    hosts = {}
    for host, result in results.items():
        result = result if isinstance(result, dict) or hasattr(result, "get") else {}
        hosts[host] = dict((key, result.get(key, empty)) for key, empty in VERIFY_HOST_KEYS)
    generated_unix = int(generated_unix)
    return {"schema_version": VERIFY_SCHEMA_VERSION,
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(generated_unix)),
            "generated_unix": generated_unix, "hosts": hosts}
