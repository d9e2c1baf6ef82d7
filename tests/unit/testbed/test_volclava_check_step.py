# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""molecule/volclava/check_step.py against what its steps collected on a real volclava cluster.

Each fixture (tests/fixtures/volclava/rolling/<step>.json) is one step of the volclava scenario's side effect as
step.yml collected it (README.md there): the checker must pass it as recorded, and fail it, naming the fault,
once one fact is changed the way a broken drain, restart or reopen would change it.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "volclava" / "rolling"
STEPS = ("drift", "rolling", "failed", "repair", "nothing")


def load_checker():
    spec = importlib.util.spec_from_file_location("volclava_check_step", ROOT / "molecule" / "volclava" / "check_step.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_step = load_checker()


def collected(step):
    return json.loads((FIXTURES / ("%s.json" % step)).read_text(encoding="utf-8"))


def problems(step, data):
    checker = check_step.Checker(data)
    getattr(checker, "step_" + step)()
    return checker.problems


def host_ctrl(data, host):
    return [e for node in data["nodes"].values() for e in node["events"]
            if e["type"] == "HOST_CTRL" and e["host"] == host]


def master_events(data):
    return next(node["events"] for node in data["nodes"].values() if node["events"])


@pytest.mark.parametrize("step", STEPS)
def test_each_recorded_step_passes(step):
    assert problems(step, collected(step)) == []


@pytest.mark.parametrize("step", STEPS)
def test_a_step_run_as_another_fails(step):
    # The steps differ: each recording fails the checks of at least one other step.
    others = [other for other in STEPS if other != step]
    assert any(problems(other, collected(step)) for other in others)


def test_rolling_the_job_ended_after_the_restart():
    data = collected("rolling")
    restart = data["nodes"]["vc-gpu01"]["docker_started"]
    for event in master_events(data):
        if event["type"] == "JOB_STATUS":
            event["time"] = int(restart) + 1
    assert any("gpu01: job end" in p for p in problems("rolling", data))


def test_rolling_gpu01_never_reopened():
    data = collected("rolling")
    events = master_events(data)
    events[:] = [e for e in events if not (e["type"] == "HOST_CTRL" and e["host"] == "gpu01" and e["op"] == "open")]
    found = problems("rolling", data)
    assert any("vc-gpu01: want one close then one open" in p for p in found)


def test_rolling_the_operator_closed_host_was_opened():
    data = collected("rolling")
    master_events(data).append({"type": "HOST_CTRL", "time": int(data["started"]) + 5, "op": "open", "host": "gpu02",
                                "user": "root", "comment": "hpc.gpu_containers: verified on Docker"})
    data["nodes"]["vc-head"]["hosts"]["gpu02"] = {"status": "ok", "comment": "hpc.gpu_containers: verified on Docker"}
    found = problems("rolling", data)
    assert any(p.startswith("vc-gpu02: closed or opened") for p in found)
    assert any(p.startswith("vc-gpu02: not closed with its operator's comment") for p in found)


def test_rolling_batches_overlap():
    data = collected("rolling")
    head_open = next(e for e in host_ctrl(data, "head") if e["op"] == "open")
    gpu01_close = next(e for e in host_ctrl(data, "gpu01") if e["op"] == "close")
    head_open["time"] = gpu01_close["time"] + 1
    assert any("head's batch must end" in p for p in problems("rolling", data))


def test_drift_restarted_a_node():
    data = collected("drift")
    data["nodes"]["vc-head"]["docker_started"] = data["started"] + 1
    assert any(p.startswith("vc-head: dockerd restarted") for p in problems("drift", data))


def test_failed_gpu02_did_not_go_on():
    data = collected("failed")
    data["nodes"]["vc-gpu02"]["docker_started"] = data["started"] - 100
    assert any("gpu02 (in gpu01's batch) did not go on" in p for p in problems("failed", data))


def test_failed_gpu01_reopened():
    data = collected("failed")
    close = host_ctrl(data, "gpu01")[0]
    master_events(data).append(dict(close, op="open", time=close["time"] + 60))
    assert any(p.startswith("gpu01: want one close") for p in problems("failed", data))


def test_repair_opened_before_the_verification():
    data = collected("repair")
    opened = host_ctrl(data, "gpu01")[0]
    data["nodes"]["vc-gpu01"]["verify_starts"] = [opened["time"] + 5.0]
    assert "gpu01: opened before a verification" in problems("repair", data)


def test_nothing_a_host_ran_its_roles():
    data = collected("nothing")
    data["output"] = data["output"].replace("skipped=0", "skipped=12", 1)
    assert any(p.startswith("recap: ") for p in problems("nothing", data))
