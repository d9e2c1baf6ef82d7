# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_slurm_nodes on output recorded from slurm-wlm 22.05 (tests/fixtures/slurm/README.md)."""

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _slurm_nodes

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"


def recorded(name):
    return (FIXTURES / name).read_text()


def test_slurmd_g_with_both_gpus_is_fine_and_counted():
    output = recorded("slurmd-G-ok.rc0.txt")
    assert _slurm_nodes.slurmd_gpus(output) == 2
    assert _slurm_nodes.slurmd_gres_problem("slurm-n1", 0, output, 2) is None
    assert _slurm_nodes.slurmd_gres_problem("slurm-n1", 0, output) is None


def test_slurmd_g_one_gpu_short_is_named_with_its_lines():
    problem = _slurm_nodes.slurmd_gres_problem("slurm-n1", 0, recorded("slurmd-G-one-gpu-short.rc0.txt"), 2)
    assert problem.startswith("slurm-n1: slurmd -G lists 1 GPU(s), the node has 2: slurmd-slurm-n1: Gres Name=gpu")


@pytest.mark.parametrize("name,words", [
    ("slurmd-G-gres-syntax.rc1.txt", "Parse error in file /tmp/bad/gres.conf line 2"),
    ("slurmd-G-missing-device.rc1.txt", "can't stat gres.conf file /dev/nvidia7"),
    ("slurmd-G-slurm-conf-error.rc1.txt", "Parsing error at unrecognized key: BogusKey"),
])
def test_slurmd_g_errors_keep_slurm_s_error_lines(name, words):
    problem = _slurm_nodes.slurmd_gres_problem("slurm-n1", 1, recorded(name), 2)
    assert problem.startswith("slurm-n1: slurmd -G exited 1: ") and words in problem
    assert "Gres Name=gpu" not in problem


def test_registered_nodes_are_read_with_their_gpus():
    nodes = _slurm_nodes.parse_nodes(recorded("scontrol-show-node-registered.txt"))
    assert [(n["name"], n["state"], n["gpus"], n["reason"]) for n in nodes] == [
        ("slurm-n1", "IDLE", 2, None), ("slurm-n2", "IDLE", 4, None)]
    names = ["slurm-n1", "slurm-n2"]
    assert _slurm_nodes.waiting(nodes, names) == []
    assert _slurm_nodes.problems(nodes, names, {"slurm-n1": 2, "slurm-n2": 4}) == []
    # A node the GPUs map leaves out must show none; without the GRES check it is not counted.
    assert _slurm_nodes.problems(nodes, names, {"slurm-n1": 2}) == [
        "slurm-n2 Gres=gpu:nvidia_a100-sxm4-40gb:4 (expected 0 GPUs)"]
    assert _slurm_nodes.problems(nodes, names, {"slurm-n1": 2}, check_gres=False) == []


def test_a_node_drained_for_its_gres_is_not_waited_for_and_is_named_with_the_reason():
    nodes = _slurm_nodes.parse_nodes(recorded("scontrol-show-node-drained-gres.txt"))
    assert nodes[0]["state"] == "UNKNOWN+DRAIN+INVALID_REG"
    assert _slurm_nodes.waiting(nodes, ["slurm-n1", "slurm-n2"]) == []
    assert _slurm_nodes.problems(nodes, ["slurm-n1", "slurm-n2"], {"slurm-n1": 2, "slurm-n2": 4}) == [
        "slurm-n1 Gres=gpu:tesla_v100-sxm2-16gb:1 (expected 2 GPUs) Reason=gres/gpu count reported lower than"
        " configured (1 < 2) [root@2026-11-24T23:58:24]"]
    assert _slurm_nodes.problems(nodes, ["slurm-n1"], check_gres=False) == [
        "slurm-n1 State=UNKNOWN+DRAIN+INVALID_REG Reason=gres/gpu count reported lower than configured (1 < 2)"
        " [root@2026-11-24T23:58:24]"]


def test_an_unknown_or_unregistered_node_is_waited_for_then_named():
    assert _slurm_nodes.parse_nodes(recorded("scontrol-show-node-not-found.txt")) == []
    nodes = _slurm_nodes.parse_nodes(recorded("scontrol-show-node-registered.txt").replace("State=IDLE", "State=IDLE*+NOT_RESPONDING", 1))
    assert _slurm_nodes.waiting(nodes, ["slurm-n1", "slurm-n9"]) == ["slurm-n1", "slurm-n9"]
    assert _slurm_nodes.problems(nodes, ["slurm-n1", "slurm-n9"], {"slurm-n1": 2}) == [
        "slurm-n1 State=IDLE*+NOT_RESPONDING (its slurmd has not registered)", "slurm-n9 is not known to slurmctld"]


@pytest.mark.parametrize("gres,count", [("(null)", 0), ("gpu:2", 2), ("gpu:a100:1(S:0),gpu:v100:2(S:1)", 3),
                                        ("gpu:tesla_v100-sxm2-16gb:2", 2), ("mps:100", 0)])
def test_gpu_count(gres, count):
    assert _slurm_nodes.gpu_count(gres) == count
