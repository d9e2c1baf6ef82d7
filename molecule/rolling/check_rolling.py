#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check what one step of the rolling scenario did, from what side_effect.yml collected.

    check_rolling.py STEP COLLECTED.json

COLLECTED: {"rc": exit code of the run, "output": its output, "operator_comment": gpu02's close comment,
            "nodes": {inventory name: collect_node.py's object + "docker_before" (dockerd's start before
            the step)}}.

The times compared come from three clocks of the same machine: the LSF stubs' log (ts), systemd's
ActiveEnterTimestamp of docker.service (the restart) and the engine's events (a verification
container's start). STEP is one of:

  drift   the drift check (check mode) with a daemon.json change pending: no badmin call, no
          restart, no verification container, the job still runs, gpu02 still closed by its operator
  rolling a converge that changes a daemon.json key, in batches (head alone first): on every host the
          collection may close, hclose -> (bjobs until its jobs ended) -> restart -> verification -> hopen, in that order;
          on gpu01 the long-running job ended by itself (exit 0) between hclose and the restart, and
          the verification through LSF ran only after hopen; gpu02 (closed by its operator) was
          drained, restarted and verified on Docker, and is still closed with the operator's comment
  failed  the same with gpu01's NVIDIA runtime broken: gpu01 closed and restarted but never
          reopened, failed by name with the reason; the other hosts went on
  repair  the runtime repaired, nothing to change: nothing closed or restarted, gpu01 reopened
          after its verification passed, then verified through LSF
  nothing nothing to change: no badmin call at all, no restart, the hosts as they were, and no host in the
          batched play (each matched the fingerprint of its last full converge: the fast path left it out)
"""

import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "resources"))
import step_recap  # noqa: E402  (molecule/resources/step_recap.py)

OWNER = "hpc.gpu_containers:"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HEAD, GPU01, GPU02 = "roll-head", "roll-gpu01", "roll-gpu02"
BATCHED_PLAY = "Docker hosts, a batch at a time"


def stub_time(entry):
    return datetime.datetime.fromisoformat(entry["ts"]).timestamp()


def systemd_time(text):
    """'Mon 2026-11-23 12:00:00.123456 UTC' -> Unix seconds (None for an empty value)."""
    match = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)", text or "")
    if not match:
        return None
    stamp = match.group(1)
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in stamp else "%Y-%m-%d %H:%M:%S"
    return datetime.datetime.strptime(stamp, fmt).replace(tzinfo=datetime.timezone.utc).timestamp()


class Node:
    def __init__(self, name, data):
        self.name = name
        self.data = data
        self.lsf = data["lsf_name"]
        self.calls = data["calls"]

    def badmin(self, sub=None):
        return [c for c in self.calls if c["cmd"] == "badmin" and (sub is None or c["argv"][:1] == [sub])]

    def named(self, cmd):
        return [c for c in self.calls if c["cmd"] == cmd]

    def restarted(self):
        return self.data["docker_started"] != self.data["docker_before"]

    def restart_time(self):
        return systemd_time(self.data["docker_started"])

    def verify_times(self):
        return [ns / 1e9 for ns in self.data["verify_starts"]]

    def state(self):
        return self.data["hosts"].get(self.lsf, {"status": "ok", "comment": ""})


class Checker:
    def __init__(self, collected):
        self.collected = collected
        self.nodes = {name: Node(name, data) for name, data in collected["nodes"].items()}
        self.problems = []

    def check(self, condition, message):
        if not condition:
            self.problems.append(message)
        return condition

    # --- shared checks ----------------------------------------------------

    def no_badmin(self, node):
        self.check(not node.badmin(), "%s: badmin calls %s" % (node.name, [c["argv"] for c in node.badmin()]))

    def not_restarted(self, node):
        self.check(not node.restarted(), "%s: dockerd restarted (%s -> %s)"
                   % (node.name, node.data["docker_before"], node.data["docker_started"]))

    def operator_closed(self, node):
        state = node.state()
        self.check(state.get("status") == "closed_Adm" and state.get("comment") == self.collected["operator_comment"],
                   "%s: not closed with the operator's comment any more: %s" % (node.name, state))

    def open_(self, node):
        self.check(node.state().get("status", "ok") == "ok", "%s: not open: %s" % (node.name, node.state()))

    def closed_by_collection(self, node):
        state = node.state()
        self.check(state.get("status") == "closed_Adm" and state.get("comment", "").startswith(OWNER),
                   "%s: not closed by the collection: %s" % (node.name, state))

    def cycle(self, node, reason_word):
        """hclose -> bjobs ... -> restart -> verification -> hopen; returns (t_close, t_restart, t_hopen)."""
        closes, opens = node.badmin("hclose"), node.badmin("hopen")
        if not self.check(len(closes) == 1 and len(opens) == 1,
                          "%s: want one hclose and one hopen, got %s" % (node.name, [c["argv"] for c in node.badmin()])):
            return None
        close, reopen = closes[0], opens[0]
        comment = close["argv"][2] if close["argv"][1:2] == ["-C"] else ""
        self.check(close["argv"] == ["hclose", "-C", comment, node.lsf] and comment.startswith(OWNER + " ")
                   and reason_word in comment, "%s: hclose %s" % (node.name, close["argv"]))
        self.check(reopen["argv"][:2] == ["hopen", "-C"] and reopen["argv"][-1] == node.lsf
                   and reopen["argv"][2].startswith(OWNER), "%s: hopen %s" % (node.name, reopen["argv"]))
        t_close, t_open = stub_time(close), stub_time(reopen)
        t_restart = node.restart_time()
        if not self.check(node.restarted() and t_restart is not None, "%s: dockerd was not restarted" % node.name):
            return None
        polls = [stub_time(c) for c in node.named("bjobs") if t_close <= stub_time(c) <= t_restart]
        self.check(polls, "%s: no bjobs between hclose and the restart (no drain)" % node.name)
        verified = [t for t in node.verify_times() if t >= t_restart]
        self.check(verified, "%s: no verification container after the restart" % node.name)
        self.check(t_close < t_restart < (verified or [t_restart])[0] < t_open,
                   "%s: order hclose %.3f, restart %s, verification %s, hopen %.3f"
                   % (node.name, t_close, t_restart, verified[:1], t_open))
        return t_close, t_restart, t_open, polls

    # --- steps ------------------------------------------------------------

    def step_drift(self):
        self.check(self.collected["rc"] == 3, "drift check exit code %s, expected 3 (drift, nothing failed)" % self.collected["rc"])
        for node in self.nodes.values():
            self.no_badmin(node)
            self.not_restarted(node)
            self.check(not node.verify_times(), "%s: a verification container ran in check mode" % node.name)
        job = self.nodes[GPU01].data["job"]
        self.check(job and job["stat"] == "RUN", "the long-running job is not running any more: %s" % job)
        self.open_(self.nodes[GPU01])
        self.operator_closed(self.nodes[GPU02])

    def batches(self):
        """The batches of site.yml's batched play: the hosts of each, from its task lines, in order."""
        found = []
        for line in ANSI.sub("", self.collected["output"]).splitlines():
            if line.startswith("PLAY [%s]" % BATCHED_PLAY):
                found.append([])
            elif found and line.startswith("PLAY ["):
                found.append(None)
            elif found and found[-1] is not None:
                match = re.match(r"(?:ok|changed|skipping|fatal|included): \[([^\]]+)\]", line)
                if match and match.group(1) not in found[-1]:
                    found[-1].append(match.group(1))
        return [sorted(batch) for batch in found if batch is not None]

    def step_rolling(self):
        self.check(self.collected["rc"] == 0, "converge exit code %s" % self.collected["rc"])
        batches = self.batches()
        self.check(len(batches) > 1 and batches[0] == [HEAD],
                   "a change on a live cluster goes in batches, the registry host alone first: %s" % batches)
        self.cycle(self.nodes[HEAD], "max-file")
        self.open_(self.nodes[HEAD])
        gpu01 = self.nodes[GPU01]
        self.open_(gpu01)
        times = self.cycle(gpu01, "max-file")
        if times:
            t_close, t_restart, t_open, polls = times
            finished = gpu01.named("job-finish")
            if self.check(len(finished) == 1, "gpu01: the job's end is not in the stub log: %s" % finished):
                t_end = stub_time(finished[0])
                self.check(finished[0]["exit_code"] == 0, "gpu01: the job exited %s" % finished[0]["exit_code"])
                # the drain saw the job, waited, and the restart came only after it ended
                self.check(polls[0] < t_end < t_restart and polls[-1] > t_end,
                           "gpu01: job end %.3f not between the first bjobs %.3f and the restart %s"
                           % (t_end, polls[0], t_restart))
                self.check(t_end - t_close >= 10, "gpu01: the job ended %.1f s after hclose (released after 10 s)"
                           % (t_end - t_close))
            lsf_jobs = [stub_time(c) for c in gpu01.named("bsub")]
            self.check(lsf_jobs and all(t > t_open for t in lsf_jobs),
                       "gpu01: the verification through LSF must come after hopen: %s, hopen %.3f" % (lsf_jobs, t_open))
        job = gpu01.data["job"] or {}
        self.check(job.get("stat") == "DONE" and job.get("exit_code") == 0, "gpu01: job record %s" % job)
        self.check("rolling-job-finished" in (gpu01.data["job_output"] or ""),
                   "gpu01: the job's container did not finish its work: %r" % gpu01.data["job_output"])
        gpu02 = self.nodes[GPU02]
        self.no_badmin(gpu02)
        self.operator_closed(gpu02)
        self.check(gpu02.restarted(), "gpu02: dockerd was not restarted")
        t_restart = gpu02.restart_time()
        self.check([t for t in gpu02.verify_times() if t_restart and t >= t_restart],
                   "gpu02: no verification container after the restart")
        self.check(gpu02.named("bjobs"), "gpu02: not drained (no bjobs)")
        self.check(not gpu02.named("bsub"), "gpu02: an LSF job was submitted to the closed host")

    def step_failed(self):
        output = ANSI.sub("", self.collected["output"])
        self.check(self.collected["rc"] == 2, "converge exit code %s, expected 2" % self.collected["rc"])
        # the verification container cannot start on the broken runtime; the run says so, for gpu01
        self.check(re.search(r"fatal: \[%s\]: FAILED!" % GPU01, output) and
                   re.search(r"msg: '?starting the verification container failed: .*nvidia-container-runtime did not"
                             r"\s+terminate successfully", output, re.DOTALL),
                   "the run does not fail gpu01 with the verification's reason")
        for name, failed in ((HEAD, 0), (GPU01, 1), (GPU02, 0)):
            self.check(*step_recap.failed(output, name, failed))
        gpu01 = self.nodes[GPU01]
        closes = gpu01.badmin("hclose")
        self.check(len(closes) == 1 and not gpu01.badmin("hopen"), "gpu01: badmin calls %s"
                   % [c["argv"] for c in gpu01.badmin()])
        self.check(gpu01.restarted(), "gpu01: dockerd was not restarted")
        self.closed_by_collection(gpu01)
        self.cycle(self.nodes[HEAD], "max-file")
        gpu02 = self.nodes[GPU02]
        self.no_badmin(gpu02)
        self.check(gpu02.restarted(), "gpu02 (same batch as gpu01) did not go on: not restarted")
        self.operator_closed(gpu02)

    def step_repair(self):
        self.check(self.collected["rc"] == 0, "converge exit code %s" % self.collected["rc"])
        for node in self.nodes.values():
            self.not_restarted(node)
            self.check(not node.badmin("hclose"), "%s: closed again: %s" % (node.name, node.badmin("hclose")))
        gpu01 = self.nodes[GPU01]
        opens = gpu01.badmin("hopen")
        if self.check(len(opens) == 1, "gpu01: want one hopen, got %s" % [c["argv"] for c in gpu01.badmin()]):
            t_open = stub_time(opens[0])
            self.check(any(t < t_open for t in gpu01.verify_times()), "gpu01: reopened before a verification")
            lsf_jobs = [stub_time(c) for c in gpu01.named("bsub")]
            self.check(lsf_jobs and all(t > t_open for t in lsf_jobs), "gpu01: no verification through LSF after hopen")
        self.open_(gpu01)
        self.no_badmin(self.nodes[HEAD])
        self.no_badmin(self.nodes[GPU02])
        self.operator_closed(self.nodes[GPU02])

    def step_nothing(self):
        self.check(self.collected["rc"] == 0, "converge exit code %s" % self.collected["rc"])
        batches = self.batches()
        self.check(batches and not any(batches),
                   "a full converge leaves out every host that is as its last full converge left it: %s" % batches)
        output = ANSI.sub("", self.collected["output"])
        for name in (HEAD, GPU01, GPU02):
            self.check(*step_recap.fast_path_only(output, name))
        for node in self.nodes.values():
            self.no_badmin(node)
            self.not_restarted(node)
        self.open_(self.nodes[HEAD])
        self.open_(self.nodes[GPU01])
        self.operator_closed(self.nodes[GPU02])


def main(step, path):
    with open(path, encoding="utf-8") as handle:
        collected = json.load(handle)
    checker = Checker(collected)
    getattr(checker, "step_" + step)()
    if checker.problems:
        sys.stdout.write("step %s:\n  %s\n" % (step, "\n  ".join(checker.problems)))
        return 1
    sys.stdout.write("step %s as expected\n" % step)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
