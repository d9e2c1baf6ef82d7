# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_docker's preflight entry point (what site.yml's pre-flight runs on the LSF master) has its own argument spec:
a bad value stops it before any LSF file is read, with the entry point's name and the variable's."""

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import run_playbook


def preflight_play(**variables):
    return [{
        "name": "The LSF pre-flight",
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [{
            "name": "Find the LSF configuration",
            "ansible.builtin.include_role": {"name": "lsf_docker", "tasks_from": "preflight"},
            "vars": variables,
        }],
    }]


def test_a_bad_value_fails_the_preflight_entry_points_validation(tmp_path):
    proc = run_playbook(tmp_path, preflight_play(lsf_docker_create_missing_hosts="sometimes", lsf_docker_hosts=["n1"]))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Validating arguments against arg spec 'preflight'" in out, out[-3000:]
    assert "lsf_docker_create_missing_hosts" in out


def test_good_values_pass_it_and_reach_the_lsf_checks(tmp_path):
    proc = run_playbook(tmp_path, preflight_play(lsf_docker_envdir=str(tmp_path / "no-lsf"), lsf_docker_hosts=["n1"]))
    out = proc.stdout + proc.stderr
    # the spec passed (its task ran); the LSF checks themselves then fail on a directory without lsf.conf
    assert "Validating arguments against arg spec 'preflight'" in out, out[-3000:]
    assert "Find the LSF configuration and the Docker hosts it lacks" in out, out[-3000:]
    assert proc.returncode != 0 and "lsf.conf" in out
