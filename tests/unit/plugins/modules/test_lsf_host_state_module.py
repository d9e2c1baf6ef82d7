# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_host_state against the test bed's recording LSF stubs (badmin, bhosts, bjobs, bsub).

The stubs run here as they do on the test bed's nodes: a copy of the fixture LSF
tree, the stub linked as the LSF commands, a profile.lsf that puts them on PATH
(the module sources it, as a site's O(profile)), and their state and call log in
a temporary directory. This machine's host name is added to lsf.cluster, so the
stub's batch jobs (which run where bsub runs) run on a host LSF knows.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_host_state as hs
from ansible_collections.hpc.gpu_containers.plugins.modules import lsf_host_state

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module, warning_texts

ROOT = Path(__file__).resolve().parents[4]
FIXTURE = ROOT / "tests" / "fixtures" / "lsf10.1" / "conf"
STUB = ROOT / "molecule" / "resources" / "lsf-stubs" / "lsf_stub.py"
HOST = socket.gethostname().split(".")[0]
OWNER = "hpc.gpu_containers"


class Cluster:
    def __init__(self, base):
        self.base = base
        self.conf = base / "conf"
        self.bin = base / "bin"
        self.log = base / "log" / "calls.jsonl"
        self.env = {
            "LSF_ENVDIR": str(self.conf),
            "LSF_STUB_LOG_DIR": str(base / "log"),
            "LSF_STUB_STATE_DIR": str(base / "state"),
            "LSF_STUB_SWITCH_DIR": str(base / "switch"),
            "LSF_STUB_CLUSTER_DIR": str(base / "cluster"),
        }
        self.profile = base / "profile.lsf"

    def lsf(self, *argv):
        env = dict(os.environ, **self.env)
        env["PATH"] = "%s:%s" % (self.bin, env["PATH"])
        return subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False)

    def calls(self, cmd=None):
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [e for e in entries if cmd is None or e["cmd"] == cmd]

    def state(self):
        return json.loads((self.base / "cluster" / "hosts.json").read_text()).get(HOST, {})

    def job(self, job):
        return json.loads((self.base / "cluster" / "jobs" / ("%d.json" % job)).read_text())

    def submit(self, *command):
        proc = self.lsf("bsub", *command)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout.split("<", 1)[1].split(">", 1)[0])

    def wait_for(self, job, stat, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.job(job).get("stat") == stat:
                return
            time.sleep(0.1)
        raise AssertionError("job %d is %s, not %s" % (job, self.job(job).get("stat"), stat))

    def kill(self, job):
        pid = self.job(job).get("pid")
        if pid:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


@pytest.fixture()
def cluster(tmp_path):
    base = tmp_path
    (base / "conf").mkdir()
    for path in FIXTURE.rglob("*"):
        target = base / "conf" / path.relative_to(FIXTURE)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    conf = base / "conf" / "lsf.conf"
    conf.write_text(conf.read_text().replace("/usr/share/lsf/conf", str(base / "conf"))
                    .replace("/usr/share/lsf/work", str(base / "work")))
    cluster_file = base / "conf" / "lsf.cluster.gpucluster"
    text = cluster_file.read_text()
    cluster_file.write_text(text.replace("End     Host", "%s   !   !   1   ()\nEnd     Host" % HOST, 1)
                            if "End     Host" in text else text)
    (base / "bin").mkdir()
    for name in ("badmin", "bhosts", "bjobs", "bsub"):
        (base / "bin" / name).symlink_to(STUB)
    made = Cluster(base)
    made.profile.write_text("".join("export %s=%s\n" % item for item in made.env.items())
                            + "export PATH=%s:$PATH\n" % made.bin)
    assert made.lsf("bhosts", HOST).returncode == 0, "the fixture lsf.cluster must list %s" % HOST
    yield made
    for job in made.calls("bsub-job"):
        made.kill(job["job"])


def run(cluster, capsys, check=False, **args):
    args.setdefault("host", HOST)
    args.setdefault("profile", str(cluster.profile))
    return run_module(lsf_host_state, capsys, check=check, **args)


def test_query_reads_an_open_host(cluster, capsys):
    res = run(cluster, capsys)
    assert res["changed"] is False and res["status"] == "ok" and res["closed"] is False and res["commands"] == []
    assert cluster.calls("badmin") == []


def test_drained_closes_with_the_owners_comment(cluster, capsys):
    res = run(cluster, capsys, state="drained", reason="restart of dockerd", timeout=10, poll=1)
    comment = "hpc.gpu_containers: restart of dockerd"
    assert res["changed"] is True and res["status"] == "closed_Adm" and res["owned"] is True
    assert res["comment"] == comment and res["jobs"] == [] and res["timed_out"] is False
    assert [c["argv"] for c in cluster.calls("badmin")] == [["hclose", "-C", comment, HOST]]
    assert cluster.state()["comment"] == comment
    # closed already: the second call changes nothing and calls no badmin
    again = run(cluster, capsys, state="drained", reason="restart of dockerd", timeout=10, poll=1)
    assert again["changed"] is False and len(cluster.calls("badmin")) == 1


def test_drained_waits_until_the_hosts_jobs_have_ended(cluster, capsys):
    job = cluster.submit("sh", "-c", "sleep 8; echo done")  # long enough for two polls on a busy machine
    cluster.wait_for(job, "RUN")
    began = time.monotonic()
    res = run(cluster, capsys, state="drained", reason="engine upgrade", timeout=30, poll=1)
    assert res["jobs"] == [] and res["timed_out"] is False
    assert res["waited"] >= 1 and time.monotonic() - began >= 1
    assert cluster.job(job)["stat"] == "DONE"
    polls = cluster.calls("bjobs")
    assert len(polls) >= 2 and all(c["argv"] == ["-u", "all", "-w", "-m", HOST] for c in polls)
    # the close came first, the last look found the job gone
    close = cluster.calls("badmin")[0]["ts"]
    finish = [c for c in cluster.calls("job-finish") if c["job"] == job][0]["ts"]
    assert close < polls[0]["ts"] < finish < polls[-1]["ts"]


def test_a_drain_that_times_out_fails_and_leaves_the_host_closed(cluster, capsys):
    job = cluster.submit("sleep", "30")
    cluster.wait_for(job, "RUN")
    res = run(cluster, capsys, state="drained", reason="engine upgrade", timeout=1, poll=1)
    assert res["failed"] is True and res["timed_out"] is True and res["jobs"] == [job]
    assert res["msg"] == ("%s: 1 job(s) still running after 1 s (%d); the host stays closed "
                          "(hpc.gpu_containers: engine upgrade)" % (HOST, job))
    assert cluster.state()["status"] == "closed_Adm"


def test_proceed_at_the_timeout_warns_and_returns(cluster, capsys):
    job = cluster.submit("sleep", "30")
    cluster.wait_for(job, "RUN")
    res = run(cluster, capsys, state="drained", reason="engine upgrade", timeout=0, on_timeout="proceed")
    assert "failed" not in res and res["timed_out"] is True and res["jobs"] == [job]
    assert any("still running" in text for text in warning_texts(res))


def test_an_operators_close_is_kept(cluster, capsys):
    assert cluster.lsf("badmin", "hclose", "-C", "operator: disk swap", HOST).returncode == 0
    res = run(cluster, capsys, state="drained", reason="restart", timeout=5, poll=1)
    assert res["changed"] is False and res["owned"] is False and res["comment"] == "operator: disk swap"
    assert "left as it is" in res["note"]
    res = run(cluster, capsys, state="open", reason="verified")
    assert res["changed"] is False and res["closed"] is True and "left closed" in res["note"]
    assert cluster.state() == dict(cluster.state(), status="closed_Adm", comment="operator: disk swap")
    assert [c["argv"][0] for c in cluster.calls("badmin")] == ["hclose"]


def test_open_reopens_only_what_the_owner_closed(cluster, capsys):
    run(cluster, capsys, state="closed", reason="restart")
    res = run(cluster, capsys, state="open", reason="verified")
    assert res["changed"] is True and res["status"] == "ok" and res["closed"] is False
    assert res["commands"] == [["badmin", "hopen", "-C", "hpc.gpu_containers: verified", HOST]]
    # open already: nothing to do
    assert run(cluster, capsys, state="open")["changed"] is False


def test_check_mode_predicts_and_calls_no_badmin(cluster, capsys):
    res = run(cluster, capsys, check=True, state="drained", reason="restart", timeout=30)
    assert res["changed"] is True and res["status"] == "closed_Adm" and res["owned"] is True
    assert res["commands"] == [["badmin", "hclose", "-C", "hpc.gpu_containers: restart", HOST]]
    assert cluster.calls("badmin") == [] and not (cluster.base / "cluster" / "hosts.json").exists()


def test_a_host_lsf_does_not_know(cluster, capsys):
    res = run(cluster, capsys, host="gpu99", state="closed", reason="x")
    assert res["failed"] is True
    assert res["msg"].startswith("gpu99: bhosts -l gpu99 failed (rc=255): gpu99: Bad host name")


def test_closed_needs_a_reason(cluster, capsys):
    res = run(cluster, capsys, state="closed")
    assert res["failed"] is True and "reason" in res["msg"]


def test_the_owner_must_be_recognisable(cluster, capsys):
    res = run(cluster, capsys, state="closed", reason="x", owner="a: b")
    assert res["failed"] is True and "owner" in res["msg"]


def test_a_job_waits_for_dispatch_while_its_host_is_closed(cluster, capsys):
    """The stub, as LSF, dispatches nothing to a closed host: the job pends until hopen."""
    run(cluster, capsys, state="closed", reason="restart")
    job = cluster.submit("true")
    time.sleep(1.5)
    assert cluster.job(job)["stat"] == "PEND"
    run(cluster, capsys, state="open", reason="verified")
    cluster.wait_for(job, "DONE")


# --- the stubs against a real scheduler of LSF's lineage ------------------------------------------------------------
# What volclava 2.2 printed for the same commands (tests/fixtures/volclava/, recorded on the test bed). The stubs
# must print what the collection reads in the same layout; where they differ on purpose, the test says why.

VOLCLAVA = ROOT / "tests" / "fixtures" / "volclava"


def volclava(name):
    return json.loads((VOLCLAVA / ("%s.json" % name)).read_text())


def test_the_stubs_bhosts_long_has_volclavas_layout(cluster, capsys):
    job = cluster.submit("sleep", "30")
    cluster.wait_for(job, "RUN")
    run(cluster, capsys, state="closed", reason="restart of dockerd for daemon.json log-opts.max-file")
    stub = cluster.lsf("bhosts", "-l", HOST)
    real = volclava("bhosts-l-closed-by-collection")
    assert stub.returncode == real["rc"] == 0
    stub_lines, real_lines = stub.stdout.splitlines(), real["stdout"].splitlines()
    # HOST line, STATUS header (byte for byte), then the status row with the same columns
    assert stub_lines[0].split()[0] == real_lines[0].split()[0] == "HOST"
    assert stub_lines[1] == real_lines[1]
    assert len(stub_lines[2].split()) == len(real_lines[2].split()) == 10
    stub_state = hs.parse_bhosts_long(stub.stdout)[HOST]
    real_state = hs.parse_bhosts_long(real["stdout"])["gpu01"]
    assert set(stub_state) == set(real_state)
    for state in (stub_state, real_state):
        assert state["status"] == "closed_Adm" and state["njobs"] == state["run"] == 1
        assert state["comment"] == "hpc.gpu_containers: restart of dockerd for daemon.json log-opts.max-file"
    # On purpose: LSF 10.1 quotes the comment (ADMIN ACTION COMMENT: "..."), volclava does not; the stub is LSF 10.1's.
    assert '"hpc.gpu_containers:' in stub.stdout and '"hpc.gpu_containers:' not in real["stdout"]
    cluster.kill(job)


def test_the_stubs_bjobs_has_volclavas_layout(cluster):
    job = cluster.submit("sleep", "3")
    cluster.wait_for(job, "RUN")
    stub = cluster.lsf("bjobs", "-u", "all", "-w", "-m", HOST)
    real = volclava("bjobs-running-gpu01")
    assert stub.returncode == real["rc"] == 0
    assert stub.stdout.splitlines()[0] == real["stdout"].splitlines()[0]
    stub_jobs, real_jobs = hs.parse_bjobs(stub.stdout), hs.parse_bjobs(real["stdout"])
    assert [set(j) for j in stub_jobs] == [set(j) for j in real_jobs]
    assert stub_jobs[0]["stat"] == real_jobs[0]["stat"] == "RUN" and stub_jobs[0]["exec_hosts"] == [HOST]
    cluster.wait_for(job, "DONE")
    # No job: the same words on stderr, nothing on stdout; the exit codes differ (stub 255, volclava 254), and
    # the collection reads the words, not the code.
    none = cluster.lsf("bjobs", "-u", "all", "-w", "-m", HOST)
    real_none = volclava("bjobs-none")
    assert none.stdout == real_none["stdout"] == ""
    assert none.stderr.strip() == real_none["stderr"].strip() == "No unfinished job found"
    assert none.returncode != 0 and real_none["rc"] != 0 and hs.no_jobs_message(none.stderr)
