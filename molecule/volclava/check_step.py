#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check what one rolling step of the volclava scenario did, from what step.yml collected.

    check_step.py STEP COLLECTED.json

COLLECTED: {"rc": the run's exit code, "output": its output, "started": the step's start (Unix seconds),
            "operator_comment": gpu02's close comment, "job": the user's job id,
            "nodes": {inventory name: collect_node.py's object}}.

Who closed or opened a host, and when, is read from the real scheduler's event log (lsb.events HOST_CTRL,
whole seconds), when the user's job ended from it too (JOB_STATUS, DONE = 64); dockerd's restart from systemd,
the verification containers from the engine's events. STEP is one of:

  drift   the drift check with a daemon.json change pending: exit 3, no host closed or opened, no restart, no
          verification container, the job still runs, gpu02 still closed by its operator
  rolling the converge of that change, head (the registry host) in a batch of its own first: on head and gpu01
          close -> restart -> verification -> open; gpu01's job ended by itself (DONE) after the close and
          before the restart; gpu02, closed by its operator, restarted and verified but never opened
  failed  another change with gpu01's NVIDIA runtime broken, gpu01 and gpu02 in one batch: exit 2, gpu01
          named with the reason, closed, restarted and left closed; head cycled; gpu02 went on
  repair  the runtime back, nothing to change: no restart, gpu01 verified and then opened, nothing else
  nothing nothing to change: no host closed or opened, no restart, every host left to the fast path
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "resources"))
import step_recap  # noqa: E402  (molecule/resources/step_recap.py)

OWNER = "hpc.gpu_containers:"
DONE = 64
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HEAD, GPU01, GPU02 = "vc-head", "vc-gpu01", "vc-gpu02"


class Checker:
    def __init__(self, collected):
        self.collected = collected
        self.started = collected["started"]
        self.nodes = collected["nodes"]
        self.events = [event for node in self.nodes.values() for event in node["events"]]
        self.hosts = {}
        for node in self.nodes.values():
            self.hosts.update(node["hosts"])
        self.output = ANSI.sub("", collected["output"])
        self.problems = []

    def check(self, condition, message):
        if not condition:
            self.problems.append(message)
        return condition

    # --- what happened ----------------------------------------------------

    def lsf(self, name):
        return self.nodes[name]["lsf_name"]

    def host_ctrl(self, name=None):
        return [e for e in self.events if e["type"] == "HOST_CTRL" and (name is None or e["host"] == self.lsf(name))]

    def restarted(self, name):
        started = self.nodes[name]["docker_started"]
        return started is not None and started > self.started

    def state(self, name):
        return self.hosts.get(self.lsf(name), {})

    # --- shared checks ----------------------------------------------------

    def untouched(self, name):
        self.check(not self.host_ctrl(name), "%s: closed or opened: %s" % (name, self.host_ctrl(name)))

    def not_restarted(self, name):
        self.check(not self.restarted(name), "%s: dockerd restarted at %s (step began %.3f)"
                   % (name, self.nodes[name]["docker_started"], self.started))

    def open_(self, name):
        self.check(self.state(name).get("status") == "ok", "%s: not open: %s" % (name, self.state(name)))

    def operator_closed(self, name):
        state = self.state(name)
        self.check(state.get("status") == "closed_Adm" and state.get("comment") == self.collected["operator_comment"],
                   "%s: not closed with its operator's comment any more: %s" % (name, state))

    def closed_by_collection(self, name):
        state = self.state(name)
        self.check(state.get("status") == "closed_Adm" and state.get("comment", "").startswith(OWNER),
                   "%s: not closed by the collection: %s" % (name, state))

    def restarted_and_verified(self, name):
        """dockerd restarted in the step and a verification container ran after it; its time, or None."""
        if not self.check(self.restarted(name), "%s: dockerd was not restarted" % name):
            return None
        restart = self.nodes[name]["docker_started"]
        verified = [t for t in self.nodes[name]["verify_starts"] if t >= restart]
        self.check(verified, "%s: no verification container after the restart" % name)
        return restart

    def cycle(self, name, reason_word):
        """close -> restart -> verification -> open, by the collection; (t_close, t_restart, t_open) or None."""
        ctrl = self.host_ctrl(name)
        if not self.check([e["op"] for e in ctrl] == ["close", "open"],
                          "%s: want one close then one open, got %s" % (name, ctrl)):
            return None
        close, reopen = ctrl
        self.check(close["comment"].startswith(OWNER + " ") and reason_word in close["comment"],
                   "%s: close comment %r" % (name, close["comment"]))
        self.check(reopen["comment"].startswith(OWNER), "%s: open comment %r" % (name, reopen["comment"]))
        restart = self.restarted_and_verified(name)
        if restart is None:
            return None
        verified = [t for t in self.nodes[name]["verify_starts"] if t >= restart]
        # lsb.events keeps whole seconds: an event at second S happened in [S, S + 1).
        self.check(close["time"] <= restart and verified and verified[0] < reopen["time"] + 1,
                   "%s: order close %d, restart %.3f, verification %s, open %d"
                   % (name, close["time"], restart, verified[:1], reopen["time"]))
        return close["time"], restart, reopen["time"]

    # --- steps ------------------------------------------------------------

    def step_drift(self):
        self.check(self.collected["rc"] == 3, "drift check exit code %s, expected 3" % self.collected["rc"])
        for name in self.nodes:
            self.untouched(name)
            self.not_restarted(name)
            self.check(not self.nodes[name]["verify_starts"], "%s: a verification container ran in check mode" % name)
        self.check(not [e for e in self.events if e["type"] == "JOB_STATUS" and e["job"] == self.collected["job"]],
                   "the user's job changed state during the drift check")
        self.open_(GPU01)
        self.operator_closed(GPU02)

    def step_rolling(self):
        self.check(self.collected["rc"] == 0, "converge exit code %s" % self.collected["rc"])
        head = self.cycle(HEAD, "max-file")
        gpu01 = self.cycle(GPU01, "max-file")
        if head and gpu01:
            self.check(head[2] <= gpu01[0], "head's batch must end (open %d) before gpu01 is closed (%d)"
                       % (head[2], gpu01[0]))
        done = [e for e in self.events if e["type"] == "JOB_STATUS" and e["job"] == self.collected["job"]
                and e["status"] == DONE]
        if self.check(len(done) == 1, "gpu01: the user's job did not end DONE: %s" % self.events) and gpu01:
            t_close, t_restart = gpu01[:2]
            t_done = done[0]["time"]
            # the drain waited for the job: it ended (released 10 s after the close was seen) before the restart
            self.check(t_close + 9 <= t_done < t_restart,
                       "gpu01: job end %d not between close %d (+10 s) and restart %.3f" % (t_done, t_close, t_restart))
        self.check("rolling-job-finished" in (self.nodes[GPU01]["job_output"] or ""),
                   "gpu01: the job did not finish its work: %r" % self.nodes[GPU01]["job_output"])
        self.open_(HEAD)
        self.open_(GPU01)
        self.untouched(GPU02)
        self.restarted_and_verified(GPU02)
        self.operator_closed(GPU02)

    def step_failed(self):
        self.check(self.collected["rc"] == 2, "converge exit code %s, expected 2" % self.collected["rc"])
        self.check(re.search(r"fatal: \[%s\]: FAILED!" % GPU01, self.output) and
                   re.search(r"starting the verification container failed: .*nvidia-container-runtime did not"
                             r"\s+terminate successfully", self.output, re.DOTALL),
                   "the run does not fail gpu01 with the verification's reason")
        for name, failed in ((HEAD, 0), (GPU01, 1), (GPU02, 0)):
            self.check(*step_recap.failed(self.output, name, failed))
        self.cycle(HEAD, "max-file")
        ctrl = self.host_ctrl(GPU01)
        self.check([e["op"] for e in ctrl] == ["close"], "gpu01: want one close, got %s" % ctrl)
        self.check(self.restarted(GPU01), "gpu01: dockerd was not restarted")
        self.closed_by_collection(GPU01)
        self.untouched(GPU02)
        self.check(self.restarted(GPU02), "gpu02 (in gpu01's batch) did not go on: not restarted")
        self.operator_closed(GPU02)

    def step_repair(self):
        self.check(self.collected["rc"] == 0, "converge exit code %s" % self.collected["rc"])
        for name in self.nodes:
            self.not_restarted(name)
        ctrl = self.host_ctrl(GPU01)
        if self.check([e["op"] for e in ctrl] == ["open"], "gpu01: want one open, got %s" % ctrl):
            self.check(any(t < ctrl[0]["time"] + 1 for t in self.nodes[GPU01]["verify_starts"]),
                       "gpu01: opened before a verification")
        self.open_(GPU01)
        self.untouched(HEAD)
        self.untouched(GPU02)
        self.operator_closed(GPU02)

    def step_nothing(self):
        self.check(self.collected["rc"] == 0, "converge exit code %s" % self.collected["rc"])
        for name in self.nodes:
            self.untouched(name)
            self.not_restarted(name)
            self.check(*step_recap.fast_path_only(self.output, name))
        self.open_(GPU01)
        self.operator_closed(GPU02)


def main(argv):
    step, path = argv[1], argv[2]
    with open(path, encoding="utf-8") as handle:
        checker = Checker(json.load(handle))
    getattr(checker, "step_" + step)()
    for problem in checker.problems:
        sys.stdout.write("FAIL %s: %s\n" % (step, problem))
    if not checker.problems:
        sys.stdout.write("ok %s\n" % step)
    return 1 if checker.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
