# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf.conf model: parse, set/remove keys, render losslessly.  Pure Python.

Grammar (IBM LSF 10.1 lsf.conf(5), OpenLava ``parseLine``):

* one ``NAME=value`` per line, no blanks around ``=``; ``NAME=`` is legal;
* a value with blanks is double-quoted (``"cpu memory"``); the quotes are not
  part of the value; there is no escape for ``"``; an unquoted second word is a
  syntax error that makes LSF reject the whole file;
* ``#`` starts a comment anywhere outside double quotes; blank lines are skipped;
* a key defined twice: the last definition wins;
* the file is also sourced by Bourne shells, so values we write are shell-safe:
  anything beyond ``[A-Za-z0-9_./:@%+,=!-]`` is double-quoted.

``set_keys(text, settings)`` returns ``(new_text, changed_keys, warnings)``;
malformed input raises :class:`LsfSyntaxError` with the line number.
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import (
    LsfSyntaxError,
    detect_eol,
    physical_lines,
    split_comment,
    split_eol,
)

__all__ = ["ConfEntry", "parse_conf", "set_keys", "render_value", "LsfSyntaxError"]

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SAFE_RE = re.compile(r"[A-Za-z0-9_./:@%+,=!\-\[\]*]*\Z")
_BOOL = {"y": "Y", "n": "N"}


class ConfEntry:
    """One ``NAME=value`` line (0-based ``index`` into the physical lines)."""

    __slots__ = ("index", "indent", "name", "value", "quoted", "tail")

    def __init__(self, index, indent, name, value, quoted, tail):
        self.index = index
        self.indent = indent
        self.name = name
        self.value = value
        self.quoted = quoted
        self.tail = tail  # blanks + comment after the value, kept on rewrite

    @property
    def lineno(self):
        return self.index + 1


def _parse_line(index, body):
    code, comment = split_comment(body)
    stripped = code.strip(" \t")
    if not stripped:
        return None
    lineno = index + 1
    indent = code[:len(code) - len(code.lstrip(" \t"))]
    eq = stripped.find("=")
    if eq < 0:
        raise LsfSyntaxError("expected NAME=value, got %r" % stripped, lineno)
    name = stripped[:eq]
    raw = stripped[eq + 1:]
    if name != name.rstrip(" \t") or raw != raw.lstrip(" \t"):
        raise LsfSyntaxError("blanks around '=' in %r (lsf.conf wants NAME=value)" % stripped, lineno)
    if not _NAME_RE.match(name):
        raise LsfSyntaxError("%r is not a valid parameter name" % name, lineno)
    rest_start = len(code.rstrip(" \t"))
    tail = code[rest_start:] + (comment or "")
    if raw.startswith('"'):
        close = raw.find('"', 1)
        if close < 0:
            raise LsfSyntaxError("unterminated double quote in the value of %s" % name, lineno)
        if close != len(raw) - 1:
            raise LsfSyntaxError("text after the closing quote in the value of %s" % name, lineno)
        return ConfEntry(index, indent, name, raw[1:-1], True, tail)
    if '"' in raw:
        raise LsfSyntaxError("stray double quote in the value of %s" % name, lineno)
    if len(raw.split()) > 1:
        raise LsfSyntaxError("the value of %s has blanks but no double quotes" % name, lineno)
    return ConfEntry(index, indent, name, raw, False, tail)


def parse_conf(text):
    """Return ``(lines, entries)``: physical lines and the ConfEntry list."""
    lines = physical_lines(text or "")
    entries = []
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        first = body.lstrip(" \t")[:1]
        if not first or first == "#":
            continue
        entry = _parse_line(i, body)
        if entry is not None:
            entries.append(entry)
    return lines, entries


def check_value(name, value):
    """Raise ValueError when ``value`` cannot be written to lsf.conf."""
    if not _NAME_RE.match(name):
        raise ValueError("%r is not a valid lsf.conf parameter name" % name)
    if '"' in value:
        raise ValueError("the value of %s contains a double quote, which lsf.conf cannot hold" % name)
    if "\n" in value or "\r" in value:
        raise ValueError("the value of %s contains a line break" % name)


def render_value(value, quoted=False):
    """The text after ``=``: quoted when needed (or when it was quoted before)."""
    if quoted or not _SAFE_RE.match(value):
        return '"%s"' % value
    return value


def same_value(old, new):
    """Y/N compare case-insensitively (LSF reads y and Y alike)."""
    if old == new:
        return True
    return old.lower() in _BOOL and new.lower() in _BOOL and old.lower() == new.lower()


def set_keys(text, settings):
    """Apply ``settings`` ({NAME: value or None}) to lsf.conf ``text``.

    A value updates the last definition of NAME in place (keeping its indent,
    quoting style and trailing comment) or appends ``NAME=value`` at the end;
    ``None`` removes every definition.  Returns ``(text, changed_keys, warnings)``.
    """
    lines, entries = parse_conf(text)
    by_name = {}
    for e in entries:
        by_name.setdefault(e.name, []).append(e)
    warnings = []
    changed = []
    replace = {}
    append = []
    eol = detect_eol(lines)
    for name, value in settings.items():
        if value is not None:
            check_value(name, value)
        found = by_name.get(name, [])
        if len(found) > 1:
            warnings.append("%s is defined %d times (lines %s); the last one wins"
                            % (name, len(found), ", ".join(str(e.lineno) for e in found)))
        if value is None:
            if found:
                for e in found:
                    replace[e.index] = None
                changed.append(name)
            continue
        if found:
            last = found[-1]
            if same_value(last.value, value):
                continue
            new_line = last.indent + name + "=" + render_value(value, last.quoted) + last.tail
            replace[last.index] = new_line + split_eol(lines[last.index])[1]
            changed.append(name)
        else:
            append.append(name + "=" + render_value(value) + eol)
            changed.append(name)
    if not changed:
        return text, [], warnings
    out = []
    for i, line in enumerate(lines):
        if i in replace:
            if replace[i] is not None:
                out.append(replace[i])
        else:
            out.append(line)
    if append:
        if out and not out[-1].endswith("\n"):
            out[-1] += eol
        out.extend(append)
    return "".join(out), changed, warnings


def get_keys(text):
    """{NAME: effective value} (last definition wins)."""
    return {e.name: e.value for e in parse_conf(text)[1]}
