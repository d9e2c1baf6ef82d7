# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""registry_htpasswd through AnsibleModule with real bcrypt: revocation, kept hashes,
exact check mode, names-only diff, no password or hash in the output, file mode."""

import os
import stat

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import registry_htpasswd
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

# The module's own dependency on the nodes (python3-bcrypt); tests/unit/requirements.txt should list it.
bcrypt = pytest.importorskip("bcrypt")

ALICE = {"name": "alice", "password": "correct horse"}
BOB = {"name": "bob", "password": "battery staple"}


@pytest.fixture(autouse=True)
def _cheap_bcrypt(monkeypatch):
    monkeypatch.setattr(registry_htpasswd, "BCRYPT_ROUNDS", 4)  # same code path, a fraction of the time


def run(capsys, **args):
    return run_module(registry_htpasswd, capsys, with_output=True, **args)


def hashes(path):
    return dict(line.split(":", 1) for line in path.read_text().splitlines())


def test_creates_the_file_with_bcrypt_hashes_that_verify_and_mode_0640(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    res, _out = run(capsys, path=str(path), users=[ALICE, BOB], mode="0640")
    assert res["changed"] is True and res["added"] == ["alice", "bob"] and res["users"] == ["alice", "bob"]
    found = hashes(path)
    assert list(found) == ["alice", "bob"]
    assert bcrypt.checkpw(b"correct horse", found["alice"].encode())
    assert bcrypt.checkpw(b"battery staple", found["bob"].encode())
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_rerun_is_unchanged_and_keeps_every_hash(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    run(capsys, path=str(path), users=[ALICE, BOB])
    before = path.read_bytes()
    res, _out = run(capsys, path=str(path), users=[ALICE, BOB], _ansible_diff=True)
    assert res["changed"] is False and "diff" not in res
    assert path.read_bytes() == before


def test_a_removed_user_is_revoked_and_the_kept_hash_is_unchanged(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    run(capsys, path=str(path), users=[ALICE, BOB])
    alice_hash = hashes(path)["alice"]
    res, out = run(capsys, path=str(path), users=[ALICE], _ansible_diff=True)
    assert res["changed"] is True and res["removed"] == ["bob"] and res["added"] == []
    assert hashes(path) == {"alice": alice_hash}
    assert res["diff"]["before"] == "alice\nbob\n" and res["diff"]["after"] == "alice\n"
    assert "$2" not in out


def test_check_mode_predicts_exactly_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    run(capsys, path=str(path), users=[ALICE, BOB])
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    res, _out = run(capsys, path=str(path), users=[dict(ALICE, password="new one")], _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True and res["removed"] == ["bob"] and res["updated"] == ["alice"]
    assert res["diff"]["after"] == "alice (password changed)\n"
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    real, _out = run(capsys, path=str(path), users=[dict(ALICE, password="new one")], _ansible_diff=True)
    assert {k: real[k] for k in ("changed", "added", "removed", "updated")} == {k: res[k] for k in ("changed", "added", "removed", "updated")}
    assert real["diff"] == res["diff"]


def test_check_mode_on_an_absent_file_creates_nothing(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    res, _out = run(capsys, path=str(path), users=[ALICE], mode="0640", _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True and res["diff"]["before_header"].endswith("(absent)")
    assert not path.exists()


def test_neither_passwords_nor_hashes_appear_in_the_result(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    path.write_text("carol:%s\n" % bcrypt.hashpw(b"old", bcrypt.gensalt(4)).decode())
    users = [{"name": "alice", "password": "p4ss:w'o\"rd\nline2"}, {"name": "carol", "password": "s3cond-secret"}]
    res, out = run(capsys, path=str(path), users=users, _ansible_diff=True)
    assert res["changed"] is True
    for secret in ("p4ss", "line2", "s3cond-secret", "$2b$", "$2a$"):
        assert secret not in out
    assert res["invocation"]["module_args"]["users"][0]["password"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    assert bcrypt.checkpw(b"p4ss:w'o\"rd\nline2", hashes(path)["alice"].encode())


def test_an_existing_file_keeps_owner_but_gets_the_mode_asked_for(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    path.write_text("")
    path.chmod(0o644)
    res, _out = run(capsys, path=str(path), users=[ALICE], mode="0640")
    assert res["changed"] is True and stat.S_IMODE(path.stat().st_mode) == 0o640
    res, _out = run(capsys, path=str(path), users=[ALICE], mode="0640")
    assert res["changed"] is False


@pytest.mark.parametrize("users, message", [
    ([{"name": "a:b", "password": "pw-one"}], "the name contains ':'"),
    ([{"name": "alice", "password": ""}], "the password is empty"),
    ([ALICE, dict(ALICE, password="other-pw")], "the name is listed twice"),
])
def test_bad_account_lists_fail_and_leave_the_file_alone(tmp_path, capsys, users, message):
    path = tmp_path / "htpasswd"
    run(capsys, path=str(path), users=[BOB])
    before = path.read_bytes()
    res, out = run(capsys, path=str(path), users=users)
    assert res["failed"] is True and message in res["msg"]
    assert path.read_bytes() == before
    assert "pw-one" not in out and "other-pw" not in out


def test_a_missing_directory_is_refused(tmp_path, capsys):
    res, _out = run(capsys, path=str(tmp_path / "nope" / "htpasswd"), users=[ALICE])
    assert res["failed"] is True and "does not exist" in res["msg"]


def test_check_mode_before_the_directory_exists_predicts_a_new_file(tmp_path, capsys):
    path = tmp_path / "nope" / "htpasswd"
    res, _out = run(capsys, path=str(path), users=[ALICE, BOB], mode="0640", _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True and res["added"] == ["alice", "bob"]
    assert res["diff"]["before_header"].endswith("(absent)") and res["diff"]["after"] == "alice\nbob\n"
    assert not path.parent.exists()


def test_missing_bcrypt_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(registry_htpasswd, "bcrypt", None)
    monkeypatch.setattr(registry_htpasswd, "BCRYPT_IMPORT_ERROR", "ImportError: No module named 'bcrypt'")
    res, _out = run(capsys, path=str(tmp_path / "htpasswd"), users=[ALICE])
    assert res["failed"] is True and "bcrypt" in res["msg"]
    assert not os.path.exists(tmp_path / "htpasswd")
