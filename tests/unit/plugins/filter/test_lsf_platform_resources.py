# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.lsf_platform_resources import FilterModule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
import image_nodes as nodes  # noqa: E402

lsf_platform_resources = FilterModule().filters()["lsf_platform_resources"]


def test_every_host_gets_every_name_and_unseen_hosts_are_left_out():
    hostvars = {
        "gpu01": {"ansible_facts": {"gpu_facts": nodes.standin_facts("gpu01", nodes.BROADWELL)}},
        "cpu01": {"ansible_facts": {"gpu_facts": nodes.no_gpu_facts(nodes.BROADWELL)}},
        "down01": {"ansible_facts": {}},
    }
    result = lsf_platform_resources(["gpu01", "cpu01", "down01"], hostvars)
    names = [definition["name"] for definition in result["definitions"]]
    assert names == ["x86_64_level", "power_generation", "nvidia_driver", "cuda_version", "compute_cap_min",
                     "compute_cap_max"]
    assert result["hosts"]["gpu01"] == {"x86_64_level": 3, "power_generation": None, "nvidia_driver": 470,
                                        "cuda_version": 11040, "compute_cap_min": 70, "compute_cap_max": 70}
    # a node without GPU: its GPU values are null, so a value it had before is removed from its line
    assert result["hosts"]["cpu01"] == dict.fromkeys(names, None) | {"x86_64_level": 3}
    assert "down01" not in result["hosts"]


def test_bad_facts_name_the_host():
    with pytest.raises(AnsibleFilterError, match="gpu09: gpu_facts: no cpu.architecture"):
        lsf_platform_resources(["gpu09"], {"gpu09": {"ansible_facts": {"gpu_facts": {"present": False}}}})
    with pytest.raises(AnsibleFilterError, match="expected a list"):
        lsf_platform_resources("gpu01", {})


def test_an_lsf_host_is_found_by_the_nodes_own_host_name():
    """An inventory of FQDNs or aliases: the LSF name is the node's short host name."""
    facts = nodes.standin_facts("gpu02", nodes.BROADWELL)
    hostvars = {"roll-gpu02.example.org": {"ansible_facts": {"hostname": "gpu02", "gpu_facts": facts}},
                "roll-head.example.org": {"ansible_facts": {"hostname": "head"}}}
    result = lsf_platform_resources(["head", "gpu02", "gpu09"], hostvars, list(hostvars))
    assert result["hosts"]["gpu02"]["cuda_version"] == 12020
    assert set(result["hosts"]) == {"gpu02"}  # head has no facts yet, gpu09 is no inventory host


def test_a_boolean_for_every_host_and_the_platform_optional():
    hostvars = {"gpu01": {"ansible_facts": {"gpu_facts": nodes.standin_facts("gpu01", nodes.BROADWELL)}}}
    got = lsf_platform_resources(["gpu01", "cpu01"], hostvars, boolean="docker")
    assert got["hosts"]["cpu01"] == {"docker": True}
    assert got["hosts"]["gpu01"]["docker"] is True and got["hosts"]["gpu01"]["compute_cap_max"] == 70
    assert got["definitions"]
    got = lsf_platform_resources(["gpu01", "cpu01"], hostvars, boolean="docker", platform_values=False)
    assert got == {"definitions": [], "hosts": {"gpu01": {"docker": True}, "cpu01": {"docker": True}}}
