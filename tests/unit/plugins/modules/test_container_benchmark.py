# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_benchmark against a recording fake of the Docker SDK client; the host side runs the busybox the
fake's container hands out (a stand-in script that prints one timing)."""
from __future__ import annotations

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import container_benchmark

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.docker_fakes import FakeClient, run_with


@pytest.fixture
def run(monkeypatch, capsys):
    def _run(client, **args):
        return run_with(monkeypatch, capsys, container_benchmark, client, **args)
    return _run


def test_benchmark_same_loop_host_and_container(run):
    client = FakeClient()
    res = run(client, image="r:5000/hpc/verify:1", repetitions=3, loops=1000)
    assert res["_rc"] == 0 and res["changed"] is False
    bench = res
    assert bench["container"]["times"] == [0.2, 0.2, 0.5] and bench["container"]["median"] == 0.2
    assert bench["host"]["times"] == [0.4, 0.4, 0.4]
    assert bench["ratio"] == 0.5
    assert "seq 3" in client.bench_command[-1] and "-lt 1000 ]" in client.bench_command[-1]
    assert "get_archive:/bin/busybox" in client.calls
    assert client.calls.count("remove") == 1 and client.calls[-1] == "close"
    assert client.created["labels"] == {"hpc.gpu_containers.verify": "benchmark"}
    assert client.created["network_disabled"] is True and client.created["privileged"] is False


def test_an_image_that_is_not_on_the_node_is_not_pulled(run):
    client = FakeClient(present=False)
    res = run(client, image="r:5000/hpc/verify:1", repetitions=1)
    assert res["_rc"] == 1 and "is not on this node (container_benchmark never pulls)" in res["msg"], res
    assert not any(call.startswith("pull") for call in client.calls)


def test_check_mode_and_bad_counts_run_nothing(run):
    client = FakeClient()
    res = run(client, image="r:5000/hpc/verify:1", _ansible_check_mode=True)
    assert res["_rc"] == 0 and res["ratio"] is None and client.calls == []
    res = run(client, image="r:5000/hpc/verify:1", repetitions=0)
    assert res["_rc"] == 1 and "repetitions and loops must be at least 1, got 0 and 300000" in res["msg"]
    assert client.calls == []
