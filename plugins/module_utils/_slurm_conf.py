# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""slurm.conf and gres.conf model: parse, edit, render losslessly.  Pure Python.

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
* ``include FILE`` (any case) reads another file: kept as it is; :func:`include_targets` lists them for the
  module, which follows them (relative to slurm.conf's directory, wildcards allowed).
* A line whose first key is ``NodeName``, ``PartitionName``, ``FrontendName``,
  ``DownNodes``, ``NodeSet`` or ``SwitchName`` is a *record*: every pair on it
  belongs to that record.  ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT``
  lines set values for the records after them.  In gres.conf a line with a
  ``Name`` key is a GRES record, scoped to the nodes of its ``NodeName`` key
  (every node reading the file when it has none).
* Any other pair is a global parameter; when one is given twice the last one
  wins (Slurm says "specified more than once, latest value used").
* Node names are host lists: ``gpu[01-04,07],login1``; several bracket groups
  multiply (``r[1-2]n[1-3]``); leading zeros set the width.

Edits change only the lines they must; every other line (comments, blank
lines, continued lines, trailing comments) comes back byte-identical.  A value
the file already has, in any spelling Slurm reads the same, is no change.
Malformed input raises :class:`SlurmSyntaxError` with the line number.

Interface (for this collection's plugins):

``parse(text)``                        :class:`Document`
``set_parameters(text, settings, list_keys=("GresTypes",), keep_existing=())``
                                       ``(text, changed_keys, warnings)``
``set_records(text, kind, records, create_missing=False)``
                                       ``(text, changed_names, warnings)`` for NodeName/PartitionName
``set_gres(text, nodes, name="gpu", per_node=None)``  ``(text, changed_nodes, warnings)`` for gres.conf,
                                       compared by meaning (:func:`described_gpus`)
``include_targets(text)`` / ``defined_names(text, kind)``   what slurm.conf includes, what a file defines
``check_node_name(option, name)``      a node name that cannot inject a line
``parameters(text)`` / ``record_attributes(text, kind, name)``   effective values
``expand_hostlist(expr)`` / ``compress_hostlist(names)``
``gres_type_name(gpu_name)`` / ``gpus_in_slurm_order(gpus)`` / ``merge_gres(current, wanted)``
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import (
    detect_eol,
    excerpt,
    physical_lines,
    split_eol,
)

__all__ = ["SlurmSyntaxError", "Document", "parse", "set_parameters", "set_records", "set_gres", "parameters",
           "record_attributes", "expand_hostlist", "compress_hostlist", "gres_type_name", "gpus_in_slurm_order",
           "merge_gres", "check_value", "check_node_name", "described_gpus", "include_targets", "defined_names",
           "RECORD_KEYS"]

RECORD_KEYS = ("nodename", "partitionname", "frontendname", "downnodes", "nodeset", "switchname")
# Keys whose value is a comma-separated set (any order, no repeats).
SET_VALUED_KEYS = ("GresTypes",)

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


def _set_words(current, wanted):
    """A comma-separated set: the file's words in their order, then the wanted ones it lacks."""
    have = [w for w in (current or "").split(",") if w]
    out = list(have)
    for word in wanted.split(","):
        if word and word not in out:
            out.append(word)
    return ",".join(out)


def _same_set(a, b):
    return set(w for w in a.split(",") if w) == set(w for w in b.split(",") if w)


def _gres_items(value):
    """``gpu:a100:2,nic:1`` -> [(name, item)] in order."""
    out = []
    for item in (value or "").split(","):
        item = item.strip()
        if item:
            out.append((item.split(":", 1)[0], item))
    return out


def merge_gres(current, wanted):
    """The node's Gres with the GRES names of ``wanted`` replaced by it; other names (``nic``, ``mps``) kept.

    An item with count 0 (``gpu:0``) only removes that name.  Returns None when the result is empty.
    """
    wanted_items = _gres_items(wanted)
    names = set(name for name, _item in wanted_items)
    kept = [item for name, item in _gres_items(current) if name not in names]
    added = [item for _name, item in wanted_items if item.rsplit(":", 1)[-1] not in ("0",)]
    merged = kept + added
    return ",".join(merged) if merged else None


def merge_features(current, wanted, owned):
    """The node's Features with the words ``owned`` (a compiled pattern) matches replaced by ``wanted``'s: a site's
    own features are kept, in their order, then the wanted ones."""
    kept = [word for word in (current or "").split(",") if word and not owned.match(word)]
    return ",".join(kept + [word for word in (wanted or "").split(",") if word and word not in kept])


def _same_gres(a, b):
    return sorted(item for _n, item in _gres_items(a)) == sorted(item for _n, item in _gres_items(b))


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


def set_parameters(text, settings, list_keys=SET_VALUED_KEYS, keep_existing=()):
    """Set (value) or remove (None) global parameters.

    The last definition of a key is updated in place (its quoting and trailing
    comment kept); a key defined twice gets a warning.  ``list_keys`` hold
    comma-separated sets: the wanted words are merged into the file's.
    ``keep_existing`` names keys set only when the file lacks them: a different
    value the file has is kept, with a warning.  New keys go after the last
    global parameter line.  Returns ``(text, changed_keys, warnings)``.
    """
    doc = parse(text)
    lists = set(k.lower() for k in list_keys or ())
    keep = set(k.lower() for k in keep_existing or ())
    editor = _Editor(doc)
    changed, warnings = [], []
    globals_ = [line for line in doc.logical if line.kind == "global"]
    last_global = globals_[-1].end - 1 if globals_ else None
    for key, value in settings.items():
        if value is not None:
            check_value(key, value)
        found = [(line, pair) for line in globals_ for pair in line.pairs if pair.lkey == key.lower()]
        if len(found) > 1:
            warnings.append("%s is defined %d times (lines %s); the last one wins"
                            % (key, len(found), ", ".join(str(line.lineno) for line, _p in found)))
        if value is None:
            if found:
                for line, pair in found:
                    _remove_pair(editor, line, pair)
                changed.append(key)
            continue
        if found:
            line, pair = found[-1]
            current = pair.value
            if key.lower() in lists:
                if _same_set(_set_words(current, value), current):
                    continue
                value = _set_words(current, value)
            elif current == value:
                continue
            elif key.lower() in keep:
                warnings.append("%s is %s in the file (line %d); kept, although %s was asked for"
                                % (key, excerpt(current), line.lineno, excerpt(value)))
                continue
            _set_pair(editor, line, pair, value)
            changed.append(key)
            continue
        new = "%s=%s" % (key, _render_value(value))
        if last_global is not None:
            editor.insert_after(last_global, new)
        else:
            editor.append.append(new)
        changed.append(key)
    return editor.render(), changed, warnings


def include_targets(text):
    """``[(line number, path as written)]`` of the file's ``include`` lines, in order (the path may be relative to
    slurm.conf's directory and may hold wildcards)."""
    out = []
    for line in parse(text).logical:
        if line.kind == "include":
            target = line.code.strip(" \t\r").split(None, 1)[1].strip(" \t")
            if len(target) > 1 and target[0] == target[-1] and target[0] in "\"'":
                target = target[1:-1]
            out.append((line.lineno, target))
    return out


def defined_names(text, kind):
    """The names the file's ``kind`` records (NodeName, PartitionName) define, DEFAULT left out."""
    out = set()
    for line in parse(text).records(kind):
        if line.pairs[0].value.upper() != "DEFAULT":
            out.update(_record_names(line))
    return out


def parameters(text):
    """Effective global parameters: {key as written last: value}."""
    out = {}
    spelled = {}
    for line in parse(text).logical:
        if line.kind == "global":
            for pair in line.pairs:
                spelled.pop(pair.lkey, None)
                spelled[pair.lkey] = pair.key
                out[pair.lkey] = pair.value
    return dict((spelled[k], v) for k, v in out.items())


def _record_names(line):
    name = line.pairs[0].value
    if line.record_kind == "nodename":
        try:
            return expand_hostlist(name)
        except ValueError as exc:
            raise SlurmSyntaxError(str(exc), line.lineno)
    return [name]


def _effective(doc, kind, name):
    """(line, {lower key: (key, value, source line)}) for a record, DEFAULT lines folded in; (None, {}) when absent."""
    attrs = {}
    found = None
    attrs_for = {}
    for line in doc.records(kind):
        names = _record_names(line)
        if line.pairs[0].value.upper() == "DEFAULT":
            for pair in line.pairs[1:]:
                attrs[pair.lkey] = (pair.key, pair.value, line)
        elif name in names:
            if found is not None:
                raise SlurmSyntaxError("%s %s is also defined at line %d" % (line.pairs[0].key, name, found.lineno),
                                       line.lineno)
            found = line
            merged = dict(attrs)
            for pair in line.pairs[1:]:
                merged[pair.lkey] = (pair.key, pair.value, line)
            attrs_for = merged
    if found is None:
        return None, {}
    return found, attrs_for


def record_attributes(text, kind, name):
    """Effective attributes {key: value} of one node or partition (DEFAULT lines folded in); None when absent."""
    line, attrs = _effective(parse(text), kind, name)
    if line is None:
        return None
    return dict((key, value) for key, value, _src in attrs.values())


def _wanted_value(lkey, key, value, effective, owned_features=None):
    """The value to write, or None when the record already reads as wanted."""
    have = effective.get(lkey)
    if lkey == "features" and owned_features is not None:
        current = have[1] if have else ""
        merged = merge_features(current, value, owned_features)
        return None if _same_set(current, merged) else merged
    if lkey == "gres":
        current = have[1] if have else None
        merged = merge_gres(current, value)
        if merged is None and current is None:
            return None
        if current is not None and merged is not None and _same_gres(current, merged):
            return None
        return merged if merged is not None else ""
    if have and have[1] == value:
        return None
    return value


def set_records(text, kind, records, create_missing=False, owned_features=None):
    """Set attributes of NodeName (or PartitionName) records: ``{name: {key: value or None}}``.

    ``Gres`` values replace only the GRES names they give (see :func:`merge_gres`); with ``owned_features`` (a
    regular expression), ``Features`` values replace only the features it matches (see :func:`merge_features`).
    A record line that names several nodes of which only some change is split:
    the unchanged nodes keep the line, the others get lines of their own after
    it, with the same attributes.  A node no line names fails unless
    ``create_missing`` (then ``NodeName=<name> <attributes>`` is added after the
    last line of that kind).  Returns ``(text, changed_names, warnings)``.
    """
    doc = parse(text)
    owned = re.compile(owned_features) if owned_features else None
    kind_key = {"nodename": "NodeName", "partitionname": "PartitionName"}.get(kind.lower())
    if kind_key is None:
        raise ValueError("records of kind %s cannot be edited" % kind)
    for name, attrs in records.items():
        for key, value in attrs.items():
            if key.lower() == kind.lower():
                raise ValueError("%s %s: %s is the record's name, not an attribute" % (kind_key, name, key))
            if value is not None:
                check_value(key, value)
    for name in records:
        check_node_name("nodes" if kind_key == "NodeName" else "partitions", name)
    editor = _Editor(doc)
    changed, warnings = [], []
    # wanted changes per node: {name: {lkey: (key, value or None (remove) or "" (empty gres))}}
    plan = {}
    lines_of = {}
    for name, attrs in records.items():
        line, effective = _effective(doc, kind_key, name)
        if line is None:
            if not create_missing:
                raise ValueError("%s %s is not defined in the file" % (kind_key, name))
            new_attrs = [(k, merge_gres(None, v) if k.lower() == "gres" else v) for k, v in attrs.items()
                         if v is not None]
            pairs = ["%s=%s" % (k, _render_value(v)) for k, v in new_attrs if v is not None]
            new = " ".join(["%s=%s" % (kind_key, name)] + pairs)
            existing = doc.records(kind_key)
            if existing:
                editor.insert_after(existing[-1].end - 1, new)
            else:
                editor.append.append(new)
            changed.append(name)
            continue
        todo = {}
        for key, value in attrs.items():
            lkey = key.lower()
            if value is None:
                if lkey in effective:
                    src = effective[lkey][2]
                    if src is not line:
                        raise ValueError("%s %s: %s comes from the DEFAULT line %d; change it there"
                                         % (kind_key, name, key, src.lineno))
                    todo[lkey] = (key, None)
                continue
            new_value = _wanted_value(lkey, key, value, effective, owned)
            if new_value is not None:
                todo[lkey] = (key, new_value)
        if todo:
            plan[name] = todo
            lines_of.setdefault(id(line), (line, []))[1].append(name)
            changed.append(name)
    for line, names in lines_of.values():
        members = _record_names(line)
        groups = []
        for member in members:
            todo = plan.get(member, {})
            signature = tuple(sorted((k, v[1]) for k, v in todo.items()))
            for group in groups:
                if group[0] == signature:
                    group[1].append(member)
                    break
            else:
                groups.append((signature, [member], todo))
        if len(groups) == 1:
            _apply(editor, line, groups[0][2])
            continue
        if any(pair.lkey in ("nodeaddr", "nodehostname") and ("," in pair.value or "[" in pair.value)
               for pair in line.pairs):
            raise SlurmSyntaxError("%s=%s lists several NodeAddr/NodeHostname values; give %s a line of its own first"
                                   % (line.pairs[0].key, line.pairs[0].value, ", ".join(names)), line.lineno)
        # The line keeps the group without changes (else the first group); the others follow it.
        keep = next((g for g in groups if not g[2]), groups[0])
        _apply(editor, line, keep[2], names=keep[1])
        for group in groups:
            if group is keep:
                continue
            editor.insert_after(line.end - 1, _render_record(line, group[1], group[2]))
    return editor.render(), changed, warnings


def _apply(editor, line, todo, names=None):
    if names is not None:
        first = line.pairs[0]
        _set_pair(editor, line, first, compress_hostlist(names))
    for lkey, (key, value) in todo.items():
        pair = line.get(lkey)
        if value is None or value == "":
            if pair is not None:
                _remove_pair(editor, line, pair)
            continue
        if pair is not None:
            _set_pair(editor, line, pair, value)
        else:
            _append_pair(editor, line, key, value)


def _render_record(line, names, todo):
    """A new record line for ``names``: the line's pairs (changed per ``todo``), then new attributes."""
    parts = ["%s=%s" % (line.pairs[0].key, compress_hostlist(names))]
    done = set()
    for pair in line.pairs[1:]:
        if pair.lkey in todo:
            done.add(pair.lkey)
            key, value = todo[pair.lkey]
            if value:
                parts.append("%s=%s" % (pair.key, _render_value(value)))
        else:
            parts.append("%s%s=%s" % (pair.key, pair.op, _render_value(pair.value)))
    for lkey, (key, value) in todo.items():
        if lkey not in done and value:
            parts.append("%s=%s" % (key, _render_value(value)))
    return " ".join(parts)


# --- gres.conf --------------------------------------------------------------------------------------

# The keys that say which GPUs a line describes; every other key on a GPU line (CPUs, Cores, Links, Flags,
# AutoDetect, MultipleFiles, a key of a later Slurm) is the site's setting for those GPUs and stays with them.
_GRES_OWNED = ("nodename", "name", "type", "file", "count")
_GRES_RECORD_KEYS = ("type", "file")


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


def _gres_scope(line):
    pair = line.get("nodename")
    if pair is None:
        return None
    try:
        return expand_hostlist(pair.value)
    except ValueError as exc:
        raise SlurmSyntaxError(str(exc), line.lineno)


def _gres_devices(line):
    """``(files, consistent)``: the device file of each GPU a ``Name=gpu`` line describes (None for a GPU
    without one) and whether its ``Count`` agrees.  ``File=/dev/nvidia[0-3]`` is four GPUs; a
    ``MultipleFiles`` line is one GPU, named by its first ``/dev/nvidiaN`` file."""
    count = line.get("count")
    file_pair = line.get("file")
    multiple = line.get("multiplefiles")
    if file_pair is not None:
        try:
            files = expand_hostlist(file_pair.value)
        except ValueError as exc:
            raise SlurmSyntaxError("File: %s" % exc, line.lineno)
    elif multiple is not None:
        names = [name for name in multiple.value.split(",") if name]
        files = [next((name for name in names if re.match(r"\A/dev/nvidia\d+\Z", name)), names[0] if names else None)]
    elif count is not None and count.value.isdigit():
        return [None] * int(count.value), True
    else:
        return [None], count is None
    return files, count is None or (count.value.isdigit() and int(count.value) == len(files))


def _node_gres_lines(gres_lines, scopes, node, per_node):
    return [(line, scope) for line, scope in zip(gres_lines, scopes)
            if (scope is None and per_node) or (scope is not None and node in scope)]


def _description(lines):
    """The node's GPUs as the lines describe them: sorted ``(file, type)``; None when a Count disagrees."""
    out = []
    for line, _scope in lines:
        files, consistent = _gres_devices(line)
        if not consistent:
            return None
        type_pair = line.get("type")
        out.extend((name, type_pair.value if type_pair else None) for name in files)
    return sorted(out, key=lambda item: (item[0] or "", item[1] or ""))


def described_gpus(text, name="gpu"):
    """``{node or None: [(device file, type or None)]}``: the GPUs each node of a gres.conf gets (None: the lines
    without NodeName, which every node reading the file gets)."""
    doc = parse(text)
    out = {}
    for line in doc.logical:
        if line.kind != "gres" or line.get("name").value != name:
            continue
        files, _consistent = _gres_devices(line)
        type_pair = line.get("type")
        for node in _gres_scope(line) or [None]:
            out.setdefault(node, []).extend((f, type_pair.value if type_pair else None) for f in files)
    return out


def _extras(line):
    """The line's pairs the edit does not own, as written."""
    return [line.code[pair.start:pair.end].strip(" \t") for pair in line.pairs if pair.lkey not in _GRES_OWNED]


def _render_gpu(node_key, node, name, gpu_type, device, extras, multiple):
    """One GPU's line; ``node_key`` is the NodeName key as the file spells it (None: a line without it)."""
    parts = ["%s=%s" % (node_key, node)] if node_key is not None else []
    parts.append("Name=%s" % name)
    if gpu_type is not None:
        parts.append("Type=%s" % _render_value(gpu_type))
    if not multiple:
        parts.append("File=%s" % _render_value(device))
    return " ".join(parts + list(extras))


def set_gres(text, nodes, name="gpu", per_node=None):
    """Make each node's ``Name=<name>`` lines in gres.conf describe exactly ``nodes[node]``: a list of
    ``{"File": device, "Type": type}`` records (``Type`` optional); an empty list removes the node's GPUs.

    What a node has is compared by meaning: the device files its lines give it (``File=/dev/nvidia[0-3]``,
    several files, ``Count``), on its own lines or on lines for several nodes (``NodeName=n[1-4]``,
    ``NodeName=a,b``), with their types; the same GPUs in any spelling are no change.  When they differ, a
    GPU that stays keeps its line and the line's other settings (``CPUs``, ``Cores``, ``Links``, ``Flags``,
    ``AutoDetect``, ``MultipleFiles``, any other key): an own line whose GPUs all stay is edited in place
    (its type; a Count that disagrees goes), else it is replaced by one line per GPU that stays, with the
    line's settings; a node leaves a line shared with other nodes, which keep it as it was, and gets lines
    of its own for its GPUs that stay.  New GPUs get lines after the node's last line.

    ``per_node``: the file is one node's own (Slurm reads lines without NodeName as the reading node's);
    ``nodes`` must then name that one node, and new lines have no NodeName.  None: a file whose ``Name=<name>``
    lines exist and none of whose lines has a NodeName is taken as per node when ``nodes`` names one node.
    Otherwise a ``Name=<name>`` line without NodeName fails the edit: it would double the nodes' GPUs.
    Returns ``(text, changed_nodes, warnings)``.
    """
    for node, wanted in nodes.items():
        check_node_name("nodes", node)
        for record in wanted:
            for key, value in record.items():
                if key.lower() not in _GRES_RECORD_KEYS:
                    raise ValueError("gres record of %s: %s is not a key the edit sets (File, Type)" % (node, key))
                check_value(key, value)
            if "file" not in [key.lower() for key in record]:
                raise ValueError("gres record of %s: no File" % node)
    doc = parse(text)
    editor = _Editor(doc)
    changed, warnings = [], []
    gres_lines = [line for line in doc.logical if line.kind == "gres" and line.get("name").value == name]
    scopes = [_gres_scope(line) for line in gres_lines]
    if per_node is None:
        per_node = (len(nodes) == 1 and bool(gres_lines)
                    and not any(line.kind == "gres" and line.get("nodename") for line in doc.logical))
    elif per_node and len(nodes) != 1:
        raise ValueError("per_node: a per-node gres.conf describes one node; %d are given (%s)"
                         % (len(nodes), ", ".join(nodes)))
    if not per_node:
        for line, scope in zip(gres_lines, scopes):
            if scope is None:
                raise SlurmSyntaxError("Name=%s without NodeName applies to every node that reads this file; give "
                                       "it a NodeName so that the lines of %s can be managed, or, when the file is "
                                       "one node's own, use per_node" % (name, ", ".join(nodes) or "each node"),
                                       line.lineno)
    leaving = {}  # id(line) -> (line, scope, [nodes that leave it])
    for node, wanted in nodes.items():
        want = {}
        for record in wanted:
            values = dict((key.lower(), value) for key, value in record.items())
            if values["file"] in want:
                raise ValueError("gres record of %s: File %s is given twice" % (node, excerpt(values["file"])))
            want[values["file"]] = values.get("type")
        wanted_set = sorted(((f, t) for f, t in want.items()), key=lambda item: (item[0], item[1] or ""))
        lines = _node_gres_lines(gres_lines, scopes, node, per_node)
        if _description(lines) == wanted_set:
            continue
        changed.append(node)
        new_key = None if per_node else "NodeName"
        kept = set()
        anchor = None
        for line, scope in lines:
            files, consistent = _gres_devices(line)
            type_pair = line.get("type")
            line_type = type_pair.value if type_pair else None
            stays = [f for f in files if f is not None and f in want and f not in kept]
            own = scope is None or scope == [node]
            multiple = line.get("multiplefiles") is not None
            key_pair = line.get("nodename")
            line_key = key_pair.key if key_pair is not None else None
            if own:
                anchor = line.end - 1
                new_types = set(want[f] for f in stays)
                if stays == files and len(new_types) == 1:
                    new_type = new_types.pop()
                    if new_type != line_type:
                        if new_type is None:
                            _remove_pair(editor, line, type_pair)
                        elif type_pair is not None:
                            _set_pair(editor, line, type_pair, new_type)
                        else:
                            _insert_pair_after(editor, line, line.get("name"), "Type", new_type)
                    if not consistent:
                        _remove_pair(editor, line, line.get("count"))
                else:
                    for index in range(line.start, line.end):
                        editor.removed.add(index)
                    for device in stays:
                        editor.insert_after(line.end - 1, _render_gpu(line_key, node, name, want[device], device,
                                                                      _extras(line), multiple))
            else:
                if consistent and stays == files and all(want[f] == line_type for f in files):
                    kept.update(stays)
                    continue
                leaving.setdefault(id(line), (line, scope, []))[2].append(node)
                anchor = line.end - 1
                for device in stays:
                    editor.insert_after(line.end - 1, _render_gpu(line_key, node, name, want[device], device,
                                                                  _extras(line), multiple))
            kept.update(stays)
        if anchor is None and gres_lines:
            anchor = gres_lines[-1].end - 1
        for device, gpu_type in want.items():
            if device in kept:
                continue
            new = _render_gpu(new_key, node, name, gpu_type, device, [], False)
            if anchor is not None:
                editor.insert_after(anchor, new)
            else:
                editor.append.append(new)
    for line, scope, gone in leaving.values():
        rest = [member for member in scope if member not in gone]
        if rest:
            _set_pair(editor, line, line.get("nodename"), compress_hostlist(rest))
        else:
            for index in range(line.start, line.end):
                editor.removed.add(index)
    return editor.render(), changed, warnings


def _insert_pair_after(editor, line, after, key, value):
    editor.replace_span(line, after.end, after.end, " %s=%s" % (key, _render_value(value)))


# --- GPUs -------------------------------------------------------------------------------------------

def gres_type_name(gpu_name):
    """Slurm's GRES type for an NVML device name, as AutoDetect=nvml makes it: lower case, blanks -> ``_``
    (``NVIDIA A100-SXM4-40GB`` -> ``nvidia_a100-sxm4-40gb``)."""
    out = re.sub(r"\s+", "_", (gpu_name or "").strip()).lower()
    out = re.sub(r"[^a-z0-9_.\-]", "", out)
    if not out:
        raise ValueError("a GPU without a name has no GRES type")
    return out


def _minor(gpu):
    value = gpu.get("minor_number")
    if value is None or not str(value).isdigit():
        raise ValueError("GPU %s has no minor number (its device file /dev/nvidiaN)" % gpu.get("uuid", "?"))
    return int(value)


def gpus_in_slurm_order(gpus, typed=True):
    """The GPUs in the order Slurm numbers them on a node (SLURM_JOB_GPUS, SLURM_STEP_GPUS).

    Slurm's gres/gpu plugin sorts a node's GPU records by type name (longer names first, then
    alphabetically) and then by the number of the device file; this is that order, so index i of the
    result is Slurm's GPU i.
    """
    def key(gpu):
        type_name = gres_type_name(gpu.get("name")) if typed else ""
        return (-len(type_name), type_name, _minor(gpu))
    return sorted(gpus, key=key)


def gpu_gres(gpus, typed=True):
    """``(gres.conf records, slurm.conf Gres value, [{index, uuid, file}])`` for a node's GPUs.

    The records and the device list are in Slurm's index order (:func:`gpus_in_slurm_order`); a node without
    GPUs gets ``gpu:0``, which :func:`merge_gres` reads as "no GPU entries".
    """
    ordered = gpus_in_slurm_order(gpus, typed)
    records, devices, per_type = [], [], {}
    for index, gpu in enumerate(ordered):
        record = {}
        if typed:
            record["Type"] = gres_type_name(gpu.get("name"))
            per_type[record["Type"]] = per_type.get(record["Type"], 0) + 1
        record["File"] = "/dev/nvidia%d" % _minor(gpu)
        records.append(record)
        devices.append({"index": index, "uuid": gpu.get("uuid"), "file": record["File"]})
    if per_type:
        gres = ",".join("gpu:%s:%d" % (type_name, count) for type_name, count in per_type.items())
    else:
        gres = "gpu:%d" % len(ordered)
    return records, gres, devices
