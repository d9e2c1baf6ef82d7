# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""LSB_DOCKER_PASS_ENV: the role's lsf.conf and reload tasks, as written, on a site's lsf.conf.

IBM: by default the EXEC_DRIVER scripts "do not inherit the job submission user's environment"; the starter
wrapper reads the job's GPU allocation from it, so with the wrapper the role writes LSB_DOCKER_PASS_ENV=Y and,
when that changes, restarts sbatchd and RES (they read it only at their start). Without the wrapper the key is
the site's.
"""

import copy

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    debug_values,
    ok,
    role_defaults,
    role_task,
    run_playbook,
)

SITE = "# installed by lsfinstall\nLSF_LOG_MASK=LOG_WARNING\n"


def play(tmp_path, text, **overrides):
    conf = tmp_path / "lsf.conf"
    conf.write_text(text)
    variables = copy.deepcopy(role_defaults("lsf_docker"))
    variables.update({"__lsf_docker_config_info": {"layout": {"lsf_conf": str(conf)}},
                      # the other files of the run, unchanged
                      "__lsf_docker_lsf_shared_result": {"changed": False},
                      "__lsf_docker_lsf_cluster_result": {"changed": False},
                      "__lsf_docker_lsb_applications_result": {"changed": False}})
    variables.update(overrides)
    tasks = [role_task("lsf_docker", "main.yml", name) for name in (
        "Set the lsf.conf parameters Docker jobs need", "Work out which reloads the changes need")]
    tasks.append({"name": "value: plan", "ansible.builtin.debug": {"msg": "{{ __lsf_docker_reload_plan }}"}})
    plays = [{"name": "lsf.conf", "hosts": "all", "gather_facts": False, "vars": variables,
              "vars_files": [str(ROLES / "lsf_docker" / "vars" / "main.yml")], "tasks": tasks,
              "handlers": [{"name": "lsf_docker configuration changed", "ansible.builtin.set_fact": {"reloaded": True}}]}]
    proc = ok(run_playbook(tmp_path, plays))
    values = dict(line.split("=", 1) for line in conf.read_text().splitlines() if "=" in line and line[0] != "#")
    return values, debug_values(proc)["plan"]


@pytest.mark.parametrize("site", ["", "LSB_DOCKER_PASS_ENV=N\n"])
def test_the_wrapper_gets_the_jobs_environment_and_the_daemons_restart(tmp_path, site):
    values, plan = play(tmp_path, SITE + site)
    assert values["LSB_DOCKER_PASS_ENV"] == "Y"
    assert plan["hosts_restart"] is True and plan["lim"] is True and plan["mbdrestart"] is False


def test_a_file_that_already_passes_the_environment_restarts_nothing(tmp_path):
    values, plan = play(tmp_path, SITE + "LSB_DOCKER_PASS_ENV=y\n"
                        "LSF_PROCESS_TRACKING=Y\nLSF_LINUX_CGROUP_ACCT=Y\nLSB_RESOURCE_ENFORCE=\"cpu memory\"\n"
                        "LSB_GPU_NEW_SYNTAX=extend\nLSF_GPU_AUTOCONFIG=Y\n")
    assert values["LSB_DOCKER_PASS_ENV"] == "y"     # the same setting, as the site spells it
    assert plan == {"lim": False, "mbdrestart": False, "batch": False, "hosts_restart": False}


def test_without_the_wrapper_the_key_is_the_sites(tmp_path):
    values, plan = play(tmp_path, SITE + "LSB_DOCKER_PASS_ENV=N\n", lsf_docker_starter_wrapper=False)
    assert values["LSB_DOCKER_PASS_ENV"] == "N"
    assert plan["hosts_restart"] is False and plan["lim"] is True
