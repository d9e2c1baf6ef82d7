# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts_with_facts and gpu_access filters (plugins/module_utils/_gpu_access.py): which GPU nodes a run has
facts for, and how auto picks the GPU access of the LSF Docker profiles from them."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.gpu_access import FilterModule as GpuAccess
from ansible_collections.hpc.gpu_containers.plugins.filter.hosts_with_facts import FilterModule as HostsWithFacts

gpu_access = GpuAccess().filters()["gpu_access"]
hosts_with_facts = HostsWithFacts().filters()["hosts_with_facts"]

DAEMON_JSON = "/etc/docker/daemon.json"


def node(minors=(0, 1), runtimes=("nvidia",), daemon_json=DAEMON_JSON, present=True):
    facts = {"gpu_facts": {"present": present, "gpus": [{"minor_number": minor, "uuid": "GPU-%d" % minor}
                                                        for minor in minors]}}
    if daemon_json is not None:
        facts["docker_daemon"] = {"path": daemon_json, "runtimes": list(runtimes)}
    return {"ansible_facts": facts}


HOSTVARS = {
    "gpu01": node(),
    "gpu02": node(minors=(0, 1, 2, 3)),
    "plain01": node(runtimes=()),
    "nogpu01": node(minors=(), present=False, runtimes=()),
    "other-path01": node(daemon_json="/srv/docker/daemon.json"),
    "no-daemon01": node(daemon_json=None),
    "down01": {"ansible_facts": {}},
    "unreached01": {},
}


def test_hosts_with_facts_keeps_the_order_and_leaves_out_hosts_without_gpu_facts():
    hosts = ["gpu02", "down01", "gpu01", "unreached01", "not-in-inventory", "no-daemon01"]
    assert hosts_with_facts(hosts, HOSTVARS) == ["gpu02", "gpu01", "no-daemon01"]


def test_with_a_daemon_json_path_only_hosts_with_that_files_fact():
    hosts = ["gpu01", "other-path01", "no-daemon01", "plain01"]
    assert hosts_with_facts(hosts, HOSTVARS, daemon_json_path=DAEMON_JSON) == ["gpu01", "plain01"]


def test_hosts_with_facts_refuses_a_string():
    with pytest.raises(AnsibleFilterError, match="expected a list of hosts, got str"):
        hosts_with_facts("gpu01", HOSTVARS)


@pytest.mark.parametrize("access", ["runtime", "devices", "none"])
def test_a_mode_other_than_auto_is_kept(access):
    assert gpu_access(access, ["plain01"], HOSTVARS, "nvidia") == access


@pytest.mark.parametrize(("hosts", "site_minors", "expected"), [
    (["gpu01", "gpu02"], [], "runtime"),
    # one node without the runtime: the device nodes of each host instead
    (["gpu01", "plain01"], [], "devices"),
    (["plain01"], [], "devices"),
    # no node found a GPU
    (["nogpu01"], [], "none"),
    # no node with facts: the site's minors decide
    ([], [0, 1], "devices"),
    ([], [], "none"),
])
def test_auto(hosts, site_minors, expected):
    assert gpu_access("auto", hosts, HOSTVARS, "nvidia", site_minors) == expected


def test_auto_reads_the_runtime_under_the_name_the_site_registered():
    assert gpu_access("auto", ["gpu01"], HOSTVARS, "nvidia-legacy") == "devices"


def test_a_minor_number_that_is_not_a_number_finds_no_gpu():
    gpus = [{"minor_number": None}, {"minor_number": True}]
    hostvars = {"odd01": {"ansible_facts": {"gpu_facts": {"present": True, "gpus": gpus},
                                            "docker_daemon": {"path": DAEMON_JSON, "runtimes": []}}}}
    assert gpu_access("auto", ["odd01"], hostvars, "nvidia") == "none"


def test_an_unknown_mode_is_refused():
    with pytest.raises(AnsibleFilterError, match="gpu_access: GPU access 'cdi': expected one of auto, runtime"):
        gpu_access("cdi", [], HOSTVARS, "nvidia")
