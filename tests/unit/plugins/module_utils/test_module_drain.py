# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_module_drain.run_drain, the drain modules' one main() flow, with a fake module and a scheduler kept in
memory (the modules on their real commands: test_lsf_host_state_module.py, test_slurm_node_state_module.py)."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_drain import Scheduler, run_drain

OWNER = "hpc.gpu_containers"


class Exit(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg"))
        self.failed, self.result = failed, result


class FakeModule:
    def __init__(self, check_mode=False, **params):
        self.params = dict(owner=OWNER, timeout=0, poll=1, on_timeout="fail", since=50.0, return_after=0,
                           state="query", reason=None, pool=None)
        self.params.update(params)
        self.check_mode = check_mode
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)

    def exit_json(self, **result):
        raise Exit(False, result)

    def fail_json(self, **result):
        raise Exit(True, result)


class Pool(Scheduler):
    """A host of a scheduler with one flag: 'shut' closes it, 'unshut' opens it."""

    NAME, STATE, MARK, CLOSED, HELD = "pool", "phase", "why", "shut", "the pool stays shut (%s)"
    hosts = {}
    running = []
    ran = []

    def state(self):
        if self.name not in self.hosts:
            self.fail("no such pool")
        return dict(self.hosts[self.name])

    def decide(self, wanted, before, owner):
        if wanted == "drained" and before["phase"] != "shut":
            return "shut", "the pool is %s" % before["phase"]
        return None, "nothing to do"

    def argv(self, action, mark):
        return ["pool", action, self.name, mark]

    def predict(self, before, action, mark):
        return {"phase": "shut", "why": mark}

    def apply(self, action, argv):
        self.ran.append(argv)
        self.hosts[self.name] = {"phase": "shut", "why": argv[-1] + " [by root]"}
        return self.state()

    def is_closed(self, state):
        return state["phase"] == "shut"

    def jobs(self):
        return list(self.running)


@pytest.fixture(autouse=True)
def pools():
    Pool.hosts = {"p1": {"phase": "open", "why": None}}
    Pool.running, Pool.ran = [], []


def run(**kwargs):
    with pytest.raises(Exit) as exc:
        run_drain(FakeModule(**kwargs), Pool)
    return exc.value


def test_query_reports_under_the_schedulers_names():
    done = run(pool="p1")
    assert not done.failed
    assert done.result == {"changed": False, "pool": "p1", "phase": "open", "why": "", "shut": False,
                           "owned": False, "previous": {"phase": "open", "why": ""}, "note": "nothing to do",
                           "jobs": [], "waited": 0.0, "timed_out": False, "commands": [], "since": 50.0,
                           "waiting": False, "progress": ""}


def test_drained_closes_with_the_mark_then_waits():
    done = run(pool="p1", state="drained", reason="upgrade", since=None)
    assert not done.failed and done.result["changed"]
    assert Pool.ran == [["pool", "shut", "p1", "hpc.gpu_containers: upgrade"]] == done.result["commands"]
    assert done.result["why"] == "hpc.gpu_containers: upgrade [by root]" and done.result["shut"] and done.result["owned"]
    assert done.result["previous"] == {"phase": "open", "why": ""} and done.result["note"] == "the pool is open"
    assert done.result["progress"].startswith("p1: no job left") and done.result["since"] > 50.0


def test_check_mode_predicts_and_runs_nothing():
    Pool.running = ["7"]
    done = run(check_mode=True, pool="p1", state="drained", reason="upgrade")
    assert not done.failed and Pool.ran == []
    assert done.result["phase"] == "shut" and done.result["why"] == "hpc.gpu_containers: upgrade"
    assert done.result["jobs"] == ["7"] and not done.result["timed_out"]


def test_a_timeout_fails_or_warns_with_what_stays():
    Pool.running = ["7", "8"]
    done = run(pool="p1", state="drained", reason="upgrade")
    assert done.failed and done.result["timed_out"] and done.result["pool"] == "p1"
    assert done.result["msg"] == ("p1: 2 job(s) still running after 0 s (7, 8); the pool stays shut "
                                  "(hpc.gpu_containers: upgrade [by root])")
    module = FakeModule(pool="p1", state="drained", reason="upgrade", on_timeout="proceed")
    with pytest.raises(Exit) as exc:
        run_drain(module, Pool)
    assert not exc.value.failed and exc.value.result["timed_out"]
    assert module.warnings == ["p1: jobs 7, 8 still running after 0 s; going on (on_timeout=proceed)"]


def test_failures_name_the_host_under_the_schedulers_key():
    done = run(pool="p9")
    assert done.failed and done.result == {"msg": "p9: no such pool", "pool": "p9"}
    done = run(pool="p1", state="drained", reason="x", owner="a:b")
    assert done.failed and done.result["pool"] == "p1" and "owner" in done.result["msg"] and Pool.ran == []


def test_the_host_name_defaults_to_the_short_host_name(monkeypatch):
    monkeypatch.setattr("socket.gethostname", lambda: "gpu07.example.org")
    Pool.hosts["gpu07"] = {"phase": "open", "why": None}
    assert run().result["pool"] == "gpu07"
