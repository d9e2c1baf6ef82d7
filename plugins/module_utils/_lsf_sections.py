# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless section document model for LSF files built from ``Begin``/``End``
sections: lsf.shared, lsf.cluster.<name> and lsb.* (lsb.applications).

Grammar rules implemented here:

* ``Begin <Name>`` ... ``End <Name>``; keywords and names match
  case-insensitively, any blanks/tabs between them.  ``End`` with another or no
  name is accepted with a warning (as LSF does); a ``Begin`` without ``End``, an
  ``End`` without ``Begin`` or a ``Begin`` inside a section is an error.
* Two section shapes:
  - ``"table"`` (vertical): the first code line is the header (column keywords,
    case-insensitive, each once); every further code line is one row with exactly
    one token per column (see ``_lsf_lexer.tokenize``).
  - ``"horizontal"``: ``KEY = value`` lines (blanks around ``=`` optional); key is
    the text before the first ``=``; duplicate keys: the last one wins (warned).
* Code outside any section is an error when ``require_sections`` is true.
* Comments, blank lines and directives (``#INCLUDE``, ``#if``...) are kept as
  they are wherever they occur.

The document never rewrites a line it was not asked to: edits are queued as
replacements of physical line spans (in the coordinates of the parsed text) and
applied in one pass by :meth:`Document.render`.  ``render()`` without edits
returns the input unchanged.

Public API (stable)::

    doc = parse_document(text, shapes={"host": "table", "parameters": "horizontal"},
                         default_shape="auto", quote_aware=True, join="space",
                         templates=False, require_sections=True)
    doc.lines            physical lines (verbatim, with line endings)
    doc.logical          LogicalLine list;  doc.sections: Section list
    doc.warnings         list of str;       doc.eol: line ending for new lines
    doc.find(name)       sections with that name (case-insensitive), file order
    doc.section(name)    the first one or None
    doc.replace_lines(start, end, new_lines)   queue: physical lines start..end-1 -> new_lines
    doc.insert_lines(index, new_lines)         queue: insert before physical line index
    doc.delete_lines(start, end)
    doc.render()         the edited text

    Section: name, key (lower-case name), shape, begin, end (LogicalLine),
             body (LogicalLine list between them), header (LogicalLine or None),
             columns (list of str), column_index {lower name: position},
             rows (Row list), entries (Entry list),
             has_column(name), insert_index (physical index for a new row/entry),
             render_row(raw_tokens, lines) -> line body aligned like the section's rows,
             rewrite_row(row, raw_tokens, lines) -> line body keeping the row's spacing,
             get(key) -> last Entry with that key (horizontal), entries_for(key)
    Row:     line (LogicalLine), cells (raw tokens as str), raws() (a copy),
             tokens (Token list with offsets, computed on first use),
             get(column) -> Token or None, raw(column), value(column), lineno
    Entry:   line (LogicalLine), key, value, lineno, sep (text from key end through
             the blanks after ``=``, e.g. ``" = "``), indent

    Document helpers that queue edits:
    doc.set_row(section, row, raw_tokens)        rewrite one row in place
    doc.add_row(section, raw_tokens)             append a row after the last row
    doc.delete_row(row) / doc.delete_entry(entry)
    doc.set_entry(section, key, value)           update last KEY (or add it)
    Rows written by set_row/add_row are checked cell by cell: a value that
    would not read back as one cell raises ValueError before anything is queued.

Editors built on the model (text in, ``(text, ...)`` out, @gc_paused):

    edit_resource(text, name, state, type=, interval=, increasing=, consumable=,
                  release=, description=) -> (text, row dict or None, warnings)
    edit_hosts(text, hosts or "all", resources, state, create_missing,
               model, host_type, server) -> (text, changed_hosts, created_hosts, warnings)
    HostPattern(cell).matches(host)   condensed HOSTNAME ranges (host[01-04] ...)
    check_resource_name(name), check_host_name(name), check_host_resource(item)
"""

from __future__ import annotations

import functools
import gc
import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import (
    LsfSyntaxError,
    check_text,
    detect_eol,
    excerpt,
    logical_lines,
    physical_lines,
    split_eol,
    split_tokens,
    token_value,
    tokenize,
)

__all__ = ["Document", "Section", "Row", "Entry", "parse_document", "LsfSyntaxError"]


class Row:
    """One table row.  ``cells`` holds the raw tokens as strings; ``tokens``
    (with column offsets) is computed on first use.  A row holds its section's
    ``column_index``, not the section: no reference cycle, so a parsed
    document is freed as soon as it is dropped instead of waiting for the
    cyclic collector (100k rows: 300k objects, about 0.2 s of collection)."""

    __slots__ = ("line", "cells", "column_index", "_tokens")

    def __init__(self, line, cells, column_index):
        self.line = line
        self.cells = cells
        self.column_index = column_index
        self._tokens = None

    @property
    def lineno(self):
        return self.line.lineno

    @property
    def tokens(self):
        if self._tokens is None:
            self._tokens = tokenize(self.line.code, self.line.lineno)
        return self._tokens

    def get(self, column):
        idx = self.column_index.get(column.lower())
        return None if idx is None else self.tokens[idx]

    def raw(self, column):
        idx = self.column_index.get(column.lower())
        return None if idx is None else self.cells[idx]

    def value(self, column):
        idx = self.column_index.get(column.lower())
        return None if idx is None else token_value(self.cells[idx])

    def raws(self):
        return list(self.cells)


class Entry:
    """One ``KEY = value`` entry of a horizontal section."""

    __slots__ = ("line", "key", "value", "sep", "indent")

    def __init__(self, line, key, value, sep, indent):
        self.line = line
        self.key = key
        self.value = value
        self.sep = sep
        self.indent = indent

    @property
    def lineno(self):
        return self.line.lineno


class Section:
    """One ``Begin``/``End`` section."""

    def __init__(self, name, shape, begin, end, body):
        self.name = name
        self.key = name.lower()
        self.shape = shape
        self.begin = begin
        self.end = end
        self.body = body
        self.header = None
        self.header_tokens = []
        self.columns = []
        self.column_index = {}
        self.rows = []
        self.entries = []
        self._by_key = None

    @property
    def lineno(self):
        return self.begin.lineno

    def has_column(self, name):
        return name.lower() in self.column_index

    @property
    def insert_index(self):
        """Physical index where a new row/entry goes: after the last row/entry,
        else after the header, else right after ``Begin``."""
        if self.rows:
            return self.rows[-1].line.end
        if self.entries:
            return self.entries[-1].line.end
        if self.header is not None:
            return self.header.end
        return self.begin.end

    # -- table helpers -------------------------------------------------
    def _layout(self, lines):
        """(indent, column starts) of the last single-line row, else the header."""
        ref = None
        for row in reversed(self.rows):
            if not row.line.continued:
                ref = (row.line, row.tokens)
                break
        if ref is None and self.header is not None and not self.header.continued:
            ref = (self.header, self.header_tokens)
        if ref is None:
            return "", None
        line, tokens = ref
        body = split_eol(lines[line.start])[0]
        indent = body[:tokens[0].start] if tokens else ""
        return indent, [t.start for t in tokens]

    def render_row(self, raw_tokens, lines):
        """A new row's text (no line ending), aligned on the section's columns."""
        indent, starts = self._layout(lines)
        out = indent
        for i, raw in enumerate(raw_tokens):
            if i:
                want = starts[i] if starts and i < len(starts) else 0
                pad = want - len(out)
                out += " " * pad if pad > 0 else " "
            out += raw
        return out

    def rewrite_row(self, row, raw_tokens, lines):
        """``row`` with its tokens replaced, keeping its indentation, tabs and
        trailing comment; blank-only gaps stretch or shrink to keep columns."""
        if row.line.continued:
            text = self.render_row(raw_tokens, lines)
            if row.line.comment:
                text += " " + row.line.comment
            return text
        body = split_eol(lines[row.line.start])[0]
        cells = row.cells
        # each cell is an exact substring that follows only blanks: a forward
        # find gives its offsets without tokenizing the row again
        spans = []
        find = row.line.code.find
        pos = 0
        for cell in cells:
            pos = find(cell, pos)
            spans.append((pos, pos + len(cell)))
            pos += len(cell)
        n = len(spans)
        parts = []
        pos = 0  # body[:pos] is accounted for in parts
        outlen = 0
        i = 0
        while i < n:
            if raw_tokens[i] == cells[i]:
                i += 1
                continue
            start, end = spans[i]
            parts.append(body[pos:start])
            parts.append(raw_tokens[i])
            outlen += start - pos + len(raw_tokens[i])
            pos = end
            # move the following cells back to their columns while they are off
            j = i + 1
            while j < n:
                nstart, nend = spans[j]
                gap = body[pos:nstart]
                if outlen + len(gap) == nstart or gap.strip(" ") != "":
                    break  # aligned again, or a tab gap kept as written
                pad = nstart - outlen
                gap = " " * pad if pad > 0 else " "
                parts.append(gap)
                outlen += len(gap)
                pos = nstart
                if raw_tokens[j] != cells[j]:
                    break
                parts.append(body[nstart:nend])
                outlen += nend - nstart
                pos = nend
                j += 1
            i = j
        parts.append(body[pos:])
        return "".join(parts)

    # -- horizontal helpers --------------------------------------------
    def entries_for(self, key):
        k = key.lower()
        return [e for e in self.entries if e.key.lower() == k]

    def get(self, key):
        if self._by_key is None:
            self._by_key = {}
            for e in self.entries:
                self._by_key[e.key.lower()] = e
        return self._by_key.get(key.lower())


def _parse_entry(line, section_name):
    code = line.code
    eq = code.find("=")
    if eq < 0:
        raise LsfSyntaxError("expected KEY = value in section %s, got %s" % (section_name, excerpt(code.strip())),
                             line.lineno)
    key_part = code[:eq]
    key = key_part.strip()
    if not key or len(key.split()) != 1:
        raise LsfSyntaxError("bad key %s in section %s" % (excerpt(key_part.strip()), section_name), line.lineno)
    rest = code[eq + 1:]
    value = rest.strip()
    indent = key_part[:len(key_part) - len(key_part.lstrip())]
    key_end = len(indent) + len(key)
    sep = code[key_end:eq + 1] + rest[:len(rest) - len(rest.lstrip())]
    return Entry(line, key, value, sep, indent)


class Document:
    """A parsed LSF section file; see the module docstring."""

    def __init__(self, lines, logical, sections, warnings):
        self.lines = lines
        self.logical = logical
        self.sections = sections
        self.warnings = warnings
        self.eol = detect_eol(lines)
        self._edits = {}
        self._seq = 0

    def find(self, name):
        key = name.lower()
        return [s for s in self.sections if s.key == key]

    def section(self, name):
        found = self.find(name)
        return found[0] if found else None

    # -- queued edits --------------------------------------------------
    def _nl(self, texts):
        return [t + self.eol for t in texts]

    def replace_lines(self, start, end, new_lines):
        """Queue: physical lines ``start``..``end - 1`` become ``new_lines``
        (complete lines with endings).  Replacing the same span again overrides."""
        self._edits[(start, end, 0)] = list(new_lines)

    def insert_lines(self, index, new_lines):
        """Queue an insertion before physical line ``index``; several insertions
        at one index keep their order."""
        self._seq += 1
        self._edits[(index, index, self._seq)] = list(new_lines)

    def delete_lines(self, start, end):
        self.replace_lines(start, end, [])

    @property
    def edited(self):
        return bool(self._edits)

    def render(self):
        if not self._edits:
            return "".join(self.lines)
        out = []
        pos = 0
        lines = self.lines
        for (start, end, _seq) in sorted(self._edits):
            if start < pos:
                raise ValueError("overlapping edits at line %d" % (start + 1))
            out.extend(lines[pos:start])
            new = self._edits[(start, end, _seq)]
            if new and start == len(lines) and out and not out[-1].endswith("\n"):
                out[-1] = out[-1] + self.eol
            out.extend(new)
            pos = end
        out.extend(lines[pos:])
        return "".join(out)

    # -- table edits ---------------------------------------------------
    def set_row(self, section, row, raw_tokens):
        """Queue the rewrite of ``row`` with ``raw_tokens`` (one per column)."""
        _check_cells(section, raw_tokens, row.cells)
        text = section.rewrite_row(row, raw_tokens, self.lines)
        eol = split_eol(self.lines[row.line.end - 1])[1] or ""
        self.replace_lines(row.line.start, row.line.end, [text + eol])

    def add_row(self, section, raw_tokens):
        """Queue a new row after the section's last row (or its header)."""
        _check_cells(section, raw_tokens)
        text = section.render_row(raw_tokens, self.lines)
        self.insert_lines(section.insert_index, self._nl([text]))

    def delete_row(self, row):
        self.delete_lines(row.line.start, row.line.end)

    # -- horizontal edits ----------------------------------------------
    def delete_entry(self, entry):
        self.delete_lines(entry.line.start, entry.line.end)

    def set_entry(self, section, key, value):
        """Set ``KEY`` in a horizontal section: rewrite the last entry with that
        key (keeping its indentation, separator and trailing comment) or append
        one in the style of the section's last entry.  Returns True when queued."""
        entry = section.get(key)
        if entry is not None:
            if entry.value == value:
                return False
            text = entry.indent + entry.key + entry.sep + value
            if entry.line.comment:
                text += " " + entry.line.comment
            eol = split_eol(self.lines[entry.line.end - 1])[1]
            self.replace_lines(entry.line.start, entry.line.end, [text + (eol or self.eol)])
            return True
        if section.entries:
            last = section.entries[-1]
            eq = last.sep.find("=")
            before, after = last.sep[:eq], last.sep[eq:]
            if before:
                # keep the '=' in the column the last entry uses
                width = len(last.key) + len(before) - len(key)
                before = " " * (width if width > 0 else 1)
            text = last.indent + key + before + after + value
        else:
            text = key + " = " + value
        self.insert_lines(section.insert_index, self._nl([text]))
        return True


_CELL_OK = {}


def _cell_ok(raw):
    """True when ``raw`` reads back as exactly one table value."""
    ok = _CELL_OK.get(raw)
    if ok is None:
        try:
            ok = (bool(raw) and raw == raw.strip() and "#" not in raw and "\\" not in raw
                  and split_tokens(raw) == [raw])
        except LsfSyntaxError:
            ok = False
        if len(_CELL_OK) < 4096:
            _CELL_OK[raw] = ok
    return ok


def _check_cells(section, raw_tokens, current=None):
    """A row we write must read back as one value per column: refuse values
    with blanks outside parentheses, unbalanced parentheses or ``#``, and a
    first cell that reads as Begin/End."""
    if len(raw_tokens) != len(section.columns):
        raise ValueError("%d values for %d columns" % (len(raw_tokens), len(section.columns)))
    for i, raw in enumerate(raw_tokens):
        if current is not None and current[i] == raw:
            continue  # read from the file: one value already
        if not _cell_ok(raw):
            raise ValueError("refusing to write %s into the %s section: it does not read back as one value"
                             % (excerpt(raw), section.name))
    if raw_tokens and raw_tokens[0].lower() in ("begin", "end"):
        raise ValueError("refusing to write a row that starts with %r" % raw_tokens[0])


def _begin_end(line):
    """('begin'|'end', name) for a Begin/End line, else None."""
    code = line.code
    head = code.lstrip(" \t")[:3].lower()
    if head != "beg" and head != "end":
        return None
    words = code.split()
    first = words[0].lower()
    if first == "begin" or first == "end":
        return first, (words[1] if len(words) > 1 else "")
    return None


def _guess_shape(body):
    for ln in body:
        if ln.kind == "code":
            return "horizontal" if "=" in ln.code.split("(")[0] else "table"
    return "table"


def _fill_table(section, lines_all):
    body = [ln for ln in section.body if ln.kind == "code"]
    if not body:
        return
    header = body[0]
    section.header = header
    section.header_tokens = tokenize(header.code, header.lineno)
    section.columns = [t.raw for t in section.header_tokens]
    for i, col in enumerate(section.columns):
        k = col.lower()
        if k in section.column_index:
            raise LsfSyntaxError("column %s appears twice in the %s header" % (col, section.name), header.lineno)
        section.column_index[k] = i
    ncols = len(section.columns)
    rows = section.rows
    for ln in body[1:]:
        cells = split_tokens(ln.code, ln.start + 1)
        if len(cells) != ncols:
            raise LsfSyntaxError(
                "row has %d values but the %s header (line %d) has %d columns"
                % (len(cells), section.name, header.lineno, ncols), ln.start + 1)
        rows.append(Row(ln, cells, section.column_index))


def _fill_horizontal(section, warnings):
    seen = {}
    for ln in section.body:
        if ln.kind != "code":
            continue
        entry = _parse_entry(ln, section.name)
        k = entry.key.lower()
        if k in seen:
            warnings.append("line %d: %s is also set on line %d in section %s; the last one wins"
                            % (ln.lineno, entry.key, seen[k], section.name))
        seen[k] = ln.lineno
        section.entries.append(entry)


def gc_paused(func):
    """Run ``func`` with the cyclic garbage collector paused.

    A parse allocates one object per line and none of them is garbage yet; the
    collector would rescan them again and again (100k hosts: twice the time,
    and growth worse than linear).  The collector's previous state is restored.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()
    return wrapper


@gc_paused
def parse_document(text, shapes=None, default_shape="auto", quote_aware=True, join="space",
                   templates=False, require_sections=True):
    """Parse an LSF section file.

    ``shapes`` maps lower-case section names to ``"table"`` or ``"horizontal"``;
    other sections get ``default_shape`` (``"auto"``: horizontal when the first
    code line has ``=`` outside parentheses, else table).  Raises
    :class:`LsfSyntaxError` on malformed structure.
    """
    return _parse(text, shapes or {}, default_shape, quote_aware, join, templates, require_sections)


def _parse(text, shapes, default_shape, quote_aware, join, templates, require_sections):
    check_text(text or "")
    lines = physical_lines(text or "")
    logical = logical_lines(lines, quote_aware=quote_aware, join=join, templates=templates)
    sections = []
    warnings = []
    current = None  # (name, begin line, body list)
    for ln in logical:
        if ln.kind != "code":
            if current is not None:
                current[2].append(ln)
            continue
        be = _begin_end(ln)
        if be is None:
            if current is not None:
                current[2].append(ln)
            elif require_sections:
                raise LsfSyntaxError("%s is outside any Begin/End section" % excerpt(ln.code.strip()), ln.lineno)
            continue
        word, name = be
        if word == "begin":
            if current is not None:
                raise LsfSyntaxError("Begin %s inside section %s (line %d) that has no End"
                                     % (name, current[0], current[1].lineno), ln.lineno)
            if not name:
                raise LsfSyntaxError("Begin without a section name", ln.lineno)
            current = (name, ln, [])
            continue
        if current is None:
            raise LsfSyntaxError("End %s without a matching Begin" % name, ln.lineno)
        sname, begin, body = current
        if name.lower() != sname.lower():
            warnings.append("line %d: End %s closes section %s (line %d)"
                            % (ln.lineno, name or "(no name)", sname, begin.lineno))
        shape = shapes.get(sname.lower(), default_shape)
        if shape == "auto":
            shape = _guess_shape(body)
        section = Section(sname, shape, begin, ln, body)
        if shape == "table":
            _fill_table(section, lines)
        else:
            _fill_horizontal(section, warnings)
        sections.append(section)
        current = None
    if current is not None:
        raise LsfSyntaxError("Begin %s has no End" % current[0], current[1].lineno)
    return Document(lines, logical, sections, warnings)


# ----------------------------------------------------------------------
# Shared helpers for the lsf.shared and lsf.cluster editors below
# ----------------------------------------------------------------------

def _empty_style(section, column_key):
    """``-`` when the section's rows write empty values as ``-`` and never as
    ``()``, else ``()``."""
    dash = paren = False
    for row in section.rows:
        for raw in row.cells:
            if raw == "-":
                dash = True
            elif raw == "()":
                paren = True
    return "-" if dash and not paren else "()"


def _align(rows, indent=""):
    """Render rows of tokens as aligned lines (two blanks between columns)."""
    widths = [0] * max(len(r) for r in rows)
    for r in rows:
        for i, tok in enumerate(r[:-1]):
            widths[i] = max(widths[i], len(tok))
    out = []
    for r in rows:
        parts = [tok.ljust(widths[i] + 2) if i < len(r) - 1 else tok for i, tok in enumerate(r)]
        out.append(indent + "".join(parts))
    return out


def _reparse_check(text, **kwargs):
    """The result of every edit must parse again; a failure here is a bug in
    the editor, reported instead of writing a broken file."""
    try:
        return parse_document(text, **kwargs)
    except LsfSyntaxError as err:  # pragma: no cover - defensive
        raise LsfSyntaxError("internal error, the edited text does not parse: %s" % err.msg, err.line)


# ----------------------------------------------------------------------
# lsf.shared: the Resource section
# ----------------------------------------------------------------------

SHARED_SHAPES = {"cluster": "table", "hosttype": "table", "hostmodel": "table", "resource": "table"}

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
    _check_not_keyword(name, "resource name")


def _check_not_keyword(name, what):
    """A row's first cell ``Begin``/``End`` (any case) reads as a section line."""
    if name.lower() in ("begin", "end"):
        word = name.capitalize()
        raise ValueError("%s %r would be read as a%s %s line and break the section"
                         % (what, name, "n" if word == "End" else "", word))


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
    new_doc = _reparse_check(new_text, shapes=SHARED_SHAPES, default_shape="table")
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
        body = _align([columns, raw_row])
        block = ["Begin Resource"] + body + ["End Resource"]
        if sections:  # an empty Resource section: fill it
            doc.replace_lines(sections[0].begin.start, sections[0].end.end, doc._nl(block))
        else:
            lines = doc._nl(block)
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
    empty = _empty_style(section, None)
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


# ----------------------------------------------------------------------
# lsf.cluster.<name>: RESOURCES of the Host section
# ----------------------------------------------------------------------

CLUSTER_SHAPES = {
    "host": "table", "resourcemap": "table", "remoteclusters": "table",
    "parameters": "horizontal", "clusteradmins": "horizontal",
}
_RANGE_PART_RE = re.compile(r"\[([0-9,:\- ]+)\]")
_HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:\[[0-9,:\-]+\][A-Za-z0-9_.\-]*)*\Z")
_RES_ITEM_RE = re.compile(r"!?[A-Za-z_][A-Za-z0-9_]*(?:=[A-Za-z0-9_.\-:/]+)?\Z")


class HostPattern:
    """A HOSTNAME cell, plain (``node1``) or condensed (``host[01-04]``,
    ``host[5:20]``, ``hostA[1,3]B[1-3]``; IBM LSF 10.1 fix pack notation).

    ``matches(host)`` tells whether a plain host name is covered; ranges are
    never expanded.  A bound written with a leading zero fixes the width."""

    __slots__ = ("text", "lower", "regex", "ranges")

    def __init__(self, text):
        self.text = text
        self.lower = text.lower()
        self.regex = None
        self.ranges = []
        if "[" not in text:
            return
        pieces = []
        pos = 0
        for m in _RANGE_PART_RE.finditer(text):
            pieces.append(re.escape(text[pos:m.start()].lower()))
            pieces.append(r"(\d+)")
            self.ranges.append(self._parse_range(m.group(1)))
            pos = m.end()
        pieces.append(re.escape(text[pos:].lower()))
        self.regex = re.compile("".join(pieces) + r"\Z")

    @staticmethod
    def _parse_range(spec):
        parts = []
        for item in spec.replace(" ", "").split(","):
            if not item:
                continue
            sep = "-" if "-" in item else (":" if ":" in item else None)
            lo, hi = item.split(sep, 1) if sep else (item, item)
            if not lo.isdigit() or not hi.isdigit():
                continue
            width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
            parts.append((int(lo), int(hi), width))
        return parts

    def matches(self, host):
        host = host.lower()
        if host == self.lower:
            return True
        if self.regex is None:
            return False
        m = self.regex.match(host)
        if not m:
            return False
        for digits, parts in zip(m.groups(), self.ranges):
            num = int(digits)
            ok = False
            for lo, hi, width in parts:
                if lo <= num <= hi and (len(digits) == width if width else str(num) == digits):
                    ok = True
                    break
            if not ok:
                return False
        return True


def check_host_name(name):
    if name.lower() == "all" or not _HOST_RE.match(name):
        raise ValueError("%s is not a valid host name" % excerpt(name))
    _check_not_keyword(name, "host name")


def check_host_resource(item):
    if not _RES_ITEM_RE.match(item):
        raise ValueError("%s is not a valid RESOURCES item (name, !name or name=value)" % excerpt(item))


def _base(item):
    return item.lstrip("!").split("=", 1)[0]


def _apply_resources(items, resources, state):
    """New item list for one host row."""
    items = list(items)
    for want in resources:
        base = _base(want)
        idx = [i for i, it in enumerate(items) if _base(it) == base]
        if state == "absent":
            items = [it for it in items if _base(it) != base]
        elif not idx:
            items.append(want)
        elif items[idx[0]] != want or len(idx) > 1:
            items[idx[0]] = want
            drop = set(idx[1:])
            items = [it for i, it in enumerate(items) if i not in drop]
    return items


@gc_paused
def edit_hosts(text, hosts, resources, state="present", create_missing=False,
               model=None, host_type=None, server=None):
    """Add (``present``) or remove (``absent``) RESOURCES items on Host rows.

    ``hosts``: list of host names, or ``"all"`` for every row.  A host covered
    by a range row is edited on that row.  With ``create_missing`` a host that
    has no row gets one (model/type ``!``, server ``1``, other columns empty,
    unless given).  Returns ``(new_text, changed_hosts, created_hosts,
    warnings)``; changed_hosts are the HOSTNAME cells of the rows edited or
    added, in file order.
    """
    for item in resources:
        check_host_resource(item)
    every = hosts == "all" or hosts == ["all"]
    if not every:
        for h in hosts:
            check_host_name(h)
    doc = parse_document(text, shapes=CLUSTER_SHAPES, default_shape="auto")
    warnings = list(doc.warnings)
    sections = [s for s in doc.find("host") if s.header is not None]
    if not sections:
        raise LsfSyntaxError("no Host section with a header", None)
    section = sections[0]
    if len(sections) > 1 or len(doc.find("host")) > 1:
        warnings.append("more than one Host section; only the one at line %d is edited" % section.lineno)
    for col in ("hostname", "resources"):
        if col not in section.column_index:
            raise LsfSyntaxError("the Host header has no %s column" % col.upper(), section.header.lineno)
    name_idx = section.column_index["hostname"]
    res_idx = section.column_index["resources"]

    targets = []  # row indexes, in file order
    created = []
    if every:
        targets = list(range(len(section.rows)))
    else:
        # one pass over the rows, allocating only for rows that matter
        exact = {h.lower(): [] for h in hosts}
        patterned = []
        for i, row in enumerate(section.rows):
            cell = row.cells[name_idx]
            hits = exact.get(cell.lower())
            if hits is not None:
                hits.append(i)
            elif "[" in cell:
                patterned.append((i, HostPattern(cell)))
        chosen = set()
        for host in hosts:
            found = list(exact[host.lower()])
            if not found:
                found = [i for i, pat in patterned if pat.matches(host)]
            if len(found) > 1:
                warnings.append("host %s is on %d rows (lines %s); all are edited"
                                % (host, len(found), ", ".join(str(section.rows[i].lineno) for i in found)))
            if found:
                chosen.update(found)
            elif create_missing and state == "present":
                if host.lower() not in (c.lower() for c in created):
                    created.append(host)
            else:
                warnings.append("host %s has no row in the Host section; nothing done for it" % host)
        targets = sorted(chosen)

    changed = []
    for i in targets:
        row = section.rows[i]
        items = token_value(row.cells[res_idx]).split()
        new_items = _apply_resources(items, resources, state)
        if new_items == items:
            continue
        raws = row.raws()
        raws[res_idx] = "(%s)" % " ".join(new_items)
        doc.set_row(section, row, raws)
        changed.append(row.cells[name_idx])

    if created:
        empty = _empty_style(section, None)
        defaults = {"model": model or "!", "type": host_type or "!", "server": str(server) if server is not None else "1"}
        items = _apply_resources([], resources, state)
        for host in created:
            raws = []
            for col in section.columns:
                key = col.lower()
                if key == "hostname":
                    raws.append(host)
                elif key == "resources":
                    raws.append("(%s)" % " ".join(items))
                else:
                    raws.append(defaults.get(key, empty))
            doc.add_row(section, raws)
            changed.append(host)
    return doc.render(), changed, created, warnings
