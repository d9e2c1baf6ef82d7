# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/awx-slices.py: the inventories it gives each job are the ones AWX's job slicing gives."""
from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("awx_slices", ROOT / "tools" / "awx-slices.py")
awx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(awx)

# `ansible-inventory --list --export` of the demo inventory, shaped as it prints it.
EXPORTED = {
    "_meta": {"hostvars": {"head": {"ansible_host": "demo-head"}, "gpu01": {"ansible_host": "demo-gpu01"},
                           "gpu02": {"ansible_host": "demo-gpu02"}}},
    "all": {"children": ["ungrouped", "lsf_master", "registry", "docker_hosts", "gpu_nodes"],
            "vars": {"ansible_connection": "community.docker.docker"}},
    "lsf_master": {"hosts": ["head"], "vars": {"lsf_docker_cluster_name": "demo"}},
    "registry": {"hosts": ["head"]},
    "docker_hosts": {"hosts": ["head", "gpu01", "gpu02"]},
    "gpu_nodes": {"hosts": ["gpu01", "gpu02"], "vars": {"nvidia_driver_minimum": "470"}},
}


def test_the_slices_hold_every_nth_host_by_name_and_the_groups_cut_down_to_them():
    first, second = awx.awx_slice(EXPORTED, 1, 2), awx.awx_slice(EXPORTED, 2, 2)
    assert sorted(first["_meta"]["hostvars"]) == ["gpu01", "head"] and list(second["_meta"]["hostvars"]) == ["gpu02"]
    assert second["_meta"]["hostvars"]["gpu02"] == {"ansible_host": "demo-gpu02"}
    assert second["docker_hosts"] == {"hosts": ["gpu02"]}
    # a group without a host of the slice keeps its variables, or is left out; every group is a child of all
    assert second["lsf_master"] == {"vars": {"lsf_docker_cluster_name": "demo"}} and "registry" not in second
    assert set(second["all"]["children"]) == {"lsf_master", "registry", "docker_hosts", "gpu_nodes"}
    assert second["all"]["vars"] == EXPORTED["all"]["vars"] and second["all"]["hosts"] == []
    assert first["registry"] == {"hosts": ["head"]} and first["gpu_nodes"]["hosts"] == ["gpu01"]
    # unsliced: every host
    assert sorted(awx.awx_slice(EXPORTED)["_meta"]["hostvars"]) == ["gpu01", "gpu02", "head"]


def test_the_jobs_are_the_master_on_the_whole_inventory_and_the_slices_limited_to_the_rest():
    jobs = awx.jobs_of(EXPORTED, 2)
    assert [(name, limit, extra) for name, _data, limit, extra in jobs] == [
        ("lsf-master", "lsf_master:registry", {}),
        ("slice1of2", "all:!lsf_master:!registry", {"hpc_site_sliced": True}),
        ("slice2of2", "all:!lsf_master:!registry", {"hpc_site_sliced": True})]


def test_ansible_reads_the_inventory_script_as_awx_gives_it(tmp_path):
    script = awx.inventory_script(awx.awx_slice(EXPORTED, 2, 2), str(tmp_path / "hosts"))
    graph = json.loads(subprocess.run(["ansible-inventory", "-i", script, "--list"], check=True,
                                      capture_output=True, text=True).stdout)
    assert graph["docker_hosts"]["hosts"] == ["gpu02"] and graph["gpu_nodes"]["hosts"] == ["gpu02"]
    assert "hosts" not in graph.get("lsf_master", {}) and "hosts" not in graph.get("registry", {})
    assert graph["_meta"]["hostvars"]["gpu02"]["nvidia_driver_minimum"] == "470"


def test_the_comparison_names_what_differs():
    report = {"summary": {"changes": 1}, "unreachable": [], "drift": True,
              "hosts": {"gpu02": {"changed": [{"task": "t"}], "failed": []}}}
    assert awx.differences(report, json.loads(json.dumps(report))) == []
    other = json.loads(json.dumps(report))
    other["hosts"]["gpu02"]["changed"] = []
    other["summary"]["changes"] = 0
    lines = awx.differences(report, other)
    assert len(lines) == 2 and lines[0].startswith("summary:") and lines[1].startswith("host gpu02:")
