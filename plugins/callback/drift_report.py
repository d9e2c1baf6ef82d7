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
    task and every unreachable host, and writes them as C(drift.json), C(drift.md) and C(drift.junit.xml) into
    O(report_dir), and, at the end of the run, as C(hpc_gpu_containers_drift.prom) into O(prom_dir).
  - C(drift.json) carries C(schema_version) (now C(1)). It is raised when a key is removed or renamed or changes
    its meaning, so that a reader can refuse a report it does not know instead of misreading it; keys that are
    only added leave it as it is. C(generated_unix) is the time of the run in unix seconds.
  - C(drift.junit.xml) has one test case per host and check, in one test suite per host. Each would-be change
    is a C(<failure>) with the redacted diff, each failed task an C(<error>), each unreachable host an
    C(<error>) (test case C(reachable)); a host with neither passes its test case C(no drift).
  - C(hpc_gpu_containers_drift.prom) is a node_exporter textfile (Prometheus text format 0.0.4) with, per
    host, C(hpc_gpu_containers_drift_host_drifted), C(hpc_gpu_containers_drift_host_differences),
    C(hpc_gpu_containers_drift_host_failed_tasks) and C(hpc_gpu_containers_drift_host_unreachable), and
    C(hpc_gpu_containers_drift_hosts_drifted), C(hpc_gpu_containers_drift_last_run_timestamp_seconds) and
    C(hpc_gpu_containers_drift_report_schema_version). It is written once, when the run ends, through a
    temporary file and a rename in the same directory, so node_exporter never reads half a file.
  - Meant for the nightly C(--check --diff) rerun of C(playbooks/drift.yml). Exit codes of that run
    (C(ansible-playbook)'s own, except 3) - C(0) no drift; C(2) a task failed (the report says which; drift
    may have been found as well); C(3) drift found, no task failed and every host was reached (the callback
    ends the run with O(drift_exit_code) after the play recap); C(4) a host was unreachable (listed in the
    report); other codes are C(ansible-playbook)'s (C(1) error, C(5) bad options, C(99) interrupted, C(250)
    unexpected error; C(4) also when a playbook does not parse, which leaves no report of this run).
    Failed tasks and unreachable hosts win over drift.
  - The drift exit code applies to check-mode runs of a playbook with the drift gate (a task tagged
    C(hpc_drift_gate), as C(playbooks/drift.yml) has); other runs keep C(ansible-playbook)'s exit code.
    The run ends from this callback's end-of-run event, so list it last in C(callbacks_enabled) - a callback
    listed after it gets no end-of-run event from a run that ends with the drift exit code.
  - Works for any playbook; on a normal (not check-mode) run the report lists what did change.
  - The JSON, Markdown and JUnit files are rewritten after each recorded event, so a run that is interrupted
    still leaves what it saw.
  - The report holds no secret. A result hidden by C(no_log) is recorded as a change or a failure with
    no diff, no item and no message. As a second line of defence every diff, message and name written
    is redacted, before diffing, of PEM private key blocks, password hashes (bcrypt, C($apr1$), MD5,
    SHA and yescrypt crypt, C({SHA})) and Docker C(auth)/C(identitytoken) values; each becomes a
    placeholder with a short SHA-256 fingerprint, so that a changed secret still shows as a change. The
    JUnit and C(.prom) files are made from the redacted report.
  - The files are written with mode C(0640) (never world-readable, whatever the umask) through a
    temporary file and a rename; a report directory that the callback creates, and each missing directory
    above it, gets mode C(0750), whatever the umask.
    An existing directory keeps its mode and owner. A warning says when others may write to it, and when it
    belongs to another user than the one running the play (or root), who could replace the report with one
    that says there is no drift.
requirements:
  - Enable it with C(ANSIBLE_CALLBACKS_ENABLED=hpc.gpu_containers.drift_report) or
    C(callbacks_enabled) in C(ansible.cfg).
options:
  report_dir:
    description:
      - Directory for C(drift.json) and C(drift.md); created when missing.
      - A relative path is taken relative to the directory C(ansible-playbook) runs in.
      - Environment variables in it are expanded (C($JOB_ID) - under AWX each job, and each slice of a sliced job,
        gets a directory of its own).
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
  prom_dir:
    description:
      - Directory for C(hpc_gpu_containers_drift.prom), for example node_exporter's
        C(--collector.textfile.directory); created when missing (mode C(0750)).
      - Default - O(report_dir).
    type: path
    version_added: 0.2.0
    env:
      - name: HPC_DRIFT_PROM_DIR
    ini:
      - section: callback_drift_report
        key: prom_dir
  drift_exit_code:
    description:
      - Exit code of a check-mode run of a playbook with the drift gate that found drift, when no task failed
        and every host was reached. C(0) leaves C(ansible-playbook)'s exit code as it is.
    type: int
    default: 3
    version_added: 0.2.0
    env:
      - name: HPC_DRIFT_EXIT_CODE
    ini:
      - section: callback_drift_report
        key: drift_exit_code
"""

import difflib
import hashlib
import json
import os
import pwd
import re
import stat
import tempfile
import time

from ansible.errors import AnsibleOptionsError
from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase

from ansible_collections.hpc.gpu_containers.plugins.module_utils._drift_report import (
    CENSORED_NOTE, DIR_MODE as REPORT_DIR_MODE, FILE_MODE as REPORT_FILE_MODE, MARKDOWN_FILE, PROM_FILE, REPORT_FILE,
    assemble, report_files)

# Forked task workers inherit the environment: the drift gate play reads the
# report through this variable, wherever report_dir points.
REPORT_ENV = "HPC_DRIFT_REPORT_JSON"


# A PEM private key block, also one cut off before its END line (a truncated diff side).
_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.S)
_REDACTED_KEY_LINE = re.compile(r"^[-+ ]?\[redacted private key, sha256 [0-9a-f]{12}\]$")
# Password hashes as htpasswd, shadow and crypt(3) store them.
_PASSWORD_HASHES = re.compile(
    r"\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}"                                  # bcrypt
    r"|\$(?:apr1|1)\$[./A-Za-z0-9]{0,8}\$[./A-Za-z0-9]{22}"                   # Apache MD5, MD5-crypt
    r"|\$[56]\$(?:rounds=\d+\$)?[./A-Za-z0-9]{0,16}\$[./A-Za-z0-9]{43,86}"  # SHA-256/512-crypt
    r"|\$y\$[./A-Za-z0-9]+\$[./A-Za-z0-9]{0,86}\$[./A-Za-z0-9]{43}"          # yescrypt
    r"|\{SHA\}[A-Za-z0-9+/]{27}=")                                          # htpasswd SHA-1
# Docker's config.json keeps "user:password" base64-encoded under "auth".
_DOCKER_AUTH = re.compile(r'("(?:auth|identitytoken)"\s*:\s*")([^"\s]+)(")', re.I)


FINGERPRINT_ACTIONS = ("hpc.gpu_containers.drift_fingerprint", "drift_fingerprint")
GROUP_BY_ACTIONS = ("ansible.builtin.group_by", "group_by", "ansible.legacy.group_by")


def _fingerprint(secret):
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _redact_key_block(match):
    block, label = match.group(0), match.group(1)
    body = block.split("\n")[1:-1]
    if body and all(_REDACTED_KEY_LINE.match(line) for line in body):
        return block  # redacted already (a diff of two redacted sides): keep its +/- lines
    return "-----BEGIN %s-----\n[redacted private key, sha256 %s]\n-----END %s-----" % (label, _fingerprint(block), label)


def redact(text):
    """Replace private keys, password hashes and Docker auth values in ``text``.

    Each becomes a placeholder with a short SHA-256 fingerprint of what it replaced,
    so two different secrets still differ in a diff while neither can be read back.
    Anything that is not a string is returned as it is.
    """
    if not isinstance(text, str) or not text:
        return text
    text = _PEM_PRIVATE_KEY.sub(_redact_key_block, text)
    text = _PASSWORD_HASHES.sub(lambda m: "[redacted password hash, sha256 %s]" % _fingerprint(m.group(0)), text)
    return _DOCKER_AUTH.sub(lambda m: "%s[redacted, sha256 %s]%s" % (m.group(1), _fingerprint(m.group(2)), m.group(3)), text)


def render_diff(diff, max_lines=400):
    """Turn Ansible's diff value (a dict or a list of dicts) into unified diff text.

    Both sides are redacted (:func:`redact`) before they are compared, and the whole
    text once more before it is cut, so no cut can leave half a key behind.
    """
    diffs = diff if isinstance(diff, list) else [diff]
    out = []
    for item in diffs:
        if not isinstance(item, dict):
            continue
        if "prepared" in item:
            out.append(redact(str(item["prepared"])).rstrip("\n") + "\n")
        if "before" not in item and "after" not in item:
            continue
        before, after = item.get("before"), item.get("after")
        if isinstance(before, (dict, list)):
            before = json.dumps(before, indent=4, sort_keys=True) + "\n"
        if isinstance(after, (dict, list)):
            after = json.dumps(after, indent=4, sort_keys=True) + "\n"
        before = "" if before is None else redact(str(before))
        after = "" if after is None else redact(str(after))
        if before == after:
            continue
        out.extend(difflib.unified_diff(
            before.splitlines(True), after.splitlines(True),
            fromfile="before: %s" % redact(str(item.get("before_header", ""))),
            tofile="after: %s" % redact(str(item.get("after_header", ""))), n=2))
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
    lines = redact("".join(out)).splitlines(True)
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


def _truthy(value):
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"))


def _censored(task, result):
    """Whether Ansible hid this result (no_log), or should have."""
    return ("censored" in result or _truthy(result.get("_ansible_no_log"))
            or _truthy(getattr(task, "no_log", None)))


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
        self._prom_path = None
        self._gate_seen = False
        self._started = time.time()

    # -- helpers -------------------------------------------------------
    def _host_entry(self, host):
        return self._hosts.setdefault(host, {"changed": [], "failed": []})

    @staticmethod
    def _make_directory(directory):
        """``directory`` and each missing one above it, mode 0750 whatever the umask; existing ones are left."""
        missing = []
        while not os.path.isdir(directory):
            missing.append(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        for path in reversed(missing):
            try:
                os.mkdir(path, REPORT_DIR_MODE)
            except FileExistsError:
                continue  # created meanwhile: leave its mode alone, as for any existing directory
            os.chmod(path, REPORT_DIR_MODE)  # whatever the umask

    def _check_directory(self, directory):
        st = os.stat(directory)
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            self._display.warning(
                "drift_report: %s is writable by every user; another user can replace the report" % directory)
        if st.st_uid not in (os.geteuid(), 0):
            try:
                owner = pwd.getpwuid(st.st_uid).pw_name
            except KeyError:
                owner = "uid %d" % st.st_uid
            self._display.warning(
                "drift_report: %s belongs to %s, not to the user running this play: %s can replace the report, "
                "for example with one that says no drift was found; use a directory of your own" % (
                    directory, owner, owner))

    def _paths(self):
        if self._json_path is None:
            directory = os.path.abspath(os.path.expanduser(self.get_option("report_dir")))
            if os.path.isdir(directory):
                self._check_directory(directory)
            else:
                self._make_directory(directory)
            self._json_path = os.path.join(directory, REPORT_FILE)
            self._md_path = os.path.join(directory, MARKDOWN_FILE)
            os.environ[REPORT_ENV] = self._json_path
        return self._json_path, self._md_path

    def _prom_file(self):
        if self._prom_path is None:
            directory = os.path.abspath(os.path.expanduser(self.get_option("prom_dir")
                                                           or self.get_option("report_dir")))
            if os.path.isdir(directory):
                self._check_directory(directory)
            else:
                self._make_directory(directory)
            self._prom_path = os.path.join(directory, PROM_FILE)
        return self._prom_path

    def report(self):
        return assemble(self._hosts, self._unreachable, self._started, self._playbook, self._check_mode)

    def _flush(self, final=False):
        json_path, _md_path = self._paths()
        files = report_files(self.report(), os.path.dirname(json_path),
                             os.path.dirname(self._prom_file()) if final else None)
        for path, text in files:
            # mkstemp: a new file (O_EXCL, mode 0600, no symlink followed) in the report directory.
            fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp",
                                       dir=os.path.dirname(path))
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    os.fchmod(handle.fileno(), REPORT_FILE_MODE)
                    handle.write(text)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass  # already renamed or never created: nothing left behind
                raise

    def _is_gate(self, task):
        if "hpc_drift_gate" in (task.tags or []):
            self._gate_seen = True
            return True
        return False

    def _record_change(self, result, item=None):
        task = result._task
        if self._is_gate(task):
            return
        res = result._result
        role = getattr(task, "_role", None)
        censored = _censored(task, res)
        entry = {
            "task": redact(task.get_name()),
            "action": task.action,
            "role": role.get_name() if role else None,
            "target": None if censored else redact(_target(res)),
            "handler": isinstance(task, Handler),
            "item": None if censored else redact(item),
            # A censored result has no diff; one that carries a diff anyway is not trusted with it.
            "diff": "" if censored else render_diff(res.get("diff", {}), self.get_option("max_diff_lines")),
        }
        if censored:
            entry["censored"] = True
        else:
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
        entry = self._host_entry(result._host.get_name())
        res = result._result
        if result._task.action in FINGERPRINT_ACTIONS and isinstance(res.get("clean"), bool) and not res.get("changed"):
            # the drift fast path's comparison: a clean host gets no further check
            entry["fast_path"] = {"clean": res["clean"], "full_check": False,
                                  "differences": [redact(str(d)) for d in res.get("differences") or []]}
            if res.get("owners"):  # the roles that own what differs: site.yml's check runs only those
                entry["fast_path"]["roles"] = [str(owner) for owner in res["owners"]]
        elif entry.get("fast_path") is not None and result._task.action not in GROUP_BY_ACTIONS:
            entry["fast_path"]["full_check"] = True  # a task ran after the fast path: the host got the full check
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
        censored = _censored(result._task, res)
        self._host_entry(result._host.get_name())["failed"].append({
            "task": redact(result._task.get_name()),
            "action": result._task.action,
            "msg": CENSORED_NOTE if censored else redact(str(res.get("msg", "")))[:2000],
        })
        self._flush()

    def v2_runner_on_unreachable(self, result):
        self._unreachable[result._host.get_name()] = redact(str(result._result.get("msg", "unreachable")))[:500]
        self._hosts.pop(result._host.get_name(), None)
        self._flush()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._is_gate(task)

    def v2_playbook_on_stats(self, stats):
        self._flush(final=True)
        report = self.report()
        summary = report["summary"]
        self._display.display(
            "DRIFT REPORT: %d change(s) on %d of %d host(s), %d failed task(s), %d unreachable -> %s" % (
                summary["changes"], summary["hosts_with_drift"], summary["hosts_checked"],
                summary["failed_tasks"], summary["unreachable_hosts"], self._md_path))
        code = self.get_option("drift_exit_code")
        if code is None or not 0 <= int(code) <= 255:
            raise AnsibleOptionsError("drift_report: drift_exit_code must be 0 to 255, not %r" % (code,))
        failed = any(stats.failures.values()) or any(stats.dark.values()) or report["unreachable"]
        if code and report["drift"] and self._check_mode and self._gate_seen and not failed:
            self._display.display("DRIFT FOUND: exit code %d" % code)
            # After the recap: ansible-playbook's own code (0 here) cannot say "drift"; nothing failed and every
            # host was reached, so ending the run now loses nothing.
            raise SystemExit(int(code))
