#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare a drift report (drift.json of the drift_report callback) with what it must list.

    check_drift_report.py REPORT.json EXPECTED.json

EXPECTED: {"changes": [[host, role, task, diff_line], ...],
           "handlers": [[host, role, task], ...]}

The report must hold exactly those changes (tasks, by host, role and task
name without the "role : " prefix) and exactly those handlers, no failed task
and no unreachable host, and each change's diff must show its diff_line
(an empty diff_line: the module gives no diff, for example a service or a group
member). diff_line is a sign (+ or -) and a text that one added or removed line
must contain. The markdown summary next to the JSON file must name every host with
drift. The JUnit file (drift.junit.xml, read with junitparser) and the node_exporter
textfile (hpc_gpu_containers_drift.prom, read with prometheus_client's text-format
parser) next to it must tell the same as the JSON: the hosts with drift, each host's
number of differences and failed tasks, the time of the run and the schema version.
Exits 1 with every difference listed, 0 when the report is as expected.
"""

import json
import os
import sys

from junitparser import Error, Failure, JUnitXml
from prometheus_client.parser import text_string_to_metric_families

PREFIX = "hpc_gpu_containers_"


def check_junit(report, path):
    """Problems of the JUnit file against the JSON report."""
    problems = []
    xml = JUnitXml.fromfile(path)
    failures, errors, cases = {}, {}, {}
    for suite in xml:
        for case in suite:
            host = case.classname
            cases[host] = cases.get(host, 0) + 1
            kinds = [type(result) for result in case.result]
            failures[host] = failures.get(host, 0) + kinds.count(Failure)
            errors[host] = errors.get(host, 0) + kinds.count(Error)
    hosts = set(report["hosts"]) | set(report["unreachable"])
    if set(cases) != hosts:
        problems.append("%s: test suites for %s, the report has %s" % (path, sorted(cases), sorted(hosts)))
    for host in sorted(hosts):
        entry = report["hosts"].get(host, {"changed": [], "failed": []})
        want = (len(entry["changed"]), len(entry["failed"]) + (1 if host in report["unreachable"] else 0))
        got = (failures.get(host, 0), errors.get(host, 0))
        if got != want:
            problems.append("%s: %s has %d failure(s) and %d error(s), the report %d change(s) and %d error(s)"
                            % (path, host, got[0], got[1], want[0], want[1]))
    drifted = sorted(host for host, count in failures.items() if count)
    if drifted != sorted(host for host, entry in report["hosts"].items() if entry["changed"]):
        problems.append("%s: hosts with a failure %s differ from the report's hosts with drift" % (path, drifted))
    return problems


def check_prom(report, path):
    """Problems of the node_exporter textfile against the JSON report."""
    problems = []
    with open(path, encoding="utf-8") as handle:
        families = {family.name: family for family in text_string_to_metric_families(handle.read())}

    def per_host(name):
        family = families.get(PREFIX + name)
        if family is None:
            problems.append("%s: no %s%s" % (path, PREFIX, name))
            return {}
        if not family.documentation or family.type != "gauge":
            problems.append("%s: %s%s without HELP or not a gauge" % (path, PREFIX, name))
        return {sample.labels.get("host"): sample.value for sample in family.samples}

    drifted = per_host("drift_host_drifted")
    differences = per_host("drift_host_differences")
    failed = per_host("drift_host_failed_tasks")
    for host, entry in sorted(report["hosts"].items()):
        want = (1.0 if entry["changed"] else 0.0, float(len(entry["changed"])), float(len(entry["failed"])))
        got = (drifted.get(host), differences.get(host), failed.get(host))
        if got != want:
            problems.append("%s: %s drifted/differences/failed %s, the report %s" % (path, host, got, want))
    if set(drifted) != set(report["hosts"]):
        problems.append("%s: hosts %s, the report %s" % (path, sorted(drifted), sorted(report["hosts"])))
    unreachable = {host for host, value in per_host("drift_host_unreachable").items() if value == 1}
    if unreachable != set(report["unreachable"]):
        problems.append("%s: unreachable %s, the report %s" % (path, sorted(unreachable), sorted(report["unreachable"])))
    for name, want in (("drift_hosts_drifted", report["summary"]["hosts_with_drift"]),
                       ("drift_last_run_timestamp_seconds", report["generated_unix"]),
                       ("drift_report_schema_version", report["schema_version"])):
        got = per_host(name).get(None)
        if got != float(want):
            problems.append("%s: %s%s is %s, the report says %s" % (path, PREFIX, name, got, want))
    return problems


def main(report_path, expected_path):
    with open(report_path, encoding="utf-8") as handle:
        report = json.load(handle)
    with open(expected_path, encoding="utf-8") as handle:
        expected = json.load(handle)
    problems = []
    changes, handlers, diffs = set(), set(), {}
    for host, entry in sorted(report["hosts"].items()):
        for change in entry.get("changed") or []:
            task = change["task"].split(" : ", 1)[-1]
            role = (change.get("role") or "-").rsplit(".", 1)[-1]
            key = (host, role, task)
            (handlers if change.get("handler") else changes).add(key)
            diffs[key] = diffs.get(key, "") + (change.get("diff") or "")
        for failure in entry.get("failed") or []:
            problems.append("failed on %s: %s: %s" % (host, failure.get("task"), failure.get("msg")))
    want_changes = {tuple(item[:3]) for item in expected["changes"]}
    want_handlers = {tuple(item) for item in expected["handlers"]}
    for label, got, want in (("change", changes, want_changes), ("handler", handlers, want_handlers)):
        for key in sorted(got - want):
            problems.append("unexpected %s: %s" % (label, " / ".join(key)))
        for key in sorted(want - got):
            problems.append("missing %s: %s" % (label, " / ".join(key)))
    for host, role, task, line in expected["changes"]:
        diff = diffs.get((host, role, task))
        if diff is None or not line:
            continue
        sign, text = line[0], line[1:].strip()
        rows = [row for row in diff.splitlines() if row[:1] == sign and row[:3] not in ("+++", "---")]
        if not any(text in row for row in rows):
            problems.append("diff of %s / %s / %s has no %r line with %r:\n%s" % (host, role, task, sign, text, diff))
    if report["summary"]["unreachable_hosts"]:
        problems.append("unreachable: %s" % report.get("unreachable"))
    md_path = os.path.splitext(report_path)[0] + ".md"
    if os.path.exists(md_path):
        with open(md_path, encoding="utf-8") as handle:
            markdown = handle.read()
        for host in sorted({key[0] for key in want_changes}):
            if "## %s\n" % host not in markdown:
                problems.append("%s does not name %s" % (md_path, host))
    else:
        problems.append("no markdown summary at %s" % md_path)
    if report.get("schema_version") != 1:
        problems.append("%s: schema_version %r, expected 1" % (report_path, report.get("schema_version")))
    directory = os.path.dirname(report_path)
    for name, check in (("drift.junit.xml", check_junit), ("hpc_gpu_containers_drift.prom", check_prom)):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            problems.append("no %s next to %s" % (name, report_path))
            continue
        problems.extend(check(report, path))
    if problems:
        sys.stdout.write("\n".join(problems) + "\n")
        return 1
    sys.stdout.write("drift report as expected: %d changes, %d handlers; JUnit and .prom agree\n"
                     % (len(changes), len(handlers)))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
