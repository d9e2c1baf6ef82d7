# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A member of the docker group that the inventory does not name (root on the node) is drift.

- The drift fast path (drift_fingerprint) names it, with its name, in every check, also when the last full
  converge recorded the group with it in: the node never counts as clean while it is there.
- The full check (docker_engine's users.yml, run as written) reports it as a change with its name, so the drift
  report files the node under drift; a plain run leaves it in the group unless
  ``docker_engine_docker_group_exclusive`` is true, which takes it out.

The group is a real one, made for the test with members ``daemon`` and ``nobody`` and removed afterwards (root
only).
"""

import grp
import json
import os
import shutil
import subprocess
import uuid

import pytest
import yaml

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _fingerprint
from ansible_collections.hpc.gpu_containers.plugins.modules import drift_fingerprint
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module
from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    ok,
    role_defaults,
    run_playbook,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("groupadd"),
                                reason="makes a real group: needs root and groupadd")


@pytest.fixture
def group():
    name = "hpcgc%s" % uuid.uuid4().hex[:8]
    subprocess.run(["groupadd", "--system", name], check=True)
    subprocess.run(["gpasswd", "--members", "daemon,nobody", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["groupdel", name], check=False)


def members(name):
    return sorted(grp.getgrnam(name).gr_mem)


# -- the fast path ---------------------------------------------------------------------------------------


def fingerprint(capsys, **args):
    return run_module(drift_fingerprint, capsys, invocation=False, **args)


def test_canonical_members_merge_per_group():
    items = _fingerprint.canonical_items([{"members": {"docker": ["lsfadmin"]}},
                                          {"members": {"docker": ["alice", "lsfadmin"], "video": []}}])
    assert items == {"members": {"docker": ["alice", "lsfadmin"], "video": []}}
    with pytest.raises(_fingerprint.FingerprintError):
        _fingerprint.canonical_items({"members": ["docker"]})


def test_an_unlisted_member_is_named_by_every_check_even_when_recorded(group, tmp_path, capsys):
    record = str(tmp_path / "fingerprint.json")
    items = {"groups": [group], "members": {group: ["daemon"]}}
    recorded = fingerprint(capsys, path=record, state="record", inputs="in-1", items=items)
    expected = "members:%s (not named by the inventory: nobody)" % group
    assert expected in recorded["differences"]
    check = fingerprint(capsys, path=record, inputs="in-1")
    assert check["clean"] is False and check["differences"] == [expected]
    subprocess.run(["gpasswd", "--delete", "nobody", group], check=True, capture_output=True)
    check = fingerprint(capsys, path=record, inputs="in-1")
    assert check["clean"] is False and check["differences"] == ["group:%s" % group]   # as any change of members
    fingerprint(capsys, path=record, state="record", inputs="in-1", items=items)
    assert fingerprint(capsys, path=record, inputs="in-1")["clean"] is True


# -- the full check: users.yml as written -------------------------------------------------------------


def users_play(tmp_path, group, exclusive):
    handlers = yaml.safe_load((ROLES / "docker_engine" / "handlers" / "main.yml").read_text())
    variables = {key: role_defaults("docker_engine")[key] for key in ("docker_engine_users", "docker_engine_users_must_exist")}
    variables.update({"docker_engine_group": group, "docker_engine_lsf_admin_user": "daemon",
                      "docker_engine_docker_group_exclusive": exclusive,
                      "__docker_engine_group_result": {"changed": False}})
    return [{"name": "docker group", "hosts": "all", "gather_facts": False, "vars": variables,
             "vars_files": [str(ROLES / "docker_engine" / "vars" / "main.yml")],
             "tasks": [{"name": "Members", "ansible.builtin.include_tasks": str(ROLES / "docker_engine" / "tasks" / "users.yml")}],
             "handlers": handlers}]


def drift_run(tmp_path, plays, *args):
    return run_playbook(tmp_path, plays, *args, env={"ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.drift_report",
                                                     "HPC_DRIFT_REPORT_DIR": str(tmp_path / "report")})


def test_the_drift_check_files_the_node_under_drift_with_the_name(group, tmp_path):
    ok(drift_run(tmp_path, users_play(tmp_path, group, exclusive=False), "--check", "--diff"))
    report = json.loads((tmp_path / "report" / "drift.json").read_text())
    assert report["drift"] is True
    changes = report["hosts"]["localhost"]["changed"]
    assert [change["item"] for change in changes] == ["nobody"], changes
    assert "nobody" in (tmp_path / "report" / "drift.md").read_text()
    assert members(group) == ["daemon", "nobody"]


def test_a_plain_run_keeps_the_member_and_names_it(group, tmp_path):
    proc = ok(run_playbook(tmp_path, users_play(tmp_path, group, exclusive=False)))
    assert members(group) == ["daemon", "nobody"]
    assert "nobody" in proc.stdout and "changed=0" in proc.stdout


def test_exclusive_membership_takes_the_unlisted_member_out(group, tmp_path):
    proc = ok(run_playbook(tmp_path, users_play(tmp_path, group, exclusive=True)))
    assert members(group) == ["daemon"]
    assert "changed=1" in proc.stdout
    proc = ok(run_playbook(tmp_path, users_play(tmp_path, group, exclusive=True)))
    assert "changed=0" in proc.stdout
