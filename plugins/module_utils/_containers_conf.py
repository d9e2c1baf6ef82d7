# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Lossless edits of the containers-common TOML files (podman, buildah, skopeo).

``/etc/containers/storage.conf``, ``containers.conf`` and ``registries.conf``
are TOML 1.0.  The whole file must be TOML a reader accepts before anything is
edited (:func:`check_toml`: Python's ``tomllib``, or ``tomli``, where the node
has one; else the strict reading of the subset below), and the edited text is
read back the same way before it is returned.  A file that fails is refused
with ``line`` and ``column``.  Lines are split at ``\\n`` only (a raw U+2028
inside a string is no line break).  The model edits this line structure::

    file      := line*
    line      := blank | comment | header | array-header | pair
    header    := "[" key "]"                    (a table, e.g. [storage.options.overlay])
    array-hdr := "[[" key "]]"                  (one entry of an array of tables, e.g. [[registry]])
    pair      := key "=" value [comment]       (a value may span lines: arrays, inline tables,
                                                multi-line strings)
    key       := simple ("." simple)*           (simple: bare, "basic" or 'literal')

Pairs before the first header belong to the root table.  A key set in a table
that the file has is written after that table's last pair; a table the file
lacks is appended at the end.  A key whose current value already equals the
wanted one (compared as TOML reads them: ``'a'``, ``"a"`` and ``"\\u0061"``
are equal) is no change.  ``None`` removes a key.  Every line the edit does
not touch stays byte-identical.

Strings are written as basic strings with TOML's escapes; a character that
would break a line for some reader or that TOML forbids raw (C0 and C1
controls other than tab, DEL, U+2028, U+2029, lone surrogates) is refused,
in values and keys alike.

Arrays of tables are addressed by one identifying key (``[[registry]]`` by
``location``).  ``registries.conf`` has two syntaxes that the containers image
library refuses to mix (see :func:`set_registries`).
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    import tomllib as _toml
except ImportError:  # pragma: no cover - nodes with Python 3.9 / 3.10
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

__all__ = ["ContainersConfError", "check_toml", "get_value", "parse", "render_value", "set_array_entries",
           "set_keys", "set_registries"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_\-]+")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")
_LOCATION = re.compile(r"^[A-Za-z0-9._\-]+(:[0-9]+)?(/[A-Za-z0-9._\-/]+)?$")
_TOML_ERROR_AT = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$", re.S)
_BASIC_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_WRITE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
# v1 registries.conf: [registries.search] / [registries.insecure] / [registries.block], each `registries = [...]`.
_V1_TABLES = ("search", "insecure", "block")
# Top-level keys of the v2 syntax (containers/image sysregistriesv2).
_V2_KEYS = ("registry", "unqualified-search-registries", "credential-helpers", "short-name-mode",
            "additional-layer-store-auth-helper", "aliases")


class ContainersConfError(ValueError):
    """A file or value the model cannot read or write; ``line`` and ``column`` are 1-based or None."""

    def __init__(self, msg, line=None, column=None):
        self.msg = msg
        self.line = line
        self.column = column
        where = ""
        if line:
            where = "line %d: " % line if not column else "line %d, column %d: " % (line, column)
        super().__init__(where + msg)


def _forbidden(ch):
    code = ord(ch)
    return ((code < 0x20 and ch != "\t") or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029)
            or 0xD800 <= code <= 0xDFFF)


def _render_string(value, what):
    for ch in value:
        if _forbidden(ch):
            raise ContainersConfError("%s %r holds the character \\u%04x (a control character, line separator or "
                                      "lone surrogate), which is refused" % (what, value, ord(ch)))
    return '"' + "".join(_WRITE_ESCAPES.get(ch, ch) for ch in value) + '"'


def render_value(value):
    """Python value -> TOML text (strings as basic strings with TOML's own escapes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -2 ** 63 <= value < 2 ** 63:
            raise ContainersConfError("an integer of %d bits is outside TOML's 64-bit range" % value.bit_length())
        return str(value)
    if isinstance(value, str):
        return _render_string(value, "value")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    raise ContainersConfError("unsupported value type %s (strings, integers, booleans, lists)" % type(value).__name__)


def _render_key(key):
    if not isinstance(key, str) or not key:
        raise ContainersConfError("empty key")
    return key if _BARE_KEY.fullmatch(key) else _render_string(key, "key")


# --- reading -----------------------------------------------------------------------------------------


def _split_lines(text):
    """Lines with their ``\\n`` (``\\r\\n`` kept); TOML breaks lines at ``\\n`` only."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _scan_basic(text, i, lineno):
    """Read a basic string whose opening quote is at ``text[i]``; return (value, index after it)."""
    out = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\":
            nxt = text[i + 1:i + 2]
            if nxt in _BASIC_ESCAPES:
                out.append(_BASIC_ESCAPES[nxt])
                i += 2
                continue
            width = {"u": 4, "U": 8}.get(nxt)
            digits = text[i + 2:i + 2 + width] if width else ""
            if not width or not re.fullmatch(r"[0-9A-Fa-f]+", digits) or len(digits) != width:
                raise ContainersConfError("bad escape %r in a string" % text[i:i + 2], lineno)
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise ContainersConfError("escape %r is no Unicode scalar value" % text[i:i + 2 + width], lineno)
            out.append(chr(code))
            i += 2 + width
            continue
        if ch == "\n" or (_forbidden(ch) and ch not in "\x85\u2028\u2029"):
            break
        out.append(ch)
        i += 1
    raise ContainersConfError("unterminated string", lineno)


def _scan_key(text, i, lineno):
    """Read a dotted key from ``text[i:]``; return (tuple of parts, index after it)."""
    parts = []
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if text[i:i + 1] == '"':
            part, i = _scan_basic(text, i, lineno)
        elif text[i:i + 1] == "'":
            end = text.find("'", i + 1)
            if end < 0 or "\n" in text[i:end]:
                raise ContainersConfError("unterminated key", lineno)
            part, i = text[i + 1:end], end + 1
        else:
            match = _BARE_KEY.match(text, i)
            if not match:
                raise ContainersConfError("expected a key", lineno)
            part, i = match.group(0), match.end()
        parts.append(part)
        while i < len(text) and text[i] in " \t":
            i += 1
        if text[i:i + 1] != ".":
            return tuple(parts), i
        i += 1


def _multiline_end(text, i):
    """Index just past the multi-line string that opens at ``text[i]`` (its three closing quotes and up to two
    more of the same quote, which close it too), or None when it does not close."""
    end = text.find(text[i:i + 3], i + 3)
    if end < 0:
        return None
    i = end + 3
    while text[i:i + 1] == text[end]:
        i += 1
    return i


def _basic_end(text, i):
    """Index of the quote that closes the one-line basic string opening at ``text[i]`` (a backslash escapes the
    character after it), or of the line break or the text's end where it does not close."""
    i += 1
    while i < len(text) and text[i] not in '"\n':
        i += 2 if text[i] == "\\" else 1
    return i


def _value_open(text):
    """True while a value is not finished on the text read so far: an array or inline table still open, or a
    multi-line string not yet closed (outside strings and comments)."""
    depth, i = 0, 0
    while i < len(text):
        if text.startswith('"""', i) or text.startswith("'''", i):
            i = _multiline_end(text, i)
            if i is None:
                return True
            continue
        ch = text[i]
        if ch == '"':
            i = _basic_end(text, i)
        elif ch == "'":
            end = text.find("'", i + 1)
            i = len(text) if end < 0 else end
        elif ch == "#":
            end = text.find("\n", i)
            if end < 0:
                break
            i = end
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth > 0


def _scan_value(text, lineno):
    """The subset reader used where neither ``tomllib`` nor ``tomli`` is installed: strings (basic and
    literal, one line), integers, booleans and arrays of them.  Return (value, rest)."""
    text = _skip_blanks(text)
    if text.startswith('"""') or text.startswith("'''"):
        raise ContainersConfError("multi-line strings need Python 3.11 (tomllib) or tomli on the node", lineno)
    if text.startswith('"'):
        value, end = _scan_basic(text, 0, lineno)
        return value, text[end:]
    if text.startswith("'"):
        end = text.find("'", 1)
        if end < 0 or "\n" in text[:end]:
            raise ContainersConfError("unterminated string", lineno)
        return text[1:end], text[end + 1:]
    if text.startswith("["):
        items, rest = [], text[1:]
        while True:
            rest = _skip_blanks(rest)
            if rest.startswith("]"):
                return items, rest[1:]
            if not rest:
                raise ContainersConfError("unterminated array", lineno)
            value, rest = _scan_value(rest, lineno)
            items.append(value)
            rest = _skip_blanks(rest)
            if rest.startswith(","):
                rest = rest[1:]
            elif not rest.startswith("]"):
                raise ContainersConfError("expected ',' or ']' in an array", lineno)
    match = re.match(r"(true|false|[+-]?(?:0|[1-9](?:_?[0-9])*))(?=[ \t#,\]\r\n]|$)", text)
    if not match:
        raise ContainersConfError("cannot read the value %r without Python 3.11 (tomllib) or tomli on the node"
                                  % text.strip()[:40], lineno)
    word = match.group(1)
    value = {"true": True, "false": False}.get(word)
    if value is None:
        value = int(word.replace("_", ""))
    return value, text[match.end():]


def _skip_blanks(text):
    """Skip blanks, line breaks and comments (between array items)."""
    while True:
        text = text.lstrip(" \t\r\n")
        if text.startswith("#"):
            nl = text.find("\n")
            text = "" if nl < 0 else text[nl + 1:]
            continue
        return text


class _Pair:
    def __init__(self, key, start, end, raw_value, indent, value_at=0):
        self.key = key  # tuple of key parts
        self.value_at = value_at  # column (0-based) of the first line where the value's text starts
        self.start = start  # index of the first line
        self.end = end  # index after the last line
        self.raw_value = raw_value
        self.indent = indent

    def value(self):
        if _toml is not None:
            try:
                return _toml.loads("v = " + self.raw_value)["v"]
            except _toml.TOMLDecodeError as err:
                raise ContainersConfError("cannot read the value of %s: %s" % (".".join(self.key), err), self.start + 1)
        value, rest = _scan_value(self.raw_value, self.start + 1)
        rest = rest.strip(" \t\r")
        if rest and not rest.startswith("#"):
            raise ContainersConfError("unexpected text after the value of %s" % ".".join(self.key), self.start + 1)
        return value


class _Table:
    def __init__(self, name, header, array):
        self.name = name  # tuple of key parts; () is the root table
        self.header = header  # line index of the header, -1 for the root table
        self.array = array
        self.pairs = []

    def last_line(self):
        return self.pairs[-1].end if self.pairs else self.header + 1


def _header(line, lineno):
    """(name, is_array) of a header line, or None when the line is no header."""
    stripped = line.lstrip(" \t")
    if not stripped.startswith("["):
        return None
    array = stripped.startswith("[[")
    name, i = _scan_key(stripped, 2 if array else 1, lineno)
    close = "]]" if array else "]"
    if not stripped.startswith(close, i):
        raise ContainersConfError("expected %r to close the table header" % close, lineno)
    rest = stripped[i + len(close):].strip(" \t\r\n")
    if rest and not rest.startswith("#"):
        raise ContainersConfError("unexpected text after the table header", lineno)
    return name, array


def parse(text):
    """Split ``text`` into lines and tables; return (lines, tables).  Strict: a line that is neither blank, a
    comment, a header nor a pair is an error (the file has passed :func:`check_toml` first)."""
    lines = _split_lines(text)
    tables = [_Table((), -1, False)]
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip(" \t\r\n")
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        header = _header(line, i + 1)
        if header:
            tables.append(_Table(header[0], i, header[1]))
            i += 1
            continue
        body = line.rstrip("\r\n")
        indent = body[:len(body) - len(body.lstrip(" \t"))]
        key, at = _scan_key(body, len(indent), i + 1)
        if body[at:at + 1] != "=":
            raise ContainersConfError("expected '=' after the key %s" % ".".join(key), i + 1)
        raw = body[at + 1:]
        start = i
        while _value_open(raw):
            if i + 1 >= len(lines):
                raise ContainersConfError("the value of %s is not closed" % ".".join(key), start + 1)
            i += 1
            raw += "\n" + lines[i].rstrip("\r\n")
        tables[-1].pairs.append(_Pair(key, start, i + 1, raw, indent, at + 1))
        i += 1
    return lines, tables


def _document(text):
    """The file as TOML reads it (a dict), for the subset reader: nested tables and arrays of tables."""
    lines, tables = parse(text)
    root = {}
    seen_tables, seen_keys = set(), set()
    for table in tables:
        node = root
        for n, part in enumerate(table.name):
            last = n == len(table.name) - 1
            if last and table.array:
                node = node.setdefault(part, [])
                if not isinstance(node, list):
                    raise ContainersConfError("%s is both a table and an array of tables" % ".".join(table.name),
                                              table.header + 1, 1)
                node.append({})
                node = node[-1]
                break
            node = node.setdefault(part, {})
            if isinstance(node, list):
                node = node[-1]
            if not isinstance(node, dict):
                raise ContainersConfError("%s is a value and a table" % ".".join(table.name[:n + 1]),
                                          table.header + 1, 1)
        if not table.array and table.name:
            if table.name in seen_tables:
                raise ContainersConfError("table [%s] defined twice" % ".".join(table.name), table.header + 1, 1)
            seen_tables.add(table.name)
        for pair in table.pairs:
            ident = (id(node), pair.key)
            if ident in seen_keys:
                raise ContainersConfError("key %s defined twice" % ".".join(pair.key), pair.start + 1, 1)
            seen_keys.add(ident)
            target = node
            for part in pair.key[:-1]:
                target = target.setdefault(part, {})
            target[pair.key[-1]] = pair.value()
    return root


def _load(text):
    if _toml is not None:
        return _toml.loads(text)
    return _document(text)


def check_toml(text):
    """Raise :class:`ContainersConfError` (with line and column) when ``text`` is not TOML podman can read;
    return the document otherwise."""
    if _toml is not None:
        try:
            return _toml.loads(text)
        except _toml.TOMLDecodeError as err:
            message = str(err)
            match = _TOML_ERROR_AT.match(message)
            if match:
                raise ContainersConfError("not TOML: %s" % match.group(1), int(match.group(2)), int(match.group(3)))
            lines = _split_lines(text) or [""]
            raise ContainersConfError("not TOML: %s at the end of the file" % message.replace(" (at end of document)", ""),
                                      len(lines), len(lines[-1].rstrip("\r\n")) + 1)
    try:
        return _document(text)
    except ContainersConfError as err:
        if err.column is None:
            raise ContainersConfError(err.msg, err.line, 1)
        raise


def _checked_parse(text):
    check_toml(text)
    return parse(text)


def _check_result(new_text, old_text):
    """The edited text must read back as TOML, or nothing is written."""
    if new_text == old_text:
        return
    try:
        check_toml(new_text)
    except ContainersConfError as err:
        raise ContainersConfError("the edit would leave a file TOML readers refuse (%s); nothing was written"
                                  % err) from None


# --- editing -----------------------------------------------------------------------------------------


def _eol(lines):
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
    return "\n"


def _same(current, wanted):
    if isinstance(wanted, tuple):
        wanted = list(wanted)
    if isinstance(current, bool) or isinstance(wanted, bool):
        return type(current) is type(wanted) and current == wanted
    if isinstance(current, list) and isinstance(wanted, list):
        return len(current) == len(wanted) and all(_same(c, w) for c, w in zip(current, wanted))
    return type(current) is type(wanted) and current == wanted


def _last_item_end(text, i):
    """Index of the last significant character before the ``]`` that closes the array starting at or after
    ``text[i]`` (the ``[`` itself when the array is empty), skipping blanks, line breaks and comments; None
    when the array does not close."""
    depth, last = 0, None
    while i < len(text):
        if text.startswith('"""', i) or text.startswith("'''", i):
            i = _multiline_end(text, i)
            if i is None:
                return None
            last = i - 1
            continue
        ch = text[i]
        if ch == '"':
            i = _basic_end(text, i)
            last = i
        elif ch == "'":
            i = text.find("'", i + 1)
            if i < 0:
                return None
            last = i
        elif ch == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return last
            last = i
        elif not ch.isspace():
            depth += ch in "[{"
            last = i
        i += 1
    return None


def _append_in_place(lines, pair, items):
    """The pair's lines with ``items`` (rendered values) added before the array's closing bracket, so the
    site's layout and the comments inside the array stay; None when that cannot be done."""
    text = "".join(lines[pair.start:pair.end])
    last = _last_item_end(text, pair.value_at)
    if last is None:
        return None
    joined = ", ".join(items)
    if text[last] == "[":
        insert = joined
    elif text[last] == ",":
        insert = " " + joined + ","
    else:
        insert = ", " + joined
    return _split_lines(text[:last + 1] + insert + text[last + 1:])


def _value_reads_as(new_lines, pair, value):
    """Whether the pair's value, as ``new_lines`` hold it, reads back as ``value`` (the value starts where it
    started: items are only inserted after its opening bracket)."""
    start = pair.value_at
    raw = "\n".join([new_lines[0].rstrip("\r\n")[start:]] + [line.rstrip("\r\n") for line in new_lines[1:]])
    try:
        return _same(_Pair(pair.key, pair.start, pair.end, raw, pair.indent).value(), value)
    except ContainersConfError:
        return False


def _apply(table, wanted, changed, prefix, nl, lines=None):
    """Edits of ``table``: return (replacements {line: (end, new lines)}, lines to insert after its last pair).

    A list that only grows at its end keeps its lines: the new items go before its closing bracket."""
    replacements = {}
    by_key = {}
    for pair in table.pairs:
        by_key[pair.key] = pair
    inserts = []
    for key, value in wanted.items():
        pair = by_key.get((key,))
        if value is None:
            if pair is not None:
                replacements[pair.start] = (pair.end, [])
                changed.append(prefix + key)
            continue
        text = render_value(value)
        if pair is not None:
            current = pair.value()
            if _same(current, value):
                continue
            grown = None
            if (lines is not None and isinstance(current, list) and isinstance(value, (list, tuple))
                    and len(value) > len(current) and _same(current, list(value)[:len(current)])):
                grown = _append_in_place(lines, pair, [render_value(v) for v in value[len(current):]])
                if grown is not None and not _value_reads_as(grown, pair, value):
                    grown = None
            replacements[pair.start] = (pair.end, grown or ["%s%s = %s%s" % (pair.indent, _render_key(key), text, nl)])
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


def _append_blocks(out, blocks, nl):
    for block in blocks:
        if out and not out.endswith("\n"):
            out += nl
        if out.strip():
            out += nl
        out += "".join(block)
    return out


def _validate_name(name, what):
    if not name or not _PLAIN_NAME.match(name):
        raise ContainersConfError("%s %r is not a plain dotted TOML name" % (what, name))


def _validate_settings(settings):
    for name, wanted in settings.items():
        if name:
            _validate_name(name, "table")
        for key, value in wanted.items():
            _render_key(key)
            if value is not None:
                render_value(value)


def set_keys(text, settings):
    """Set (or, with ``None``, remove) keys per table: ``{"storage": {"driver": "overlay"}}``.

    Returns ``(new_text, changed)`` where ``changed`` lists ``table.key`` names.
    Arrays of tables are not addressed here (see :func:`set_array_entries`).
    """
    text = text or ""
    _validate_settings(settings)
    lines, tables = _checked_parse(text)
    nl = _eol(lines)
    changed = []
    replacements, insertions, appended = {}, {}, []
    for name, wanted in settings.items():
        path = tuple(name.split(".")) if name else ()
        found = [t for t in tables if t.name == path and not t.array]
        prefix = (name + ".") if name else ""
        if found:
            rep, ins = _apply(found[-1], wanted, changed, prefix, nl, lines)
            replacements.update(rep)
            if ins:
                insertions.setdefault(found[-1].last_line(), []).extend(ins)
            continue
        new = {k: v for k, v in wanted.items() if v is not None}
        if not new:
            continue
        rendered = ["%s = %s%s" % (_render_key(k), render_value(v), nl) for k, v in new.items()]
        appended.append(["[%s]%s" % (name, nl)] + rendered)
        changed.extend(prefix + k for k in new)
    out = _append_blocks(_rebuild(lines, replacements, insertions), appended, nl)
    _check_result(out, text)
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
    for entry in entries:
        _validate_settings({"": entry})
    lines, tables = _checked_parse(text)
    nl = _eol(lines)
    path = tuple(name.split("."))
    changed = []
    replacements, insertions, appended = {}, {}, []
    for entry in entries:
        ident = entry.get(id_key)
        if not isinstance(ident, str) or not ident:
            raise ContainersConfError("every %s entry needs a non-empty %s" % (name, id_key))
        prefix = "%s[%s]." % (name, ident)
        match = None
        for table in tables:
            if table.array and table.name == path:
                for pair in table.pairs:
                    if pair.key == (id_key,) and _same(pair.value(), ident):
                        match = table
        wanted = {k: v for k, v in entry.items() if k != id_key}
        if match is not None:
            rep, ins = _apply(match, wanted, changed, prefix, nl, lines)
            replacements.update(rep)
            if ins:
                insertions.setdefault(match.last_line(), []).extend(ins)
            continue
        new = [(id_key, ident)] + [(k, v) for k, v in wanted.items() if v is not None]
        appended.append(["[[%s]]%s" % (name, nl)] + ["%s = %s%s" % (_render_key(k), render_value(v), nl) for k, v in new])
        changed.extend(prefix + k for k, _value in new)
    out = _append_blocks(_rebuild(lines, replacements, insertions), appended, nl)
    _check_result(out, text)
    return out, changed


def get_value(text, table, key):
    """The value of ``key`` in ``table`` (dotted name, ``""`` for the root), or None."""
    node = check_toml(text or "")
    for part in (table.split(".") if table else []):
        node = node.get(part) if isinstance(node, dict) else None
    return node.get(key) if isinstance(node, dict) else None


# --- registries.conf ---------------------------------------------------------------------------------


def registries_syntax(doc):
    """``"v1"``, ``"v2"``, ``"mixed"`` or ``None`` (neither) for a registries.conf document.

    containers/image reads both syntaxes but refuses a file that sets fields of both ("mixing
    sysregistry v1/v2 is not supported"); a v1 field counts even with an empty list, as its TOML
    decoder sees it."""
    v1_tables = doc.get("registries") if isinstance(doc.get("registries"), dict) else {}
    v1 = any(isinstance(v1_tables.get(t), dict) and "registries" in v1_tables[t] for t in _V1_TABLES)
    v2 = any(key in doc for key in _V2_KEYS)
    if v1 and v2:
        return "mixed"
    return "v1" if v1 else ("v2" if v2 else None)


def _v1_list(doc, table):
    value = doc.get("registries", {}).get(table, {}).get("registries")
    return list(value) if isinstance(value, list) else None


def _norm(location):
    # containers/image trims trailing slashes of a location before comparing.
    return location.rstrip("/") if isinstance(location, str) else location


def _check_location(location):
    if not isinstance(location, str) or not _LOCATION.match(location):
        raise ContainersConfError("registry location %r is not host[:port][/namespace] (no scheme, blank or "
                                  "control character)" % (location,))


def _convert_v1(text, doc):
    """The whole file in the v2 syntax: the v1 `registries` keys go (their tables too when nothing else is
    in them; comments stay), their content becomes `unqualified-search-registries` and [[registry]] entries,
    in the order containers/image converts them (blocked first, then insecure)."""
    lines, tables = parse(text)
    nl = _eol(lines)
    replacements = {}
    for table in tables:
        if table.array or len(table.name) != 2 or table.name[0] != "registries" or table.name[1] not in _V1_TABLES:
            continue
        others = [p for p in table.pairs if p.key != ("registries",)]
        for pair in table.pairs:
            if pair.key == ("registries",):
                replacements[pair.start] = (pair.end, [])
        if not others:
            replacements[table.header] = (table.header + 1, [])
    insertions = {}
    search = _v1_list(doc, "search")
    if search is not None:
        first = next((t.header for t in tables if t.header >= 0), len(lines))
        insertions[first] = ["unqualified-search-registries = %s%s" % (render_value(search), nl)]
    out = _rebuild(lines, replacements, insertions)
    entries, order = {}, []
    for table, flag in (("block", "blocked"), ("insecure", "insecure")):
        for location in _v1_list(doc, table) or []:
            location = _norm(location)
            if location not in entries:
                entries[location] = {"location": location}
                order.append(location)
            entries[location][flag] = True
    changed = ["registries.%s.registries" % t for t in _V1_TABLES if _v1_list(doc, t) is not None]
    if order:
        out, _more = set_array_entries(out, "registry", "location", [entries[loc] for loc in order])
    return out, changed


def set_registries(text, entries, syntax="keep", drop_in=False):
    """Make each entry (``location`` and optional ``insecure`` / ``blocked`` booleans) hold in a
    registries.conf, in the file's own syntax.

    * v2 (``[[registry]]`` tables), an empty file or a new one: the ``[[registry]]`` entry whose ``location``
      matches is edited or appended (:func:`set_array_entries`).
    * v1 (``[registries.insecure]`` / ``[registries.block]`` lists): the location is added to or removed
      from those lists, in v1; a missing v1 table is added.
    * ``syntax="v2"`` converts a v1 file whole first (its search, insecure and block lists kept).
    * A file that mixes both is refused, and so is a v1 drop-in (``registries.conf.d/*.conf`` must be v2).

    Returns ``(new_text, changed, written_syntax)``.
    """
    if syntax not in ("keep", "v2"):
        raise ContainersConfError("registries_syntax must be keep or v2, not %r" % (syntax,))
    for entry in entries:
        _check_location(entry.get("location"))
        for flag in ("insecure", "blocked"):
            if entry.get(flag) is not None and not isinstance(entry[flag], bool):
                raise ContainersConfError("%s of %s must be true or false" % (flag, entry["location"]))
    text = text or ""
    doc = check_toml(text)
    found = registries_syntax(doc)
    if found == "mixed":
        raise ContainersConfError("the file mixes the v1 syntax ([registries.search], [registries.insecure], "
                                  "[registries.block]) with the v2 syntax ([[registry]], unqualified-search-"
                                  "registries, ...); podman, buildah and skopeo refuse it. Move its v1 lists "
                                  "into v2 entries (or remove them) first")
    changed = []
    if found == "v1" and (syntax == "v2" or drop_in):
        if syntax != "v2":
            raise ContainersConfError("a drop-in in registries.conf.d must be in the v2 syntax (containers/image "
                                      "refuses v1 there); set registries_syntax: v2 to convert it whole")
        text, changed = _convert_v1(text, doc)
        doc = check_toml(text)
        found = "v2"
    if found != "v1":
        # containers/image picks a [[registry]] by its prefix (the location where none is given): a second
        # entry for a prefix an entry already has would be ambiguous.
        for entry in entries:
            for reg in doc.get("registry", []) if isinstance(doc.get("registry"), list) else []:
                prefix = _norm(reg.get("prefix") or reg.get("location"))
                if prefix == _norm(entry["location"]) and _norm(reg.get("location")) != prefix:
                    raise ContainersConfError("the [[registry]] entry for prefix %s points to location %s; edit that "
                                              "entry by hand rather than add a second one" % (prefix, reg.get("location")))
        out, more = set_array_entries(text, "registry", "location", entries)
        return out, changed + more, "v2"
    lists = {t: _v1_list(doc, t) for t in ("insecure", "block")}
    wanted = {}
    for entry in entries:
        location = _norm(entry["location"])
        for flag, table in (("insecure", "insecure"), ("blocked", "block")):
            value = entry.get(flag)
            if value is None:
                continue
            current = wanted.get(table, lists[table])
            present = any(_norm(item) == location for item in current or [])
            if value and not present:
                wanted[table] = list(current or []) + [location]
            elif not value and present:
                wanted[table] = [item for item in current if _norm(item) != location]
    settings = {"registries." + table: {"registries": value} for table, value in wanted.items()}
    out, more = set_keys(text, settings)
    if registries_syntax(check_toml(out)) != "v1":  # pragma: no cover - a guard, set_keys writes v1 tables only
        raise ContainersConfError("the edit would leave the v1 file in another syntax; nothing was written")
    return out, changed + more, "v1"


def defaults_to_set(text, defaults, replace=None):
    """The part of ``defaults`` (same shape as :func:`set_keys`' settings) that the file needs: a key the file
    has no value for, or whose value is one of ``replace[table][key]`` (values never kept, such as the
    ``vfs`` storage driver).  Every other site value is kept.  Returns ``(settings, kept)`` where ``kept``
    names the ``table.key`` whose site value stays."""
    replace = replace or {}
    _validate_settings(defaults)
    doc = check_toml(text or "")
    settings, kept = {}, []
    for name, wanted in defaults.items():
        node = doc
        for part in (name.split(".") if name else []):
            node = node.get(part) if isinstance(node, dict) else None
        for key, value in wanted.items():
            if value is None:
                continue
            current = node.get(key) if isinstance(node, dict) else None
            never_kept = replace.get(name, {}).get(key) or []
            if current is None or any(_same(current, bad) for bad in never_kept):
                settings.setdefault(name, {})[key] = value
            elif not _same(current, value):
                kept.append((name + "." if name else "") + key)
    return settings, kept
