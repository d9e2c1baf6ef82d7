# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one file-edit transaction every file-editing module goes through.

lock -> read -> compute -> compare -> diff -> (check mode stops here) -> backup
-> temp file in the same directory -> validate -> fsync -> rename -> fsync dir.

Pure Python, no Ansible: models hand in a ``compute(text) -> text`` function and
get an :class:`EditResult` back.  Nothing is written when the computed text equals
the current text, so reruns and check mode are exact by construction.

Locking: an exclusive ``flock`` on the target file itself.  Because the rename
replaces the inode, a writer that waited on the old inode re-checks that the path
still names the inode it locked and starts over if not, so two concurrent writers
serialise and neither update is lost.  A file that does not exist yet is locked
through its parent directory.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time

__all__ = ["FileEditError", "EditResult", "edit_file", "unified_diff"]


class FileEditError(Exception):
    """Bad input or a failed step; ``str()`` names ``path:line`` (``path:line:col``
    when a column is known, e.g. JSON syntax errors).

    The transaction raises it before anything is written, so the target file is
    byte-identical afterwards.
    """

    def __init__(self, msg, path=None, line=None, column=None):
        self.msg = msg
        self.path = path
        self.line = line
        self.column = column
        super().__init__(self.location() + msg)

    def location(self):
        if self.path and self.line and self.column:
            return "%s:%d:%d: " % (self.path, self.line, self.column)
        if self.path and self.line:
            return "%s:%d: " % (self.path, self.line)
        if self.path:
            return "%s: " % self.path
        return ""


class EditResult:
    """What one transaction did (or, in check mode, would do)."""

    def __init__(self, path, before, after, created, changed, backup_file=None, warnings=None):
        self.path = path
        self.before = before
        self.after = after
        self.created = created
        self.changed = changed
        self.backup_file = backup_file
        self.warnings = list(warnings or [])

    @property
    def diff(self):
        """Ansible's diff dict (before/after with headers)."""
        return {
            "before": self.before if self.before is not None else "",
            "after": self.after,
            "before_header": "%s (content)" % self.path if not self.created else "%s (absent)" % self.path,
            "after_header": "%s (content)" % self.path,
        }


def unified_diff(before, after, path):
    """A unified diff of two texts, for reports and error messages."""
    return "".join(difflib.unified_diff(
        (before or "").splitlines(True), after.splitlines(True),
        fromfile=path + " (before)", tofile=path + " (after)"))


# Test seam: called after the temp file is complete and before the rename.
# The crash test replaces it with a hook that kills the process at this point.
def _before_rename(tmp_path, path):  # pragma: no cover - trivial
    return None


def _read(path):
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileEditError("file is not valid UTF-8 (byte offset %d)" % exc.start, path=path)


def _lock(path):
    """Return a locked fd for ``path`` (or its directory when absent)."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            target_exists = True
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise FileEditError("cannot open: %s" % exc.strerror, path=path)
            parent = os.path.dirname(os.path.abspath(path))
            try:
                fd = os.open(parent, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError as exc2:
                raise FileEditError("directory %s cannot be opened: %s" % (parent, exc2.strerror), path=path)
            target_exists = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            # Filesystems without flock (some NFS setups): carry on unlocked,
            # the rename still keeps every reader safe.
            return fd
        if not target_exists:
            if os.path.exists(path):
                os.close(fd)
                continue
            return fd
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except OSError:
            pass
        os.close(fd)  # replaced while we waited: lock the new file


def _backup(path):
    stamp = time.strftime("%Y-%m-%d@%H:%M:%S")
    dest = "%s.%d.%s~" % (path, os.getpid(), stamp)
    shutil.copy2(path, dest)
    return dest


def _write_atomic(path, text, new_mode, validate):
    directory = os.path.dirname(os.path.abspath(path))
    try:
        st = os.stat(path)
    except OSError:
        st = None
    fd, tmp_path = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if st is not None:
            os.chmod(tmp_path, stat.S_IMODE(st.st_mode))
            if os.geteuid() == 0:
                os.chown(tmp_path, st.st_uid, st.st_gid)
        else:
            os.chmod(tmp_path, new_mode)
        if validate is not None:
            validate(tmp_path)
        _before_rename(tmp_path, path)
        os.rename(tmp_path, path)
    except BaseException:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def edit_file(path, compute, check_mode=False, backup=False, create=False,
              new_mode=0o644, validate=None):
    """Run one edit transaction on ``path``.

    ``compute(text)`` gets the current text (``None`` when the file is absent and
    ``create`` is true) and returns ``(new_text, warnings)`` or just ``new_text``.
    It raises :class:`FileEditError` for bad input; nothing is written then.
    ``validate(tmp_path)`` may check the finished temp file before the rename and
    raise :class:`FileEditError` to abort.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise FileEditError("is a directory, not a file", path=path)
    # Edit the file a symlink points to (e.g. /etc/lsf.conf -> shared LSF_ENVDIR):
    # renaming onto the link itself would replace it with a private copy.
    real = os.path.realpath(path)
    fd = _lock(real)
    try:
        exists = os.path.exists(real)
        if not exists and not create:
            raise FileEditError("file does not exist", path=path)
        before = _read(real) if exists else None
        out = compute(before)
        warnings = []
        if isinstance(out, tuple):
            after, warnings = out
        else:
            after = out
        changed = after != before
        result = EditResult(path, before, after, created=not exists, changed=changed, warnings=warnings)
        if not changed or check_mode:
            return result
        if backup and exists:
            result.backup_file = _backup(real)
        _write_atomic(real, after, new_mode, validate)
        return result
    finally:
        os.close(fd)
