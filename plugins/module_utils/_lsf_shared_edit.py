# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The lsf.shared editor: one resource of the Resource section added, updated or removed.

Pure Python, no Ansible; built on the section model (``_lsf_sections``), text in, text out::

    edit_resource(text, name, state, type=, interval=, increasing=, consumable=,
                  release=, description=) -> (text, row dict or None, warnings)
    resource_request(spec) -> {column key: raw token}   (validated request)
    check_resource_name(name)                           (IBM's naming rules)
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError, excerpt, token_value
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    SHARED_SHAPES,
    align_rows,
    check_not_keyword,
    empty_style,
    gc_paused,
    parse_document,
    reparse_check,
)

__all__ = ["edit_resource", "resource_request", "check_resource_name", "RESERVED_RESOURCE_NAMES", "RESOURCE_TYPES"]

# IBM "Configuring the lsf.shared resource section": names LSF reserves.
RESERVED_RESOURCE_NAMES = frozenset("""
cpu cpuf io logins ls idle maxmem maxswp maxtmp type model status it mem ncpus nprocs ncores
nthreads define_ncpus_cores define_ncpus_procs define_ncpus_threads ndisks pg r15m r15s r1m
swap swp tmp ut local dchost jobvm
""".split())
_FORBIDDEN_NAME_CHARS = set(":.()[+-*/!&|<>@=,")
# NUL ends a line for LSF's C reader; \v, \f and other controls are blanks to it or invisible.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
RESOURCE_TYPES = ("Boolean", "Numeric", "String")
_RESOURCE_COLUMNS = ("resourcename", "type", "interval", "increasing", "consumable", "release", "description")


def check_resource_name(name):
    """Raise ValueError unless ``name`` is a legal new resource name (IBM rules)."""
    if not name:
        raise ValueError("resource name is empty")
    if len(name) > 39:
        raise ValueError("resource name %r is longer than 39 characters" % name)
    if name[0].isdigit():
        raise ValueError("resource name %r starts with a digit" % name)
    bad = sorted(set(name) & _FORBIDDEN_NAME_CHARS)
    if bad or any(ch.isspace() or ch == "#" for ch in name):
        raise ValueError("resource name %r contains a character LSF forbids (%s)"
                         % (name, " ".join(bad) or "blank or #"))
    if name.lower().startswith(("inf", "nan")):
        raise ValueError("resource name %r starts with inf or nan, which LSF reads as a number" % name)
    if name in RESERVED_RESOURCE_NAMES:
        raise ValueError("resource name %r is reserved by LSF" % name)
    check_not_keyword(name, "resource name")


def _yn(value):
    return None if value is None else ("Y" if value else "N")


def resource_request(spec):
    """Validate the requested attributes; return {column key: raw token}."""
    rtype = spec.get("type")
    if rtype is not None:
        match = [t for t in RESOURCE_TYPES if t.lower() == str(rtype).lower()]
        if not match:
            raise ValueError("type must be one of %s, not %r" % (", ".join(RESOURCE_TYPES), rtype))
        rtype = match[0]
    want = {}
    if rtype is not None:
        want["type"] = rtype
    interval = spec.get("interval")
    if interval is not None:
        if int(interval) <= 0:
            raise ValueError("interval must be a positive number of seconds")
        want["interval"] = str(int(interval))
    for col in ("increasing", "consumable", "release"):
        if spec.get(col) is not None:
            want[col] = _yn(spec[col])
    desc = spec.get("description")
    if desc is not None:
        if any(ch in desc for ch in "()#\n\r"):
            raise ValueError("description must not contain parentheses, # or line breaks")
        bad = _CONTROL_RE.search(desc)
        if bad:
            raise ValueError("description %s contains the control character %r, which LSF does not read as written"
                             % (excerpt(desc), bad.group()))
        want["description"] = "(%s)" % desc.strip() if desc.strip() else "()"
    return want


def _same_token(column, old_raw, new_raw, old_value):
    if old_raw == new_raw:
        return True
    if column in ("type", "increasing", "consumable", "release"):
        return old_value.lower() == new_raw.lower()
    if column == "description":
        return old_value == new_raw[1:-1].strip()
    return False


def _finish_resource(doc, name, warnings):
    """Render, re-parse (the edit must leave a file LSF reads) and describe the row."""
    new_text = doc.render()
    new_doc = reparse_check(new_text, shapes=SHARED_SHAPES, default_shape="table")
    for section in new_doc.find("resource"):
        for row in section.rows:
            if row.value("RESOURCENAME") == name:
                found = dict.fromkeys(_RESOURCE_COLUMNS)
                found.update((col.lower(), token_value(raw)) for col, raw in zip(section.columns, row.cells))
                return new_text, found, warnings
    return new_text, None, warnings


@gc_paused
def edit_resource(text, name, state="present", **spec):
    """Add, update or remove resource ``name`` in lsf.shared ``text``.

    ``spec`` keys: type, interval, increasing, consumable, release, description
    (None = leave as is / empty for a new row).  Returns
    ``(new_text, row, warnings)``; ``row`` maps lower-case column names to
    values (None when absent).  ValueError for bad requests, LsfSyntaxError
    for malformed files.
    """
    doc = parse_document(text, shapes=SHARED_SHAPES, default_shape="table")
    warnings = list(doc.warnings)
    want = resource_request(spec) if state == "present" else {}
    sections = doc.find("resource")
    matches = [(s, r) for s in sections for r in s.rows if r.value("RESOURCENAME") == name]
    rows = [r for dummy, r in matches]
    if len(rows) > 1:
        warnings.append("resource %s is defined %d times (lines %s); LSF uses the first"
                        % (name, len(rows), ", ".join(str(r.lineno) for r in rows)))
    if state == "absent":
        for r in rows:
            doc.delete_row(r)
        return _finish_resource(doc, name, warnings)

    if rows:
        section, row = matches[0]
        current_type = (want.get("type") or row.value("TYPE") or "Boolean")
        _check_numeric_only(want, current_type)
        raws = row.raws()
        for col, raw in want.items():
            idx = section.column_index.get(col)
            if idx is None:
                raise LsfSyntaxError("the Resource header has no %s column, so %s cannot be set"
                                     % (col.upper(), col), section.header.lineno)
            if not _same_token(col, raws[idx], raw, token_value(row.cells[idx])):
                raws[idx] = raw
        if raws != row.raws():
            doc.set_row(section, row, raws)
        return _finish_resource(doc, name, warnings)

    check_resource_name(name)
    if "description" not in want:
        raise ValueError("description is required to add resource %s" % name)
    want.setdefault("type", "Boolean")
    _check_numeric_only(want, want["type"])
    if want["type"] == "Numeric" and "increasing" not in want:
        raise ValueError("a Numeric resource needs increasing (LSF drops it otherwise)")
    section = next((s for s in sections if s.header is not None), None)
    if section is None:
        # no Resource section (or only an empty one): append a complete one
        columns = ["RESOURCENAME", "TYPE", "INTERVAL", "INCREASING"]
        columns += [c.upper() for c in ("consumable", "release") if c in want]
        columns.append("DESCRIPTION")
        raw_row = [name] + [want.get(c.lower(), "()") for c in columns[1:]]
        body = align_rows([columns, raw_row])
        block = ["Begin Resource"] + body + ["End Resource"]
        if sections:  # an empty Resource section: fill it
            doc.replace_lines(sections[0].begin.start, sections[0].end.end, doc.with_eol(block))
        else:
            lines = doc.with_eol(block)
            if doc.lines and doc.lines[-1].strip():
                lines.insert(0, doc.eol)
            doc.insert_lines(len(doc.lines), lines)
        return _finish_resource(doc, name, warnings)
    missing = [c for c in want if c not in section.column_index]
    if missing:
        raise LsfSyntaxError("the Resource header has no %s column, so %s cannot be set"
                             % (" ".join(c.upper() for c in missing), ", ".join(missing)), section.header.lineno)
    if "resourcename" not in section.column_index:
        raise LsfSyntaxError("the Resource header has no RESOURCENAME column", section.header.lineno)
    empty = empty_style(section, None)
    raws = []
    for col in section.columns:
        key = col.lower()
        raws.append(name if key == "resourcename" else want.get(key, empty))
    doc.add_row(section, raws)
    return _finish_resource(doc, name, warnings)


def _check_numeric_only(want, rtype):
    if rtype != "Numeric":
        given = [c for c in ("increasing", "consumable", "release") if c in want]
        if given:
            raise ValueError("%s only apply to Numeric resources, not %s" % (", ".join(given), rtype))
