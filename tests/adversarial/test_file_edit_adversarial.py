# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adversarial tests of the one file-edit transaction (plugins/module_utils/_file_edit.py).

Real files in tmp_path, real processes, real mounts where the machine allows: targets
that are not regular files, symlinks, modes and owners, check mode, lock timeouts,
permission / read-only / full-disk errors, processes killed mid-write, 20 concurrent
writers, stale temp files, bytes that are not UTF-8.
"""

import errno
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _file_edit
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import (
    STALE_TEMP_AGE,
    FileEditError,
    edit_file,
)
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.module_utils.forked import FORK, NOBODY, in_child

OLD = "# site file\nA=1\n\tB=two words  \n"
NEW = OLD + "C=3\n"


def _add(line):
    def compute(text):
        return (text or "") + line + "\n"
    return compute


def _to_new(text):
    return NEW


def _same(text):
    return text


def _temp_re(basename):
    return re.compile(r"\A\.%s\.[a-z0-9_]{8}\.tmp\Z" % re.escape(basename))


def _leftovers(directory, keep):
    return sorted(set(os.listdir(directory)) - set(keep))


def _snapshot(directory, dir_mtime=True):
    """Everything about a tree that an edit could change (atime aside).  A failed
    write creates and removes its temp file, which moves the directory's mtime:
    ``dir_mtime=False`` leaves that out."""
    out = {}
    st = os.lstat(directory)
    out["."] = (st.st_ino, st.st_mtime_ns if dir_mtime else None, stat.S_IMODE(st.st_mode))
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            entry = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_ino, st.st_uid, st.st_gid, st.st_mtime_ns)
            if stat.S_ISLNK(st.st_mode):
                entry += (os.readlink(path),)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as handle:
                    entry += (handle.read(),)
            out[os.path.relpath(path, directory)] = entry
    return out


@pytest.fixture
def target(tmp_path):
    path = tmp_path / "site.conf"
    path.write_text(OLD)
    return path


# --- targets that are not regular files -------------------------------------------

def _make_node(kind, directory):
    node = directory / "node"
    if kind == "fifo":
        os.mkfifo(node)
        return node, "FIFO"
    if kind in ("char-device", "block-device"):
        # Private nodes only: a failing test must never replace the machine's /dev entries.
        mode, number, name = ((stat.S_IFCHR, os.makedev(1, 3), "character device") if kind == "char-device"
                              else (stat.S_IFBLK, os.makedev(7, 250), "block device"))
        try:
            os.mknod(node, mode | 0o600, number)
        except OSError as err:
            pytest.skip("cannot create a device node here: %s" % err.strerror)
        return node, name
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(directory)  # bind a short relative name: AF_UNIX paths are limited to 108 bytes
        try:
            sock.bind("node")
        finally:
            os.chdir(cwd)
        return node, "socket"
    if kind == "directory":
        node.mkdir()
        return node, None
    raise AssertionError(kind)


@pytest.mark.parametrize("check_mode", [False, True], ids=["write", "check"])
@pytest.mark.parametrize("kind", ["fifo", "char-device", "block-device", "socket", "directory"])
@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "via-symlink"])
def test_non_regular_targets_are_refused_and_left_alone(tmp_path, kind, through_link, check_mode):
    node, name = _make_node(kind, tmp_path)
    path = node
    if through_link:
        path = tmp_path / "daemon.json"
        path.symlink_to(node)
    before = _snapshot(tmp_path)

    outcome = in_child(lambda: edit_file(str(path), _to_new, create=True, backup=True, check_mode=check_mode).changed)

    if name is None:
        expected = "%s: is a directory, not a file" % path
    elif through_link:
        expected = "%s: not a regular file (%s %s)" % (path, name, node)
    else:
        expected = "%s: not a regular file (%s)" % (path, name)
    assert outcome == ("FileEditError", expected)
    assert _snapshot(tmp_path) == before


def test_symlink_loop_is_refused(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    before = _snapshot(tmp_path)
    with pytest.raises(FileEditError) as err:
        edit_file(str(tmp_path / "a"), _to_new, create=True)
    assert str(err.value) == "%s: cannot stat: %s" % (tmp_path / "a", os.strerror(errno.ELOOP))
    assert _snapshot(tmp_path) == before


# --- symlinks are edited where they point -------------------------------------------

@pytest.mark.parametrize("layout", ["relative", "absolute", "chain", "other-directory", "dangling-create"])
def test_symlinks_are_edited_where_they_point(tmp_path, layout):
    shared = tmp_path / "shared"
    shared.mkdir()
    real = shared / "site.conf"
    if layout != "dangling-create":
        real.write_text(OLD)
    link = tmp_path / "site.conf"
    if layout == "relative":
        link.symlink_to(os.path.join("shared", "site.conf"))
    elif layout == "chain":
        (tmp_path / "middle").symlink_to(real)
        link.symlink_to("middle")
    elif layout == "other-directory":
        (tmp_path / "etc").mkdir()
        link = tmp_path / "etc" / "site.conf"
        link.symlink_to(real)
    else:
        link.symlink_to(real)
    links = {p: os.readlink(p) for p in (link, tmp_path / "middle") if os.path.islink(p)}

    result = edit_file(str(link), _to_new, create=True, backup=True)

    assert result.changed is True
    assert real.read_text() == NEW
    assert {p: os.readlink(p) for p in links} == links  # every link still there, unchanged
    if layout == "dangling-create":
        assert result.backup_file is None and result.created is True
    else:
        assert os.path.dirname(result.backup_file) == str(shared)
        assert Path(result.backup_file).read_text() == OLD
    assert [name for name in os.listdir(shared) if name.endswith(".tmp")] == []


# --- modes and owners are kept ------------------------------------------------------

@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o604, 0o400, 0o2750, 0o4755], ids=oct)
def test_mode_is_kept(target, mode):
    os.chmod(target, mode)
    result = edit_file(str(target), _to_new, backup=True)
    assert stat.S_IMODE(os.stat(target).st_mode) == mode
    assert stat.S_IMODE(os.stat(result.backup_file).st_mode) == mode
    assert target.read_text() == NEW


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
@pytest.mark.parametrize("owner", [(4321, 8765), (NOBODY, NOBODY), (0, 4321)])
def test_owner_is_kept_on_file_and_backup(target, owner):
    os.chown(target, *owner)
    os.chmod(target, 0o640)
    inode = os.stat(target).st_ino
    result = edit_file(str(target), _to_new, backup=True)
    st = os.stat(target)
    assert st.st_ino != inode  # replaced by a rename, not rewritten in place
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == owner + (0o640,)
    bst = os.stat(result.backup_file)
    assert (bst.st_uid, bst.st_gid, stat.S_IMODE(bst.st_mode)) == owner + (0o640,)


@pytest.fixture
def world_dir():
    """A directory every user can reach (tmp_path's parents are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="file-edit-adv-"))
    for parent in path.parents:
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            shutil.rmtree(path)
            pytest.skip("%s is not searchable by other users" % parent)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_unprivileged_owner_edits_its_own_file(world_dir):
    mine = world_dir / "mine"
    mine.mkdir()
    path = mine / "site.conf"
    path.write_text(OLD)
    os.chown(mine, NOBODY, NOBODY)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o600)
    outcome = in_child(lambda: edit_file(str(path), _to_new).changed, unprivileged=True)
    assert outcome == ("ok", True)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o600)
    assert path.read_text() == NEW


# --- check mode writes nothing and predicts exactly -------------------------------------

@pytest.mark.parametrize("scenario", ["change", "create", "no-change", "backup", "through-link", "stale-temp"])
def test_check_mode_writes_nothing_and_predicts_the_real_run(tmp_path, scenario):
    path = tmp_path / "site.conf"
    compute = _same if scenario == "no-change" else _to_new
    kwargs = {}
    if scenario != "create":
        path.write_text(OLD)
    if scenario == "backup":
        kwargs["backup"] = True
    if scenario == "through-link":
        real = tmp_path / "real.conf"
        path.rename(real)
        path.symlink_to(real)
    if scenario == "stale-temp":
        stale = tmp_path / ".site.conf.abcd1234.tmp"
        stale.write_text("half")
        os.utime(stale, (time.time() - 2 * STALE_TEMP_AGE,) * 2)
    before = _snapshot(tmp_path)

    check = edit_file(str(path), compute, check_mode=True, create=True, **kwargs)

    assert _snapshot(tmp_path) == before
    assert check.backup_file is None and check.warnings == []
    real_run = edit_file(str(path), compute, create=True, **kwargs)
    assert (check.changed, check.before, check.after, check.created) == (
        real_run.changed, real_run.before, real_run.after, real_run.created)
    assert path.read_text() == check.after


# --- lock timeout -----------------------------------------------------------------------

@contextmanager
def _lock_held(path):
    """Another process holds flock on ``path`` until the block ends or ``release`` is set."""
    ready, release = FORK.Event(), FORK.Event()

    def holder():
        import fcntl
        fd = os.open(path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        ready.set()
        release.wait(60)
        os._exit(0)  # the lock goes with the process

    child = FORK.Process(target=holder)
    child.start()
    assert ready.wait(10)
    try:
        yield release
    finally:
        release.set()
        child.join(10)


@pytest.mark.parametrize("timeout", [0, 0.3])
def test_lock_held_by_another_process_times_out_with_a_clear_error(target, timeout):
    with _lock_held(target):
        start = time.monotonic()
        with pytest.raises(FileEditError) as err:
            edit_file(str(target), _to_new, lock_timeout=timeout)
        waited = time.monotonic() - start
    assert str(err.value) == "%s: another process holds the lock on this file; gave up after %g s" % (target, timeout)
    assert timeout <= waited < timeout + 2
    assert target.read_text() == OLD
    assert _leftovers(target.parent, ["site.conf"]) == []


def test_lock_on_the_directory_of_an_absent_file_times_out_naming_it(tmp_path):
    with _lock_held(tmp_path):
        with pytest.raises(FileEditError) as err:
            edit_file(str(tmp_path / "new.conf"), _to_new, create=True, lock_timeout=0.2)
    assert str(err.value) == "%s: another process holds the lock on directory %s; gave up after 0.2 s" % (
        tmp_path / "new.conf", tmp_path)
    assert os.listdir(tmp_path) == []


def test_lock_released_within_the_timeout_lets_the_edit_through(target):
    import threading
    with _lock_held(target) as release:
        timer = threading.Timer(0.3, release.set)
        timer.start()
        start = time.monotonic()
        result = edit_file(str(target), _to_new, lock_timeout=10)
        waited = time.monotonic() - start
        timer.join()
    assert result.changed is True and target.read_text() == NEW
    assert 0.25 <= waited < 5  # it really waited for the holder


# --- permission denied, read-only and full filesystems (real) ----------------------------

@pytest.mark.parametrize("case", ["unreadable-file", "unwritable-directory", "unsearchable-directory",
                                  "backup-in-unwritable-directory", "create-in-unwritable-directory"])
def test_permission_denied_becomes_a_clear_error(world_dir, case):
    """As nobody in a child when root, else as this user: the modes deny the owner too."""
    directory = world_dir / "etc"
    directory.mkdir()
    path = directory / "site.conf"
    if case != "create-in-unwritable-directory":
        path.write_text(OLD)
    before = _snapshot(world_dir)
    denied = os.strerror(errno.EACCES)
    expected = {
        "unreadable-file": "cannot open: %s" % denied,
        "unwritable-directory": "cannot write temporary file in %s: %s" % (directory, denied),
        "unsearchable-directory": "cannot stat: %s" % denied,
        "backup-in-unwritable-directory": "cannot write backup: %s" % denied,
        "create-in-unwritable-directory": "cannot write temporary file in %s: %s" % (directory, denied),
    }[case]

    def edit():
        return edit_file(str(path), _to_new, create=True, backup=case.startswith("backup"))
    if case == "unreadable-file":
        os.chmod(path, 0)
    os.chmod(directory, {"unreadable-file": 0o755, "unsearchable-directory": 0o600}.get(case, 0o555))
    try:
        if os.geteuid() == 0:
            outcome = in_child(edit, unprivileged=True)
        else:
            try:
                outcome = ("ok", edit())
            except FileEditError as err:
                outcome = ("FileEditError", str(err))
    finally:
        os.chmod(directory, 0o755)
        if case == "unreadable-file":
            os.chmod(path, 0o644)
    assert outcome == ("FileEditError", "%s: %s" % (path, expected))
    assert _snapshot(world_dir) == before


@contextmanager
def _tmpfs(size="1m"):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    point = tempfile.mkdtemp(prefix="file-edit-tmpfs-")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", point],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        os.rmdir(point)
        pytest.skip("cannot mount a tmpfs here: %s" % (proc.stderr.strip() or proc.returncode))
    try:
        yield Path(point)
    finally:
        if subprocess.run(["umount", point], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        os.rmdir(point)


def _remount_read_only(point):
    proc = subprocess.run(["mount", "-o", "remount,ro", str(point)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip("cannot remount read-only here: %s" % proc.stderr.strip())


@pytest.mark.parametrize("case", ["change", "backup", "create", "no-change", "check-mode"])
def test_read_only_filesystem(case):
    with _tmpfs() as point:
        path = point / "site.conf"
        if case != "create":
            path.write_text(OLD)
        stale = point / ".site.conf.zzzz0000.tmp"
        stale.write_text("half")
        os.utime(stale, (time.time() - 2 * STALE_TEMP_AGE,) * 2)
        _remount_read_only(point)
        before = _snapshot(point)
        compute = _same if case == "no-change" else _to_new
        kwargs = {"backup": case == "backup", "check_mode": case == "check-mode", "create": True}
        if case in ("no-change", "check-mode"):
            result = edit_file(str(path), compute, **kwargs)
            assert result.changed is (case == "check-mode")
        else:
            with pytest.raises(FileEditError) as err:
                edit_file(str(path), compute, **kwargs)
            rofs = os.strerror(errno.EROFS)
            step = "cannot write backup" if case == "backup" else "cannot write temporary file in %s" % point
            assert str(err.value) == "%s: %s: %s" % (path, step, rofs)
        assert _snapshot(point) == before


@pytest.mark.parametrize("case", ["new-content-larger-than-the-disk", "disk-nearly-full", "backup-does-not-fit"])
def test_full_disk_leaves_the_file_and_no_partial_files(case):
    with _tmpfs("1m") as point:
        path = point / "site.conf"
        old = OLD
        new = NEW
        backup = False
        if case == "new-content-larger-than-the-disk":
            new = OLD + "X" * (2 << 20) + "\n"
        elif case == "disk-nearly-full":
            filler = point / "filler"
            with open(filler, "wb") as handle:
                try:
                    handle.write(b"\0" * (1 << 20))
                except OSError:
                    pass  # filled up
            os.truncate(filler, os.path.getsize(filler) - (64 << 10))
            new = OLD + "X" * (200 << 10) + "\n"
        else:
            old = "Y" * (600 << 10) + "\n"
            new = old + "C=3\n"
            backup = True
        path.write_text(old)
        before = _snapshot(point, dir_mtime=False)

        with pytest.raises(FileEditError) as err:
            edit_file(str(path), lambda text: new, backup=backup)

        step = "cannot write backup" if backup else "cannot write temporary file in %s" % point
        assert str(err.value) == "%s: %s: %s" % (path, step, os.strerror(errno.ENOSPC))
        assert _snapshot(point, dir_mtime=False) == before  # byte-identical, no truncated backup, no temp file


# --- every step's error, injected -----------------------------------------------------------

@pytest.mark.parametrize("err", [errno.EACCES, errno.EROFS, errno.ENOSPC])
@pytest.mark.parametrize("step, expected", [
    ("mkstemp", "cannot write temporary file in {dir}: {msg}"),
    ("chmod", "cannot set owner and mode of temporary file in {dir}: {msg}"),
    ("backup-mkstemp", "cannot write backup: {msg}"),
    ("backup-chmod", "cannot set owner and mode of backup: {msg}"),
    ("backup-rename", "cannot write backup: {msg}"),
])
def test_injected_errors_at_each_step(target, monkeypatch, step, expected, err):
    calls = {"mkstemp": 0, "chmod": 0, "rename": 0}
    real = {"mkstemp": tempfile.mkstemp, "chmod": os.chmod, "rename": os.rename}
    backup = step.startswith("backup-")
    name = step.replace("backup-", "")

    def fake(*args, **kwargs):
        calls[name] += 1
        # the backup is written first, the target's temp file second
        if not backup or calls[name] == 1:
            raise OSError(err, os.strerror(err))
        return real[name](*args, **kwargs)
    if name == "mkstemp":
        monkeypatch.setattr(_file_edit.tempfile, "mkstemp", fake)
    else:
        monkeypatch.setattr(_file_edit.os, name, fake)
    with pytest.raises(FileEditError) as exc:
        edit_file(str(target), _to_new, backup=backup)
    monkeypatch.undo()
    assert str(exc.value) == "%s: %s" % (target, expected.format(dir=target.parent, msg=os.strerror(err)))
    assert target.read_text() == OLD
    assert _leftovers(target.parent, ["site.conf"]) == []


def test_stale_temp_cleanup_errors_are_not_fatal(target, monkeypatch):
    stale = target.parent / ".site.conf.abcd1234.tmp"
    stale.write_text("half")
    os.utime(stale, (time.time() - 2 * STALE_TEMP_AGE,) * 2)
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if str(path) == str(stale):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_unlink(path, *args, **kwargs)
    monkeypatch.setattr(_file_edit.os, "unlink", unlink)
    result = edit_file(str(target), _to_new)
    assert result.changed is True and result.warnings == []
    assert stale.exists() and target.read_text() == NEW


# --- processes killed mid-write --------------------------------------------------------------

def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def _edit_and_die_at(path, point):
    """Child: run one edit and SIGKILL itself at ``point``."""
    real_write = os.write
    writes = []

    def write(fd, data):
        writes.append(len(data))
        if point == "mid-write" or (point == "mid-backup" and len(writes) == 1):
            real_write(fd, bytes(data[:len(data) // 2]))
            _die()
        if point == "after-backup" and len(writes) == 2:
            _die()
        return real_write(fd, data)

    if point == "before-rename":
        _file_edit._before_rename = lambda tmp_path, dest: _die()
    elif point == "before-fsync":
        _file_edit.os.fsync = lambda fd: _die()
    else:
        _file_edit.os.write = write
    edit_file(path, lambda text: text + "C=%s\n" % ("3" * 100000), backup=point in ("mid-backup", "after-backup"))
    os._exit(0)  # not reached


@pytest.mark.parametrize("point", ["before-rename", "mid-write", "before-fsync", "mid-backup", "after-backup"])
def test_killed_writer_leaves_old_file_and_next_run_cleans_up(target, point):
    child = FORK.Process(target=_edit_and_die_at, args=(str(target), point))
    child.start()
    child.join(30)
    assert child.exitcode == -signal.SIGKILL  # it really died at that point

    assert target.read_text() == OLD  # never partial
    leftovers = _leftovers(target.parent, ["site.conf"])
    temps = [name for name in leftovers if _temp_re("site.conf").match(name)]
    backups = [name for name in leftovers if name.endswith("~")]
    assert sorted(temps + backups) == leftovers and len(temps) == 1
    if point == "after-backup":
        assert len(backups) == 1 and (target.parent / backups[0]).read_text() == OLD
    else:
        assert backups == []  # no truncated file under a backup's name

    # A fresh leftover may be a live writer's: kept.  Once stale, the next run removes it.
    assert edit_file(str(target), _add("D=4")).warnings == []
    assert (target.parent / temps[0]).exists()
    os.utime(target.parent / temps[0], (time.time() - 2 * STALE_TEMP_AGE,) * 2)
    result = edit_file(str(target), _add("E=5"))
    assert result.warnings == ["%s: removed %s, left by an interrupted run" % (target, target.parent / temps[0])]
    assert _leftovers(target.parent, ["site.conf"]) == backups
    assert target.read_text() == OLD + "D=4\nE=5\n"


def _flip_forever(path, first, second):
    while True:
        edit_file(path, lambda text: second if text == first else first)


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.03, 0.07, 0.15])
def test_killed_at_a_random_moment_the_file_is_old_or_new(tmp_path, delay):
    path = tmp_path / "big.conf"
    first, second = "A" * (4 << 20) + "\n", "B" * (4 << 20) + "\n"
    path.write_text(first)
    child = FORK.Process(target=_flip_forever, args=(str(path), first, second))
    child.start()
    time.sleep(delay)
    child.kill()
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    assert path.read_text() in (first, second)
    assert all(_temp_re("big.conf").match(name) for name in _leftovers(tmp_path, ["big.conf"]))


# --- concurrent writers ---------------------------------------------------------------------

def _add_one_line(path, index, barrier, create, backup):
    barrier.wait(30)
    edit_file(path, _add("KEY_%02d=%d" % (index, index)), create=create, backup=backup, lock_timeout=120)
    os._exit(0)


@pytest.mark.parametrize("scenario", ["existing", "absent", "through-symlink", "with-backups"])
def test_twenty_concurrent_writers_lose_no_update(tmp_path, scenario):
    path = tmp_path / "site.conf"
    if scenario != "absent":
        path.write_text(OLD)
    edited = path
    if scenario == "through-symlink":
        edited = tmp_path / "link.conf"
        edited.symlink_to(path)
    writers = 20
    barrier = FORK.Barrier(writers)
    procs = [FORK.Process(target=_add_one_line, args=(str(edited), i, barrier, scenario == "absent", scenario == "with-backups"))
             for i in range(writers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(180)
    assert [proc.exitcode for proc in procs] == [0] * writers
    lines = path.read_text().splitlines()
    added = sorted(line for line in lines if line.startswith("KEY_"))
    assert added == ["KEY_%02d=%d" % (i, i) for i in range(writers)]
    assert len(lines) == len(added) + (0 if scenario == "absent" else 3)
    leftovers = _leftovers(tmp_path, ["site.conf", "link.conf"])
    if scenario == "with-backups":
        assert len(leftovers) == writers and all(name.endswith("~") for name in leftovers)
    else:
        assert leftovers == []


# --- stale temp files: only ours, only stale, never a live writer's ---------------------------

@pytest.mark.parametrize("name, age, removed", [
    (".site.conf.abcd_123.tmp", 2 * STALE_TEMP_AGE, True),
    (".site.conf.abcd_123.tmp", STALE_TEMP_AGE / 2, False),      # maybe a live writer's
    (".site.conf.ABCD1234.tmp", 2 * STALE_TEMP_AGE, False),      # mkstemp never uses capitals
    (".site.conf.abc.tmp", 2 * STALE_TEMP_AGE, False),
    (".site.conf.abcd12345.tmp", 2 * STALE_TEMP_AGE, False),
    ("site.conf.abcd1234.tmp", 2 * STALE_TEMP_AGE, False),
    (".site.conf.abcd1234.tmp.bak", 2 * STALE_TEMP_AGE, False),
    (".other.conf.abcd1234.tmp", 2 * STALE_TEMP_AGE, False),     # another file's
    (".site.confx.abcd1234.tmp", 2 * STALE_TEMP_AGE, False),
])
def test_only_stale_temp_files_of_this_file_are_removed(target, name, age, removed):
    stale = target.parent / name
    stale.write_text("half")
    os.utime(stale, (time.time() - age,) * 2)
    result = edit_file(str(target), _to_new)
    assert stale.exists() is not removed
    assert result.warnings == (["%s: removed %s, left by an interrupted run" % (target, stale)] if removed else [])


@pytest.mark.parametrize("kind", ["symlink", "directory"])
def test_things_named_like_a_temp_file_that_are_not_files_are_kept(target, tmp_path, kind):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    odd = tmp_path / ".site.conf.abcd1234.tmp"
    if kind == "symlink":
        odd.symlink_to(victim)
    else:
        odd.mkdir()
    os.utime(odd, (time.time() - 2 * STALE_TEMP_AGE,) * 2, follow_symlinks=False)
    edit_file(str(target), _to_new)
    assert os.path.lexists(odd) and victim.read_text() == "keep me"


def _slow_writer(path, ready, go):
    def hook(tmp_path, dest):
        os.utime(tmp_path, (time.time() - 2 * STALE_TEMP_AGE,) * 2)  # looks stale
        ready.set()
        go.wait(30)
    _file_edit._before_rename = hook
    edit_file(path, _to_new)
    os._exit(0)


def test_a_live_writers_temp_file_survives_a_concurrent_run(target):
    ready, go = FORK.Event(), FORK.Event()
    child = FORK.Process(target=_slow_writer, args=(str(target), ready, go))
    child.start()
    try:
        assert ready.wait(10)
        temps = _leftovers(target.parent, ["site.conf"])
        assert len(temps) == 1
        with pytest.raises(FileEditError, match="another process holds the lock"):
            edit_file(str(target), _add("OTHER=1"), lock_timeout=0.3)
        assert (target.parent / temps[0]).exists()
    finally:
        go.set()
        child.join(30)
    assert child.exitcode == 0
    assert target.read_text() == NEW
    assert _leftovers(target.parent, ["site.conf"]) == []


# --- bytes that are not UTF-8 ---------------------------------------------------------------------

@pytest.mark.parametrize("data, offset", [
    (b"A=1\nNAME=caf\xe9\n", 12),                 # Latin-1
    (b"A=1\nB=\xe2\x82\n", 6),                    # truncated 3-byte sequence
    (b"A=\xc0\xaf\n", 2),                          # overlong encoding of '/'
    (b"\xff\xfeA\x00=\x001\x00\n\x00", 0),         # UTF-16 with BOM
    (b"A=1\n\x80\n", 4),                           # lone continuation byte
])
def test_bytes_that_are_not_utf8_are_refused_untouched(tmp_path, data, offset):
    path = tmp_path / "site.conf"
    path.write_bytes(data)
    before = _snapshot(tmp_path)
    with pytest.raises(FileEditError) as err:
        edit_file(str(path), _add("X=1"), backup=True)
    assert str(err.value) == "%s: file is not valid UTF-8 (byte offset %d)" % (path, offset)
    assert _snapshot(tmp_path) == before
