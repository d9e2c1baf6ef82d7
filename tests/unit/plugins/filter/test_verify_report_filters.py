# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_junit and verify_prom filters in a real ansible-playbook run, as playbooks/verify.yml uses them."""

import json

from junitparser import JUnitXml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import run_playbook

REPORT = {"schema_version": 1, "generated": "2026-01-01T00:00:00Z", "generated_unix": 1767225600,
          "hosts": {"gpu01": {"passed": True, "reasons": [], "architecture": {"node": "x86_64", "container": "x86_64"},
                              "gpus": {"requested": ["GPU-a"], "host": 1, "container": 1,
                                       "container_gpus": [{"uuid": "GPU-a"}]}, "lsf": None}}}


def _play(tmp_path, report):
    return [{"name": "Render", "hosts": "localhost", "gather_facts": False, "vars": {"report": report}, "tasks": [
        {"name": "JUnit", "ansible.builtin.copy": {"content": "{{ report | hpc.gpu_containers.verify_junit }}",
                                                   "dest": str(tmp_path / "r.junit.xml"), "mode": "0640"}},
        {"name": "Textfile", "ansible.builtin.copy": {"content": "{{ report | hpc.gpu_containers.verify_prom }}",
                                                      "dest": str(tmp_path / "r.prom"), "mode": "0640"}}]}]


def test_the_filters_render_what_the_parsers_read(tmp_path):
    proc = run_playbook(tmp_path, _play(tmp_path, REPORT))
    assert proc.returncode == 0, proc.stdout[-3000:]
    names = sorted(case.name for suite in JUnitXml.fromfile(str(tmp_path / "r.junit.xml")) for case in suite)
    assert names == ["GPU 0 GPU-a", "GPU count", "architecture", "verification"]
    families = {f.name: f for f in text_string_to_metric_families((tmp_path / "r.prom").read_text())}
    assert [(s.labels, s.value) for s in families["hpc_gpu_containers_verify_gpu_passed"].samples] == [
        ({"gpu": "0", "host": "gpu01", "uuid": "GPU-a"}, 1)]


def test_a_report_without_schema_version_is_refused_by_name(tmp_path):
    proc = run_playbook(tmp_path, _play(tmp_path, {"gpu01": {"passed": True}}))
    assert proc.returncode == 2
    assert "verify_junit: the input is not a verification report (no 'hosts' mapping)" in proc.stdout


def test_the_summary_table(tmp_path):
    report = {"schema_version": 1, "generated": "2026-01-01T00:00:00Z", "generated_unix": 1767225600, "hosts": {
        "gpu01": dict(REPORT["hosts"]["gpu01"], timings={"pull": 1.5, "create": 0.2, "start": 0.4, "run": 0.1},
                      lsf={"passed": True, "timings": {"total": 3.2}},
                      benchmark={"ratio": 1.02, "host": {"median": 1.0}, "container": {"median": 1.02}}),
        "gpu02": {"passed": False, "reasons": ["the container saw 1 GPU, the host 2"],
                  "architecture": {"node": "ppc64le"}, "gpus": {"host": 2, "container": 1}, "timings": {},
                  "lsf": {"passed": False, "timings": {}}, "benchmark": None},
        "head": {"passed": None, "reasons": [], "architecture": {}, "gpus": {}, "timings": {}, "lsf": None}}}
    play = [{"name": "Summary", "hosts": "localhost", "gather_facts": False, "vars": {"report": report}, "tasks": [
        {"name": "Lines", "ansible.builtin.copy": {"content": "{{ report | hpc.gpu_containers.verify_summary | join('\n') }}",
                                                   "dest": str(tmp_path / "summary.txt"), "mode": "0640"}}]}]
    proc = run_playbook(tmp_path, play)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "summary.txt").read_text().splitlines() == [
        "node                 arch     gpus h/c   verdict  pull   create start  run    lsf (s)      cpu c/h (s)",
        "gpu01                x86_64   1/1        PASS     1.5    0.2    0.4    0.1    PASS 3.2     1.02 (1.0/1.02)",
        "gpu02                ppc64le  2/1        FAIL     -      -      -      -      FAIL -       -",
        "    the container saw 1 GPU, the host 2",
        "head                 ?        ?/?        not run  -      -      -      -      -            -"]


def test_the_report_from_each_hosts_result(tmp_path):
    result = {"passed": False, "reasons": ["no GPU"], "gpus": {"host": 1, "container": 0}, "extra": "dropped"}
    play = [{"name": "Report", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "A result", "ansible.builtin.set_fact": {"container_verify_result": result},
         "when": "with_result | bool"},
        {"name": "Write it", "ansible.builtin.copy": {
            "content": "{{ ansible_play_hosts_all | hpc.gpu_containers.verify_report(hostvars, 1767225600.7)"
                       " | to_json }}",
            "dest": str(tmp_path / "report.json"), "mode": "0640"}}]}]
    ok = run_playbook(tmp_path, play, "-e", "with_result=true")
    assert ok.returncode == 0, ok.stdout[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["schema_version"], report["generated"], report["generated_unix"]) == (
        1, "2026-01-01T00:00:00Z", 1767225600)
    assert report["hosts"]["localhost"] == {"passed": False, "reasons": ["no GPU"], "architecture": {},
                                            "gpus": {"host": 1, "container": 0}, "timings": {}, "image": {},
                                            "benchmark": None, "lsf": None}
    # A host whose verification did not run: no verdict.
    assert run_playbook(tmp_path, play, "-e", "with_result=false").returncode == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["hosts"]["localhost"]["passed"] is None and report["hosts"]["localhost"]["reasons"] == []
