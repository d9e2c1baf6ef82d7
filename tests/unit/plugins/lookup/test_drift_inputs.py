# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.hpc.gpu_containers.plugins.lookup import drift_inputs

try:  # ansible-core 2.19 and later template only what is trusted as a template, as inventory values are
    from ansible.template import trust_as_template
except ImportError:  # earlier cores template every string
    def trust_as_template(value):
        return value


def digest(variables):
    loader = DataLoader()
    lookup = drift_inputs.LookupModule(loader=loader, templar=Templar(loader=loader, variables=variables))
    return lookup.run([], variables)[0]


BASE = {
    "docker_engine_users": ["alice"],
    "lsf_docker_image": "{{ groups['registry'] | first }}:5000/hpc/verify:1",
    "container_registry_users": [{"name": "hpcadmin", "password": "pw"}],
    "group_names": ["docker_hosts", "gpu_nodes"],
    "groups": {"all": ["head", "gpu01"], "registry": ["head"], "gpu_nodes": ["gpu01"]},
    "inventory_hostname": "gpu01",
    "unrelated_variable": 1,
}


def test_the_same_inputs_give_the_same_digest_whatever_else_differs():
    first = digest(dict(BASE))
    assert len(first) == 64 and first == digest(dict(BASE))
    # not the collection's variables, the run's own switches, facts
    assert digest(dict(BASE, unrelated_variable=2, hpc_site_serial=10, hpc_drift_fast_path=False,
                       hpc_site_max_fail_percentage=0, hpc_site_lsf_drain=False, hpc_site_slurm_drain=False,
                       hpc_site_lsf_elsewhere=True, hpc_site_sliced=True,
                       ansible_check_mode=True, ansible_facts={"architecture": "x86_64"})) == first
    # what the run makes is an input: LSF on or off
    assert digest(dict(BASE, hpc_site_lsf=False)) != first


def test_each_kind_of_input_changes_the_digest():
    first = digest(dict(BASE))
    changed = [
        dict(BASE, docker_engine_users=["alice", "bob"]),  # a role variable
        dict(BASE, container_registry_users=[{"name": "hpcadmin", "password": "new"}]),  # a password
        dict(BASE, groups=dict(BASE["groups"], registry=["gpu01"])),  # a template's input: another registry host
        dict(BASE, group_names=["docker_hosts"]),  # the host's groups
        dict(BASE, hpc_site_lsf=False),  # a site switch
        dict(BASE, nvidia_container_runtime_version="1.17.9"),  # a new variable
    ]
    digests = {digest(variables) for variables in changed}
    assert first not in digests and len(digests) == len(changed)


def test_a_variable_built_from_facts_counts_by_its_error_the_same_without_and_with_facts():
    variables = dict(BASE, docker_engine_arch=trust_as_template("{{ ansible_facts['architecture'] }}"))
    without = digest(variables)
    assert digest(dict(variables, ansible_facts={"architecture": "x86_64"})) == without
    # Another expression that fails the same way without facts is another input.
    assert digest(dict(variables, docker_engine_arch=trust_as_template("{{ ansible_facts['machine'] }}"))) != without


def test_the_collection_content_is_an_input(tmp_path):
    (tmp_path / "plugins" / "modules").mkdir(parents=True)
    (tmp_path / "plugins" / "modules" / "m.py").write_text("a")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("a")
    first = drift_inputs.collection_digest(str(tmp_path))
    drift_inputs._COLLECTION_DIGEST.clear()
    (tmp_path / "tests" / "t.py").write_text("b")  # tests are not the collection
    assert drift_inputs.collection_digest(str(tmp_path)) == first
    drift_inputs._COLLECTION_DIGEST.clear()
    (tmp_path / "plugins" / "modules" / "m.py").write_text("b")
    assert drift_inputs.collection_digest(str(tmp_path)) != first
    drift_inputs._COLLECTION_DIGEST.clear()


def _awx_slice(groups, hosts):
    """``groups`` as an inventory slice holding only ``hosts`` has them (AWX keeps every group, cut down)."""
    return {name: [member for member in members if member in hosts] for name, members in groups.items()}


SITE_GROUPS = {"all": ["gpu01", "gpu02", "head"], "lsf_master": ["head"], "registry": ["head"],
               "docker_hosts": ["gpu01", "gpu02", "head"], "gpu_nodes": ["gpu01", "gpu02"]}


def test_a_node_has_the_same_inputs_in_any_slice_that_names_its_registry():
    node = dict(BASE, groups=SITE_GROUPS, group_names=["docker_hosts", "gpu_nodes"], inventory_hostname="gpu02",
                lsf_docker_image="head:5000/hpc/verify:1", container_registry_server="head")
    whole = digest(node)
    # AWX's slices of three hosts by name: [gpu01, head] and [gpu02]; a --limit run sees the whole inventory.
    assert digest(dict(node, groups=_awx_slice(SITE_GROUPS, ["gpu02"]))) == whole
    assert digest(dict(node, groups=dict(SITE_GROUPS, docker_hosts=["gpu01", "gpu02", "gpu03", "head"]))) == whole
    # The registry named by the inventory counts as a variable; taken from the registry group, that group counts.
    assert digest(dict(node, container_registry_server="gpu01")) != whole
    from_group = dict(node)
    del from_group["container_registry_server"]
    assert digest(from_group) != digest(dict(from_group, groups=_awx_slice(SITE_GROUPS, ["gpu02"])))
    assert digest(from_group) != digest(dict(from_group, groups=dict(SITE_GROUPS, registry=["gpu01"])))
    assert digest(dict(from_group, container_registry_group="images",
                       groups=dict(SITE_GROUPS, images=["gpu01"]))) != digest(
        dict(from_group, container_registry_group="images", groups=dict(SITE_GROUPS, images=["gpu02"])))


def test_the_hosts_whose_files_list_the_others_count_every_group():
    master = dict(BASE, groups=SITE_GROUPS, group_names=["docker_hosts", "lsf_master", "registry"],
                  inventory_hostname="head", container_registry_server="head")
    controller = dict(master, group_names=["slurm_controller"])
    renamed = dict(master, group_names=["slurmctld"], slurm_docker_controller_group="slurmctld")
    node = dict(master, group_names=["docker_hosts", "gpu_nodes"], inventory_hostname="gpu01")
    more = dict(SITE_GROUPS, docker_hosts=SITE_GROUPS["docker_hosts"] + ["gpu03"])
    for host in (master, controller, renamed):
        assert digest(dict(host, groups=more)) != digest(host)
    assert digest(dict(node, groups=more)) == digest(node)
