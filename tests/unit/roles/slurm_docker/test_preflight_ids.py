# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_docker pre-flight's id checks, as the role's tasks are written, run with ansible-playbook on local
aliases of a controller and two compute nodes: each host's ids from a real getent lookup (passwd_ids), and the
check that the hosts agree (slurm_id_problems), which fails the run naming every disagreement."""

import sys

import yaml

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import debug_values, ok, role_task, run_playbook

LOOKUPS = [role_task("slurm_docker", "preflight.yml", name) for name in (
    "Look up the docker group", "Look up the users who run Docker jobs",
    "Note this host's ids (docker group id, uid:gid of each user)")]
CHECK = role_task("slurm_docker", "preflight.yml", "Check that the Slurm hosts agree on the docker group and the users")
ROLE_VARS = {"slurm_docker_node_group": "slurm_nodes", "slurm_docker_docker_group": "root",
             "__slurm_docker_with_docker": True}


def inventory(tmp_path, ids=None):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts = {name: dict(local, **({"fake_ids": ids[name]} if ids else {})) for name in ("controller", "n1", "n2")}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {
        "slurm_controller": {"hosts": {"controller": hosts["controller"]}},
        "slurm_nodes": {"hosts": {"n1": hosts["n1"], "n2": hosts["n2"]}}}}}))
    return str(path)


def test_each_host_notes_the_groups_id_and_each_users_uid_gid_from_getent(tmp_path):
    tasks = LOOKUPS + [{"name": "value: ids", "ansible.builtin.debug": {"msg": "{{ __slurm_docker_ids }}"}}]
    play = {"hosts": "n1", "gather_facts": False, "vars": dict(ROLE_VARS, slurm_docker_users=["root", "no-such-user"]),
            "tasks": tasks}
    ids = debug_values(ok(run_playbook(tmp_path, [play], "-i", inventory(tmp_path))))["ids"]
    assert ids == {"docker_gid": "0", "users": {"root": "0:0", "no-such-user": None}}


def test_hosts_that_disagree_fail_the_run_with_every_disagreement(tmp_path):
    ids = {"controller": {"docker_gid": "999", "users": {"alice": "2001:2001"}},
           "n1": {"docker_gid": "998", "users": {"alice": "2001:2001"}},
           "n2": {"docker_gid": None, "users": {"alice": None}}}
    play = {"hosts": "slurm_controller:slurm_nodes", "gather_facts": False, "vars": dict(ROLE_VARS, slurm_docker_users=["alice"]),
            "tasks": [{"name": "ids", "ansible.builtin.set_fact": {"__slurm_docker_ids": "{{ fake_ids }}"}}, CHECK]}
    proc = run_playbook(tmp_path, [play], "-i", inventory(tmp_path, ids))
    assert proc.returncode != 0
    out = proc.stdout
    assert "The root group has different ids on the Slurm hosts (999 on controller, 998 on n1)" in out
    assert "No root group on n2: install Docker there first" in out
    assert "User alice does not exist on n2" in out


def test_hosts_that_agree_pass(tmp_path):
    same = {"docker_gid": "999", "users": {"alice": "2001:2001"}}
    play = {"hosts": "slurm_controller:slurm_nodes", "gather_facts": False, "vars": dict(ROLE_VARS, slurm_docker_users=["alice"]),
            "tasks": [{"name": "ids", "ansible.builtin.set_fact": {"__slurm_docker_ids": "{{ fake_ids }}"}}, CHECK]}
    ok(run_playbook(tmp_path, [play], "-i", inventory(tmp_path, {"controller": same, "n1": same, "n2": same})))
