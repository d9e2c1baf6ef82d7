# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who owns what the collection writes.

- A file module run as a user other than root cannot give the new file to the old owner: it keeps the group where
  the user may, and says when the owner (or group) changes, naming both.
- The drift report's missing parent directories are made 0750 whatever the umask, like the report directory.
- A report directory that belongs to another user (who can replace the report with one that says "no drift") is
  warned about, naming that user.

The tests that switch user fork a child that drops to ``nobody``: they need root (and are skipped without it).
"""

import grp
import os
import pickle
import pwd
import shutil
import stat
import tempfile

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import edit_file
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.callback.drift_callback import FakeResult, FakeTask, drift_callback

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
try:
    NOBODY = pwd.getpwnam("nobody")
except KeyError:  # pragma: no cover - every Linux has it
    NOBODY = None


def as_user(uid, gid, groups, func):
    """Run ``func()`` in a child process as ``uid``/``gid`` with supplementary ``groups``; return its result."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read_end)
        try:
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            out = ("ok", func())
        except BaseException as err:  # noqa: BLE001 - everything goes back to the parent
            out = ("error", repr(err))
        with os.fdopen(write_end, "wb") as handle:
            pickle.dump(out, handle)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        kind, value = pickle.load(handle)
    os.waitpid(pid, 0)
    assert kind == "ok", value
    return value


@pytest.fixture
def shared_dir():
    """A directory in /tmp that ``nobody`` may write in (pytest's own tmp_path is root's alone)."""
    path = tempfile.mkdtemp(prefix="hpc-owner-", dir="/tmp")
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path)


def free_gid():
    taken = {entry.gr_gid for entry in grp.getgrall()}
    return next(gid for gid in range(42000, 43000) if gid not in taken)


def edit(path):
    result = edit_file(path, lambda text: text + "added = 1\n")
    return result.warnings


@ROOT_ONLY
def test_a_file_of_another_owner_edited_as_a_plain_user_is_warned_about(shared_dir):
    path = os.path.join(shared_dir, "site.conf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("site = 1\n")
    os.chmod(path, 0o666)  # the plain user may read and, through the directory, replace it
    os.chown(path, 0, 0)
    warnings = as_user(NOBODY.pw_uid, NOBODY.pw_gid, [], lambda: edit(path))
    st = os.stat(path)
    assert open(path, encoding="utf-8").read() == "site = 1\nadded = 1\n"
    assert st.st_uid == NOBODY.pw_uid  # a plain user cannot give the new file to root: it is said
    owner_warnings = [w for w in warnings if "owner" in w]
    assert owner_warnings, warnings
    assert path in owner_warnings[0] and "root:root" in owner_warnings[0] and "nobody" in owner_warnings[0]
    assert stat.S_IMODE(st.st_mode) == 0o666


@ROOT_ONLY
def test_check_mode_says_the_owner_would_change_and_writes_nothing(shared_dir):
    path = os.path.join(shared_dir, "site.conf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("site = 1\n")
    os.chmod(path, 0o666)
    os.chown(path, 0, 0)
    warnings = as_user(NOBODY.pw_uid, NOBODY.pw_gid, [], lambda: edit_file(
        path, lambda text: text + "added = 1\n", check_mode=True).warnings)
    assert any("root:root would become nobody:" in w for w in warnings), warnings
    assert open(path, encoding="utf-8").read() == "site = 1\n" and os.stat(path).st_uid == 0


@ROOT_ONLY
def test_the_group_is_kept_where_the_plain_user_may(shared_dir):
    gid = free_gid()
    path = os.path.join(shared_dir, "site.conf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("site = 1\n")
    os.chmod(path, 0o664)
    os.chown(path, NOBODY.pw_uid, gid)
    warnings = as_user(NOBODY.pw_uid, NOBODY.pw_gid, [gid], lambda: edit(path))
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (NOBODY.pw_uid, gid)
    assert not [w for w in warnings if "owner" in w], warnings


@ROOT_ONLY
def test_root_keeps_owner_and_group_without_a_warning(shared_dir):
    path = os.path.join(shared_dir, "site.conf")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("site = 1\n")
    os.chown(path, NOBODY.pw_uid, free_gid())
    before = os.stat(path)
    assert not [w for w in edit(path) if "owner" in w]
    after = os.stat(path)
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


# -- the drift report's directories ------------------------------------------------------------------------


def report(report_dir, monkeypatch):
    callback = drift_callback(report_dir)
    warnings = []
    monkeypatch.setattr(callback._display, "warning", lambda msg, *a, **k: warnings.append(msg))
    callback.v2_runner_on_ok(FakeResult(FakeTask("Write"), {"changed": True}))
    return warnings


@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_missing_parents_of_the_report_directory_are_0750_whatever_the_umask(tmp_path, monkeypatch, umask):
    report_dir = tmp_path / "reports" / "nightly" / "drift"
    old = os.umask(umask)
    try:
        report(report_dir, monkeypatch)
    finally:
        os.umask(old)
    for directory in (tmp_path / "reports", tmp_path / "reports" / "nightly", report_dir):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o750, directory


@ROOT_ONLY
def test_a_report_directory_of_another_user_is_warned_about(tmp_path, monkeypatch):
    report_dir = tmp_path / "report"
    report_dir.mkdir(mode=0o755)
    os.chown(report_dir, NOBODY.pw_uid, NOBODY.pw_gid)
    warnings = report(report_dir, monkeypatch)
    assert any("nobody" in w and str(report_dir) in w and "no drift" in w for w in warnings), warnings


def test_an_own_report_directory_gets_no_owner_warning(tmp_path, monkeypatch):
    report_dir = tmp_path / "report"
    report_dir.mkdir(mode=0o750)
    assert not report(report_dir, monkeypatch)
