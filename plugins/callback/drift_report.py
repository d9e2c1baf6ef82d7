# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: drift_report
type: aggregate
version_added: 0.1.0
short_description: Collect what a check-mode run would change into a drift report
description:
  - Records every result that reports C(changed) (per host, per task, with its diff), every failed
    task and every unreachable host, and writes them as C(drift.json) and C(drift.md) into
    O(report_dir).
  - Meant for the nightly C(--check --diff) rerun of C(playbooks/drift.yml), whose last
    play turns a non-empty report into a failed play, so C(ansible-playbook) exits with code 2.
  - Works for any playbook; on a normal (not check-mode) run the report lists what did change.
  - The report is rewritten after each recorded event, so a run that is interrupted still leaves what
    it saw.
requirements:
  - Enable it with C(ANSIBLE_CALLBACKS_ENABLED=hpc.gpu_containers.drift_report) or
    C(callbacks_enabled) in C(ansible.cfg).
options:
  report_dir:
    description:
      - Directory for C(drift.json) and C(drift.md); created when missing.
      - A relative path is taken relative to the directory C(ansible-playbook) runs in.
    type: path
    default: drift-report
    env:
      - name: HPC_DRIFT_REPORT_DIR
    ini:
      - section: callback_drift_report
        key: report_dir
  max_diff_lines:
    description:
      - Longest diff kept per result; longer diffs are cut and say so.
    type: int
    default: 400
    env:
      - name: HPC_DRIFT_MAX_DIFF_LINES
    ini:
      - section: callback_drift_report
        key: max_diff_lines
"""

import datetime
import difflib
import json
import os

from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase

# Forked task workers inherit the environment: the drift gate play reads the
# report through this variable, wherever report_dir points.
REPORT_ENV = "HPC_DRIFT_REPORT_JSON"


def render_diff(diff, max_lines=400):
    """Turn Ansible's diff value (a dict or a list of dicts) into unified diff text."""
    diffs = diff if isinstance(diff, list) else [diff]
    out = []
    for item in diffs:
        if not isinstance(item, dict):
            continue
        if "prepared" in item:
            out.append(str(item["prepared"]).rstrip("\n") + "\n")
        if "before" not in item and "after" not in item:
            continue
        before, after = item.get("before"), item.get("after")
        if isinstance(before, (dict, list)):
            before = json.dumps(before, indent=4, sort_keys=True) + "\n"
        if isinstance(after, (dict, list)):
            after = json.dumps(after, indent=4, sort_keys=True) + "\n"
        before = "" if before is None else str(before)
        after = "" if after is None else str(after)
        if before == after:
            continue
        out.extend(difflib.unified_diff(
            before.splitlines(True), after.splitlines(True),
            fromfile="before: %s" % item.get("before_header", ""),
            tofile="after: %s" % item.get("after_header", ""), n=2))
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
    lines = "".join(out).splitlines(True)
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["... diff cut after %d lines\n" % max_lines]
    return "".join(lines)


def _target(result):
    """Best guess at the file or object a result is about."""
    for key in ("path", "dest", "name", "key"):
        value = result.get(key)
        if isinstance(value, str) and value:
            return value
    diff = result.get("diff")
    if isinstance(diff, dict) and isinstance(diff.get("after_header"), str):
        return diff["after_header"].replace(" (content)", "")
    return None


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
    for host in sorted(report["hosts"]):
        entry = report["hosts"][host]
        if not entry["changed"] and not entry["failed"]:
            continue
        lines.append("## %s" % host)
        lines.append("")
        for change in entry["changed"]:
            what = change["task"]
            if change.get("item") is not None:
                what += " (item: %s)" % change["item"]
            lines.append("- **%s**%s%s" % (
                what,
                " — `%s`" % change["target"] if change.get("target") else "",
                " [handler]" if change.get("handler") else ""))
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


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "hpc.gpu_containers.drift_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._hosts = {}
        self._unreachable = {}
        self._playbook = None
        self._check_mode = False
        self._json_path = None
        self._md_path = None

    # -- helpers -------------------------------------------------------
    def _host_entry(self, host):
        return self._hosts.setdefault(host, {"changed": [], "failed": []})

    def _paths(self):
        if self._json_path is None:
            directory = os.path.abspath(os.path.expanduser(self.get_option("report_dir")))
            os.makedirs(directory, exist_ok=True)
            self._json_path = os.path.join(directory, "drift.json")
            self._md_path = os.path.join(directory, "drift.md")
            os.environ[REPORT_ENV] = self._json_path
        return self._json_path, self._md_path

    def report(self):
        changes = sum(len(h["changed"]) for h in self._hosts.values())
        return {
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "playbook": self._playbook,
            "check_mode": self._check_mode,
            "drift": bool(changes),
            "summary": {
                "hosts_checked": len(self._hosts),
                "hosts_with_drift": sum(1 for h in self._hosts.values() if h["changed"]),
                "changes": changes,
                "failed_tasks": sum(len(h["failed"]) for h in self._hosts.values()),
                "unreachable_hosts": len(self._unreachable),
            },
            "hosts": self._hosts,
            "unreachable": self._unreachable,
        }

    def _flush(self):
        json_path, md_path = self._paths()
        report = self.report()
        for path, text in ((json_path, json.dumps(report, indent=2, sort_keys=True) + "\n"),
                           (md_path, render_markdown(report))):
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)

    @staticmethod
    def _is_gate(task):
        return "hpc_drift_gate" in (task.tags or [])

    def _record_change(self, result, item=None):
        task = result._task
        if self._is_gate(task):
            return
        res = result._result
        role = getattr(task, "_role", None)
        entry = {
            "task": task.get_name(),
            "action": task.action,
            "role": role.get_name() if role else None,
            "target": _target(res),
            "handler": isinstance(task, Handler),
            "item": item,
            "diff": render_diff(res.get("diff", {}), self.get_option("max_diff_lines")),
        }
        for key in ("changed_keys", "changed_hosts", "changed_profiles"):
            if res.get(key):
                entry[key] = res[key]
        self._host_entry(result._host.get_name()).setdefault("changed", []).append(entry)
        self._flush()

    # -- events --------------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        self._playbook = os.path.basename(getattr(playbook, "_file_name", "") or "") or None
        self._flush()

    def v2_playbook_on_play_start(self, play):
        if getattr(play, "check_mode", False):
            self._check_mode = True
        self._flush()

    def v2_runner_on_ok(self, result):
        if self._is_gate(result._task):
            return
        self._host_entry(result._host.get_name())
        res = result._result
        if res.get("changed") and not isinstance(res.get("results"), list):
            self._record_change(result)

    def v2_runner_item_on_ok(self, result):
        res = result._result
        if res.get("changed"):
            label = res.get("_ansible_item_label", res.get("item"))
            self._record_change(result, item=label if isinstance(label, (str, int, float)) else json.dumps(label, sort_keys=True, default=str))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors or self._is_gate(result._task):
            return
        res = result._result
        self._host_entry(result._host.get_name())["failed"].append({
            "task": result._task.get_name(),
            "action": result._task.action,
            "msg": str(res.get("msg", ""))[:2000],
        })
        self._flush()

    def v2_runner_on_unreachable(self, result):
        self._unreachable[result._host.get_name()] = str(result._result.get("msg", "unreachable"))[:500]
        self._hosts.pop(result._host.get_name(), None)
        self._flush()

    def v2_playbook_on_stats(self, stats):
        self._flush()
        summary = self.report()["summary"]
        self._display.display(
            "DRIFT REPORT: %d change(s) on %d of %d host(s), %d failed task(s), %d unreachable -> %s" % (
                summary["changes"], summary["hosts_with_drift"], summary["hosts_checked"],
                summary["failed_tasks"], summary["unreachable_hosts"], self._md_path))
