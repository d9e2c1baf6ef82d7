# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drift_report_join: the joined files, their modes, check mode, a rerun, bad slices (the join of a real sliced
drift check: tests/unit/plugins/callback/test_drift_report_slices.py)."""

import json
import os
import stat
from pathlib import Path

from ansible_collections.hpc.gpu_containers.plugins.module_utils._drift_report import assemble
from ansible_collections.hpc.gpu_containers.plugins.modules import drift_report_join
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

CLEAN = {"changed": [], "failed": []}
DRIFTED = {"changed": [{"task": "Managed file", "action": "ansible.builtin.copy", "role": None, "target": "/x",
                        "handler": False, "item": None, "diff": "-wanted=0\n+wanted=1\n"}], "failed": []}


def _write(directory, hosts, started=1000):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "drift.json").write_text(json.dumps(assemble(hosts, {}, started, "drift.yml", True)))
    return str(directory)


def run(capsys, **args):
    return run_module(drift_report_join, capsys, invocation=False, **args)


def test_the_joined_files_are_private_and_a_rerun_changes_nothing(tmp_path, capsys):
    src = [_write(tmp_path / "s0", {"head": CLEAN}), str(Path(_write(tmp_path / "s1", {"gpu01": DRIFTED})) / "drift.json")]
    dest, prom = tmp_path / "site" / "report", tmp_path / "textfile"
    assert run(capsys, check=True, src=src, dest=str(dest), prom_dir=str(prom))["changed"]
    assert not dest.exists() and not prom.exists()
    result = run(capsys, src=src, dest=str(dest), prom_dir=str(prom))
    assert result["changed"] and result["drift"] and result["drifted_hosts"] == ["gpu01"]
    assert result["summary"]["hosts_checked"] == 2 and result["summary"]["changes"] == 1
    assert sorted(os.listdir(dest)) == ["drift.json", "drift.junit.xml", "drift.md"]
    assert os.listdir(prom) == ["hpc_gpu_containers_drift.prom"]
    for path in [*dest.iterdir(), *prom.iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path
    assert stat.S_IMODE(dest.stat().st_mode) == 0o750
    assert 'hpc_gpu_containers_drift_host_drifted{host="gpu01"} 1' in (prom / "hpc_gpu_containers_drift.prom").read_text()
    assert not run(capsys, src=src, dest=str(dest), prom_dir=str(prom))["changed"]


def test_a_bad_slice_fails_by_name_and_writes_nothing(tmp_path, capsys):
    good = _write(tmp_path / "s0", {"head": CLEAN})
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "drift.json").write_text('{"hosts":\n')
    result = run(capsys, src=[good, str(tmp_path / "s1")], dest=str(tmp_path / "site"))
    assert result["failed"] and result["msg"].startswith("%s:2: not a drift report" % (tmp_path / "s1" / "drift.json"))
    result = run(capsys, src=[good, str(tmp_path / "missing")], dest=str(tmp_path / "site"))
    assert result["failed"] and "missing: cannot read the report: No such file or directory" in result["msg"]
    result = run(capsys, src=[good, good], dest=str(tmp_path / "site"))
    assert result["failed"] and "host head is in" in result["msg"]
    assert not (tmp_path / "site").exists()


def test_a_pattern_joins_every_slice_it_matches_and_remove_src_leaves_the_directory_empty(tmp_path, capsys):
    # AWX's slices of one job template: one directory pattern, a directory per job id ($JOB_ID).
    nightly = tmp_path / "nightly"
    _write(nightly / "101", {"head": CLEAN})
    _write(nightly / "102", {"gpu01": DRIFTED})
    (nightly / "102" / "drift.md").write_text("slice's own")
    (nightly / "103").mkdir()
    (nightly / "103" / "notes.txt").write_text("not the callback's")
    _write(nightly / "103", {"gpu02": CLEAN})
    dest = tmp_path / "site"
    pattern = str(nightly / "*")
    checked = run(capsys, check=True, src=[pattern], dest=str(dest), remove_src=True)
    assert checked["changed"] and sorted(checked["removed"]) == sorted(
        [str(nightly / "101" / "drift.json"), str(nightly / "102" / "drift.json"), str(nightly / "102" / "drift.md"),
         str(nightly / "103" / "drift.json")])
    assert sorted(os.listdir(nightly)) == ["101", "102", "103"] and not dest.exists()
    result = run(capsys, src=[pattern], dest=str(dest), remove_src=True)
    assert result["summary"]["hosts_checked"] == 3 and result["drifted_hosts"] == ["gpu01"]
    assert sorted(result["removed"]) == sorted(checked["removed"])
    # what the callback did not write stays, with its directory; the others are gone
    assert os.listdir(nightly) == ["103"] and os.listdir(nightly / "103") == ["notes.txt"]
    assert json.loads((dest / "drift.json").read_text())["summary"]["hosts_checked"] == 3
    # a directory the pattern matches without a report is named; a pattern that matches nothing (no slice ran) too
    result = run(capsys, src=[pattern], dest=str(dest))
    assert result["failed"] and result["msg"].startswith("%s: cannot read the report" % (nightly / "103" / "drift.json"))
    result = run(capsys, src=[str(nightly / "2*")], dest=str(dest))
    assert result["failed"] and result["msg"] == "%s: no report matches this pattern" % (nightly / "2*")


def test_a_pattern_that_takes_in_the_joined_report_is_refused(tmp_path, capsys):
    _write(tmp_path / "drift" / "101", {"head": CLEAN})
    dest = tmp_path / "drift" / "site"
    assert not run(capsys, src=[str(tmp_path / "drift" / "*")], dest=str(dest)).get("failed")
    result = run(capsys, src=[str(tmp_path / "drift" / "*")], dest=str(dest), remove_src=True)
    assert result["failed"] and result["msg"] == "%s: a report where the joined one is written (dest, prom_dir)" % dest
    assert (tmp_path / "drift" / "101" / "drift.json").exists()
