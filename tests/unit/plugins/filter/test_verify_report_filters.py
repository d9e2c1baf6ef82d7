# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_junit and verify_prom filters in a real ansible-playbook run, as playbooks/verify.yml uses them."""

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
