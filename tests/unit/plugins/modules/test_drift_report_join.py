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
