# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_docker_gpu_scheduling: the role's lsf.conf tasks, as written, on a site's lsf.conf.

LSF refuses bsub -gpu unless LSB_GPU_NEW_SYNTAX is Y or extend, and an installed LSF leaves it off: ``auto``
(the default) writes the GPU keys only where the file has none of its own, keeps a site's own value and says
when a site's N leaves bsub -gpu refused; ``true`` replaces the site's values; ``false`` writes none.
"""

import copy

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    ok,
    role_defaults,
    role_task,
    run_playbook,
)

SITE = "# installed by lsfinstall\nLSF_LOG_MASK=LOG_WARNING\n"
WARNING = "keeps the site's own LSB_GPU_NEW_SYNTAX=N"


def play(tmp_path, text, scheduling):
    conf = tmp_path / "lsf.conf"
    conf.write_text(text)
    variables = copy.deepcopy(role_defaults("lsf_docker"))
    variables.update({"lsf_docker_gpu_scheduling": scheduling,
                      "__lsf_docker_config_info": {"layout": {"lsf_conf": str(conf)}}})
    tasks = [role_task("lsf_docker", "main.yml", name) for name in (
        "Check lsf_docker_gpu_scheduling", "Set the lsf.conf parameters Docker jobs need",
        "Say that bsub -gpu stays refused under the site's own LSB_GPU_NEW_SYNTAX")]
    plays = [{"name": "lsf.conf", "hosts": "all", "gather_facts": False, "vars": variables,
              "vars_files": [str(ROLES / "lsf_docker" / "vars" / "main.yml")], "tasks": tasks,
              "handlers": [{"name": "lsf_docker configuration changed", "ansible.builtin.debug": {"msg": "reload"}}]}]
    return conf, run_playbook(tmp_path, plays)


def values(conf):
    return dict(line.split("=", 1) for line in conf.read_text().splitlines() if "=" in line and line[0] != "#")


def test_auto_writes_the_gpu_syntax_an_installed_lsf_conf_lacks(tmp_path):
    conf, proc = play(tmp_path, SITE, "auto")
    ok(proc)
    got = values(conf)
    assert got["LSB_GPU_NEW_SYNTAX"] == "extend" and got["LSF_GPU_AUTOCONFIG"] == "Y"
    assert got["LSB_RESOURCE_ENFORCE"] == '"cpu memory"'   # no GPU enforcement unless asked for
    assert conf.read_text().startswith(SITE)
    assert WARNING not in proc.stdout


def test_auto_keeps_a_sites_own_value_and_says_what_it_costs(tmp_path):
    conf, proc = play(tmp_path, SITE + "LSB_GPU_NEW_SYNTAX=N\n", "auto")
    ok(proc)
    got = values(conf)
    assert got["LSB_GPU_NEW_SYNTAX"] == "N" and got["LSF_GPU_AUTOCONFIG"] == "Y"
    assert WARNING in proc.stdout and "LSF refuses bsub -gpu" in proc.stdout


def test_true_replaces_the_sites_values_and_enforces_gpus(tmp_path):
    conf, proc = play(tmp_path, SITE + "LSB_GPU_NEW_SYNTAX=N\n", True)
    ok(proc)
    got = values(conf)
    assert got["LSB_GPU_NEW_SYNTAX"] == "extend"
    assert got["LSB_RESOURCE_ENFORCE"].strip('"').split() == ["cpu", "memory", "gpu"]
    assert WARNING not in proc.stdout


def test_false_writes_no_gpu_key(tmp_path):
    conf, proc = play(tmp_path, SITE, False)
    ok(proc)
    assert "LSB_GPU_NEW_SYNTAX" not in values(conf) and "LSF_GPU_AUTOCONFIG" not in values(conf)


@pytest.mark.parametrize("bad", ["sometimes", "extend"])
def test_another_value_is_refused_before_lsf_conf_is_touched(tmp_path, bad):
    conf, proc = play(tmp_path, SITE, bad)
    assert proc.returncode != 0
    assert "lsf_docker_gpu_scheduling must be auto, true or false, not %s" % bad in proc.stdout
    assert conf.read_text() == SITE
