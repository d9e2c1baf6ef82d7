# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NGC options the image profiles get: with --ipc=host Docker ignores --shm-size (the container uses the node's
/dev/shm), so the role leaves it out there; without it the profiles carry it."""

import copy

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    debug_values,
    ok,
    role_defaults,
    run_playbook,
)


@pytest.mark.parametrize("ipc_host, expected", [
    (True, ["--ulimit=stack=67108864"]),
    (False, ["--shm-size=1g", "--ulimit=stack=67108864"]),
])
def test_shm_size_only_where_docker_applies_it(tmp_path, ipc_host, expected):
    variables = copy.deepcopy(role_defaults("lsf_docker"))
    variables["lsf_docker_ipc_host"] = ipc_host
    plays = [{"name": "ngc", "hosts": "all", "gather_facts": False, "vars": variables,
              "vars_files": [str(ROLES / "lsf_docker" / "vars" / "main.yml")],
              "tasks": [{"name": "value: ngc", "ansible.builtin.debug": {"msg": "{{ __lsf_docker_ngc_options }}"}}]}]
    assert debug_values(ok(run_playbook(tmp_path, plays)))["ngc"] == expected


def test_a_sites_own_shm_size_spelling_is_left_out_too(tmp_path):
    variables = copy.deepcopy(role_defaults("lsf_docker"))
    variables["lsf_docker_ngc_options"] = ["--shm-size", "8g", "--shm-size=2g", "--shm-size 4g",
                                           "--shm-sizes-are-not-an-option", "8g"]
    plays = [{"name": "ngc", "hosts": "all", "gather_facts": False, "vars": variables,
              "vars_files": [str(ROLES / "lsf_docker" / "vars" / "main.yml")],
              "tasks": [{"name": "value: ngc", "ansible.builtin.debug": {"msg": "{{ __lsf_docker_ngc_options }}"}}]}]
    assert debug_values(ok(run_playbook(tmp_path, plays)))["ngc"] == ["--shm-sizes-are-not-an-option", "8g"]
