# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_reconfig against the test bed's recording LSF stubs (lsadmin, badmin, lshosts) on a copy of the
fixture LSF tree: the checks, the reloads in order, the resource check, a configuration error."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_admin as admin
from ansible_collections.hpc.gpu_containers.plugins.modules import lsf_reconfig
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

ROOT = Path(__file__).resolve().parents[4]
FIXTURE = ROOT / "tests" / "fixtures" / "lsf10.1" / "conf"
STUB = ROOT / "molecule" / "resources" / "lsf-stubs" / "lsf_stub.py"
HOST = socket.gethostname().split(".")[0]


@pytest.fixture()
def lsf(tmp_path, monkeypatch):
    """The fixture tree with this host in the cluster file (docker resource), the stubs in bin/ (not on PATH)."""
    conf = tmp_path / "conf"
    for path in FIXTURE.rglob("*"):
        target = conf / path.relative_to(FIXTURE)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    lsf_conf = conf / "lsf.conf"
    lsf_conf.write_text(lsf_conf.read_text().replace("/usr/share/lsf/conf", str(conf))
                        .replace("/usr/share/lsf/work", str(tmp_path / "work")))
    cluster = conf / "lsf.cluster.gpucluster"
    cluster.write_text(cluster.read_text().replace("End     Host", "%s   !   !   1   (docker)\nEnd     Host" % HOST, 1))
    (tmp_path / "bin").mkdir()
    for name in ("lsadmin", "badmin", "lshosts"):
        (tmp_path / "bin" / name).symlink_to(STUB)
    for name, sub in (("LOG", "log"), ("STATE", "state"), ("SWITCH", "switch"), ("CLUSTER", "cluster")):
        monkeypatch.setenv("LSF_STUB_%s_DIR" % name, str(tmp_path / sub))
    monkeypatch.delenv("LSF_ENVDIR", raising=False)
    return tmp_path


def calls(base):
    log = base / "log" / "calls.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [" ".join([e["cmd"]] + e["argv"]) for e in entries]


def run(base, capsys, check=False, **args):
    args.setdefault("envdir", str(base / "conf"))
    args.setdefault("bindir", str(base / "bin"))
    return run_module(lsf_reconfig, capsys, check=check, **args)


def test_checks_then_the_reloads_in_order_then_lshosts(lsf, capsys):
    res = run(lsf, capsys, lim=True, mbdrestart=True, batch=True, resource="docker", hosts=[HOST])
    assert res.get("failed") is not True, res
    assert res["changed"] is True and res["reloads"] == ["lsadmin reconfig -f", "badmin mbdrestart -f"]
    assert calls(lsf) == ["lsadmin ckconfig -v", "badmin ckconfig -v", "lsadmin reconfig -f",
                          "badmin mbdrestart -f", "lshosts -w -R select[docker]"]
    assert [c["rc"] for c in res["checks"]] == [0, 0] and "No errors found." in res["checks"][0]["output"]
    assert HOST in res["hosts_with_resource"]
    # every command saw the cluster's LSF_ENVDIR
    log = (lsf / "log" / "calls.jsonl").read_text().splitlines()
    assert {json.loads(line)["lsf_envdir"] for line in log} == {str(lsf / "conf")}


def test_batch_files_only_reconfigure_mbatchd(lsf, capsys):
    res = run(lsf, capsys, batch=True, resource="docker", hosts=[HOST])
    assert res["reloads"] == ["badmin reconfig -f"]
    assert calls(lsf) == ["lsadmin ckconfig -v", "badmin ckconfig -v", "badmin reconfig -f"]


def test_a_configuration_error_stops_before_any_reload(lsf, capsys):
    (lsf / "switch").mkdir()
    (lsf / "switch" / "fail-badmin-ckconfig").write_text("lsb.applications(12): Bad keyword CONTAINERS\n")
    res = run(lsf, capsys, lim=True, mbdrestart=True, error_hint="fix it, then force the reload.")
    assert res["failed"] is True and res["changed"] is False
    assert res["msg"].startswith("badmin ckconfig -v failed (rc=255):\n")
    assert "lsb.applications(12): Bad keyword CONTAINERS" in res["msg"]
    assert res["msg"].endswith("Nothing was reloaded. The edited files are in place: fix it, then force the reload.")
    assert calls(lsf) == ["lsadmin ckconfig -v", "badmin ckconfig -v"]


def test_a_host_lsf_does_not_list_with_the_resource_fails_by_name(lsf, capsys):
    res = run(lsf, capsys, lim=True, resource="docker", hosts=[HOST, "gpu99"])
    assert res["failed"] is True
    assert "does not list the docker resource on gpu99," in res["msg"] and HOST not in res["msg"].split(" on ")[1]


def test_check_mode_runs_nothing_and_reports_the_reloads(lsf, capsys):
    res = run(lsf, capsys, check=True, lim=True, mbdrestart=True)
    assert res["changed"] is True and res["reloads"] == ["lsadmin reconfig -f", "badmin mbdrestart -f"]
    assert calls(lsf) == []
    res = run(lsf, capsys, check=True)
    assert res["changed"] is False and res["reloads"] == []


def test_commands_are_found_in_bindir_before_path(lsf, capsys, monkeypatch):
    elsewhere = lsf / "elsewhere"
    elsewhere.mkdir()
    for name in ("lsadmin", "badmin"):
        (elsewhere / name).write_text("#!/bin/sh\nexit 99\n")
        os.chmod(elsewhere / name, 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (elsewhere, os.environ["PATH"]))
    res = run(lsf, capsys, path=str(elsewhere), lim=True)
    assert res.get("failed") is not True, res
    assert calls(lsf)[:3] == ["lsadmin ckconfig -v", "badmin ckconfig -v", "lsadmin reconfig -f"]


def test_hosts_restart_restarts_sbatchd_and_res_everywhere_after_the_reloads(lsf, capsys):
    res = run(lsf, capsys, lim=True, hosts_restart=True)
    assert res.get("failed") is not True, res
    assert res["reloads"] == ["lsadmin reconfig -f", "badmin hrestart -f all", "lsadmin resrestart -f all"]
    assert calls(lsf)[2:] == res["reloads"]


def test_a_failed_host_restart_fails_the_task_by_command(lsf, capsys):
    (lsf / "switch").mkdir()
    (lsf / "switch" / "fail-badmin-hrestart").write_text("hostB: Host control failed\n")
    res = run(lsf, capsys, hosts_restart=True)
    assert res["failed"] is True and res["msg"].startswith("badmin hrestart -f all failed (rc=")
    assert calls(lsf)[-1] == "badmin hrestart -f all"


def test_the_stubs_lshosts_has_volclavas_columns(lsf):
    """The stub's `lshosts -w -R` against volclava 2.2's (tests/fixtures/volclava/): the same columns; with no
    host matching, the stub prints its header and exits 0 where volclava says "Not enough host(s) currently
    eligible" and exits 255. The collection reads both as "no host"."""
    env = dict(os.environ, LSF_ENVDIR=str(lsf / "conf"))

    def stub(resource):
        proc = subprocess.run([str(lsf / "bin" / "lshosts")] + admin.lshosts_argv(resource)[1:], env=env,
                              capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def real(name):
        record = json.loads((ROOT / "tests" / "fixtures" / "volclava" / ("%s.json" % name)).read_text())
        return record["rc"], record["stdout"], record["stderr"]

    match, real_match = stub("docker"), real("lshosts-select-match")
    assert match[1].splitlines()[0].split() == real_match[1].splitlines()[0].split()
    assert len(match[1].splitlines()[1].split()) == len(real_match[1].splitlines()[1].split()) == 9
    assert admin.listed_hosts(*match) == [HOST] and admin.listed_hosts(*real_match) == ["head"]
    none, real_none = stub("docker && ncpus>100000"), real("lshosts-select-none")
    assert none[0] == 0 and real_none[0] == 255
    assert admin.listed_hosts(*none) == [] == admin.listed_hosts(*real_none)
