# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The grammar slurm.conf and gres.conf share: parse, host lists, values, lossless edits.  Pure Python.

Grammar (Slurm 22.05 ``src/common/parse_config.c``, slurm.conf(5), gres.conf(5)):

* ``#`` starts a comment unless an odd number of backslashes precedes it
  (``\\#`` is a literal ``#``); quotes do not protect it.
* After the comment is cut, a line ending in an odd number of backslashes
  continues on the next physical line; the backslash is dropped and the two
  texts are joined as they are (no blank is added).
* A logical line is a run of ``key=value`` pairs separated by blanks:
  ``key`` is letters, digits, ``_`` and ``.``; blanks may surround ``=``; an
  operator (``+``, ``-``, ``*``, ``/``) may precede it; ``value`` is either
  ``"..."`` (blanks allowed, no ``"`` inside) or a run of non-blanks.  Keys are
  case-insensitive; node and partition names are not.
* ``include FILE`` (any case) reads another file: kept as it is, as a line of kind ``include``.
* A line whose first key is ``NodeName``, ``PartitionName``, ``FrontendName``,
  ``DownNodes``, ``NodeSet`` or ``SwitchName`` is a *record*: every pair on it
  belongs to that record.  In gres.conf a line with a ``Name`` key is a GRES
  record (kind ``gres``).  Any other line of pairs holds global parameters.
* Node names are host lists: ``gpu[01-04,07],login1``; several bracket groups
  multiply (``r[1-2]n[1-3]``); leading zeros set the width.

Edits (``_Editor`` and the pair helpers, used by ``_slurm_conf`` and
``_slurm_gres``) change only the lines they must; every other line (comments,
blank lines, continued lines, trailing comments) comes back byte-identical.
Malformed input raises :class:`SlurmSyntaxError` with the line number.

Interface (for this collection's plugins):

``parse(text)``                        :class:`Document` of :class:`Line` of :class:`Pair`
``expand_hostlist(expr)`` / ``compress_hostlist(names)``
``check_value(key, value)``            a value Slurm reads back the same
``check_node_name(option, name)``      a node name that cannot inject a line
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._text_lines import detect_eol, excerpt, physical_lines, split_eol

__all__ = ["SlurmSyntaxError", "Pair", "Line", "Document", "parse", "expand_hostlist", "compress_hostlist",
           "check_value", "check_node_name", "RECORD_KEYS", "MAX_HOSTLIST"]

RECORD_KEYS = ("nodename", "partitionname", "frontendname", "downnodes", "nodeset", "switchname")

_PAIR_RE = re.compile(
    r'[ \t]*(?P<key>[A-Za-z0-9_.]+)[ \t]*(?P<op>[-+*/]?)=[ \t]*(?:"(?P<quoted>[^"]*)"|(?P<plain>[^ \t"]+))(?=[ \t]|\Z)')
_INCLUDE_RE = re.compile(r"[ \t]*include[ \t]+\S", re.IGNORECASE)
_BRACKET_RE = re.compile(r"\[([^\[\]]*)\]")
_SUFFIX_RE = re.compile(r"\A(.*?)(\d+)\Z")
_SAFE_VALUE_RE = re.compile(r'\A[^\s"#\\]+\Z')
# Slurm's hostlist code refuses a range of more than 64K hosts; so does the model, before expanding it
# (``n[0-9999999]`` took 54 s and 2 GB of memory, ``n[0-99999999]`` ten times that).
MAX_HOSTLIST = 64 * 1024


class SlurmSyntaxError(ValueError):
    """Malformed slurm.conf/gres.conf input; ``line`` is the 1-based physical line."""

    def __init__(self, msg, line=None):
        self.msg = msg
        self.line = line
        super().__init__(("line %d: %s" % (line, msg)) if line else msg)


class Pair:
    """One ``key=value`` of a logical line; offsets are into the line's joined code."""

    __slots__ = ("key", "op", "value", "quoted", "start", "end", "vstart", "vend")

    def __init__(self, key, op, value, quoted, start, end, vstart, vend):
        self.key = key
        self.op = op
        self.value = value
        self.quoted = quoted
        self.start = start
        self.end = end
        self.vstart = vstart
        self.vend = vend

    @property
    def lkey(self):
        return self.key.lower()


class Line:
    """One logical line: physical lines ``start`` .. ``end - 1`` (0-based).

    ``kind``: ``blank``, ``comment``, ``include``, ``global`` (parameters),
    ``record`` (``NodeName=...`` etc.; ``record_kind`` is the lower-cased first key)
    or ``gres`` (a gres.conf line with ``Name``).
    ``segments``: ``(physical index, column, code)`` of each piece of code, so
    an offset into the joined code maps back to its physical line.
    """

    __slots__ = ("start", "end", "kind", "record_kind", "pairs", "segments", "code")

    def __init__(self, start, end, kind, segments=(), pairs=(), record_kind=None):
        self.start = start
        self.end = end
        self.kind = kind
        self.segments = list(segments)
        self.code = "".join(seg[2] for seg in self.segments)
        self.pairs = list(pairs)
        self.record_kind = record_kind

    @property
    def lineno(self):
        return self.start + 1

    def get(self, key):
        """The last pair named ``key`` (any case), or None."""
        found = None
        for pair in self.pairs:
            if pair.lkey == key.lower():
                found = pair
        return found

    def locate(self, offset):
        """(physical index, column) of an offset into ``code``; the end of a segment maps to its own line."""
        for index, column, code in self.segments:
            if offset <= len(code):
                return index, column + offset
            offset -= len(code)
        index, column, code = self.segments[-1]
        return index, column + len(code)


class Document:
    """The physical lines and the logical lines of one file."""

    def __init__(self, lines, logical):
        self.lines = lines
        self.logical = logical
        self.eol = detect_eol(lines)

    def records(self, kind):
        return [line for line in self.logical if line.kind == "record" and line.record_kind == kind.lower()]


def _cut_comment(body):
    """``(code, has_comment)``: the text before the first ``#`` not escaped by an odd run of backslashes."""
    run = 0
    for i, ch in enumerate(body):
        if ch == "\\":
            run += 1
            continue
        if ch == "#" and run % 2 == 0:
            return body[:i], True
        run = 0
    return body, False


def _continues(code):
    stripped = code.rstrip("\r")
    count = len(stripped) - len(stripped.rstrip("\\"))
    return count % 2 == 1


def _unescape(raw):
    return re.sub(r"\\(.)", r"\1", raw)


def _parse_pairs(code, lineno):
    pairs = []
    pos = 0
    length = len(code)
    while pos < length:
        if not code[pos:].strip(" \t"):
            break
        match = _PAIR_RE.match(code, pos)
        if not match:
            rest = code[pos:].strip(" \t")
            raise SlurmSyntaxError("expected key=value, got %s" % excerpt(rest.split()[0] if rest.split() else rest),
                                   lineno)
        quoted = match.group("quoted") is not None
        group = "quoted" if quoted else "plain"
        raw = match.group(group)
        if not quoted and re.search(r"\\[ \t]", raw + " "):
            raise SlurmSyntaxError("a backslash before a blank in the value of %s is not supported"
                                   % match.group("key"), lineno)
        value = raw if quoted else _unescape(raw)
        vstart = match.start(group) - (1 if quoted else 0)
        vend = match.end(group) + (1 if quoted else 0)
        pairs.append(Pair(match.group("key"), match.group("op"), value, quoted,
                          match.start("key"), vend, vstart, vend))
        pos = match.end()
    return pairs


def parse(text):
    """Parse slurm.conf or gres.conf text into a :class:`Document`."""
    text = text or ""
    nul = text.find("\x00")
    if nul >= 0:
        raise SlurmSyntaxError("NUL byte in the line; Slurm stops reading the line there", text.count("\n", 0, nul) + 1)
    lines = physical_lines(text)
    logical = []
    i = 0
    n = len(lines)
    while i < n:
        body, _eol = split_eol(lines[i])
        code, _comment = _cut_comment(body)
        if not code.strip(" \t\r"):
            logical.append(Line(i, i + 1, "comment" if _comment else "blank", [(i, 0, "")]))
            i += 1
            continue
        start = i
        segments = []
        while True:
            if _continues(code) and i + 1 < n:
                segments.append((i, 0, code.rstrip("\r")[:-1]))
                i += 1
                body, _eol = split_eol(lines[i])
                code, _comment = _cut_comment(body)
                continue
            segments.append((i, 0, code.rstrip("\r")))
            i += 1
            break
        joined = "".join(seg[2] for seg in segments)
        if _INCLUDE_RE.match(joined):
            logical.append(Line(start, i, "include", segments))
            continue
        pairs = _parse_pairs(joined, start + 1)
        first = pairs[0].lkey
        if first in RECORD_KEYS and not (first == "nodename" and any(p.lkey == "name" for p in pairs)):
            logical.append(Line(start, i, "record", segments, pairs, record_kind=first))
        elif any(p.lkey == "name" for p in pairs):
            logical.append(Line(start, i, "gres", segments, pairs))
        else:
            logical.append(Line(start, i, "global", segments, pairs))
    return Document(lines, logical)


# --- host lists -------------------------------------------------------------------------------------

def _split_top(expr):
    """Split a host list at the commas outside brackets."""
    parts, depth, current = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ']' in host list %s" % excerpt(expr))
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise ValueError("unbalanced '[' in host list %s" % excerpt(expr))
    parts.append("".join(current))
    return [p for p in parts if p]


def _expand_ranges(body, expr):
    out = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        if "-" in item:
            low, high = item.split("-", 1)
            if not (low.isdigit() and high.isdigit()) or int(low) > int(high):
                raise ValueError("bad range %s in host list %s" % (excerpt(item), excerpt(expr)))
            width = len(low) if low.startswith("0") and len(low) > 1 else 0
            if int(high) - int(low) + len(out) >= MAX_HOSTLIST:
                raise ValueError("host list %s names more than %d hosts" % (excerpt(expr), MAX_HOSTLIST))
            out.extend(str(x).zfill(width) for x in range(int(low), int(high) + 1))
        elif item.isdigit():
            out.append(item)
        else:
            raise ValueError("bad range %s in host list %s" % (excerpt(item), excerpt(expr)))
    return out


def expand_hostlist(expr):
    """``gpu[01-03],login1`` -> ``[gpu01, gpu02, gpu03, login1]`` (Slurm's host list syntax)."""
    names = []
    for part in _split_top(expr):
        prefixes = [""]
        pos = 0
        for match in _BRACKET_RE.finditer(part):
            literal = part[pos:match.start()]
            numbers = _expand_ranges(match.group(1), expr)
            if len(prefixes) * len(numbers) + len(names) > MAX_HOSTLIST:
                raise ValueError("host list %s names more than %d hosts" % (excerpt(expr), MAX_HOSTLIST))
            prefixes = [p + literal + num for p in prefixes for num in numbers]
            pos = match.end()
        rest = part[pos:]
        if "[" in rest or "]" in rest:
            raise ValueError("bad brackets in host list %s" % excerpt(expr))
        names.extend(p + rest for p in prefixes)
    return names


def compress_hostlist(names):
    """The shortest host list of ``names`` by common prefix and numeric suffix, order kept per prefix."""
    groups = []
    index = {}
    for name in names:
        match = _SUFFIX_RE.match(name)
        key = (match.group(1), len(match.group(2)) if match.group(2).startswith("0") else 0) if match else (name, None)
        if key not in index:
            index[key] = len(groups)
            groups.append((key, []))
        if match:
            groups[index[key]][1].append(match.group(2))
    out = []
    for (prefix, width), numbers in groups:
        if width is None:
            out.append(prefix)
            continue
        values = sorted(set(int(num) for num in numbers))
        if len(values) == 1:
            out.append(prefix + numbers[0])
            continue
        ranges = []
        start = prev = values[0]
        for value in values[1:] + [None]:
            if value is not None and value == prev + 1:
                prev = value
                continue
            text = str(start).zfill(width) if start == prev else "%s-%s" % (str(start).zfill(width), str(prev).zfill(width))
            ranges.append(text)
            if value is not None:
                start = prev = value
        out.append("%s[%s]" % (prefix, ",".join(ranges)))
    return ",".join(out)


# --- values -----------------------------------------------------------------------------------------

def check_value(key, value):
    """Raise ValueError when ``value`` cannot be written for ``key`` so that Slurm reads it back the same."""
    if not isinstance(value, str) or value == "":
        raise ValueError("%s: the value must be a non-empty string (null removes the key)" % key)
    for char, why in (('"', "a double quote, which Slurm's values cannot hold"),
                      ("#", "'#', which starts a comment even inside quotes"),
                      ("\\", "a backslash, which Slurm reads as an escape"),
                      ("\n", "a line break"), ("\r", "a line break")):
        if char in value:
            raise ValueError("%s: value %s contains %s" % (key, excerpt(value), why))
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", value):
        raise ValueError("%s: value %s contains a control character" % (key, excerpt(value)))


def _render_value(value):
    return value if _SAFE_VALUE_RE.match(value) else '"%s"' % value


def check_node_name(option, name):
    """Raise ValueError unless ``name`` can be written as a node name without changing the file's lines.

    Slurm node names are host names (letters, digits, ``-``, ``_``, ``.``); a blank, ``=``, ``#``, a quote, a
    backslash, a control character or a line break would end the pair, start a comment or inject a line.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("%s: node name %s is empty" % (option, excerpt(name)))
    if re.search(r"[\r\n\x00-\x1f\x7f\x85\u2028\u2029]", name):
        raise ValueError("%s: node name %s contains a line break or a control character" % (option, excerpt(name)))
    if not re.match(r"\A[A-Za-z0-9._\-]+\Z", name):
        raise ValueError("%s: node name %s has a character a Slurm node name cannot hold (only letters, digits, "
                         "'.', '_' and '-')" % (option, excerpt(name)))


# --- edits ------------------------------------------------------------------------------------------

class _Editor:
    """Collects edits of physical lines and renders the new text."""

    def __init__(self, doc):
        self.doc = doc
        self.lines = list(doc.lines)
        self.removed = set()
        self.after = {}   # physical index -> [new lines inserted after it]
        self.append = []  # new lines at the end
        self.touched = {}  # physical index -> list of (start col, end col, replacement)

    def replace_span(self, line, start, end, replacement):
        index, col_a = line.locate(start)
        index_b, col_b = line.locate(end)
        if index != index_b:
            raise SlurmSyntaxError("a key=value pair split over a continued line cannot be edited", line.lineno)
        # the edit's number keeps several insertions at one place in the order they were made
        edits = self.touched.setdefault(index, [])
        edits.append((col_a, col_b, len(edits), replacement))

    def insert_after(self, index, text):
        self.after.setdefault(index, []).append(text)

    def render(self):
        out = []
        if self.lines and not self.lines[-1].endswith("\n") and (self.after.get(len(self.lines) - 1) or self.append):
            self.lines[-1] = self.lines[-1] + self.doc.eol
        for i, line in enumerate(self.lines):
            if i in self.touched:
                body, eol = split_eol(line)
                for col_a, col_b, _number, replacement in sorted(self.touched[i], reverse=True):
                    body = body[:col_a] + replacement + body[col_b:]
                line = body + eol
            if i not in self.removed:
                out.append(line)
            for extra in self.after.get(i, []):
                out.append(extra + self.doc.eol)
        for extra in self.append:
            out.append(extra + self.doc.eol)
        return "".join(out)


def _set_pair(editor, line, pair, value):
    # a value the site quoted stays quoted (Slurm reads both the same way)
    editor.replace_span(line, pair.vstart, pair.vend, '"%s"' % value if pair.quoted else _render_value(value))


def _remove_pair(editor, line, pair):
    """Remove a pair; a line left without pairs goes, its physical lines with it."""
    if len(line.pairs) == 1:
        for index in range(line.start, line.end):
            editor.removed.add(index)
        return
    # the pair and the blanks before it (or after it, for the first pair)
    start = pair.start
    while start > 0 and line.code[start - 1] in " \t":
        start -= 1
    end = pair.end
    if start == 0 or line.pairs[0] is pair:
        start = pair.start
        while end < len(line.code) and line.code[end] in " \t":
            end += 1
    editor.replace_span(line, start, end, "")


def _append_pair(editor, line, key, value):
    last = line.pairs[-1]
    editor.replace_span(line, last.end, last.end, " %s=%s" % (key, _render_value(value)))


def _insert_pair_after(editor, line, after, key, value):
    editor.replace_span(line, after.end, after.end, " %s=%s" % (key, _render_value(value)))
