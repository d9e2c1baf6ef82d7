# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""lsf.conf model: parse, set/remove keys, render losslessly.  Pure Python.

Grammar (IBM LSF 10.1 lsf.conf(5), OpenLava ``parseLine``):

* one ``NAME=value`` per line, no blanks around ``=``; ``NAME=`` is legal;
* a value with blanks is double-quoted (``"cpu memory"``); the quotes are not
  part of the value; there is no escape for ``"``; an unquoted second word is a
  syntax error that makes LSF reject the whole file;
* ``#`` starts a comment anywhere outside double quotes; blank lines are skipped;
* a key defined twice: the last definition wins;
* the file is also sourced by Bourne shells (profile.lsf, administrators), so a
  value we write must read the same for ``sh`` as for LSF and must never run
  anything.  Inside double quotes ``sh`` still expands ``$``, backquotes and
  backslash escapes, and LSF has no escape at all, so no quoting can make such
  text safe: values holding ``$``, a backquote, a backslash, a double quote, a
  line break or another control character are refused (ValueError naming the
  key), and so are names such as ``IFS`` or ``PATH`` that change the sourcing
  shell.  A value with characters other than letters, digits and
  ``_./:@%+,=!*[]-`` is double-quoted, where blanks, ``;``, ``&``, ``|``,
  ``<``, ``>``, ``'``, ``#`` and ``~`` are literal for both (and an
  assignment is never globbed).

Set-valued parameters (:data:`SET_VALUED_KEYS`, e.g. ``LSB_RESOURCE_ENFORCE``
whose value is blank-separated words in any order) are compared as sets of
words; by default the words requested are merged into the words the file has
(the file's order kept, new words appended), so a site's extra word is never
lost.

``set_keys(text, settings, list_keys=SET_VALUED_KEYS, merge_lists=True)``
returns ``(new_text, changed_keys, warnings)``; malformed input raises
:class:`LsfSyntaxError` with the line number.
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import (
    LsfSyntaxError,
    check_text,
    detect_eol,
    excerpt,
    physical_lines,
    split_comment,
    split_eol,
)

__all__ = ["ConfEntry", "parse_conf", "set_keys", "render_value", "check_value", "merge_words",
           "SET_VALUED_KEYS", "LsfSyntaxError"]

# lsf.conf parameters whose value is a set of blank-separated words, in any
# order (IBM LSF 10.1: LSB_RESOURCE_ENFORCE="[memory] [cpu] [gpu]", "any
# order").  LSF_MASTER_LIST is not one: its order is the master candidate order.
SET_VALUED_KEYS = ("LSB_RESOURCE_ENFORCE",)

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SAFE_RE = re.compile(r"[A-Za-z0-9_./:@%+,=!\-\[\]*]*\Z")
_BOOL = {"y": "Y", "n": "N"}
# What sh still interprets inside double quotes (and LSF has no escape for),
# line breaks, and control characters LSF's C reader reads differently (NUL
# ends its string, \v and \f are blanks to it).
_SHELL_UNSAFE = {
    "$": "'$', which a shell sourcing lsf.conf expands (LSF does not)",
    "`": "a backquote, which a shell sourcing lsf.conf runs as a command",
    "\\": "a backslash, which a shell sourcing lsf.conf reads as an escape (LSF does not)",
    '"': "a double quote, which lsf.conf cannot hold (there is no escape for it)",
    "\n": "a line break",
    "\r": "a line break",
}
_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Variables that change what the shell sourcing lsf.conf does next (word
# splitting, the commands it finds, files it reads or preloads).  No LSF
# parameter has these names; writing one is refused.
_SHELL_NAMES = frozenset(("IFS", "PATH", "ENV", "BASH_ENV", "CDPATH", "HOME", "SHELL", "SHELLOPTS", "BASHOPTS",
                          "GLOBIGNORE", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "LD_PRELOAD", "LD_LIBRARY_PATH"))


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
        raise LsfSyntaxError("expected NAME=value, got %s" % excerpt(stripped), lineno)
    name = stripped[:eq]
    raw = stripped[eq + 1:]
    if name != name.rstrip(" \t") or raw != raw.lstrip(" \t"):
        raise LsfSyntaxError("blanks around '=' in %s (lsf.conf wants NAME=value)" % excerpt(stripped), lineno)
    if not _NAME_RE.match(name):
        raise LsfSyntaxError("%s is not a valid parameter name" % excerpt(name), lineno)
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
    check_text(text or "")
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
    """Raise ValueError when ``value`` cannot be written to lsf.conf safely.

    The message names the parameter: ``NAME: value '...' contains ...``.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError("%r is not a valid lsf.conf parameter name" % (name,))
    if name in _SHELL_NAMES:
        raise ValueError("%s: not an LSF parameter, and setting it would change the shell that sources lsf.conf"
                         % name)
    for char, why in _SHELL_UNSAFE.items():
        if char in value:
            raise ValueError("%s: value %s contains %s" % (name, excerpt(value), why))
    bad = _CONTROL_RE.search(value)
    if bad:
        raise ValueError("%s: value %s contains the control character %r, which LSF and a shell "
                         "sourcing lsf.conf read differently" % (name, excerpt(value), bad.group()))


def render_value(value, quoted=False):
    """The text after ``=``: quoted when needed (or when it was quoted before).

    ``value`` must have passed :func:`check_value`; inside the double quotes
    nothing is special to LSF or to sh.
    """
    if quoted or not _SAFE_RE.match(value):
        return '"%s"' % value
    return value


def merge_words(current, wanted, merge=True):
    """The new value of a set-valued parameter, or None when LSF reads no change.

    Words compare exactly (case matters); order never counts.  ``merge``: the
    file's words in the file's order, then the wanted words it lacks; else the
    wanted words (without repeats), unless the file holds the same set already.
    """
    have = current.split() if current is not None else []
    want = []
    for word in wanted.split():
        if word not in want:
            want.append(word)
    if merge:
        missing = [w for w in want if w not in have]
        if current is not None and not missing:
            return None
        out = []
        for word in have + missing:
            if word not in out:
                out.append(word)
        return " ".join(out)
    if current is not None and set(have) == set(want):
        return None
    return " ".join(want)


def same_value(old, new):
    """Y/N compare case-insensitively (LSF reads y and Y alike)."""
    if old == new:
        return True
    return old.lower() in _BOOL and new.lower() in _BOOL and old.lower() == new.lower()


def set_keys(text, settings, list_keys=SET_VALUED_KEYS, merge_lists=True, defaults=None):
    """Apply ``settings`` ({NAME: value or None}) to lsf.conf ``text``.

    A value updates the last definition of NAME in place (keeping its indent,
    quoting style and trailing comment) or appends ``NAME=value`` at the end;
    ``None`` removes every definition.  NAMEs in ``list_keys`` are sets of
    words (see :func:`merge_words`; ``merge_lists`` keeps the file's other
    words).  ``defaults`` ({NAME: value}) are appended only where the file
    defines no NAME of its own and ``settings`` does not name it: a site's own
    value, whatever it is, stays.  Returns ``(text, changed_keys, warnings)``.
    """
    set_valued = set(list_keys or ())
    lines, entries = parse_conf(text)
    by_name = {}
    for e in entries:
        by_name.setdefault(e.name, []).append(e)
    settings = dict(settings)
    for name, value in (defaults or {}).items():
        if value is not None and name not in by_name and name not in settings:
            settings[name] = value
    warnings = []
    changed = []
    replace = {}
    append = []
    eol = detect_eol(lines)
    for name, value in settings.items():
        if value is not None:
            check_value(name, value)
        found = by_name.get(name, [])
        if value is not None and name in set_valued:
            merged = merge_words(found[-1].value if found else None, value, merge_lists)
            if merged is None:
                value = found[-1].value
            else:
                value = merged
                check_value(name, value)
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
