# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Lexer shared by the LSF configuration files (lsf.conf, lsf.shared,
lsf.cluster.<name>, lsb.*).  Pure Python, text in, structures out.

Grammar rules implemented here (IBM Spectrum LSF 10.1, cross-checked with the
OpenLava reader that LSF descends from):

* Physical lines come from ``_text_lines.physical_lines``: every line keeps its
  own line ending, so ``"".join(physical_lines(text)) == text`` always holds.
  Editors keep this list and replace only the lines they change.
* ``#`` starts a comment anywhere on a line.  The LIM reader (lsf.conf,
  lsf.shared, lsf.cluster) ignores a ``#`` inside double quotes
  (``quote_aware=True``); the lsb.* reader cuts at any ``#``
  (``quote_aware=False``).
* Lines such as ``#INCLUDE "file"``, ``#if``, ``#elif``, ``#else``, ``#endif``,
  ``#define`` are directives, not comments: kind ``"directive"``, kept opaque.
* A final ``\\`` (trailing blanks after it tolerated) joins the next physical
  line.  The LIM reader turns it into one blank (``join="space"``), the lsb
  reader drops it (``join="drop"``).  A comment on a continued line ends the
  logical line.  Blank lines are skipped.
* Table values: blanks separate tokens, ``( ... )`` groups blanks into one token
  whose value is the text inside the outer parentheses; ``()`` and ``-`` are the
  empty value.  See :func:`tokenize`.

Interface (for this collection's plugins):

``LsfSyntaxError(msg, line)``      error with a 1-based line number (``.msg``, ``.line``)
``check_text(text)``               refuse a NUL byte (LSF's C reader stops at it) with its line
``excerpt(text)`` / ``physical_lines(text)`` / ``split_eol(line)`` / ``detect_eol(lines)``
                                   from ``_text_lines``, importable from here too
``split_comment(body, quote_aware=True)``  ``(code, comment_or_None)``
``logical_lines(lines, quote_aware=True, join="space", continuation=True, templates=False)``
                                   list of :class:`LogicalLine`
``tokenize(code, line=None)``      list of :class:`Token` (with column offsets)
``split_tokens(code, line=None)``  the same tokens as plain strings (fast)
``token_spans(code, line=None)``   ``(start, end)`` offsets of the tokens
``token_value(raw)``               value of a raw token (outer parens removed, ``()``/``-`` -> "")
``Token.value`` / ``Token.raw`` / ``Token.start`` / ``Token.end`` / ``Token.is_empty``
"""

from __future__ import annotations

import re

# Re-exported (see __all__): the LSF models import them from here.
from ansible_collections.hpc.gpu_containers.plugins.module_utils._text_lines import (
    detect_eol,
    excerpt,
    physical_lines,
    split_eol,
)

__all__ = [
    "LsfSyntaxError", "LogicalLine", "Token", "check_text", "excerpt", "physical_lines", "split_eol",
    "split_comment", "logical_lines", "tokenize", "split_tokens", "token_spans", "token_value", "detect_eol",
    "EMPTY_VALUES",
]

# Values LSF reads as "not set" in table columns.
EMPTY_VALUES = ("()", "-")

_DIRECTIVE_RE = re.compile(r"[ \t]*#(?:include|if|elif|else|endif|define)\b", re.IGNORECASE)
_BLANKS = " \t\r\f\v"


class LsfSyntaxError(ValueError):
    """Malformed LSF input.  ``line`` is the 1-based physical line number.

    Modules turn it into ``path:line: msg`` (FileEditError) before anything is
    written, so a malformed file is left byte-identical.
    """

    def __init__(self, msg, line=None):
        self.msg = msg
        self.line = line
        super().__init__(("line %d: %s" % (line, msg)) if line else msg)


def check_text(text):
    """Raise :class:`LsfSyntaxError` at the line of the first NUL character.

    LSF's C readers end a line's text at a NUL byte, so a file holding one
    does not read as it looks; no editor should guess what LSF makes of it.
    """
    pos = text.find("\x00")
    if pos >= 0:
        raise LsfSyntaxError("NUL byte in the line (column %d); LSF stops reading the line there"
                             % (pos - text.rfind("\n", 0, pos)), text.count("\n", 0, pos) + 1)


def split_comment(body, quote_aware=True):
    """Split a line body at its comment.

    Returns ``(code, comment)``; ``comment`` starts with ``#`` or is ``None``.
    With ``quote_aware`` a ``#`` between double quotes does not start a comment
    (LIM reader); without it any ``#`` does (lsb reader).
    """
    pos = body.find("#")
    if pos < 0:
        return body, None
    if quote_aware and '"' in body[:pos]:
        in_quotes = False
        for i, ch in enumerate(body):
            if ch == '"':
                in_quotes = not in_quotes
            elif ch == "#" and not in_quotes:
                return body[:i], body[i:]
        return body, None
    return body[:pos], body[pos:]


class LogicalLine:
    """One logical line: physical lines ``start`` .. ``end - 1`` (0-based).

    ``kind``: ``"blank"``, ``"comment"`` (whole line is a comment),
    ``"directive"`` (``#INCLUDE``, ``#if``... kept opaque), ``"opaque"``
    (template lines, when asked for) or ``"code"``.
    ``code``: the text without comment, continuation lines joined (for a single
    physical line it is a prefix of the line body, so token offsets are columns).
    ``comment``: the trailing comment (``#...``) or ``None``.
    """

    __slots__ = ("start", "end", "kind", "code", "comment")

    def __init__(self, start, end, kind, code="", comment=None):
        self.start = start
        self.end = end
        self.kind = kind
        self.code = code
        self.comment = comment

    @property
    def lineno(self):
        """1-based number of the first physical line."""
        return self.start + 1

    @property
    def continued(self):
        """True when the logical line spans more than one physical line."""
        return self.end - self.start > 1

    def __repr__(self):
        return "LogicalLine(%d-%d %s %r)" % (self.start + 1, self.end, self.kind, self.code)


def _continues(code):
    """Return the code without its continuation mark, or None when not continued."""
    stripped = code.rstrip(" \t")
    if stripped.endswith("\\"):
        return stripped[:-1]
    return None


def logical_lines(lines, quote_aware=True, join="space", continuation=True, templates=False):
    """Group physical lines into :class:`LogicalLine` objects.

    ``join``: ``"space"`` (LIM files: the ``\\`` becomes one blank) or ``"drop"``
    (lsb files: the ``\\`` is removed).  ``continuation=False`` reads every
    physical line on its own (lsf.conf).  ``templates=True`` keeps lines that
    start with ``<%`` (ERB) as opaque lines.
    """
    out = []
    n = len(lines)
    i = 0
    glue = " " if join == "space" else ""
    while i < n:
        line = lines[i]
        body = line.rstrip("\r\n")
        stripped = body.strip(_BLANKS)
        if not stripped:
            out.append(LogicalLine(i, i + 1, "blank"))
            i += 1
            continue
        first = stripped[0]
        if first == "#":
            kind = "directive" if _DIRECTIVE_RE.match(body) else "comment"
            out.append(LogicalLine(i, i + 1, kind, "", body))
            i += 1
            continue
        if templates and stripped.startswith("<%"):
            out.append(LogicalLine(i, i + 1, "opaque", "", None))
            i += 1
            continue
        if "#" in body:
            code, comment = split_comment(body, quote_aware)
        else:
            code, comment = body, None
        start = i
        i += 1
        if continuation and comment is None and "\\" in code:
            head = _continues(code)
            if head is not None:
                parts = [head]
                while i < n:
                    nbody = lines[i].rstrip("\r\n")
                    ncode, comment = split_comment(nbody, quote_aware)
                    i += 1
                    if comment is not None:
                        parts.append(ncode)
                        break
                    more = _continues(ncode)
                    if more is None:
                        parts.append(ncode)
                        break
                    parts.append(more)
                code = glue.join(parts)
        out.append(LogicalLine(start, i, "code", code, comment))
    return out


class Token:
    """One table value.  ``raw`` as written; ``value`` with the outer parentheses
    removed (``(a b)`` -> ``a b``) and ``()``/``-`` read as ``""``.
    ``start``/``end`` are offsets into the code string the token came from."""

    __slots__ = ("raw", "start", "end")

    def __init__(self, raw, start, end):
        self.raw = raw
        self.start = start
        self.end = end

    @property
    def value(self):
        return token_value(self.raw)

    @property
    def is_empty(self):
        return token_value(self.raw) == ""

    def __repr__(self):
        return "Token(%r)" % self.raw


def token_value(raw):
    """The value of a raw table token: outer parentheses removed, ``()`` and
    ``-`` read as the empty string."""
    if raw == "-":
        return ""
    if raw[0] == "(" and raw[-1] == ")" and _outer_group(raw):
        return raw[1:-1].strip(_BLANKS)
    return raw


def _outer_group(raw):
    """True when the first ``(`` of ``raw`` closes at its last character."""
    depth = 0
    last = len(raw) - 1
    for i, ch in enumerate(raw):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i == last
    return False


# A parenthesised group without blanks or nested parentheses: "()", "(mg)".
_SIMPLE_GROUP_RE = re.compile(r"\([^()\s]*\)")


def split_tokens(code, line=None):
    """The raw tokens of table text, as strings (the fast path of :func:`tokenize`).

    When every parenthesis belongs to a group without blanks (the usual
    ``()``/``(mg)`` cells) a plain ``str.split`` gives the tokens; otherwise
    blank-separated parts are glued back into parenthesised groups.  An
    unbalanced parenthesis raises :class:`LsfSyntaxError`.
    """
    if "(" not in code and ")" not in code:
        return code.split()
    opens = code.count("(")
    if opens == code.count(")") and len(_SIMPLE_GROUP_RE.findall(code)) == opens:
        return code.split()
    return [code[a:b] for a, b in _spans(code, line)]


def tokenize(code, line=None):
    """Split table text into :class:`Token` objects (with offsets into ``code``).

    Blanks separate tokens; a parenthesised group (which may hold blanks,
    nested groups and ``[...]``) belongs to the token it is glued to.  An
    unbalanced parenthesis raises :class:`LsfSyntaxError` (with ``line`` when
    given).
    """
    return [Token(code[a:b], a, b) for a, b in _spans(code, line)]


def _paren_depth(part, depth, code, line):
    for ch in part:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise LsfSyntaxError("unbalanced parenthesis in %s" % excerpt(code.strip()), line)
    return depth


def token_spans(code, line=None):
    """``(start, end)`` offsets of the tokens of ``code`` (no Token objects)."""
    return _spans(code, line)


def _spans(code, line):
    """(start, end) of every token: blank-separated parts, glued while a
    parenthesis is open."""
    spans = []
    pos = 0
    depth = 0
    start = 0
    find = code.find
    for part in code.split():
        at = find(part, pos)
        pos = at + len(part)
        if depth == 0:
            start = at
        if "(" in part or ")" in part:
            if (depth == 0 and part[0] == "(" and part[-1] == ")"
                    and part.count("(") == 1 and part.count(")") == 1):
                spans.append((start, pos))  # a whole "(value)" cell
                continue
            depth = _paren_depth(part, depth, code, line)
        if depth == 0:
            spans.append((start, pos))
    if depth:
        raise LsfSyntaxError("unbalanced parenthesis in %s" % excerpt(code.strip()), line)
    return spans
