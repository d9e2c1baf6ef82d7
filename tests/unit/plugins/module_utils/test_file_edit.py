# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared file-edit transaction: check mode, no-op writes, backups,
attributes, validation, error locations, crash safety and concurrent writers."""

import errno
import multiprocessing
import os
import re
import signal
import stat
import sys
import time

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _file_edit
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import (
    FileEditError,
    edit_file,
)
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.module_utils.forked import in_child

ORIGINAL = "# LSF site file\nLSF_LOGDIR=/var/log/lsf\n\tLSB_SHAREDIR=/shared  \n"


def _append(line):
    def compute(text):
        return (text or "") + line + "\n"
    return compute


def _leftovers(directory, keep):
    """Names in ``directory`` other than ``keep``: temp files, backups, ..."""
    return sorted(set(os.listdir(directory)) - set(keep))


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / "lsf.conf"
    path.write_bytes(ORIGINAL.encode())
    return path


def test_check_mode_predicts_and_writes_nothing(conf):
    before = os.stat(conf)
    result = edit_file(str(conf), _append("LSF_PROCESS_TRACKING=Y"), check_mode=True, backup=True)

    assert result.changed is True
    assert result.before == ORIGINAL
    assert result.after == ORIGINAL + "LSF_PROCESS_TRACKING=Y\n"
    assert result.backup_file is None
    assert conf.read_bytes() == ORIGINAL.encode()
    after = os.stat(conf)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert _leftovers(conf.parent, ["lsf.conf"]) == []

    # The real run produces exactly what check mode predicted.
    real = edit_file(str(conf), _append("LSF_PROCESS_TRACKING=Y"))
    assert real.changed is True
    assert conf.read_text() == result.after


def test_check_mode_on_absent_file_creates_nothing(tmp_path):
    path = tmp_path / "lsb.applications"
    result = edit_file(str(path), _append("Begin Application"), check_mode=True, create=True)
    assert result.changed is True and result.created is True
    assert result.before is None
    assert result.diff["before"] == ""
    assert result.diff["before_header"].endswith("(absent)")
    assert os.listdir(tmp_path) == []


def test_unchanged_text_is_not_written(conf):
    before = os.stat(conf)
    result = edit_file(str(conf), lambda text: text, backup=True)

    assert result.changed is False
    assert result.backup_file is None
    after = os.stat(conf)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_second_run_reports_no_change(conf):
    def ensure_line(text):
        line = "LSF_LINUX_CGROUP_ACCT=Y\n"
        return text if line in text else text + line

    assert edit_file(str(conf), ensure_line).changed is True
    inode = os.stat(conf).st_ino
    assert edit_file(str(conf), ensure_line).changed is False
    assert os.stat(conf).st_ino == inode


def test_backup_holds_the_previous_content(conf):
    os.utime(conf, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    result = edit_file(str(conf), _append("LSB_RESOURCE_ENFORCE=\"cpu memory\""), backup=True)

    assert result.backup_file is not None
    assert os.path.dirname(result.backup_file) == str(conf.parent)
    with open(result.backup_file, "rb") as handle:
        assert handle.read() == ORIGINAL.encode()
    assert os.stat(result.backup_file).st_mtime_ns == 1_000_000_000_000_000_000
    assert conf.read_text() == ORIGINAL + "LSB_RESOURCE_ENFORCE=\"cpu memory\"\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_owner_and_mode_are_kept(conf):
    os.chown(conf, 4321, 8765)
    os.chmod(conf, 0o640)
    inode = os.stat(conf).st_ino

    edit_file(str(conf), _append("LSF_GPU_AUTOCONFIG=Y"))

    st = os.stat(conf)
    assert st.st_ino != inode  # really replaced by the rename, not rewritten in place
    assert (st.st_uid, st.st_gid) == (4321, 8765)
    assert stat.S_IMODE(st.st_mode) == 0o640


def test_mode_is_kept_for_unusual_modes(conf):
    os.chmod(conf, 0o604)
    edit_file(str(conf), _append("X=1"))
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o604


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o640])
def test_new_file_gets_new_mode(tmp_path, mode):
    path = tmp_path / "daemon.json"
    old_umask = os.umask(0o077)  # the requested mode wins over the umask
    try:
        result = edit_file(str(path), lambda text: "{}\n", create=True, new_mode=mode)
    finally:
        os.umask(old_umask)
    assert result.changed is True and result.created is True
    assert path.read_text() == "{}\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


def test_absent_file_without_create_fails(tmp_path):
    path = tmp_path / "missing.conf"
    with pytest.raises(FileEditError) as err:
        edit_file(str(path), _append("X=1"))
    assert str(err.value) == "%s: file does not exist" % path
    assert os.listdir(tmp_path) == []


def test_failing_validate_leaves_file_byte_identical(conf):
    before = os.stat(conf)
    seen = []

    def validate(tmp_path):
        seen.append(tmp_path)
        with open(tmp_path) as handle:
            assert handle.read() == ORIGINAL + "BROKEN\n"  # validate sees the finished text
        raise FileEditError("ckconfig rejected the file", path=str(conf), line=4)

    with pytest.raises(FileEditError) as err:
        edit_file(str(conf), _append("BROKEN"), backup=False, validate=validate)

    assert str(err.value) == "%s:4: ckconfig rejected the file" % conf
    assert len(seen) == 1 and os.path.dirname(seen[0]) == str(conf.parent)
    assert not os.path.exists(seen[0])
    assert conf.read_bytes() == ORIGINAL.encode()
    assert os.stat(conf).st_mtime_ns == before.st_mtime_ns
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_validate_that_passes_lets_the_write_through(conf):
    calls = []
    edit_file(str(conf), _append("OK=Y"), validate=calls.append)
    assert len(calls) == 1
    assert conf.read_text().endswith("OK=Y\n")


def test_compute_error_names_path_and_line(conf):
    def compute(text):
        raise FileEditError("unterminated Begin Host section", path=str(conf), line=2)

    with pytest.raises(FileEditError) as err:
        edit_file(str(conf), compute)
    assert str(err.value) == "%s:2: unterminated Begin Host section" % conf
    assert (err.value.path, err.value.line, err.value.msg) == (str(conf), 2, "unterminated Begin Host section")
    assert conf.read_bytes() == ORIGINAL.encode()


def test_error_without_line_names_path_only():
    assert str(FileEditError("oops", path="/etc/x")) == "/etc/x: oops"
    assert str(FileEditError("oops")) == "oops"


def test_non_utf8_file_is_refused_untouched(tmp_path):
    path = tmp_path / "latin1.conf"
    path.write_bytes(b"A=1\nNAME=caf\xe9\n")
    with pytest.raises(FileEditError) as err:
        edit_file(str(path), _append("B=2"))
    assert str(err.value).startswith("%s: file is not valid UTF-8" % path)
    assert path.read_bytes() == b"A=1\nNAME=caf\xe9\n"


def test_directory_is_refused(tmp_path):
    with pytest.raises(FileEditError, match="is a directory"):
        edit_file(str(tmp_path), _append("X=1"))


def test_edit_through_symlink_keeps_the_link(tmp_path):
    """Sites link /etc/lsf.conf to the shared $LSF_ENVDIR copy: the edit must
    land in the shared file and leave the link in place."""
    target = tmp_path / "shared" / "lsf.conf"
    target.parent.mkdir()
    target.write_text(ORIGINAL)
    link = tmp_path / "lsf.conf"
    link.symlink_to(target)

    result = edit_file(str(link), _append("LSF_PROCESS_TRACKING=Y"), backup=True)

    assert result.changed is True
    assert os.path.islink(link)
    assert target.read_text() == ORIGINAL + "LSF_PROCESS_TRACKING=Y\n"
    assert result.backup_file is not None
    with open(result.backup_file) as handle:
        assert handle.read() == ORIGINAL


def test_compute_may_return_warnings(conf):
    result = edit_file(str(conf), lambda text: (text + "A=1\n", ["A set twice, last wins"]))
    assert result.warnings == ["A set twice, last wins"]
    assert result.changed is True


# --- crash safety ------------------------------------------------------------

def _die_before_rename(path, how):
    """Child process: edit ``path`` and die between temp file and rename."""
    def hook(tmp_path, target):
        if how == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(17)
    _file_edit._before_rename = hook
    edit_file(path, _append("HALF_WRITTEN=Y"))
    os._exit(0)  # not reached when the hook fires


@pytest.mark.parametrize("how, exitcode", [("sigkill", -signal.SIGKILL), ("exit", 17)])
def test_killed_writer_leaves_original_intact(conf, how, exitcode):
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_die_before_rename, args=(str(conf), how))
    child.start()
    child.join(30)
    assert child.exitcode == exitcode  # it really died at the seam

    assert conf.read_bytes() == ORIGINAL.encode()
    # The dead writer's temp file is the only leftover, and it is complete.
    leftovers = _leftovers(conf.parent, ["lsf.conf"])
    assert len(leftovers) == 1 and leftovers[0].startswith(".lsf.conf.") and leftovers[0].endswith(".tmp")
    assert (conf.parent / leftovers[0]).read_text() == ORIGINAL + "HALF_WRITTEN=Y\n"

    # The lock died with the process: the next edit goes straight through.
    assert edit_file(str(conf), _append("NEXT=Y")).changed is True
    assert conf.read_text() == ORIGINAL + "NEXT=Y\n"


# --- concurrent writers ------------------------------------------------------

def _increment_many(path, times):
    def bump(text):
        return "%d\n" % (int(text) + 1)
    for dummy in range(times):
        edit_file(path, bump)
    os._exit(0)


def test_concurrent_writers_lose_no_update(tmp_path):
    path = tmp_path / "counter"
    path.write_text("0\n")
    writers, times = 4, 150
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_increment_many, args=(str(path), times)) for dummy in range(writers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0] * writers
    assert path.read_text() == "%d\n" % (writers * times)
    assert _leftovers(tmp_path, ["counter"]) == []


def _create_once(path, barrier):
    barrier.wait()
    edit_file(path, lambda text: (text or "") + "%d\n" % os.getpid(), create=True)
    os._exit(0)


def test_concurrent_creators_of_an_absent_file_lose_no_update(tmp_path):
    path = tmp_path / "new.conf"
    writers = 6
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(writers)
    procs = [ctx.Process(target=_create_once, args=(str(path), barrier)) for dummy in range(writers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * writers
    lines = path.read_text().splitlines()
    assert sorted(int(pid) for pid in lines) == sorted(proc.pid for proc in procs)


# --- targets that are not regular files ----------------------------------------

def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "daemon.json"
    os.mkfifo(fifo)
    outcome = in_child(lambda: edit_file(str(fifo), _append("X=1"), create=True))
    assert outcome == ("FileEditError", "%s: not a regular file (FIFO)" % fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["daemon.json"]


def _null_device(directory):
    """A private null device: a test must never risk the machine's /dev/null."""
    node = directory / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError as err:
        pytest.skip("cannot create a device node here: %s" % err.strerror)
    return node


def test_symlink_to_a_device_is_refused_and_the_device_kept(tmp_path):
    device = _null_device(tmp_path)
    link = tmp_path / "daemon.json"
    link.symlink_to(device)
    with pytest.raises(FileEditError) as err:
        edit_file(str(link), _append("X=1"), create=True)
    assert str(err.value) == "%s: not a regular file (character device %s)" % (link, device)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert os.path.islink(link)
    assert sorted(os.listdir(tmp_path)) == ["daemon.json", "null"]


def test_socket_is_refused(tmp_path):
    import socket
    path = tmp_path / "lsf.conf"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(FileEditError) as err:
            edit_file(str(path), _append("X=1"))
    finally:
        sock.close()
    assert str(err.value) == "%s: not a regular file (socket)" % path


def test_lock_wait_has_a_timeout_naming_path_and_holder(conf):
    import fcntl
    import time
    holder = os.open(conf, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        start = time.monotonic()
        with pytest.raises(FileEditError) as err:
            edit_file(str(conf), _append("X=1"), lock_timeout=0.3)
        waited = time.monotonic() - start
    finally:
        os.close(holder)
    assert str(err.value) == "%s: another process holds the lock on this file; gave up after 0.3 s" % conf
    assert 0.25 <= waited < 5
    assert conf.read_bytes() == ORIGINAL.encode()
    # released: the next edit goes through
    assert edit_file(str(conf), _append("X=1"), lock_timeout=0.3).changed is True


# --- operating-system errors at every step -------------------------------------

def _fail_on(monkeypatch, name, err, when=lambda *args: True):
    real = getattr(os, name)

    def failing(*args, **kwargs):
        if when(*args):
            raise OSError(err, os.strerror(err))
        return real(*args, **kwargs)
    monkeypatch.setattr(_file_edit.os, name, failing)


@pytest.mark.parametrize("err", [errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize("step, os_name, expected", [
    ("lock", "open", "cannot open: {}"),
    ("read", "read", "cannot read: {}"),
    ("temp", "write", "cannot write temporary file in {dir}: {}"),
    ("fsync", "fsync", "cannot write temporary file in {dir}: {}"),
    ("rename", "rename", "cannot replace the file: {}"),
])
def test_os_errors_become_file_edit_errors(conf, monkeypatch, step, os_name, expected, err):
    target = str(conf)

    def when(*args):
        if os_name == "open":
            return args[0] == target
        return True
    _fail_on(monkeypatch, os_name, err, when)
    with pytest.raises(FileEditError) as exc:
        edit_file(target, _append("X=1"))
    monkeypatch.undo()
    assert str(exc.value) == "%s: %s" % (target, expected.format(os.strerror(err), dir=conf.parent))
    assert conf.read_bytes() == ORIGINAL.encode()
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_disk_full_during_backup_leaves_no_truncated_backup(conf, monkeypatch):
    writes = []

    def when(fd, data):
        writes.append(len(data))
        return len(writes) == 1  # the backup is written first
    _fail_on(monkeypatch, "write", errno.ENOSPC, when)
    with pytest.raises(FileEditError) as exc:
        edit_file(str(conf), _append("X=1"), backup=True)
    monkeypatch.undo()
    assert str(exc.value) == "%s: cannot write backup: %s" % (conf, os.strerror(errno.ENOSPC))
    assert conf.read_bytes() == ORIGINAL.encode()
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_backup_is_renamed_into_place_complete(conf, monkeypatch):
    renames = []
    real_rename = os.rename

    def spy(src, dst):
        if dst.endswith("~"):
            renames.append(dst)
            assert os.path.basename(src).startswith(".lsf.conf.") and src.endswith(".tmp")
            with open(src, "rb") as handle:
                assert handle.read() == ORIGINAL.encode()
        return real_rename(src, dst)
    monkeypatch.setattr(_file_edit.os, "rename", spy)
    result = edit_file(str(conf), _append("X=1"), backup=True)
    assert renames == [result.backup_file]


# --- stale temp files of killed runs ---------------------------------------------

def _stale(directory, name, age):
    path = directory / name
    path.write_text("half")
    past = time.time() - age
    os.utime(path, (past, past))
    return path


def test_stale_temp_files_are_removed_by_the_next_run(conf):
    old = _stale(conf.parent, ".lsf.conf.k2j4_x9a.tmp", 3600)
    fresh = _stale(conf.parent, ".lsf.conf.a1b2c3d4.tmp", 5)           # maybe a live writer's
    other = _stale(conf.parent, ".lsb.hosts.k2j4_x9a.tmp", 3600)       # another file's
    lookalike = _stale(conf.parent, ".lsf.conf.bak.tmp", 3600)          # not our pattern

    check = edit_file(str(conf), _append("X=1"), check_mode=True)
    assert old.exists() and check.warnings == []

    result = edit_file(str(conf), _append("X=1"))
    assert not old.exists()
    assert fresh.exists() and other.exists() and lookalike.exists()
    assert result.warnings == ["%s: removed %s, left by an interrupted run" % (conf, old)]


def test_stale_temp_files_are_removed_even_when_nothing_changes(conf):
    old = _stale(conf.parent, ".lsf.conf.zzzzzzzz.tmp", 3600)
    result = edit_file(str(conf), lambda text: text)
    assert result.changed is False
    assert not old.exists()


def test_compute_returning_none_means_nothing_to_write(conf, tmp_path):
    before = os.stat(conf)
    result = edit_file(str(conf), lambda text: None)
    assert result.changed is False and result.after == ORIGINAL
    assert os.stat(conf).st_mtime_ns == before.st_mtime_ns
    absent = tmp_path / "absent.conf"
    result = edit_file(str(absent), lambda text: None, create=True)
    assert (result.changed, result.created, result.diff["after"]) == (False, False, "")
    assert not absent.exists()


def test_missing_directory_is_made_with_parent_mode(tmp_path):
    path = tmp_path / "state" / "sub" / "record.json"
    old_umask = os.umask(0o022)
    try:
        res = edit_file(str(path), lambda _t: "x\n", create=True, new_mode=0o600, parent_mode=0o750)
    finally:
        os.umask(old_umask)
    assert res.changed and res.created
    assert path.read_text() == "x\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o750


def test_missing_directory_in_check_mode_is_predicted_not_made(tmp_path):
    path = tmp_path / "state" / "record.json"
    res = edit_file(str(path), lambda _t: "x\n", create=True, check_mode=True, parent_mode=0o755)
    assert res.changed and res.created and res.after == "x\n"
    assert not path.parent.exists()
    # Nothing to write: nothing created, in either mode.
    res = edit_file(str(path), lambda _t: None, create=True, parent_mode=0o755)
    assert not res.changed and not path.parent.exists()


def test_missing_directory_without_parent_mode_is_an_error(tmp_path):
    path = tmp_path / "state" / "record.json"
    with pytest.raises(FileEditError, match="cannot be opened"):
        edit_file(str(path), lambda _t: "x\n", create=True)
    assert not path.parent.exists()


# SELinux through the bindings: a fake ``selinux`` module at the import boundary (sys.modules), its labels
# kept per inode as the kernel keeps them, so a label set on the temp file travels with the rename.
CONTEXT_TEXT = "system_u:object_r:container_config_t:s0"
DEFAULT_TEXT = "system_u:object_r:etc_t:s0"


class FakeSelinux:
    """Stands in for the ``selinux`` bindings and records every call; ``lsetfilecon`` also records what
    the target held at that moment."""

    def __init__(self, target, enabled=True, default=None, set_errno=None, get_errno=None):
        self.target = target
        self.enabled = enabled
        self.default = default
        self.set_errno = set_errno
        self.get_errno = get_errno
        self.labels = {}
        self.calls = []

    def label(self, path, context):
        self.labels[os.stat(path).st_ino] = context

    def is_selinux_enabled(self):
        self.calls.append(("is_selinux_enabled",))
        return 1 if self.enabled else 0

    def lgetfilecon(self, path):
        self.calls.append(("lgetfilecon", path))
        context = self.labels.get(os.lstat(path).st_ino)
        if self.get_errno or context is None:
            number = self.get_errno or errno.ENODATA
            raise OSError(number, os.strerror(number), path)
        return [len(context) + 1, context]

    def lsetfilecon(self, path, context):
        target = self.target.read_bytes() if self.target.exists() else None
        self.calls.append(("lsetfilecon", path, context, target))
        if self.set_errno:
            raise OSError(self.set_errno, os.strerror(self.set_errno), path)
        self.label(path, context)
        return 0

    def matchpathcon(self, path, mode):
        self.calls.append(("matchpathcon", path, mode))
        if self.default is None:
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        return [0, self.default]

    def names(self):
        return [call[0] for call in self.calls]


def _bindings(monkeypatch, fake):
    monkeypatch.setitem(sys.modules, "selinux", fake)
    return fake


@pytest.fixture
def no_bindings(monkeypatch):
    """The ``selinux`` bindings not installed (``import selinux`` raises ImportError)."""
    monkeypatch.setitem(sys.modules, "selinux", None)


def _is_temp_of(tmp, target):
    """Whether ``tmp`` is a temp file of the transaction on ``target`` (same directory, named after it)."""
    pattern = r"\.%s\.[a-z0-9_]{8}\.tmp\Z" % re.escape(target.name)
    return os.path.dirname(tmp) == str(target.parent) and re.match(pattern, os.path.basename(tmp)) is not None


def test_the_bindings_copy_the_context_onto_the_temp_file_before_the_rename(conf, monkeypatch):
    fake = _bindings(monkeypatch, FakeSelinux(conf))
    fake.label(conf, CONTEXT_TEXT)
    old_inode = os.stat(conf).st_ino
    assert edit_file(str(conf), _append("LSB_CONTAINER=Y")).changed
    assert fake.names() == ["is_selinux_enabled", "lgetfilecon", "lsetfilecon"]
    assert fake.calls[1] == ("lgetfilecon", str(conf))
    _name, tmp, context, target_then = fake.calls[2]
    assert tmp != str(conf) and _is_temp_of(tmp, conf)  # the temp file, not the target
    assert context == CONTEXT_TEXT
    assert target_then == ORIGINAL.encode()  # set before the rename
    assert os.stat(conf).st_ino != old_inode
    assert fake.lgetfilecon(str(conf))[1] == CONTEXT_TEXT  # the renamed file carries it
    assert conf.read_text() == ORIGINAL + "LSB_CONTAINER=Y\n"


def test_the_backup_gets_the_context_too(conf, monkeypatch):
    fake = _bindings(monkeypatch, FakeSelinux(conf))
    fake.label(conf, CONTEXT_TEXT)
    result = edit_file(str(conf), _append("LSB_CONTAINER=Y"), backup=True)
    assert [c[2] for c in fake.calls if c[0] == "lsetfilecon"] == [CONTEXT_TEXT, CONTEXT_TEXT]
    assert fake.lgetfilecon(result.backup_file)[1] == CONTEXT_TEXT
    assert fake.lgetfilecon(str(conf))[1] == CONTEXT_TEXT


def test_a_new_file_gets_the_policy_default_for_its_path(tmp_path, monkeypatch):
    path = tmp_path / "daemon.json"
    fake = _bindings(monkeypatch, FakeSelinux(path, default=DEFAULT_TEXT))
    assert edit_file(str(path), lambda _t: "{}\n", create=True, new_mode=0o600).created
    assert fake.names() == ["is_selinux_enabled", "matchpathcon", "lsetfilecon"]
    assert fake.calls[1] == ("matchpathcon", str(path), stat.S_IFREG | 0o600)
    _name, tmp, context, target_then = fake.calls[2]
    assert _is_temp_of(tmp, path) and context == DEFAULT_TEXT and target_then is None
    assert fake.lgetfilecon(str(path))[1] == DEFAULT_TEXT


def test_a_new_file_without_a_policy_default_is_left_to_the_kernel(tmp_path, monkeypatch):
    path = tmp_path / "daemon.json"
    fake = _bindings(monkeypatch, FakeSelinux(path))
    assert edit_file(str(path), lambda _t: "{}\n", create=True).created
    assert fake.names() == ["is_selinux_enabled", "matchpathcon"]
    assert path.read_text() == "{}\n"


def test_selinux_disabled_makes_no_label_calls(conf, monkeypatch):
    fake = _bindings(monkeypatch, FakeSelinux(conf, enabled=False))
    fake.label(conf, CONTEXT_TEXT)
    assert edit_file(str(conf), _append("LSB_CONTAINER=Y"), backup=True).changed
    assert fake.names() == ["is_selinux_enabled"]
    new = conf.parent / "new.conf"
    assert edit_file(str(new), lambda _t: "x\n", create=True).created
    assert fake.names() == ["is_selinux_enabled", "is_selinux_enabled"]
    assert new.read_text() == "x\n"


def test_a_file_without_a_context_gets_none_set(conf, monkeypatch):
    fake = _bindings(monkeypatch, FakeSelinux(conf))
    assert edit_file(str(conf), _append("LSB_CONTAINER=Y")).changed
    assert fake.names() == ["is_selinux_enabled", "lgetfilecon"]


@pytest.mark.parametrize("number", sorted({errno.ENOTSUP, errno.EOPNOTSUPP}))
def test_a_filesystem_without_labels_is_no_error(conf, monkeypatch, number):
    fake = _bindings(monkeypatch, FakeSelinux(conf, set_errno=number))
    fake.label(conf, "system_u:object_r:nfs_t:s0")
    assert edit_file(str(conf), _append("LSB_CONTAINER=Y")).changed
    assert fake.names() == ["is_selinux_enabled", "lgetfilecon", "lsetfilecon"]
    assert conf.read_text() == ORIGINAL + "LSB_CONTAINER=Y\n"
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


@pytest.mark.parametrize("backup", [False, True])
def test_a_context_the_bindings_cannot_set_fails_the_edit_and_leaves_the_file(conf, monkeypatch, backup):
    fake = _bindings(monkeypatch, FakeSelinux(conf, set_errno=errno.EACCES))
    fake.label(conf, CONTEXT_TEXT)
    before = os.stat(conf)
    with pytest.raises(FileEditError) as raised:
        edit_file(str(conf), _append("LSB_CONTAINER=Y"), backup=backup)
    message = str(raised.value)
    assert message.startswith(str(conf) + ": ")
    assert "SELinux context %s" % CONTEXT_TEXT in message
    assert "Permission denied" in message
    assert fake.calls[-1][0] == "lsetfilecon" and fake.calls[-1][1] != str(conf)
    assert conf.read_bytes() == ORIGINAL.encode()
    assert os.stat(conf).st_ino == before.st_ino
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_a_context_that_cannot_be_read_fails_the_edit_before_anything_is_written(conf, monkeypatch):
    fake = _bindings(monkeypatch, FakeSelinux(conf, get_errno=errno.EACCES))
    with pytest.raises(FileEditError, match="cannot read the SELinux context: Permission denied") as raised:
        edit_file(str(conf), _append("LSB_CONTAINER=Y"))
    assert str(conf) in str(raised.value)
    assert "lsetfilecon" not in fake.names()
    assert conf.read_bytes() == ORIGINAL.encode()
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_check_mode_and_no_change_make_no_selinux_calls(conf, monkeypatch):
    fake = _bindings(monkeypatch, FakeSelinux(conf))
    fake.label(conf, CONTEXT_TEXT)
    assert edit_file(str(conf), _append("LSB_CONTAINER=Y"), check_mode=True).changed
    assert not edit_file(str(conf), lambda text: text).changed
    assert fake.calls == []


def test_without_bindings_or_selinuxfs_a_file_is_edited_as_before(conf, monkeypatch, no_bindings):
    monkeypatch.setattr(_file_edit, "SELINUXFS", str(conf.parent / "no-selinuxfs"))

    def boom(*args):
        raise OSError(errno.EACCES, "must not be asked")

    monkeypatch.setattr(os, "getxattr", boom)
    monkeypatch.setattr(os, "setxattr", boom)
    assert edit_file(str(conf), _append("LSB_CONTAINER=Y"), backup=True).changed
    assert conf.read_text().endswith("LSB_CONTAINER=Y\n")
    assert edit_file(str(conf.parent / "new.conf"), lambda _t: "x\n", create=True).created


# SELinux without the bindings: the context is the security.selinux extended attribute. Root on
# ext4/xfs/tmpfs can set it without SELinux loaded, so the kernel itself carries it here; the failure
# paths fake the boundary.
CONTEXT = CONTEXT_TEXT.encode() + b"\0"
XATTR = "security.selinux"


def _can_label(path):
    try:
        os.setxattr(path, XATTR, CONTEXT)
    except (OSError, AttributeError):
        return False
    return True


@pytest.fixture
def selinux_enabled(monkeypatch, tmp_path_factory, no_bindings):
    """SELinux taken as enabled (selinuxfs is what tells), whatever this machine runs; no bindings."""
    selinuxfs = tmp_path_factory.mktemp("selinuxfs")
    (selinuxfs / "enforce").write_text("1\n")
    monkeypatch.setattr(_file_edit, "SELINUXFS", str(selinuxfs))


def test_an_edit_keeps_the_selinux_context_of_the_file_it_replaces(conf, selinux_enabled):
    if not _can_label(conf):
        pytest.skip("this filesystem or user cannot set security.selinux")
    old_inode = os.stat(conf).st_ino
    result = edit_file(conf, _append("LSB_CONTAINER=Y"), backup=True)
    assert result.changed
    assert os.stat(conf).st_ino != old_inode  # replaced by the rename, not rewritten in place
    assert os.getxattr(conf, XATTR) == CONTEXT
    assert os.getxattr(result.backup_file, XATTR) == CONTEXT


def test_the_attribute_is_set_on_the_temp_file_before_the_rename(conf, monkeypatch, selinux_enabled):
    monkeypatch.setattr(os, "getxattr", lambda path, name: CONTEXT)
    calls = []
    monkeypatch.setattr(os, "setxattr", lambda path, name, value, *a: calls.append((path, name, value, conf.read_bytes())))
    assert edit_file(conf, _append("LSB_CONTAINER=Y")).changed
    assert len(calls) == 1
    tmp, name, value, target_then = calls[0]
    assert _is_temp_of(tmp, conf) and (name, value, target_then) == (XATTR, CONTEXT, ORIGINAL.encode())


def test_a_file_without_a_context_gets_none(conf, monkeypatch, selinux_enabled):
    calls = []
    real_setxattr = os.setxattr
    monkeypatch.setattr(os, "setxattr", lambda *a, **k: calls.append(a) or real_setxattr(*a, **k))
    edit_file(conf, _append("LSB_CONTAINER=Y"))
    assert [c for c in calls if c[1] == XATTR] == []
    with pytest.raises(OSError) as raised:
        os.getxattr(conf, XATTR)
    assert raised.value.errno in (errno.ENODATA, errno.ENOTSUP)


def _refuse_setxattr(monkeypatch, number):
    def refuse(path, name, value, *args):
        raise OSError(number, os.strerror(number), path)

    monkeypatch.setattr(os, "getxattr", lambda path, name: CONTEXT)
    monkeypatch.setattr(os, "setxattr", refuse)


def test_a_context_that_cannot_be_kept_fails_the_edit_and_leaves_the_file(conf, monkeypatch, selinux_enabled):
    _refuse_setxattr(monkeypatch, errno.EPERM)
    with pytest.raises(FileEditError) as raised:
        edit_file(conf, _append("LSB_CONTAINER=Y"))
    message = str(raised.value)
    assert str(conf) in message
    assert "SELinux context system_u:object_r:container_config_t:s0 on" in message
    assert "Operation not permitted" in message
    assert conf.read_bytes() == ORIGINAL.encode()
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def test_a_filesystem_that_takes_no_attribute_is_no_error(conf, monkeypatch, selinux_enabled):
    _refuse_setxattr(monkeypatch, errno.EOPNOTSUPP)
    assert edit_file(conf, _append("LSB_CONTAINER=Y")).changed
    assert conf.read_text() == ORIGINAL + "LSB_CONTAINER=Y\n"
    assert _leftovers(conf.parent, ["lsf.conf"]) == []


def _record_xattr(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "getxattr", lambda path, name: calls.append(("get", path)) or CONTEXT)
    monkeypatch.setattr(os, "setxattr", lambda path, name, value, *a: calls.append(("set", path)))
    return calls


class ShimWithoutBindings:
    """The PyPI ``selinux`` shim where it found no real bindings: ``is_selinux_enabled`` alone, always 0."""

    @staticmethod
    def is_selinux_enabled():
        return 0


def test_the_pypi_shim_without_real_bindings_counts_as_no_bindings(conf, monkeypatch, selinux_enabled):
    monkeypatch.setitem(sys.modules, "selinux", ShimWithoutBindings())
    calls = _record_xattr(monkeypatch)
    assert edit_file(conf, _append("LSB_CONTAINER=Y")).changed
    assert [c[0] for c in calls] == ["get", "set"] and calls[0][1] == str(conf) and _is_temp_of(calls[1][1], conf)


def test_bindings_that_fail_to_load_count_as_none(conf, monkeypatch, tmp_path_factory, selinux_enabled):
    site = tmp_path_factory.mktemp("site")
    (site / "selinux").mkdir()
    (site / "selinux" / "__init__.py").write_text('raise Exception("Failed to detect selinux python bindings")\n')
    monkeypatch.delitem(sys.modules, "selinux")
    monkeypatch.syspath_prepend(str(site))
    calls = _record_xattr(monkeypatch)
    assert edit_file(conf, _append("LSB_CONTAINER=Y")).changed
    assert [c[0] for c in calls] == ["get", "set"]


def test_check_mode_reads_no_context(conf, monkeypatch, selinux_enabled):
    def boom(*args):
        raise AssertionError("check mode must not touch the context")

    monkeypatch.setattr(os, "getxattr", boom)
    monkeypatch.setattr(os, "setxattr", boom)
    assert edit_file(conf, _append("LSB_CONTAINER=Y"), check_mode=True).changed
