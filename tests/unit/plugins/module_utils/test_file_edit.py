# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared file-edit transaction: check mode, no-op writes, backups,
attributes, validation, error locations, crash safety and concurrent writers."""

import multiprocessing
import os
import signal
import stat

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _file_edit
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import (
    FileEditError,
    edit_file,
)

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
