# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless edits of the containers-common TOML files (podman, buildah, skopeo).

``/etc/containers/storage.conf``, ``containers.conf`` and ``registries.conf``
(v2) are TOML.  This model edits the subset those files use and leaves every
line it does not touch byte-identical (comments, blank lines, order)::

    file      := line*
    line      := blank | comment | header | array-header | pair
    header    := "[" dotted-name "]"            (a table, e.g. [storage.options.overlay])
    array-hdr := "[[" dotted-name "]]"          (one entry of an array of tables, e.g. [[registry]])
    pair      := key "=" value [comment]       (key: bare or quoted)
    value     := basic-string | literal-string | integer | true | false | array
    array     := "[" (value ("," value)* ","?)? "]"   (may span lines; comments between items)

Pairs before the first header belong to the root table, named ``""`` here.
A key set in a table that the file has is written after that table's last
pair; a table the file lacks is appended at the end.  A key whose current
value already equals the wanted one (compared as values, not as text: ``'a'``
and ``"a"`` are equal) is no change.  ``None`` removes a key.

Arrays of tables are addressed by one identifying key (``[[registry]]`` by
``location``): the entry whose identifying key has the value asked for is
edited in place, or a new entry is appended.

A line this grammar does not cover (inline tables, dates, floats, multi-line
strings) is refused with its line number only when the edit has to read the
value on it; other lines pass through untouched.
"""

from __future__ import annotations

import json
import re

__all__ = ["ContainersConfError", "parse", "render_value", "set_keys", "set_array_entries", "get_value"]

_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\s*(#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]\s*(#.*)?$")
_PAIR = re.compile(r"^(\s*)(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+)\s*=\s*(.*)$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")


class ContainersConfError(ValueError):
    """A value the model cannot read or write; ``line`` is 1-based or None."""

    def __init__(self, msg, line=None):
        self.msg = msg
        self.line = line
        super().__init__(("line %d: " % line if line else "") + msg)


def _table_name(raw):
    return ".".join(part.strip().strip("\"'") for part in raw.split("."))


def _key_name(raw):
    return raw[1:-1] if raw[:1] in "\"'" else raw


def _scan_value(text, lineno):
    """Parse one TOML value at the start of ``text``; return (value, rest)."""
    text = text.lstrip()
    if text.startswith('"'):
        i, out = 1, []
        while i < len(text):
            ch = text[i]
            if ch == "\\":
                try:
                    out.append(json.loads('"' + text[i:i + 2] + '"') if text[i + 1] != "u"
                               else json.loads('"' + text[i:i + 6] + '"'))
                except (ValueError, IndexError):
                    raise ContainersConfError("bad escape in a string", lineno)
                i += 6 if text[i + 1] == "u" else 2
                continue
            if ch == '"':
                return "".join(out), text[i + 1:]
            out.append(ch)
            i += 1
        raise ContainersConfError("unterminated string", lineno)
    if text.startswith("'"):
        end = text.find("'", 1)
        if end < 0:
            raise ContainersConfError("unterminated string", lineno)
        return text[1:end], text[end + 1:]
    if text.startswith("["):
        items, rest = [], text[1:]
        while True:
            rest = _strip_comment_ws(rest)
            if rest.startswith("]"):
                return items, rest[1:]
            if not rest:
                raise ContainersConfError("unterminated array", lineno)
            value, rest = _scan_value(rest, lineno)
            items.append(value)
            rest = _strip_comment_ws(rest)
            if rest.startswith(","):
                rest = rest[1:]
            elif not rest.startswith("]"):
                raise ContainersConfError("expected ',' or ']' in an array", lineno)
    match = re.match(r"(true|false|[+-]?[0-9][0-9_]*)(?=\s|#|,|\]|$)", text)
    if not match:
        raise ContainersConfError("unsupported value %r" % text.strip()[:40], lineno)
    word = match.group(1)
    value = {"true": True, "false": False}.get(word)
    if value is None:
        value = int(word.replace("_", ""))
    return value, text[match.end():]


def _strip_comment_ws(text):
    """Skip blanks, newlines and comments between array items."""
    while True:
        text = text.lstrip()
        if text.startswith("#"):
            nl = text.find("\n")
            text = "" if nl < 0 else text[nl + 1:]
            continue
        return text


def _array_open(text):
    """True when a value starting an array is not closed on this line (outside strings and comments)."""
    depth, quote = 0, None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = nl
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        i += 1
    return depth > 0


class _Pair:
    def __init__(self, key, start, end, raw_value, indent):
        self.key = key
        self.start = start  # index of the first line
        self.end = end  # index after the last line
        self.raw_value = raw_value
        self.indent = indent

    def value(self):
        value, rest = _scan_value(self.raw_value, self.start + 1)
        rest = rest.strip()
        if rest and not rest.startswith("#"):
            raise ContainersConfError("unexpected text after the value of %s" % self.key, self.start + 1)
        return value


class _Table:
    def __init__(self, name, header, array):
        self.name = name
        self.header = header  # line index of the header, -1 for the root table
        self.array = array
        self.pairs = []

    def last_line(self):
        return self.pairs[-1].end if self.pairs else self.header + 1


def parse(text):
    """Split ``text`` into lines and tables; return (lines, tables)."""
    lines = text.splitlines(True)
    tables = [_Table("", -1, False)]
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        match = _ARRAY_HEADER.match(line)
        if match:
            tables.append(_Table(_table_name(match.group(1)), i, True))
            i += 1
            continue
        match = _HEADER.match(line)
        if match:
            tables.append(_Table(_table_name(match.group(1)), i, False))
            i += 1
            continue
        match = _PAIR.match(line.rstrip("\r\n"))
        if not match:
            i += 1  # outside the grammar: passed through, never read
            continue
        raw = match.group(3)
        start = i
        if _array_open(raw):
            while i + 1 < len(lines) and _array_open(raw):
                i += 1
                raw += "\n" + lines[i].rstrip("\r\n")
        tables[-1].pairs.append(_Pair(_key_name(match.group(2)), start, i + 1, raw, match.group(1)))
        i += 1
    return lines, tables


def render_value(value):
    """Python value -> TOML text (strings as basic strings, JSON escapes are valid TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if any(ord(ch) < 32 and ch != "\t" for ch in value):
            raise ContainersConfError("control characters are not allowed in a value: %r" % value)
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    raise ContainersConfError("unsupported value type %s (strings, integers, booleans, lists)" % type(value).__name__)


def _render_key(key):
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _eol(lines):
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
    return "\n"


def _apply(lines, table, wanted, changed, prefix, nl):
    """Edit ``table`` in ``lines`` in place; return a list of (index, new lines) insertions."""
    replacements = {}
    by_key = {}
    for pair in table.pairs:
        by_key[pair.key] = pair  # duplicate keys are invalid TOML; the last one is edited
    inserts = []
    for key, value in wanted.items():
        pair = by_key.get(key)
        if value is None:
            if pair is not None:
                replacements[pair.start] = (pair.end, [])
                changed.append(prefix + key)
            continue
        text = render_value(value)
        if pair is not None:
            if pair.value() == (list(value) if isinstance(value, tuple) else value):
                continue
            replacements[pair.start] = (pair.end, ["%s%s = %s%s" % (pair.indent, _render_key(key), text, nl)])
        else:
            inserts.append("%s = %s%s" % (_render_key(key), text, nl))
        changed.append(prefix + key)
    return replacements, inserts


def _rebuild(lines, replacements, insertions):
    out = []
    i = 0
    while i <= len(lines):
        out.extend(insertions.get(i, []))
        if i == len(lines):
            break
        if i in replacements:
            end, new = replacements[i]
            out.extend(new)
            i = end
            continue
        out.append(lines[i])
        i += 1
    return "".join(out)


def _validate_name(name, what):
    if not name or not re.match(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$", name):
        raise ContainersConfError("%s %r is not a plain dotted TOML name" % (what, name))


def set_keys(text, settings):
    """Set (or, with ``None``, remove) keys per table: ``{"storage": {"driver": "overlay"}}``.

    Returns ``(new_text, changed)`` where ``changed`` lists ``table.key`` names.
    Arrays of tables are not addressed here (see :func:`set_array_entries`).
    """
    text = text or ""
    lines, tables = parse(text)
    nl = _eol(lines)
    changed = []
    replacements, insertions, appended = {}, {}, []
    for name, wanted in settings.items():
        if name:
            _validate_name(name, "table")
        for key in wanted:
            if not key or not isinstance(key, str):
                raise ContainersConfError("empty key in table %r" % name)
        found = [t for t in tables if t.name == name and not t.array]
        prefix = (name + ".") if name else ""
        if found:
            table = found[-1]
            rep, ins = _apply(lines, table, wanted, changed, prefix, nl)
            replacements.update(rep)
            if ins:
                insertions.setdefault(table.last_line(), []).extend(ins)
            continue
        new = {k: v for k, v in wanted.items() if v is not None}
        if not new:
            continue
        if not name:
            # Root keys must come before the first header.
            first = next((t.header for t in tables if t.header >= 0), len(lines))
            insertions.setdefault(first, []).extend(
                "%s = %s%s" % (_render_key(k), render_value(v), nl) for k, v in new.items())
        else:
            block = ["[%s]%s" % (name, nl)] + ["%s = %s%s" % (_render_key(k), render_value(v), nl) for k, v in new.items()]
            appended.append(block)
        changed.extend(prefix + k for k in new)
    out = _rebuild(lines, replacements, insertions)
    for block in appended:
        if out and not out.endswith("\n"):
            out += nl
        if out.strip():
            out += nl
        out += "".join(block)
    return out, changed


def set_array_entries(text, name, id_key, entries):
    """Make each entry of the array of tables ``name`` hold its keys.

    ``entries`` are dicts that all carry ``id_key``; the entry whose ``id_key``
    equals that value is edited (other keys of it are kept), a missing one is
    appended.  A key given as ``None`` is removed from the entry.
    Returns ``(new_text, changed)`` with ``name[<id>].key`` names.
    """
    _validate_name(name, "array of tables")
    text = text or ""
    lines, tables = parse(text)
    nl = _eol(lines)
    changed = []
    replacements, insertions, appended = {}, {}, []
    for entry in entries:
        ident = entry.get(id_key)
        if not isinstance(ident, str) or not ident:
            raise ContainersConfError("every %s entry needs a non-empty %s" % (name, id_key))
        prefix = "%s[%s]." % (name, ident)
        match = None
        for table in tables:
            if table.array and table.name == name:
                for pair in table.pairs:
                    if pair.key == id_key and pair.value() == ident:
                        match = table
        wanted = {k: v for k, v in entry.items() if k != id_key}
        if match is not None:
            rep, ins = _apply(lines, match, wanted, changed, prefix, nl)
            replacements.update(rep)
            if ins:
                insertions.setdefault(match.last_line(), []).extend(ins)
            continue
        new = [(id_key, ident)] + [(k, v) for k, v in wanted.items() if v is not None]
        appended.append(["[[%s]]%s" % (name, nl)] + ["%s = %s%s" % (_render_key(k), render_value(v), nl) for k, v in new])
        changed.extend(prefix + k for k, _value in new)
    out = _rebuild(lines, replacements, insertions)
    for block in appended:
        if out and not out.endswith("\n"):
            out += nl
        if out.strip():
            out += nl
        out += "".join(block)
    return out, changed


def get_value(text, table, key):
    """The value of ``key`` in ``table`` (last definition), or None."""
    tables = parse(text or "")[1]
    value = None
    for t in tables:
        if t.name == table and not t.array:
            for pair in t.pairs:
                if pair.key == key:
                    value = pair.value()
    return value
