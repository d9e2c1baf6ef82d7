# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands of docs/drift-check.md, run as the guide writes them (with bash, in a site directory whose
inventory has no host yet): the drift check by its FQCN writes the four report files, and the guide's checks read
them."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
GUIDE = ROOT / "docs" / "drift-check.md"

RUN = ("ANSIBLE_CALLBACKS_ENABLED=hpc.gpu_containers.drift_report HPC_DRIFT_REPORT_DIR=drift-report "
       "HPC_DRIFT_PROM_DIR=textfile ansible-playbook -i inventory hpc.gpu_containers.drift --check --diff")
SUMMARY = "cat drift-report/drift.md"
JUNIT = ("grep -o 'tests=\"[0-9]*\" failures=\"[0-9]*\" errors=\"[0-9]*\"' drift-report/drift.junit.xml "
         "| head -n 1")
PROM = ("grep '^hpc_gpu_containers_drift_hosts_drifted\\|^hpc_gpu_containers_drift_last_run' "
        "textfile/hpc_gpu_containers_drift.prom")


def _bash(command, cwd):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               PATH="%s:%s" % (os.path.dirname(sys.executable), os.environ["PATH"]))
    # a site's environment: not ansible-test's ANSIBLE_HOST_PATTERN_MISMATCH=error (the inventory has no host yet)
    for key in ("HPC_DRIFT_REPORT_JSON", "ANSIBLE_CALLBACKS_ENABLED", "HPC_DRIFT_REPORT_DIR", "HPC_DRIFT_PROM_DIR",
                "ANSIBLE_HOST_PATTERN_MISMATCH"):
        env.pop(key, None)
    return subprocess.run(["bash", "-c", command], cwd=str(cwd), env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_guide_shows_these_commands():
    text = GUIDE.read_text(encoding="utf-8")
    for command in (RUN, SUMMARY, JUNIT, PROM):
        assert "\n%s\n" % command in text, command


def test_the_guides_commands_run_and_check_the_reports(tmp_path):
    (tmp_path / "inventory").write_text("all:\n  hosts: {}\n")
    proc = _bash(RUN, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    written = sorted(p.name for p in (tmp_path / "drift-report").iterdir())
    assert written == ["drift.json", "drift.junit.xml", "drift.md"]
    assert [p.name for p in (tmp_path / "textfile").iterdir()] == ["hpc_gpu_containers_drift.prom"]
    assert "No drift" in _bash(SUMMARY, tmp_path).stdout
    assert _bash(JUNIT, tmp_path).stdout == 'tests="0" failures="0" errors="0"\n'
    lines = _bash(PROM, tmp_path).stdout.splitlines()
    assert lines[0] == "hpc_gpu_containers_drift_hosts_drifted 0"
    assert lines[1].startswith("hpc_gpu_containers_drift_last_run_timestamp_seconds ") and len(lines) == 2
