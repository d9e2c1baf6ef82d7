# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report model: summary, Markdown, and the join of the slices' reports."""

import json

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._drift_report import (
    ReportError, assemble, join, load, render_markdown)

CLEAN = {"changed": [], "failed": [], "fast_path": {"clean": True, "full_check": False, "differences": []}}
DRIFTED = {"changed": [{"task": "Merge the daemon settings into daemon.json", "action": "x", "role": "docker_engine",
                        "target": "/etc/docker/daemon.json", "handler": False, "item": None,
                        "diff": "-a\n+b\n"}],
           "failed": [], "fast_path": {"clean": False, "full_check": True,
                                       "differences": ["path:/etc/docker/daemon.json"]}}


def _slice(hosts, started, unreachable=None, check_mode=True):
    return json.loads(json.dumps(assemble(hosts, unreachable or {}, started, "drift.yml", check_mode)))


def test_the_join_of_slices_is_the_report_of_one_run_over_their_hosts():
    whole = _slice({"head": CLEAN, "gpu01": DRIFTED, "gpu02": CLEAN}, 1000, {"gpu03": "ssh: timeout"})
    joined = join([("s0", _slice({"head": CLEAN}, 1005)),
                   ("s1", _slice({"gpu01": DRIFTED, "gpu02": CLEAN}, 1000, {"gpu03": "ssh: timeout"}))])
    assert joined == whole
    assert joined["summary"] == {"hosts_checked": 3, "hosts_with_drift": 1, "changes": 1, "failed_tasks": 0,
                                 "unreachable_hosts": 1, "hosts_clean_by_fast_path": 2}
    assert joined["generated_unix"] == 1000 and joined["drift"] is True
    assert render_markdown(joined) == render_markdown(whole)


def test_a_host_in_two_slices_is_refused_by_name():
    with pytest.raises(ReportError, match="host gpu01 is in s0 and in s1: give each host to one slice"):
        join([("s0", _slice({"gpu01": CLEAN}, 1)), ("s1", _slice({"gpu01": DRIFTED}, 2))])
    with pytest.raises(ReportError, match="host gpu01 is in s0 and in s1"):
        join([("s0", _slice({"gpu01": CLEAN}, 1)), ("s1", _slice({}, 2, {"gpu01": "down"}))])


def test_check_mode_and_converge_reports_are_not_joined():
    with pytest.raises(ReportError, match="check-mode and converge reports cannot be joined .*s1: converge"):
        join([("s0", _slice({"a": CLEAN}, 1)), ("s1", _slice({"b": CLEAN}, 2, check_mode=False))])
    with pytest.raises(ReportError, match="no report to join"):
        join([])


def test_load_names_the_file_and_line_of_a_bad_report():
    with pytest.raises(ReportError, match=r"^r\.json:3: not a drift report \(JSON: "):
        load("r.json", '{\n "hosts": {},\n oops\n}')
    with pytest.raises(ReportError, match=r"r\.json: not a drift report \(no hosts\)"):
        load("r.json", "[]")
    with pytest.raises(ReportError, match=r"r\.json: schema_version 2; this collection reads 1"):
        load("r.json", json.dumps({"schema_version": 2, "hosts": {}}))
    with pytest.raises(ReportError, match="r.json: host a has no list of changes and failures"):
        load("r.json", json.dumps({"schema_version": 1, "hosts": {"a": {"changed": []}}}))
    report = _slice({"a": CLEAN}, 1)
    assert load("r.json", json.dumps(report)) == report
