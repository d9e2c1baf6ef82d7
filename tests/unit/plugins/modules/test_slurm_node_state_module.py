# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_node_state against fake scontrol and squeue on PATH: the node's state in a JSON file, which
``scontrol update`` changes as Slurm does (DRAIN adds the flag and the reason, RESUME drops both), and the
jobs squeue lists in another."""

import json
import sys
import textwrap

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import slurm_node_state

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module, warning_texts

NODE = "node01"
OWNER = "hpc.gpu_containers"

SCONTROL = """
import json, sys
node = json.load(open(STATE))
args = sys.argv[1:]
with open(STATE + ".calls", "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[:3] == ["--oneliner", "show", "node"]:
    if args[3] != node["name"]:
        sys.stderr.write("Node %s not found\\n" % args[3])
        sys.exit(1)
    line = "NodeName=%s CPUTot=1 State=%s" % (node["name"], node["state"])
    if node.get("reason"):
        line += " Reason=%s [root@2026-11-27T04:19:59]" % node["reason"]
    print(line)
elif args[:1] == ["update"]:
    words = dict(arg.split("=", 1) for arg in args[1:])
    base = node["state"].split("+", 1)[0]
    if node.get("stuck"):
        pass
    elif words["State"] == "DRAIN":
        node.update(state=base + "+DRAIN", reason=words["Reason"])
    else:
        node.update(state=base, reason=None)
    json.dump(node, open(STATE, "w"))
"""

SQUEUE = """
import sys
sys.stdout.write(open(JOBS).read())
"""


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state, jobs = tmp_path / "node.json", tmp_path / "jobs.txt"
    for name, body in (("scontrol", SCONTROL.replace("STATE", repr(str(state)))),
                       ("squeue", SQUEUE.replace("JOBS", repr(str(jobs))))):
        path = bin_dir / name
        path.write_text("#!%s\n%s" % (sys.executable, textwrap.dedent(body)))
        path.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % bin_dir)

    state_path = state

    class Slurm:
        def node(self, state="IDLE", reason=None, stuck=False, job_ids=()):
            state_file = {"name": NODE, "state": state, "reason": reason, "stuck": stuck}
            state_path.write_text(json.dumps(state_file))
            jobs.write_text("".join("%s\n" % job for job in job_ids))

        def updates(self):
            calls = tmp_path / "node.json.calls"
            lines = calls.read_text().splitlines() if calls.exists() else []
            return [json.loads(line) for line in lines if json.loads(line)[:1] == ["update"]]

    return Slurm()


def test_query_reads_the_node(slurm, capsys):
    slurm.node()
    result = run_module(slurm_node_state, capsys, invocation=False, node=NODE, since=100.0)
    assert result == {"changed": False, "node": NODE, "state": "IDLE", "reason": "", "drained": False,
                      "owned": False, "previous": {"state": "IDLE", "reason": ""}, "note": "read only",
                      "jobs": [], "waited": 0.0, "timed_out": False, "commands": [], "since": 100.0,
                      "waiting": False, "progress": ""}


def test_drained_drains_with_the_owners_reason_and_finds_no_job(slurm, capsys):
    slurm.node()
    result = run_module(slurm_node_state, capsys, node=NODE, state="drained", reason="restart of dockerd")
    argv = ["scontrol", "update", "NodeName=node01", "State=DRAIN", "Reason=hpc.gpu_containers: restart of dockerd"]
    assert result["changed"] and result["commands"] == [argv]
    assert result["state"] == "IDLE+DRAIN" and result["drained"] and result["owned"]
    assert result["reason"] == "hpc.gpu_containers: restart of dockerd [root@2026-11-27T04:19:59]"
    assert result["previous"] == {"state": "IDLE", "reason": ""} and result["note"] == "the node is IDLE"
    assert result["jobs"] == [] and not result["timed_out"] and not result["waiting"]
    assert result["progress"].startswith("node01: no job left; waited ")
    assert len(slurm.updates()) == 1


def test_a_drain_that_times_out_fails_and_the_node_stays_drained(slurm, capsys):
    slurm.node(state="MIXED", job_ids=["1201", "1202_3"])
    result = run_module(slurm_node_state, capsys, node=NODE, state="drained", reason="upgrade", timeout=0)
    assert result["failed"] and result["timed_out"] and result["jobs"] == ["1201", "1202_3"]
    assert result["msg"] == ("node01: 2 job(s) still running after 0 s (1201, 1202_3); the node stays drained "
                             "(hpc.gpu_containers: upgrade [root@2026-11-27T04:19:59])")
    assert result["state"] == "MIXED+DRAIN" and result["changed"]


def test_proceed_at_the_timeout_warns_and_returns(slurm, capsys):
    slurm.node(state="MIXED", job_ids=["1201"])
    result = run_module(slurm_node_state, capsys, node=NODE, state="drained", reason="upgrade", timeout=0,
                        on_timeout="proceed")
    assert not result.get("failed") and result["timed_out"] and result["jobs"] == ["1201"]
    assert warning_texts(result) == ["node01: jobs 1201 still running after 0 s; going on (on_timeout=proceed)"]


def test_check_mode_predicts_and_updates_nothing(slurm, capsys):
    slurm.node(state="MIXED", job_ids=["1201"])
    result = run_module(slurm_node_state, capsys, check=True, node=NODE, state="drained", reason="upgrade")
    assert result["changed"] and result["state"] == "MIXED+DRAIN" and result["reason"] == "hpc.gpu_containers: upgrade"
    assert result["owned"] and result["jobs"] == ["1201"] and not result["timed_out"] and not result["waiting"]
    assert slurm.updates() == []


def test_resume_only_what_the_owner_drained(slurm, capsys):
    slurm.node(state="IDLE+DRAIN", reason="operator: fan replacement")
    result = run_module(slurm_node_state, capsys, node=NODE, state="resume")
    assert not result["changed"] and result["drained"] and not result["owned"] and result["commands"] == []
    assert result["note"].startswith("drained by an operator for another reason (operator: fan replacement")
    slurm.node(state="IDLE+DRAIN", reason="hpc.gpu_containers: upgrade")
    result = run_module(slurm_node_state, capsys, node=NODE, state="resume")
    assert result["changed"] and result["state"] == "IDLE" and not result["drained"] and result["reason"] == ""
    assert result["commands"] == [["scontrol", "update", "NodeName=node01", "State=RESUME"]]
    assert result["previous"]["state"] == "IDLE+DRAIN"


def test_an_update_that_does_not_take_fails(slurm, capsys):
    slurm.node(stuck=True)
    result = run_module(slurm_node_state, capsys, node=NODE, state="drain", reason="upgrade")
    assert result["failed"] and result["node"] == NODE
    assert result["msg"] == ("node01: scontrol update NodeName=node01 State=DRAIN Reason=hpc.gpu_containers: upgrade "
                             "ran, but scontrol shows the node IDLE")
    assert len(result["commands"]) == 1


def test_a_node_slurm_does_not_know_and_a_bad_owner(slurm, capsys):
    slurm.node()
    result = run_module(slurm_node_state, capsys, node="node99")
    assert result["failed"] and result["node"] == "node99"
    assert result["msg"] == "node99: scontrol show node node99 failed (rc=1): Node node99 not found"
    result = run_module(slurm_node_state, capsys, node=NODE, state="drain", reason="x", owner="a:b")
    assert result["failed"] and result["node"] == NODE and "owner of a close comment" in result["msg"]
