# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The passwd_ids and slurm_id_problems filters (plugins/module_utils/_slurm_ids.py): the slurm_docker pre-flight's
check that the controller and the compute nodes agree on the docker group's id and the job users' uid:gid."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.passwd_ids import FilterModule as PasswdIds
from ansible_collections.hpc.gpu_containers.plugins.filter.slurm_id_problems import FilterModule as IdProblems

passwd_ids = PasswdIds().filters()["passwd_ids"]
slurm_id_problems = IdProblems().filters()["slurm_id_problems"]

NODES = ["n1", "n2"]


def lookup(user, entry):
    """One registered result of ansible.builtin.getent (database=passwd, fail_key=false) for ``user``."""
    return {"item": user, "changed": False,
            "ansible_facts": {"getent_passwd": {user: entry} if entry else {user: None}}}


def test_passwd_ids_from_getent_results():
    results = [lookup("alice", ["x", "2001", "2001", "Alice", "/home/alice", "/bin/bash"]),
               lookup("bob", None),
               {"item": "carol", "skipped": True}]
    assert passwd_ids(results) == {"alice": "2001:2001", "bob": None, "carol": None}


def test_passwd_ids_refuses_what_is_not_a_loops_results():
    with pytest.raises(AnsibleFilterError, match="expected the loop's results, got dict"):
        passwd_ids({"results": []})


def ids(gid="999", **users):
    return {"docker_gid": gid, "users": users}


def test_agreeing_hosts_have_no_problem():
    by_host = {"ctl": ids(alice="2001:2001"), "n1": ids(alice="2001:2001"), "n2": ids(alice="2001:2001")}
    assert slurm_id_problems(by_host, ["alice"], NODES) == []


def test_every_disagreement_is_named_with_its_hosts():
    by_host = {"ctl": ids("999", alice="2001:2001", bob="2002:2002"),
               "n1": ids("998", alice="2001:2001", bob="2002:100"),
               "n2": ids(None, alice=None, bob="2002:2002")}
    assert slurm_id_problems(by_host, ["alice", "bob"], NODES, group="docker") == [
        "The docker group has different ids on the Slurm hosts (999 on ctl, 998 on n1): slurmctld gives jobs the ids"
        " of the controller, so give the group one id everywhere.",
        "No docker group on n2: install Docker there first (the docker_engine role).",
        "User alice does not exist on n2: a Slurm job runs as the same user on the controller and every node.",
        "User bob has different uid:gid on the Slurm hosts (2002:2002 on ctl, 2002:100 on n1, 2002:2002 on n2).",
    ]


def test_a_controller_without_the_docker_group_is_fine_and_check_mode_waits_for_docker():
    by_host = {"ctl": ids(None), "n1": ids(None), "n2": ids("999")}
    assert slurm_id_problems(by_host, [], NODES) == [
        "No docker group on n1: install Docker there first (the docker_engine role)."]
    assert slurm_id_problems(by_host, [], NODES, check_mode=True) == []


def test_without_docker_among_the_engines_the_group_is_not_checked():
    by_host = {"ctl": ids("1"), "n1": ids("2"), "n2": ids(None, alice="2001:2001")}
    assert slurm_id_problems(by_host, ["alice"], NODES, with_docker=False) == [
        "User alice does not exist on ctl, n1: a Slurm job runs as the same user on the controller and every node."]


def test_slurm_id_problems_refuses_a_list():
    with pytest.raises(AnsibleFilterError, match=r"expected \{host: ids\}, got list"):
        slurm_id_problems([], [], NODES)
