# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The one file-edit transaction every file-editing module goes through.

lock -> read -> compute -> compare -> diff -> (check mode stops here) -> backup
-> temp file in the same directory -> validate -> fsync -> rename -> fsync dir.

Pure Python, no Ansible: models hand in a ``compute(text) -> text`` function and
get an :class:`EditResult` back.  Nothing is written when the computed text equals
the current text, so reruns and check mode are exact by construction.

Only regular files are edited.  A symlink is followed and the file it points to
is edited in place of the link; a directory, device, FIFO or socket (also behind
a symlink) is refused before it is opened, so a FIFO cannot block the run and a
device is never replaced by a regular file.

Locking: an exclusive ``flock`` on the target file itself, waited for at most
``lock_timeout`` seconds.  Because the rename replaces the inode, a writer that
waited on the old inode re-checks that the path still names the inode it locked
and starts over if not, so two concurrent writers serialise and neither update is
lost.  A file that does not exist yet is locked through its parent directory.

An existing file keeps its mode, owner, group and SELinux context, as Ansible's ``atomic_move`` keeps
them: the context is read from the file and set on the temp file before the rename, so the file never
appears without it.  Where the Python running this has the ``selinux`` bindings (libselinux), they read
and set it (``lgetfilecon``, ``lsetfilecon``) once ``is_selinux_enabled()`` says SELinux is on, and a new
file gets the policy's default context for its path (``matchpathcon``).  Without the bindings the context
is the file's ``security.selinux`` extended attribute (what ``ls -Z`` shows), read and set where selinuxfs
is mounted; a new file then gets the context the kernel gives a new file in its directory.  A context that
cannot be set fails the edit with the target unchanged, unless the filesystem takes no labels (ENOTSUP,
e.g. NFS without labelled NFS): that file keeps the label of its mount, as with ``atomic_move``.  Where
SELinux is not enabled nothing is read or set.
Run as root, the new file is given owner and group; run as another user, it can keep only an
owner that is that user and a group that user belongs to: the transaction keeps what it can and warns,
naming the old and the new owner, when the owner or the group changes (in check
mode: would change).

Every operating-system error (EACCES, EROFS, ENOSPC, ...) becomes a
:class:`FileEditError` that names the path and the step; the target is unchanged
then.  Backups are written like the target (temp file, then rename), so a full
disk never leaves a truncated file with a backup's name.  Temp files are named
``.<basename>.XXXXXXXX.tmp``; those a killed run left behind are removed by the
next run that holds the lock, once they are older than :data:`STALE_TEMP_AGE`.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import grp
import os
import pwd
import re
import stat
import tempfile
import time

__all__ = ["LOCK_TIMEOUT", "STALE_TEMP_AGE", "FileEditError", "EditResult", "edit_file", "unified_diff"]

# Seconds a run waits for another run's lock on the same file.
LOCK_TIMEOUT = 30
# Seconds after which a temp file of ours is taken as left by a killed run.  The
# lock already keeps every live writer of this file out while we clean up; the
# age also protects writers on filesystems without flock.
STALE_TEMP_AGE = 600

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
)


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
            "after": self.after if self.after is not None else "",
            "before_header": "%s (content)" % self.path if self.before is not None else "%s (absent)" % self.path,
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


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return "unknown file type"


def _check_regular(path, real):
    """Refuse anything but a regular file (or an absent one) at ``real``; return whether it exists."""
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise FileEditError("cannot stat: %s" % exc.strerror, path=path)
    if stat.S_ISDIR(st.st_mode):
        raise FileEditError("is a directory, not a file", path=path)
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        if real != os.path.abspath(path):
            kind = "%s %s" % (kind, real)
        raise FileEditError("not a regular file (%s)" % kind, path=path)
    return True


def _flock(fd, path, what, timeout):
    """Take an exclusive flock on ``fd``, waiting at most ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                # Filesystems without flock (some NFS setups): carry on unlocked,
                # the rename still keeps every reader safe.
                return
        if deadline is not None and time.monotonic() >= deadline:
            os.close(fd)
            raise FileEditError("another process holds the lock on %s; gave up after %g s" % (what, timeout), path=path)
        time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(delay * 2, 0.1)


def _lock(path, shown, timeout):
    """Return a locked fd for the regular file ``path`` (or its directory when absent)."""
    while True:
        try:
            # O_NONBLOCK: a FIFO swapped in after the type check must not block the open.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | _CLOEXEC)
            target_exists = True
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise FileEditError("cannot open: %s" % exc.strerror, path=shown)
            parent = os.path.dirname(path)
            try:
                fd = os.open(parent, os.O_RDONLY | _CLOEXEC)
            except OSError as exc2:
                raise FileEditError("directory %s cannot be opened: %s" % (parent, exc2.strerror), path=shown)
            target_exists = False
        if target_exists:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                os.close(fd)
                raise FileEditError("not a regular file (%s)" % _kind(mode), path=shown)
        _flock(fd, shown, "this file" if target_exists else "directory %s" % os.path.dirname(path), timeout)
        if not target_exists:
            if os.path.lexists(path):
                os.close(fd)
                continue
            return fd
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except OSError:
            pass
        os.close(fd)  # replaced while we waited: lock the new file


def _read_fd(fd, path):
    chunks = []
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        raise FileEditError("cannot read: %s" % exc.strerror, path=path)
    data = b"".join(chunks)
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileEditError("file is not valid UTF-8 (byte offset %d)" % exc.start, path=path)


def _temp_name_pattern(basename):
    # tempfile.mkstemp's names: prefix + 8 characters of [a-z0-9_] + suffix
    return re.compile(r"\A\.%s\.[a-z0-9_]{8}\.tmp\Z" % re.escape(basename))


def _remove_stale_temps(real, shown):
    """Remove temp files a killed run left next to ``real``; return warnings."""
    directory, basename = os.path.split(real)
    pattern = _temp_name_pattern(basename)
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        if not pattern.match(name):
            continue
        candidate = os.path.join(directory, name)
        try:
            st = os.lstat(candidate)
            if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < STALE_TEMP_AGE:
                continue
            os.unlink(candidate)
        except OSError:
            continue  # gone already, or a read-only directory: nothing to clean there
        removed.append("%s: removed %s, left by an interrupted run" % (shown, candidate))
    return removed


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _owner_text(owner):
    return "%s:%s" % (_user_name(owner[0]), _group_name(owner[1]))


def _give_owner(fd, owner):
    """Give the open temp file ``owner`` (uid, gid), or as much of it as this user may (its own uid, a group
    it belongs to); return the owner the file has then.  Root gets any owner."""
    try:
        os.fchown(fd, owner[0], owner[1])
    except PermissionError:
        try:
            os.fchown(fd, -1, owner[1])  # a plain user keeps a group it belongs to
        except PermissionError:
            pass
    st = os.fstat(fd)
    return st.st_uid, st.st_gid


def _predicted_owner(owner):
    """The owner :func:`_give_owner` would end with, without a file (check mode)."""
    euid = os.geteuid()
    if euid == 0:
        return owner
    groups = set(os.getgroups()) | {os.getegid()}
    return (owner[0] if owner[0] == euid else euid, owner[1] if owner[1] in groups else os.getegid())


def _owner_warning(shown, before, after, check_mode=False):
    if before == after:
        return None
    return ("%s: owner %s %s %s: the user running this (%s) cannot give a file to another user or to a group "
            "it is not in; run as root (become) to keep the owner" % (
                shown, _owner_text(before), "would become" if check_mode else "became", _owner_text(after),
                _user_name(os.geteuid())))


# The extended attribute that holds a file's SELinux context, read and set where the bindings are missing.
SELINUX_XATTR = "security.selinux"
# Mounted where SELinux is enabled (libselinux's is_selinux_enabled looks for the same filesystem).
SELINUXFS = "/sys/fs/selinux"
# A filesystem that takes no labels: setting one fails with these, and the file keeps its mount's label.
_NO_LABEL_SUPPORT = frozenset(getattr(errno, name) for name in ("ENOTSUP", "EOPNOTSUPP") if hasattr(errno, name))
# Reading: a file without a context, or a filesystem without labels.
_NO_LABEL = _NO_LABEL_SUPPORT | frozenset(getattr(errno, name) for name in ("ENODATA", "ENOATTR") if hasattr(errno, name))


def _selinux_bindings():
    """The ``selinux`` Python bindings (libselinux), or ``None`` where they are not installed.

    The one place they are imported, lazily: most nodes have none.  Tests put a fake module in
    ``sys.modules['selinux']`` (``None`` there: not installed).  The ``selinux`` shim from PyPI counts as
    not installed where it found no real bindings to load: it then raises a plain ``Exception``, or
    (where it sees no SELinux system) offers ``is_selinux_enabled`` alone, always 0."""
    try:
        import selinux
    except Exception:  # ImportError, or the shim's failure to find the real bindings
        return None
    return selinux if hasattr(selinux, "lsetfilecon") else None


class _BindingLabels:
    """SELinux contexts through the ``selinux`` bindings, read and set as Ansible's ``atomic_move`` does."""

    def __init__(self, bindings):
        self._selinux = bindings

    def get(self, path):
        return self._selinux.lgetfilecon(path)[1]

    def set(self, path, context):
        self._selinux.lsetfilecon(path, context)

    def default(self, path, mode):
        """The policy's context for a new file at ``path`` (``matchpathcon``); ``None`` where it has none."""
        try:
            found, context = self._selinux.matchpathcon(path, mode)
        except OSError:
            return None
        return context if found >= 0 else None


class _XattrLabels:
    """SELinux contexts as the ``security.selinux`` extended attribute, for a Python without the bindings.

    It knows no policy: a new file gets the context the kernel gives it."""

    def get(self, path):
        return os.getxattr(path, SELINUX_XATTR).rstrip(b"\0").decode("utf-8", "surrogateescape")

    def set(self, path, context):
        os.setxattr(path, SELINUX_XATTR, context.encode("utf-8", "surrogateescape") + b"\0")

    def default(self, path, mode):
        return None


def _selinux_labels():
    """How SELinux contexts are read and set here, or ``None`` where SELinux is not enabled: the bindings
    where they are installed (their ``is_selinux_enabled`` decides), else the extended attribute where
    selinuxfs is mounted."""
    bindings = _selinux_bindings()
    if bindings is not None:
        return _BindingLabels(bindings) if bindings.is_selinux_enabled() else None
    if hasattr(os, "setxattr") and os.path.isfile(os.path.join(SELINUXFS, "enforce")):
        return _XattrLabels()
    return None


def _selinux_context(labels, real, shown, exists, mode):
    """The context the new ``real`` is to have: the one of the file it replaces, or for a new file the
    policy's default; ``None``: none to set (SELinux not enabled, no label, left to the kernel)."""
    if labels is None:
        return None
    if not exists:
        return labels.default(real, stat.S_IFREG | mode)
    try:
        return labels.get(real)
    except OSError as exc:
        if exc.errno in _NO_LABEL:
            return None
        raise FileEditError("cannot read the SELinux context: %s" % exc.strerror, path=shown)


def _set_context(labels, tmp_path, context):
    """Give the temp file ``context``.  A filesystem that takes no labels (ENOTSUP) is no error: the file
    keeps the label of its mount, as with ``atomic_move``."""
    try:
        labels.set(tmp_path, context)
    except OSError as exc:
        if exc.errno not in _NO_LABEL_SUPPORT:
            raise


def _write_temp_then_rename(data, dest, target, mode, owner, shown, what, validate=None, times=None,
                            labels=None, context=None):
    """Write ``data`` to a temp file next to ``dest``, fsync it, give it ``mode``
    and ``owner`` (as much of it as this user may) and the SELinux ``context`` (when not ``None``,
    through ``labels``: see :func:`_selinux_labels`), then rename it onto ``dest``.
    The temp file is removed on any failure.  Returns the owner the file has.

    The temp file is named after the edited ``target`` (also for a backup), so the
    stale-temp cleanup of the next run finds it after a kill."""
    directory = os.path.dirname(dest)
    step = "write %s" % what
    try:
        fd, tmp_path = tempfile.mkstemp(prefix=".%s." % os.path.basename(target), suffix=".tmp", dir=directory)
    except OSError as exc:
        raise FileEditError("cannot %s: %s" % (step, exc.strerror), path=shown)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
            step = "set owner and mode of %s" % what
            # Owner first: chown clears the setuid and setgid bits, chmod sets them again.
            kept = _give_owner(fd, owner) if owner is not None else None
        finally:
            os.close(fd)
        os.chmod(tmp_path, mode)
        if context is not None:
            step = "set the SELinux context %s on %s" % (context, what)
            _set_context(labels, tmp_path, context)
        if times is not None:
            os.utime(tmp_path, ns=times)
        if validate is not None:
            validate(tmp_path)
        _before_rename(tmp_path, dest)
        step = "replace the file" if what != "backup" else "write backup"
        os.rename(tmp_path, dest)
        return kept
    except BaseException as exc:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass  # already renamed or never there
        if isinstance(exc, OSError):
            raise FileEditError("cannot %s: %s" % (step, exc.strerror), path=shown)
        raise


def _fsync_dir(directory):
    # Best effort: the rename is already done and visible, so an error here
    # must not report the edit as failed.  Some filesystems refuse fsync on dirs.
    try:
        dir_fd = os.open(directory, os.O_RDONLY | _CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        return


def _backup(real, shown, data, st, labels, context):
    stamp = time.strftime("%Y-%m-%d@%H:%M:%S")
    dest = "%s.%d.%s~" % (real, os.getpid(), stamp)
    owner = (st.st_uid, st.st_gid) if os.geteuid() == 0 else None
    _write_temp_then_rename(data, dest, real, stat.S_IMODE(st.st_mode), owner, shown, "backup",
                            times=(st.st_atime_ns, st.st_mtime_ns), labels=labels, context=context)
    return dest


def _computed(compute, before):
    """``compute(before)`` as ``(after, warnings)``; ``None`` (nothing to write) keeps ``before``."""
    out = compute(before)
    after, warnings = out if isinstance(out, tuple) else (out, [])
    return (before if after is None else after), list(warnings)


def _make_parent(path, real, compute, check_mode, parent_mode):
    """The missing directory of a file to create: made with ``parent_mode`` (its own missing parents
    too), and ``None`` returned so that the transaction goes on; or the result without it, when nothing
    is to be written or in check mode (then nothing is made)."""
    parent = os.path.dirname(real)
    after, warnings = _computed(compute, None)
    if check_mode or after is None:
        return EditResult(path, None, after, created=after is not None, changed=after is not None, warnings=warnings)
    try:
        os.makedirs(parent, parent_mode)
    except OSError as exc:
        raise FileEditError("cannot create directory %s: %s" % (parent, exc.strerror), path=path)
    return None


def edit_file(path, compute, check_mode=False, backup=False, create=False,
              new_mode=0o644, validate=None, lock_timeout=LOCK_TIMEOUT, parent_mode=None):
    """Run one edit transaction on ``path``.

    ``compute(text)`` gets the current text (``None`` when the file is absent and
    ``create`` is true) and returns ``(new_text, warnings)`` or just ``new_text``.
    Returning ``None`` means "nothing to write": the file stays as it is, an
    absent one is not created.
    It raises :class:`FileEditError` for bad input; nothing is written then.
    ``validate(tmp_path)`` may check the finished temp file before the rename and
    raise :class:`FileEditError` to abort.  ``lock_timeout`` is how many seconds to
    wait for another run's lock (``None``: no limit).  With ``create`` and a
    ``parent_mode``, a missing directory of the file is created with that mode
    (in check mode nothing is created and the file counts as absent).
    """
    path = os.fspath(path)
    # Edit the file a symlink points to (e.g. /etc/lsf.conf -> shared LSF_ENVDIR):
    # renaming onto the link itself would replace it with a private copy.
    real = os.path.realpath(path)
    if create and parent_mode is not None and not os.path.isdir(os.path.dirname(real)):
        result = _make_parent(path, real, compute, check_mode, parent_mode)
        if result is not None:
            return result
    _check_regular(path, real)
    fd = _lock(real, path, lock_timeout)
    try:
        exists = stat.S_ISREG(os.fstat(fd).st_mode)
        if not exists and not create:
            raise FileEditError("file does not exist", path=path)
        data, before = _read_fd(fd, path) if exists else (None, None)
        warnings = [] if check_mode else _remove_stale_temps(real, path)
        after, more = _computed(compute, before)  # None from compute: an absent file stays absent
        warnings.extend(more)
        changed = after != before
        result = EditResult(path, before, after, created=changed and not exists, changed=changed, warnings=warnings)
        if check_mode and changed and exists:
            st = os.fstat(fd)
            warning = _owner_warning(path, (st.st_uid, st.st_gid), _predicted_owner((st.st_uid, st.st_gid)), True)
            if warning:
                result.warnings.append(warning)
        if not changed or check_mode:
            return result
        try:
            encoded = after.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise FileEditError("the new content cannot be written as UTF-8: %s" % exc.reason, path=path)
        st = os.fstat(fd) if exists else None
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
            owner = (st.st_uid, st.st_gid)
        else:
            mode, owner = new_mode, None
        labels = _selinux_labels()
        context = _selinux_context(labels, real, path, exists, mode)
        if backup and exists:
            result.backup_file = _backup(real, path, data, st, labels, context)
        kept = _write_temp_then_rename(encoded, real, real, mode, owner, path,
                                       "temporary file in %s" % os.path.dirname(real), validate=validate,
                                       labels=labels, context=context)
        _fsync_dir(os.path.dirname(real))
        warning = _owner_warning(path, owner, kept) if owner is not None else None
        if warning:
            result.warnings.append(warning)
        return result
    finally:
        os.close(fd)
