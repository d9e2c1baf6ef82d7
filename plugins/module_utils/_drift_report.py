# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The drift report (``drift.json``): its summary, its Markdown, and one report joined from several.

The ``drift_report`` callback builds a report per run. A large site checks itself in ``--limit`` slices, a run
each; :func:`join` makes the slices' reports one, as one run over all their hosts would have written it: the
hosts of every slice, the summary counted again, the time of the earliest slice. A host in two slices, a slice
of another schema version, or check-mode slices beside a converge's are refused, naming the reports.

Nothing here imports Ansible.
"""

from __future__ import annotations

import datetime
import json
import os

from . import _junit_xml, _prom_textfile
from ._report_outputs import DRIFT_SCHEMA_VERSION, drift_cases, drift_families


# What the Markdown says of a result hidden by no_log (the JSON marks it "censored").
CENSORED_NOTE = "output hidden by no_log"
# The report's files, their mode (never world-readable) and that of a directory made for them.
REPORT_FILE = "drift.json"
MARKDOWN_FILE = "drift.md"
JUNIT_FILE = "drift.junit.xml"
PROM_FILE = "hpc_gpu_containers_drift.prom"
FILE_MODE = 0o640
DIR_MODE = 0o750


class ReportError(Exception):
    """A report that cannot be read or joined; the message names the file."""


def _how_checked(fast):
    """How a host whose fingerprint differed was checked: by the roles that own what differs, or in full."""
    if fast.get("roles"):
        return "the check of its roles alone: %s" % ", ".join(fast["roles"])
    return "the full check"


def clean_by_fast_path(entry):
    """Whether the drift fast path cleared this host (and nothing ran on it after)."""
    fast = entry.get("fast_path") or {}
    return bool(fast.get("clean")) and not fast.get("full_check")


def summarize(hosts, unreachable):
    """The report's ``summary`` of ``hosts`` (name -> entry) and ``unreachable`` (name -> message)."""
    return {
        "hosts_checked": len(hosts),
        "hosts_with_drift": sum(1 for h in hosts.values() if h["changed"]),
        "changes": sum(len(h["changed"]) for h in hosts.values()),
        "failed_tasks": sum(len(h["failed"]) for h in hosts.values()),
        "unreachable_hosts": len(unreachable),
        "hosts_clean_by_fast_path": sum(1 for h in hosts.values() if clean_by_fast_path(h)),
    }


def assemble(hosts, unreachable, started, playbook, check_mode):
    """The whole report: ``started`` in unix seconds, ``playbook`` the file name the run started."""
    summary = summarize(hosts, unreachable)
    return {
        "schema_version": DRIFT_SCHEMA_VERSION,
        "generated": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "generated_unix": int(started),
        "playbook": playbook,
        "check_mode": check_mode,
        "drift": bool(summary["changes"]),
        "summary": summary,
        "hosts": hosts,
        "unreachable": unreachable,
    }


def report_files(report, directory, prom_dir=None):
    """``(path, text)`` of the report's files: the JSON, the Markdown and the JUnit file in ``directory``; with
    ``prom_dir``, the node_exporter textfile there."""
    files = [(os.path.join(directory, REPORT_FILE), json.dumps(report, indent=2, sort_keys=True) + "\n"),
             (os.path.join(directory, MARKDOWN_FILE), render_markdown(report)),
             (os.path.join(directory, JUNIT_FILE),
              _junit_xml.render("hpc.gpu_containers drift check", drift_cases(report), report["generated"]))]
    if prom_dir is not None:
        files.append((os.path.join(prom_dir, PROM_FILE), _prom_textfile.render(drift_families(report))))
    return files


def load(source, text):
    """The report in ``text`` (read from ``source``, named in errors)."""
    try:
        report = json.loads(text)
    except ValueError as err:
        where = "%s:%s" % (source, err.lineno) if isinstance(err, json.JSONDecodeError) else source
        raise ReportError("%s: not a drift report (JSON: %s)" % (where, getattr(err, "msg", err)))
    if not isinstance(report, dict) or not isinstance(report.get("hosts"), dict):
        raise ReportError("%s: not a drift report (no hosts)" % source)
    if report.get("schema_version") != DRIFT_SCHEMA_VERSION:
        raise ReportError("%s: schema_version %s; this collection reads %d (join reports of one release)" % (
            source, report.get("schema_version"), DRIFT_SCHEMA_VERSION))
    for host, entry in report["hosts"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("changed"), list) \
                or not isinstance(entry.get("failed"), list):
            raise ReportError("%s: host %s has no list of changes and failures" % (source, host))
    if not isinstance(report.get("unreachable") or {}, dict):
        raise ReportError("%s: unreachable is not a mapping of host to message" % source)
    return report


def join(sources):
    """One report from ``sources``, a list of ``(name, report)`` (the slices' reports, :func:`load` ed)."""
    if not sources:
        raise ReportError("no report to join")
    hosts, unreachable, seen = {}, {}, {}
    modes = {bool(report.get("check_mode")) for _name, report in sources}
    if len(modes) > 1:
        raise ReportError("%s: check-mode and converge reports cannot be joined (%s)" % (
            ", ".join(name for name, _r in sources), ", ".join(
                "%s: %s" % (name, "check mode" if report.get("check_mode") else "converge")
                for name, report in sources)))
    for name, report in sources:
        for table, into in ((report["hosts"], hosts), (report.get("unreachable") or {}, unreachable)):
            for host, value in table.items():
                if host in seen:
                    raise ReportError("host %s is in %s and in %s: give each host to one slice" % (
                        host, seen[host], name))
                seen[host] = name
                into[host] = value
    playbooks = sorted({report.get("playbook") for _name, report in sources if report.get("playbook")})
    started = min(int(report.get("generated_unix") or 0) for _name, report in sources)
    return assemble(dict(sorted(hosts.items())), dict(sorted(unreachable.items())), started,
                    ", ".join(playbooks) or None, modes.pop())


def render_markdown(report):
    """The human summary: one section per host with drift, diffs in fenced blocks."""
    lines = ["# Drift report", ""]
    summary = report["summary"]
    lines.append("Generated %s from `%s`%s." % (
        report["generated"], report["playbook"] or "?", " in check mode" if report["check_mode"] else ""))
    lines.append("")
    lines.append("| hosts checked | hosts with drift | changes | failed tasks | unreachable |")
    lines.append("|---|---|---|---|---|")
    lines.append("| %d | %d | %d | %d | %d |" % (
        summary["hosts_checked"], summary["hosts_with_drift"], summary["changes"],
        summary["failed_tasks"], summary["unreachable_hosts"]))
    lines.append("")
    if not summary["changes"] and not summary["failed_tasks"] and not summary["unreachable_hosts"]:
        lines.append("No drift: every checked host matches the configuration.")
    clean = sorted(host for host, entry in report["hosts"].items() if clean_by_fast_path(entry))
    if clean:
        lines.append("")
        lines.append("Fast path: %s matched the fingerprint of the last full converge and got no further check."
                     % ", ".join(clean))
    differed = sorted(host for host, entry in report["hosts"].items()
                      if (entry.get("fast_path") or {}).get("differences") and not entry["changed"])
    if differed:
        lines.append("")
        lines.append("Checked because their fingerprint differed, no drift found: %s." % "; ".join(
            "%s (%s: %s)" % (host, _how_checked(report["hosts"][host]["fast_path"]),
                             ", ".join(report["hosts"][host]["fast_path"]["differences"])) for host in differed))
    checked = sorted(host for host, entry in report["hosts"].items()
                     if (entry.get("fast_path") or {}).get("clean") and not clean_by_fast_path(entry))
    if checked:
        lines.append("")
        lines.append("Checked in full although their fingerprint matched: %s (the LSF master, whose files describe "
                     "the other nodes, gets the full check when any node's record, inputs or facts differ)."
                     % ", ".join(checked))
    for host in sorted(report["hosts"]):
        entry = report["hosts"][host]
        if not entry["changed"] and not entry["failed"]:
            continue
        lines.append("## %s" % host)
        lines.append("")
        if (entry.get("fast_path") or {}).get("differences"):
            lines.append("Fingerprint differences (hence %s): %s" % (
                _how_checked(entry["fast_path"]), ", ".join("`%s`" % d for d in entry["fast_path"]["differences"])))
            lines.append("")
        for change in entry["changed"]:
            what = change["task"]
            if change.get("item") is not None:
                what += " (item: %s)" % change["item"]
            lines.append("- **%s**%s%s%s" % (
                what,
                " — `%s`" % change["target"] if change.get("target") else "",
                " [handler]" if change.get("handler") else "",
                " (%s)" % CENSORED_NOTE if change.get("censored") else ""))
            if change.get("diff"):
                lines.append("")
                lines.append("  ```diff")
                lines.extend("  " + line for line in change["diff"].rstrip("\n").split("\n"))
                lines.append("  ```")
        for failure in entry["failed"]:
            lines.append("- FAILED **%s**: %s" % (failure["task"], failure["msg"]))
        lines.append("")
    if report["unreachable"]:
        lines.append("## Unreachable hosts")
        lines.append("")
        for host in sorted(report["unreachable"]):
            lines.append("- %s: %s" % (host, report["unreachable"][host]))
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
