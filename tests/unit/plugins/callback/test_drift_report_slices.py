# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A drift check run whole and in --limit slices, for real, and playbooks/drift_join.yml joining the slices: the
joined report must be the whole run's."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.callback.test_drift_report import SITE, _collections_path

ROOT = Path(__file__).resolve().parents[4]


# The sliced drift check, for real: the callback tests' stand-in site over three local hosts, each with its own
# managed file.
def _playbook(tmp_path, playbook, report_dir, *extra):
    env = dict(os.environ)
    env.update({"ANSIBLE_COLLECTIONS_PATH": _collections_path(), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.drift_report",
                "HPC_DRIFT_REPORT_DIR": str(report_dir), "ANSIBLE_LOCALHOST_WARNING": "0"})
    env.pop("HPC_DRIFT_REPORT_JSON", None)
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", "nodeA,nodeB,nodeC,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable,
           "-e", "managed_file=%s/{{ inventory_hostname }}.conf" % tmp_path,
           "-e", "other_file=%s/other.conf" % tmp_path, str(playbook), *extra]
    return subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)


# docs/scale.md's join of the slices, word for word, run in the directory that holds the slices' reports.
JOIN = """ansible-playbook hpc.gpu_containers.drift_join -e '{"hpc_drift_join_src": ["slice00", "slice01"]}' \
-e hpc_drift_join_dest=site"""


def _join(tmp_path, command):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    argv = [sys.executable, "-m", "ansible.cli.playbook"] + shlex.split(command)[1:]
    return subprocess.run(argv, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)


def test_the_join_of_a_sliced_drift_check_equals_the_unsliced_report(tmp_path):
    (tmp_path / "site.yml").write_text(SITE)
    drift = tmp_path / "drift.yml"
    drift.write_text((ROOT / "playbooks" / "drift.yml").read_text())
    for host, content in (("nodeA", "wanted=1\n"), ("nodeB", "wanted=0\n"), ("nodeC", "wanted=1\n"),
                          ("other", "stable\n")):
        (tmp_path / ("%s.conf" % host)).write_text(content)
        os.chmod(tmp_path / ("%s.conf" % host), 0o644)
    whole = _playbook(tmp_path, drift, tmp_path / "whole", "--check", "--diff")
    assert whole.returncode == 3, whole.stdout + whole.stderr
    for name, limit in (("slice00", "nodeA"), ("slice01", "nodeB:nodeC")):
        proc = _playbook(tmp_path, drift, tmp_path / name, "--check", "--diff", "--limit", limit)
        assert proc.returncode == (0 if name == "slice00" else 3), proc.stdout + proc.stderr
    proc = _join(tmp_path, JOIN)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lists 1 change(s) on 1 of 3 host(s) (nodeB), 0 failed task(s) and 0 unreachable host(s)" in proc.stdout
    joined = json.loads((tmp_path / "site" / "drift.json").read_text())
    unsliced = json.loads((tmp_path / "whole" / "drift.json").read_text())
    for key in ("hosts", "summary", "unreachable", "drift", "check_mode", "playbook", "schema_version"):
        assert joined[key] == unsliced[key], key
    assert [c["diff"] for c in joined["hosts"]["nodeB"]["changed"]] == ["--- before: %s/nodeB.conf\n" % tmp_path
                                                                        + "+++ after: %s/nodeB.conf\n" % tmp_path
                                                                        + "@@ -1 +1 @@\n-wanted=0\n+wanted=1\n"]
    prom = [line for line in (tmp_path / "site" / "hpc_gpu_containers_drift.prom").read_text().splitlines()
            if "last_run" not in line]
    assert prom == [line for line in (tmp_path / "whole" / "hpc_gpu_containers_drift.prom").read_text().splitlines()
                    if "last_run" not in line]
    # the same slices again: nothing to write; a host in two slices: refused, the joined report left as it is
    proc = _join(tmp_path, JOIN)
    assert "changed=0" in proc.stdout, proc.stdout
    before = (tmp_path / "site" / "drift.json").read_text()
    proc = _join(tmp_path, JOIN.replace('"slice00"', '"whole"'))
    assert proc.returncode == 2 and "give each host to one slice" in proc.stdout, proc.stdout
    assert (tmp_path / "site" / "drift.json").read_text() == before
