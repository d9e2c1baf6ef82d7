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
drift. Exits 1 with every difference listed, 0 when the report is as expected.
"""

import json
import os
import sys


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
    if problems:
        sys.stdout.write("\n".join(problems) + "\n")
        return 1
    sys.stdout.write("drift report as expected: %d changes, %d handlers\n" % (len(changes), len(handlers)))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
