# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_gres_check and slurm_node_check through AnsibleModule, with slurmd and scontrol replaying output
recorded from slurm-wlm 22.05 (tests/fixtures/slurm); the real daemons run in the slurm scenario."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import slurm_gres_check, slurm_node_check
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"
REPLAY = """#!/bin/sh
# Replays recorded output: one fixture per call (the last one again when they run out); keeps the calls.
n=$(cat "{state}/count" 2>/dev/null || echo 0); echo $((n + 1)) > "{state}/count"
printf '%s\\n' "$*" >> "{state}/calls"
for arg in "$@"; do case "$prev" in -f) cp "$arg" "{state}/slurm.conf"; cp "$(dirname "$arg")/gres.conf" "{state}/gres.conf";; esac; prev=$arg; done
set -- {fixtures}
shift $(( n < $# ? n : $# - 1 ))
case "$1" in /*) cat "$1";; *) cat "{dir}/$1";; esac
case "$1" in *.rc1.txt|*not-found*) exit 1;; esac
"""


def replay(tmp_path, name, *fixtures):
    state = tmp_path / ("%s-state" % name)
    state.mkdir()
    command = tmp_path / name
    command.write_text(REPLAY.format(state=state, fixtures=" ".join(fixtures), dir=FIXTURES))
    os.chmod(command, 0o755)
    return str(command), state


def test_gres_check_runs_slurmd_on_the_given_files(tmp_path, capsys):
    slurmd, state = replay(tmp_path, "slurmd", "slurmd-G-ok.rc0.txt")
    res = run_module(slurm_gres_check, capsys, slurm_conf="ClusterName=a\n", gres_conf="NodeName=n1 Name=gpu\n",
                     node="slurm-n1", gpus=2, slurmd=slurmd)
    assert res["changed"] is False and res["gpus"] == 2
    assert (state / "calls").read_text().startswith("-G -f ") and " -N slurm-n1" in (state / "calls").read_text()
    assert (state / "slurm.conf").read_text() == "ClusterName=a\n"
    assert (state / "gres.conf").read_text() == "NodeName=n1 Name=gpu\n"


@pytest.mark.parametrize("fixture,gpus,words", [
    ("slurmd-G-gres-syntax.rc1.txt", 2, "slurm-n1: slurmd -G exited 1: "),
    ("slurmd-G-one-gpu-short.rc0.txt", 2, "slurm-n1: slurmd -G lists 1 GPU(s), the node has 2"),
])
def test_gres_check_failure_says_nothing_was_reloaded(tmp_path, capsys, fixture, gpus, words):
    slurmd, _state = replay(tmp_path, "slurmd", fixture)
    res = run_module(slurm_gres_check, capsys, slurm_conf="x\n", node="slurm-n1", gpus=gpus, slurmd=slurmd,
                     error_hint="fix it and force the reload.")
    assert res["failed"] is True and words in res["msg"]
    assert res["msg"].endswith("Nothing was reloaded. The edited files are in place: fix it and force the reload.")


def test_node_check_waits_for_registration_then_passes(tmp_path, capsys):
    registered = (FIXTURES / "scontrol-show-node-registered.txt").read_text()
    (tmp_path / "pending.txt").write_text(registered.replace("State=IDLE", "State=UNKNOWN", 1))
    scontrol, state = replay(tmp_path, "scontrol", str(tmp_path / "pending.txt"), "scontrol-show-node-registered.txt")
    res = run_module(slurm_node_check, capsys, nodes=["slurm-n1", "slurm-n2"], gpus={"slurm-n1": 2, "slurm-n2": 4},
                     delay=1, timeout=20, scontrol=scontrol)
    assert res.get("failed") is not True, res
    assert (state / "count").read_text().strip() == "2"
    assert (state / "calls").read_text().splitlines()[0] == "--oneliner show node slurm-n1,slurm-n2"
    assert [n["state"] for n in res["nodes"]] == ["IDLE", "IDLE"]


def test_node_check_names_a_node_drained_for_its_gres_at_once(tmp_path, capsys):
    scontrol, state = replay(tmp_path, "scontrol", "scontrol-show-node-drained-gres.txt")
    res = run_module(slurm_node_check, capsys, nodes=["slurm-n1", "slurm-n2"], gpus={"slurm-n1": 2, "slurm-n2": 4},
                     delay=1, timeout=60, scontrol=scontrol)
    assert res["failed"] is True and res["waited"] < 5
    assert (state / "count").read_text().strip() == "1"
    assert "slurm-n1 Gres=gpu:tesla_v100-sxm2-16gb:1 (expected 2 GPUs) Reason=gres/gpu count" in res["msg"]


def test_node_check_gives_up_after_the_timeout_naming_the_unknown_node(tmp_path, capsys):
    scontrol, _state = replay(tmp_path, "scontrol", "scontrol-show-node-not-found.txt")
    res = run_module(slurm_node_check, capsys, nodes=["slurm-n9"], delay=1, timeout=2, scontrol=scontrol)
    assert res["failed"] is True
    assert "slurm-n9 is not known to slurmctld" in res["msg"] and "Node slurm-n9 not found" in res["msg"]
    assert json.dumps(res["nodes"]) == "[]"
