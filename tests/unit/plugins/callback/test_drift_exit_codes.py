# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nightly drift check's exit codes and its JUnit and node_exporter files, from real ansible-playbook runs.

playbooks/drift.yml runs next to a stand-in site.yml against local hosts (and, for the unreachable case, a host
behind a closed port): 0 no drift, 2 a task failed, 3 drift and nothing else, 4 a host unreachable; failures and
unreachable hosts win over drift. The JUnit file is read with junitparser and the textfile with prometheus_client's
parser, through the checks molecule's default scenario runs (molecule/default/check_drift_report.py).
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[4]
_SPEC = importlib.util.spec_from_file_location("check_drift_report",
                                               ROOT / "molecule" / "default" / "check_drift_report.py")
check_drift_report = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(check_drift_report)

SITE = """\
- name: Stand-in site play
  hosts: all
  gather_facts: false
  tasks:
    - name: Managed file
      ansible.builtin.copy:
        dest: "{{ managed_dir }}/{{ inventory_hostname }}.conf"
        content: "wanted=1\\n"
        mode: "0644"
    - name: A check that fails on nodeB
      ansible.builtin.fail:
        msg: "nodeB's <check> & \\"quote\\" failed"
      when: inventory_hostname == 'nodeB'
"""


def _inventory(tmp_path, *lines):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("\n".join(["[all]"] + list(lines)) + "\n")
    return inventory


LOCAL = "%s ansible_connection=local ansible_python_interpreter=" + sys.executable
GHOST = ("ghost ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1 "
         "ansible_ssh_common_args='-o ConnectTimeout=3 -o BatchMode=yes'")


def _run(tmp_path, inventory, *extra, env=None, playbook="drift.yml"):
    report_dir = tmp_path / "report"
    run_env = dict(os.environ)
    run_env.update({
        "ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.drift_report",
        "HPC_DRIFT_REPORT_DIR": str(report_dir),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
    })
    run_env.pop("HPC_DRIFT_REPORT_JSON", None)
    run_env.update(env or {})
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", str(inventory),
           "-e", "managed_dir=%s" % tmp_path, str(tmp_path / playbook), *extra]
    proc = subprocess.run(cmd, env=run_env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False)
    report = report_dir / "drift.json"
    return proc, (json.loads(report.read_text()) if report.exists() else None), report_dir


@pytest.fixture()
def site(tmp_path):
    (tmp_path / "site.yml").write_text(SITE)
    shutil.copy(ROOT / "playbooks" / "drift.yml", tmp_path / "drift.yml")
    for host in ("nodeA", "nodeB"):
        (tmp_path / ("%s.conf" % host)).write_text("wanted=1\n")
        os.chmod(tmp_path / ("%s.conf" % host), 0o644)
    return tmp_path


def _drift_on_nodeA(tmp_path):
    (tmp_path / "nodeA.conf").write_text("wanted=0\n")


def _junit(report_dir):
    out = {}
    for suite in JUnitXml.fromfile(str(report_dir / "drift.junit.xml")):
        for case in suite:
            out[(suite.name, case.name)] = [type(result) for result in case.result]
    return out


def _prom(path):
    return {family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
            for family in text_string_to_metric_families(path.read_text())}


def _agree(report, report_dir):
    problems = check_drift_report.check_junit(report, str(report_dir / "drift.junit.xml"))
    problems += check_drift_report.check_prom(report, str(report_dir / "hpc_gpu_containers_drift.prom"))
    assert problems == []


def test_no_drift_exits_0_and_every_file_says_so(site):
    began = time.time()
    proc, report, report_dir = _run(site, _inventory(site, LOCAL % "nodeA"), "--check", "--diff")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["schema_version"] == 1 and report["drift"] is False
    assert int(began) - 1 <= report["generated_unix"] <= time.time()
    assert _junit(report_dir) == {("nodeA", "no drift"): []}
    prom = _prom(report_dir / "hpc_gpu_containers_drift.prom")
    assert prom["hpc_gpu_containers_drift_host_drifted"] == {(("host", "nodeA"),): 0}
    assert prom["hpc_gpu_containers_drift_last_run_timestamp_seconds"] == {(): report["generated_unix"]}
    _agree(report, report_dir)


def test_drift_alone_exits_3_with_a_junit_failure_and_the_prom_counts(site):
    _drift_on_nodeA(site)
    proc, report, report_dir = _run(site, _inventory(site, LOCAL % "nodeA"), "--check", "--diff")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.index("PLAY RECAP") < proc.stdout.index("DRIFT FOUND: exit code 3")
    assert _junit(report_dir) == {("nodeA", "Managed file"): [Failure]}
    suite = next(iter(JUnitXml.fromfile(str(report_dir / "drift.junit.xml"))))
    failure = next(iter(suite)).result[0]
    assert "-wanted=0" in failure.text and "+wanted=1" in failure.text
    prom = _prom(report_dir / "hpc_gpu_containers_drift.prom")
    assert prom["hpc_gpu_containers_drift_host_differences"] == {(("host", "nodeA"),): 1}
    assert prom["hpc_gpu_containers_drift_hosts_drifted"] == {(): 1}
    _agree(report, report_dir)


def test_a_failed_task_exits_2_even_with_drift(site):
    _drift_on_nodeA(site)
    proc, report, report_dir = _run(site, _inventory(site, LOCAL % "nodeA", LOCAL % "nodeB"), "--check", "--diff")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "DRIFT FOUND" not in proc.stdout
    assert report["drift"] is True and report["summary"]["failed_tasks"] == 1
    junit = _junit(report_dir)
    assert junit[("nodeA", "Managed file")] == [Failure]
    assert junit[("nodeB", "A check that fails on nodeB")] == [Error]
    text = (report_dir / "drift.junit.xml").read_text()
    assert "&lt;check&gt; &amp; &quot;quote&quot;" in text or "&lt;check&gt; &amp; \"quote\"" in text
    _agree(report, report_dir)


def test_an_unreachable_host_exits_4_even_with_drift(site):
    _drift_on_nodeA(site)
    proc, report, report_dir = _run(site, _inventory(site, LOCAL % "nodeA", GHOST), "--check", "--diff")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "DRIFT FOUND" not in proc.stdout
    assert list(report["unreachable"]) == ["ghost"] and report["drift"] is True
    assert _junit(report_dir)[("ghost", "reachable")] == [Error]
    prom = _prom(report_dir / "hpc_gpu_containers_drift.prom")
    assert prom["hpc_gpu_containers_drift_host_unreachable"][(("host", "ghost"),)] == 1
    _agree(report, report_dir)


def test_drift_exit_code_0_keeps_ansible_playbooks_code(site):
    _drift_on_nodeA(site)
    proc, report, _dir = _run(site, _inventory(site, LOCAL % "nodeA"), "--check", "--diff",
                              env={"HPC_DRIFT_EXIT_CODE": "0"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["drift"] is True


def test_a_converge_with_the_callback_keeps_exit_code_0(site):
    """Not the drift check (no check mode, no drift gate): the report lists the changes, the exit code is 0."""
    _drift_on_nodeA(site)
    proc, report, _dir = _run(site, _inventory(site, LOCAL % "nodeA"), playbook="site.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["drift"] is True and (site / "nodeA.conf").read_text() == "wanted=1\n"


def test_the_prom_file_goes_to_its_own_directory(site):
    _drift_on_nodeA(site)
    prom_dir = site / "textfile"
    proc, _report, report_dir = _run(site, _inventory(site, LOCAL % "nodeA"), "--check", "--diff",
                                     env={"HPC_DRIFT_PROM_DIR": str(prom_dir)})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert [p.name for p in prom_dir.iterdir()] == ["hpc_gpu_containers_drift.prom"]
    assert not (report_dir / "hpc_gpu_containers_drift.prom").exists()
