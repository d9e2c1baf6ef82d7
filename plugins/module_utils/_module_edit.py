# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Module-side glue between :func:`_file_edit.edit_file` and ``AnsibleModule``.

Every file-editing module calls :func:`run_edit` and merges the dict it returns
into its ``exit_json`` arguments.  A :class:`FileEditError` becomes
``fail_json(msg="path:line: ...")``; the file is untouched in that case.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import (
    LOCK_TIMEOUT,
    FileEditError,
    edit_file,
)

__all__ = ["FILE_EDIT_ARGS", "exit_edit", "input_errors", "model_errors", "result_dict", "run_edit", "text_value",
           "write_files"]

# The options every file-editing module takes, documented once in the ``hpc.gpu_containers.file_edit`` doc
# fragment: ``argument_spec=dict(..., **FILE_EDIT_ARGS)``.
FILE_EDIT_ARGS = {"backup": {"type": "bool", "default": False}}


def text_value(name, value, yes, no, separator):
    """An option's value as a configuration file writes it: ``yes``/``no`` for booleans, lists joined with
    ``separator``, numbers as text; None stays None (the key is removed)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return yes if value else no
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return separator.join(str(v) for v in value)
    if isinstance(value, str):
        return value
    raise ValueError("the value of %s must be a string, number, boolean, list or null" % name)


@contextmanager
def model_errors(path, syntax_error):
    """Inside a ``compute`` callback: the model's ``syntax_error`` (which carries ``msg`` and ``line``)
    and its ``ValueError`` become the :class:`FileEditError` that names ``path`` (and the line)."""
    try:
        yield
    except syntax_error as err:
        raise FileEditError(err.msg, path=path, line=err.line)
    except ValueError as err:
        raise FileEditError(str(err), path=path)


@contextmanager
def input_errors(module, path):
    """Around a module's check of its parameters, before the file is read: a ``ValueError`` fails the module
    with ``path: <error>`` (and ``path``)."""
    try:
        yield
    except ValueError as err:
        module.fail_json(msg="%s: %s" % (path, err), path=path)


def result_dict(module, result):
    """Map an ``EditResult`` to the keys a module returns.

    ``changed`` always; ``diff`` only when the module runs with ``--diff``;
    ``backup_file`` only when a backup was written.  Warnings from the model are
    passed to ``module.warn`` so they show up in Ansible's output.
    """
    out = {"changed": result.changed}
    if getattr(module, "_diff", False):
        out["diff"] = result.diff
    if result.backup_file:
        out["backup_file"] = result.backup_file
    for warning in result.warnings:
        module.warn(warning)
    return out


def run_edit(module, path, compute, create=False, validate=None, new_mode=0o644, lock_timeout=LOCK_TIMEOUT,
             parent_mode=None):
    """Run one edit transaction for ``module`` on ``path``.

    Honours ``module.check_mode`` and the module's ``backup`` option when it has
    one; ``parent_mode``: create the file's missing directory (see ``edit_file``).  Returns the dict from :func:`result_dict`; on :class:`FileEditError`
    (bad input, a file that is not a regular file, a lock held past
    ``lock_timeout`` seconds, any operating-system error) it calls
    ``module.fail_json`` (which does not return).
    """
    try:
        result = edit_file(
            path,
            compute,
            check_mode=module.check_mode,
            backup=bool(module.params.get("backup")),
            create=create,
            new_mode=new_mode,
            validate=validate,
            lock_timeout=lock_timeout,
            parent_mode=parent_mode,
        )
    except FileEditError as err:
        module.fail_json(msg=str(err), path=path)
        raise  # not reached: fail_json exits
    return result_dict(module, result)


def exit_edit(module, path, compute, outcome, **options):
    """Run the edit (:func:`run_edit` with ``options``) and exit the module with its result and ``outcome``, what
    ``compute`` recorded of the edit for the module's own return values."""
    result = run_edit(module, path, compute, **options)
    result.update(outcome)
    module.exit_json(**result)


def write_files(module, files, parent_mode=0o755):
    """Write whole files, each ``(path, text, mode)`` through its own transaction: a missing file is created
    with ``mode`` (0644 when None) and its missing directory with ``parent_mode``; an existing one keeps its owner, and
    its mode unless ``mode`` is given. Returns ``changed``, ``changed_files`` (the paths written or whose mode
    was set, in order), ``diff`` (a list, with ``--diff``) and ``backup_file`` (path to backup, when any)."""
    out = {"changed": False, "changed_files": []}
    diffs, backups = [], {}
    for path, text, mode in files:
        result = run_edit(module, path, lambda _old, text=text: (text, []), create=True,
                          new_mode=0o644 if mode is None else mode, parent_mode=parent_mode)
        changed = result["changed"] or (mode is not None and _set_mode(module, path, mode))
        if changed:
            out["changed"] = True
            out["changed_files"].append(path)
        if "diff" in result:
            diffs.append(result["diff"])
        if "backup_file" in result:
            backups[path] = result["backup_file"]
    if getattr(module, "_diff", False):
        out["diff"] = diffs
    if backups:
        out["backup_file"] = backups
    return out


def _set_mode(module, path, mode):
    """Give an existing file ``mode``; True when it had another one (in check mode: would be given)."""
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return False  # check mode, a file still to be created (with ``mode``)
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (path, exc.strerror), path=path)
    if current == mode:
        return False
    if not module.check_mode:
        try:
            os.chmod(path, mode)
        except OSError as exc:
            module.fail_json(msg="%s: cannot set mode %04o: %s" % (path, mode, exc.strerror), path=path)
    return True
