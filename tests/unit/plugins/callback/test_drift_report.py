# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift_report callback and the gate in playbooks/drift.yml, run for real.

Each test runs ansible-playbook against localhost with the callback enabled and
reads the report it wrote.  playbooks/drift.yml is copied next to a small
stand-in site.yml, so the real gate logic is what decides the exit code.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.callback.drift_report import render_diff

ROOT = Path(__file__).resolve().parents[4]


def _collections_path():
    if ROOT.parent.parent.name == "ansible_collections":
        return str(ROOT.parents[2])  # ansible-test's copy of the collection
    return os.environ["ANSIBLE_COLLECTIONS_PATH"]


SITE = """\
- name: Stand-in site play
  hosts: all
  gather_facts: false
  tasks:
    - name: Managed file
      ansible.builtin.copy:
        dest: "{{ managed_file }}"
        content: "wanted=1\\n"
        mode: "0644"
    - name: Untouched setting
      ansible.builtin.copy:
        dest: "{{ other_file }}"
        content: "stable\\n"
        mode: "0644"
"""


def _run(tmp_path, playbook, *extra):
    report_dir = tmp_path / "report"
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": _collections_path(),
        "ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.drift_report",
        "HPC_DRIFT_REPORT_DIR": str(report_dir),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
    })
    env.pop("HPC_DRIFT_REPORT_JSON", None)
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", "nodeA,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable,
           "-e", "managed_file=%s" % (tmp_path / "managed.conf"),
           "-e", "other_file=%s" % (tmp_path / "other.conf"),
           str(playbook), *extra]
    proc = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    report = report_dir / "drift.json"
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data, report_dir


@pytest.fixture()
def drift_playbook(tmp_path):
    (tmp_path / "site.yml").write_text(SITE)
    shutil.copy(ROOT / "playbooks" / "drift.yml", tmp_path / "drift.yml")
    (tmp_path / "other.conf").write_text("stable\n")
    os.chmod(tmp_path / "other.conf", 0o644)
    return tmp_path / "drift.yml"


def test_drift_found_is_reported_with_diff_and_exit_3(tmp_path, drift_playbook):
    (tmp_path / "managed.conf").write_text("wanted=0\n")
    os.chmod(tmp_path / "managed.conf", 0o644)
    proc, report, report_dir = _run(tmp_path, drift_playbook, "--check", "--diff")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "DRIFT FOUND: exit code 3" in proc.stdout
    assert "PLAY RECAP" in proc.stdout and "failed=0" in proc.stdout
    assert "Drift found: 1 change(s) on 1 host(s) (nodeA)" in proc.stdout
    assert report["drift"] is True and report["check_mode"] is True
    changes = report["hosts"]["nodeA"]["changed"]
    assert [c["task"] for c in changes] == ["Managed file"]
    assert "-wanted=0\n+wanted=1\n" in changes[0]["diff"]
    assert report["hosts"]["nodeA"]["failed"] == []
    # check mode wrote nothing
    assert (tmp_path / "managed.conf").read_text() == "wanted=0\n"
    markdown = (report_dir / "drift.md").read_text()
    assert "## nodeA" in markdown and "+wanted=1" in markdown


def test_clean_host_exits_0_and_says_no_drift(tmp_path, drift_playbook):
    (tmp_path / "managed.conf").write_text("wanted=1\n")
    os.chmod(tmp_path / "managed.conf", 0o644)
    proc, report, report_dir = _run(tmp_path, drift_playbook, "--check", "--diff")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["drift"] is False
    assert report["summary"]["hosts_checked"] == 1
    assert report["hosts"]["nodeA"] == {"changed": [], "failed": []}
    assert "No drift" in (report_dir / "drift.md").read_text()


def test_drift_playbook_refuses_to_run_without_check_mode(tmp_path, drift_playbook):
    (tmp_path / "managed.conf").write_text("wanted=0\n")
    proc, _report, _dir = _run(tmp_path, drift_playbook)
    assert proc.returncode == 2
    assert "Run the drift check in check mode" in proc.stdout
    assert (tmp_path / "managed.conf").read_text() == "wanted=0\n"


def test_render_diff_handles_dicts_lists_and_prepared():
    text = render_diff([
        {"before": {"a": 1}, "after": {"a": 2}, "before_header": "x.json", "after_header": "x.json"},
        {"prepared": "package foo would be installed"},
        {"before": "same\n", "after": "same\n"},
    ])
    assert '-    "a": 1\n+    "a": 2\n' in text
    assert "package foo would be installed\n" in text
    assert text.count("---") == 1  # the identical pair adds no hunk


def test_render_diff_cuts_long_diffs():
    before = "".join("line%d\n" % i for i in range(100))
    text = render_diff({"before": before, "after": ""}, max_lines=10)
    assert text.splitlines()[-1] == "... diff cut after 10 lines"
    assert len(text.splitlines()) == 11


FAST_PATH_PLAY = """\
- name: Stand-in fast path
  hosts: all
  gather_facts: false
  tasks:
    - name: Compare the node with its fingerprint
      hpc.gpu_containers.drift_fingerprint:
        path: "{{ record }}"
        inputs: "{{ inputs | default('same-inputs') }}"
      register: hpc_drift_fingerprint
      when: ansible_check_mode
    - name: Leave out the nodes where nothing changed
      ansible.builtin.group_by:
        key: hpc_drift_clean
      changed_when: false
      when: hpc_drift_fingerprint.clean | default(false)

"""
RECORD_TASK = """\
    - name: Record
      hpc.gpu_containers.drift_fingerprint:
        path: "{{ record }}"
        state: record
        inputs: same-inputs
        items: {paths: ["{{ other_file }}"]}
        owned_items: {stand_in: {paths: ["{{ managed_file }}"]}}
      when: not ansible_check_mode
"""
# The stand-in site with the fast path in front (its plays leave the clean hosts out) and the record at its end.
FAST_SITE = FAST_PATH_PLAY + SITE.replace(
    "hosts: all", "hosts: \"all{{ ':!hpc_drift_clean' if 'hpc_drift_clean' in groups else '' }}\"") + RECORD_TASK


def test_the_fast_path_is_reported_clean_or_with_the_differences_that_sent_a_host_to_the_full_check(tmp_path):
    (tmp_path / "site.yml").write_text(FAST_SITE)
    shutil.copy(ROOT / "playbooks" / "drift.yml", tmp_path / "drift.yml")
    record = "record=%s" % (tmp_path / "fingerprint.json")
    proc, _report, _dir = _run(tmp_path, tmp_path / "site.yml", "-e", record)  # the converge records
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc, report, report_dir = _run(tmp_path, tmp_path / "drift.yml", "--check", "--diff", "-e", record)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["hosts"]["nodeA"]["fast_path"] == {"clean": True, "full_check": False, "differences": []}
    assert report["summary"]["hosts_clean_by_fast_path"] == 1
    assert "Fast path: nodeA matched the fingerprint" in (report_dir / "drift.md").read_text()
    assert "TASK [Managed file]" not in proc.stdout  # the clean host got no further check
    assert "TASK [Untouched setting]" not in proc.stdout
    # other inputs, nothing drifted: the full check finds nothing, and the report says why it ran
    proc, report, report_dir = _run(tmp_path, tmp_path / "drift.yml", "--check", "--diff", "-e", record,
                                    "-e", "inputs=other-inputs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["hosts"]["nodeA"]["fast_path"] == {"clean": False, "full_check": True, "differences": ["inputs"]}
    assert "Checked because their fingerprint differed, no drift found: nodeA (the full check: inputs)." in (
        report_dir / "drift.md").read_text()
    (tmp_path / "managed.conf").write_text("wanted=0\n")
    proc, report, report_dir = _run(tmp_path, tmp_path / "drift.yml", "--check", "--diff", "-e", record)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    entry = report["hosts"]["nodeA"]
    assert entry["fast_path"] == {"clean": False, "full_check": True, "roles": ["stand_in"],
                                  "differences": ["path:%s" % (tmp_path / "managed.conf")]}
    assert [c["task"] for c in entry["changed"]] == ["Managed file"]
    assert report["summary"]["hosts_clean_by_fast_path"] == 0
    assert "Fingerprint differences (hence the check of its roles alone: stand_in): `path:%s`" % (
        tmp_path / "managed.conf") in (
        report_dir / "drift.md").read_text()
