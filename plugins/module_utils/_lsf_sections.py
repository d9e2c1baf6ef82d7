# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
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

Interface (for this collection's plugins)::

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

Helpers the editors share: ``gc_paused`` (a decorator), ``align_rows``,
``empty_style``, ``reparse_check`` and ``check_not_keyword``; the shapes of
the edited files, ``SHARED_SHAPES`` and ``CLUSTER_SHAPES``.  The editors built
on the model: ``_lsf_shared_edit`` (lsf.shared), ``_lsf_cluster_edit``
(lsf.cluster.<name>) and ``_lsf_applications`` (lsb.applications).
"""

from __future__ import annotations

import functools
import gc

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
    def with_eol(self, texts):
        """``texts`` as complete lines, each ended the way the file ends its lines."""
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
        self.insert_lines(section.insert_index, self.with_eol([text]))

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
        self.insert_lines(section.insert_index, self.with_eol([text]))
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

def empty_style(section, column_key):
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


def align_rows(rows, indent=""):
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


def reparse_check(text, **kwargs):
    """The result of every edit must parse again; a failure here is a bug in
    the editor, reported instead of writing a broken file."""
    try:
        return parse_document(text, **kwargs)
    except LsfSyntaxError as err:  # pragma: no cover - defensive
        raise LsfSyntaxError("internal error, the edited text does not parse: %s" % err.msg, err.line)


def check_not_keyword(name, what):
    """A row's first cell ``Begin``/``End`` (any case) reads as a section line."""
    if name.lower() in ("begin", "end"):
        word = name.capitalize()
        raise ValueError("%s %r would be read as a%s %s line and break the section"
                         % (what, name, "n" if word == "End" else "", word))


# The section shapes of the files the editors change.
SHARED_SHAPES = {"cluster": "table", "hosttype": "table", "hostmodel": "table", "resource": "table"}
CLUSTER_SHAPES = {
    "host": "table", "resourcemap": "table", "remoteclusters": "table",
    "parameters": "horizontal", "clusteradmins": "horizontal",
}
