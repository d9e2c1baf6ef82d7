# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_slurm_node_state on output recorded from slurm-wlm 22.05 (tests/fixtures/slurm/README.md)."""

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _slurm_node_state as model
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_nodes import parse_nodes

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"
OWNER = "hpc.gpu_containers"


def node(name):
    (parsed,) = parse_nodes((FIXTURES / name).read_text())
    return parsed


def test_a_node_the_collection_drains_while_a_job_runs():
    draining = node("scontrol-show-node-draining-owned.txt")
    assert draining["state"] == "MIXED+DRAIN" and model.is_drained(draining)
    assert draining["reason"].startswith("hpc.gpu_containers: restart of dockerd (daemon.json: live-restore) [root@")
    assert model.decide("drained", draining, OWNER) == (None, "drained already by hpc.gpu_containers")
    assert model.decide("resume", draining, OWNER)[0] == "RESUME"


def test_an_operators_drain_is_kept_whatever_is_asked():
    drained = node("scontrol-show-node-drained-operator.txt")
    assert drained["state"] == "IDLE+DRAIN"
    for state in ("drain", "drained", "resume"):
        action, note = model.decide(state, drained, OWNER)
        assert action is None, state
        assert "operator: fan replacement [root@" in note
    assert model.decide("resume", drained, OWNER)[1].endswith("left drained")


def test_a_registered_node_is_drained_and_not_resumed():
    idle = parse_nodes((FIXTURES / "scontrol-show-node-registered.txt").read_text())[0]
    assert not model.is_drained(idle)
    assert model.decide("drained", idle, OWNER) == ("DRAIN", "the node is IDLE")
    # Slurm refuses State=RESUME on a node that is not drained: nothing is run
    assert model.decide("resume", idle, OWNER) == (None, "the node is not drained (IDLE)")
    assert model.decide("query", idle, OWNER) == (None, "read only")


def test_a_node_refused_for_its_gres_is_drained_by_slurm_not_by_the_collection():
    refused = parse_nodes((FIXTURES / "scontrol-show-node-drained-gres.txt").read_text())[0]
    assert model.is_drained(refused)
    assert model.decide("resume", refused, OWNER)[0] is None


def test_another_owner_word_is_not_ours():
    draining = node("scontrol-show-node-draining-owned.txt")
    assert model.decide("resume", draining, "site-automation")[0] is None


@pytest.mark.parametrize("state,drained", [
    ("IDLE", False), ("IDLE+DRAIN", True), ("ALLOCATED+DRAIN", True), ("MIXED+DRAIN+COMPLETING", True),
    ("DOWN*+DRAIN", True), ("drained*", False), ("MIXED+NOT_RESPONDING", False), ("", False),
])
def test_the_drain_flag(state, drained):
    assert model.is_drained({"state": state}) is drained


def test_squeue_job_ids_in_order():
    assert model.parse_job_ids((FIXTURES / "squeue-node-jobs.txt").read_text()) == ["1"]
    assert model.parse_job_ids("12\n12_3\n 40+0 \n\n") == ["12", "12_3", "40+0"]
    assert model.parse_job_ids("") == []


def test_an_unknown_state_is_refused():
    with pytest.raises(ValueError):
        model.decide("closed", {"state": "IDLE"}, OWNER)
