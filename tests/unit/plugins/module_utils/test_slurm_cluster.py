# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Slurm cluster seen from its controller (module_utils/_slurm_cluster.py): nodes, gres.conf edits, reloads.

tests/unit/roles/slurm_docker/test_gres_per_node_role.py runs the role's tasks with these filters for real."""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_cluster import (
    compute_nodes,
    gres_edits,
    reload_plan,
)

GPU = {"uuid": "GPU-1", "name": "Tesla V100", "minor_number": 0}
HOSTVARS = {
    "n1.site": {"slurm_docker_node_name": "n1", "ansible_facts": {"gpu_facts": {"present": True, "gpus": [GPU]}}},
    "n2": {"ansible_facts": {"gpu_facts": {"present": False, "gpus": []}}},
    "n3": {},
}


def test_compute_nodes_by_slurm_name():
    nodes = compute_nodes(["n1.site", "n2", "n3"], HOSTVARS)
    assert nodes == {"host_of": {"n1": "n1.site", "n2": "n2", "n3": "n3"}, "gpus": {"n1": [GPU], "n2": []},
                     "with_facts": ["n1.site", "n2"], "unseen": ["n3"]}


def test_gres_edits_one_file_or_each_nodes_own():
    single = {"changed": True, "changed_nodes": ["n1"], "node_attributes": {"n1": {"Gres": "gpu:1"}}}
    assert gres_edits(single, {}, False) == {
        "node_attributes": {"n1": {"Gres": "gpu:1"}}, "changed_nodes": ["n1"], "changed": True, "per_node": False}
    loop = {"results": [{"changed": False, "changed_nodes": [], "node_attributes": {"n1": {"Gres": "gpu:1"}}},
                        {"skipped": True},
                        {"changed": True, "changed_nodes": ["n2"], "node_attributes": {"n2": {"Gres": "gpu:4"}}}]}
    assert gres_edits({"skipped": True}, loop, True) == {
        "node_attributes": {"n1": {"Gres": "gpu:1"}, "n2": {"Gres": "gpu:4"}}, "changed_nodes": ["n2"],
        "changed": True, "per_node": True}
    assert gres_edits({"skipped": True}, {}, False)["node_attributes"] == {}


def _plan(gres_changed=(), conf=None, copies=(), membership=None, force=False):
    nodes = compute_nodes(["n1.site", "n2", "n3"], HOSTVARS)
    gres = {"node_attributes": {}, "changed_nodes": list(gres_changed), "changed": bool(gres_changed),
            "per_node": False}
    return reload_plan(nodes, gres, conf or {"changed": False}, copies, membership, force)


def test_nothing_changed_nothing_reloads():
    assert _plan() == {"restart": False, "nodes": [], "reconfigure": False, "check_nodes": ["n1.site"],
                       "gpus": {"n1": 1, "n2": 0}}


def test_a_nodes_gres_restarts_that_node():
    plan = _plan(gres_changed=["n1"])
    assert (plan["restart"], plan["nodes"], plan["reconfigure"], plan["check_nodes"]) == (
        True, ["n1.site"], False, ["n1.site"])


def test_grestypes_or_force_restarts_every_node():
    every = ["n1.site", "n2", "n3"]
    assert _plan(conf={"changed": True, "changed_keys": ["GresTypes"]})["nodes"] == every
    assert _plan(force=True)["nodes"] == every


def test_other_changes_reconfigure():
    plan = _plan(conf={"changed": True, "changed_keys": ["Epilog"], "changed_nodes": []})
    assert (plan["restart"], plan["reconfigure"]) == (False, True)
    plan = _plan(copies=[{"results": [{"changed": True}]}])
    assert (plan["restart"], plan["reconfigure"]) == (False, True)


def test_a_group_membership_change_restarts_slurmctld_alone():
    plan = _plan(membership={"results": [{"changed": False}, {"changed": True}]})
    assert (plan["restart"], plan["nodes"], plan["reconfigure"]) == (True, [], False)
