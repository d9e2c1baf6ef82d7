# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Docker's ``daemon.json``: parse, deep-merge, remove list items, render in the file's own layout.

Pure Python, text in and text out.  The rules:

* The file is one JSON object.  An absent or blank file is ``{}`` (dockerd
  treats an empty file as an empty configuration).  Anything else that is not a
  JSON object is refused with ``path:line:col``.  So are ``NaN``, ``Infinity``
  and ``-Infinity`` (Python's reader takes them, Go's does not), numbers beyond
  a double's range or longer than 4300 digits, and nesting deeper than
  :data:`MAX_DEPTH` levels; a file larger than :data:`MAX_SIZE` bytes is refused
  with ``path``.
* ``settings`` is merged into it recursively: objects merge key by key, a
  ``None`` (JSON ``null``) deletes the key at that depth (a null below a key that
  is absent or not an object deletes nothing), lists are unioned in order
  (existing items first, then new ones not yet present) unless
  ``list_merge='replace'``, every other value replaces.  Keys nobody asked about
  are kept as they are, in their order.
* ``defaults`` fill only what the file does not have: an object merges key by
  key, a key the file (or ``settings``) has keeps that value, a null deletes
  nothing.  ``log-opts`` in ``defaults`` belong to the ``log-driver`` of
  ``defaults``: they are left out when the file or ``settings`` name another
  driver (dockerd refuses options of one driver for another).  Defaults are
  applied first, ``settings`` over them.
* ``remove`` mirrors the file's structure down to lists and names items to take
  out of them (compared as JSON values).  A list that loses its last item this
  way is dropped with its key; keys that are absent or hold no list are left alone.
* ``settings`` and ``remove`` are checked like the file (no NaN or Infinity,
  string keys, JSON values only, depth); errors name ``settings.<key>`` or
  ``remove.<key>``.
* The merged document is compared with the current one *as JSON values*
  (``true`` is not ``1``; key order and whitespace do not count).  When they are
  equal the current text is returned unchanged (``None`` for an absent file, so
  nothing is created).  Otherwise the change is spliced into the file's own
  layout: values that did not change keep their exact text, and so do the
  whitespace and separators around the members that stay; changed values and new
  members are rendered with the file's indentation unit (spaces or tabs, or one
  compact line), its key separator, its line ending and its ``\\u`` escaping.  A
  new file gets a 4-space indent and a trailing newline.
"""

from __future__ import annotations

import bisect
import json
import math
import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError

__all__ = ["DaemonJsonError", "LIST_MERGE_MODES", "MAX_DEPTH", "MAX_SIZE", "check_defaults", "check_settings", "compute", "fill", "json_equal", "merge",
           "parse", "remove_items", "removed_keys", "render", "restart_kind"]

LIST_MERGE_MODES = ("append", "replace")
MAX_DEPTH = 64
MAX_SIZE = 1 << 20
# CPython's default limit for int <-> str conversion (sys.int_info.default_max_str_digits).
_MAX_DIGITS = 4300


class DaemonJsonError(FileEditError):
    """daemon.json or the settings for it are wrong: the file's path, line and column where known. A FileEditError,
    so the file-edit transaction reports it like any other model's refusal."""


# --- reading ---------------------------------------------------------------------

class _Refused(Exception):
    """Raised by the decoder hooks; the offending token is located afterwards."""


def _refuse_constant(name):
    raise _Refused("%s is not a JSON number" % name)


def _checked_float(token):
    value = float(token)
    if math.isinf(value):
        raise _Refused("number %s is out of range" % token)
    return value


def _checked_int(token):
    digits = len(token.lstrip("-"))
    if digits > _MAX_DIGITS:
        raise _Refused("number with %d digits is too long" % digits)
    return int(token)


def _duplicate_checking_hook(warnings, path):
    def hook(pairs):
        obj = {}
        for key, value in pairs:
            if key in obj:
                warnings.append("%s: key %r appears more than once; the last one wins" % (path, key))
            obj[key] = value
        return obj
    return hook


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]|NaN|-?Infinity|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?', re.S)


def _first_problem(text):
    """``(offset, message)`` of the first token the reader refuses, in document order."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        try:
            if first in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Refused("nested deeper than %d levels" % MAX_DEPTH)
            elif first in "]}":
                depth -= 1
            elif first == "N" or token.endswith("Infinity"):
                _refuse_constant(token)
            elif first != '"':
                if any(c in token for c in ".eE"):
                    _checked_float(token)
                else:
                    _checked_int(token)
        except _Refused as err:
            return match.start(), str(err)
    return None


def _json_kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


def _line_col(text, offset):
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def _too_deep(value, limit):
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def parse(text, path="daemon.json", warnings=None):
    """Parse ``text`` into a dict; raise :class:`DaemonJsonError` with line/column.

    ``None`` or blank text is ``{}``.  Duplicate keys are reported in
    ``warnings`` (a list) and the last one wins, as in Go's decoder.
    """
    if warnings is None:
        warnings = []
    if text is None or not text.strip():
        return {}
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_SIZE:
        raise DaemonJsonError("file is %d bytes, more than the %d-byte limit" % (size, MAX_SIZE), path=path)
    try:
        doc = json.loads(text, object_pairs_hook=_duplicate_checking_hook(warnings, path),
                         parse_constant=_refuse_constant, parse_float=_checked_float, parse_int=_checked_int)
    except json.JSONDecodeError as err:
        raise DaemonJsonError("malformed JSON: %s" % err.msg, path=path, line=err.lineno, column=err.colno)
    except (_Refused, RecursionError) as err:
        doc, fallback = None, str(err) if isinstance(err, _Refused) else "nested deeper than %d levels" % MAX_DEPTH
    else:
        fallback = "nested deeper than %d levels" % MAX_DEPTH if _too_deep(doc, MAX_DEPTH) else None
    if fallback is not None:
        problem = _first_problem(text)
        if problem is None:  # pragma: no cover - the scan finds what the reader refused
            raise DaemonJsonError(fallback, path=path)
        line, column = _line_col(text, problem[0])
        raise DaemonJsonError(problem[1], path=path, line=line, column=column)
    if not isinstance(doc, dict):
        raise DaemonJsonError("top level must be a JSON object, found %s" % _json_kind(doc), path=path, line=1, column=1)
    return doc


def runtimes_fact(path, config):
    """The ``docker_daemon`` fact: ``path`` and the names of the runtimes ``config`` registers, sorted."""
    runtimes = config.get("runtimes") if isinstance(config, dict) else None
    return {"path": path, "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else []}


def read_fact(path):
    """The ``docker_daemon`` fact of the file at ``path`` (none there: no runtimes); a malformed file raises
    :class:`DaemonJsonError` with its line."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError) as err:
        raise DaemonJsonError("cannot read: %s" % err, path=path)
    return runtimes_fact(path, parse(text, path))


# --- checking what the caller asks for --------------------------------------------

def _check_value(value, where, depth):
    if isinstance(value, (dict, list, tuple)):
        if depth > MAX_DEPTH:
            raise DaemonJsonError("%s: nested deeper than %d levels" % (where, MAX_DEPTH))
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise DaemonJsonError("%s: key %r is not a string" % (where, key))
                _check_value(item, "%s.%s" % (where, key), depth + 1)
        else:
            for index, item in enumerate(value):
                _check_value(item, "%s[%d]" % (where, index), depth + 1)
    elif value is None or isinstance(value, (bool, str)):
        return
    elif isinstance(value, int):
        try:
            too_long = len(str(abs(value))) > _MAX_DIGITS
        except ValueError:  # Python's own conversion limit
            too_long = True
        if too_long:
            raise DaemonJsonError("%s: number with more than %d digits is too long" % (where, _MAX_DIGITS))
    elif isinstance(value, float):
        if math.isnan(value):
            raise DaemonJsonError("%s: NaN is not a JSON number" % where)
        if math.isinf(value):
            raise DaemonJsonError("%s: %sInfinity is not a JSON number" % (where, "-" if value < 0 else ""))
    else:
        raise DaemonJsonError("%s: a %s is not a JSON value" % (where, type(value).__name__))


def _check_remove(spec, where, depth):
    for key, items in spec.items():
        if not isinstance(key, str):
            raise DaemonJsonError("%s: key %r is not a string" % (where, key))
        dotted = "%s.%s" % (where, key)
        if isinstance(items, dict):
            if depth + 1 > MAX_DEPTH:
                raise DaemonJsonError("%s: nested deeper than %d levels" % (dotted, MAX_DEPTH))
            _check_remove(items, dotted, depth + 1)
        elif isinstance(items, (list, tuple)):
            _check_value(items, dotted, depth + 1)
        else:
            raise DaemonJsonError("%s: must be a list of items to remove or an object" % dotted)


def _show(value):
    return value if isinstance(value, str) else json.dumps(value)


def _check_conflicts(settings, spec, where_settings, where_remove):
    for key, items in spec.items():
        if key not in settings:
            continue
        wanted = settings[key]
        if isinstance(items, dict) and isinstance(wanted, dict):
            _check_conflicts(wanted, items, "%s.%s" % (where_settings, key), "%s.%s" % (where_remove, key))
        elif isinstance(items, list) and isinstance(wanted, list):
            for item in items:
                if _contains(wanted, item):
                    raise DaemonJsonError("%s.%s: %s is also in %s.%s" % (where_remove, key, _show(item), where_settings, key))


def check_settings(settings, remove=None):
    """Refuse what cannot be written as JSON, naming ``settings.<key>`` / ``remove.<key>``.

    Returns ``(settings, remove)`` as plain JSON values (tuples become lists).
    """
    if not isinstance(settings, dict):
        raise DaemonJsonError("settings: must be an object")
    _check_value(settings, "settings", 1)
    remove = remove or {}
    if not isinstance(remove, dict):
        raise DaemonJsonError("remove: must be an object")
    _check_remove(remove, "remove", 1)
    # Round trip: tuples become lists, str/int subclasses become plain values.
    settings, remove = json.loads(json.dumps([settings, remove]))
    _check_conflicts(settings, remove, "settings", "remove")
    return settings, remove


def check_defaults(defaults):
    """``defaults`` checked like ``settings`` (errors name ``defaults.<key>``), as plain JSON values."""
    if defaults is None:
        return {}
    if not isinstance(defaults, dict):
        raise DaemonJsonError("defaults: must be an object")
    _check_value(defaults, "defaults", 1)
    return json.loads(json.dumps(defaults))


# --- merging -----------------------------------------------------------------------

def json_equal(a, b):
    """Equality of two decoded JSON values that keeps ``true`` apart from ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b  # JSON has one number type: 1 and 1.0 are the same value
    return type(a) is type(b) and a == b


def _contains(items, value):
    return any(json_equal(item, value) for item in items)


def _join(prefix, key):
    return "%s.%s" % (prefix, key) if prefix else key


def _only_deletes(value):
    """An object whose every leaf is null: it can delete keys but never adds one."""
    return isinstance(value, dict) and bool(value) and all(v is None or _only_deletes(v) for v in value.values())


def merge(current, settings, list_merge="append", _prefix=""):
    """Return ``(merged, changed_keys)``; ``current`` is not modified.

    ``changed_keys`` lists the dotted path of every key whose value was added,
    changed or removed, deepest level that changed, in settings order.
    """
    if list_merge not in LIST_MERGE_MODES:
        raise ValueError("list_merge must be one of %s" % ", ".join(LIST_MERGE_MODES))
    merged = dict(current)
    changed = []
    for key, wanted in settings.items():
        dotted = _join(_prefix, key)
        if wanted is None:
            if key in merged:
                del merged[key]
                changed.append(dotted)
            continue
        have = merged.get(key)
        if isinstance(wanted, dict) and isinstance(have, dict):
            sub, sub_changed = merge(have, wanted, list_merge, dotted)
            merged[key] = sub
            changed.extend(sub_changed)
            continue
        if _only_deletes(wanted):
            continue  # nothing below this key to delete
        if isinstance(wanted, dict):
            # New object (or one replacing a scalar): drop its null leaves.
            new, _unused = merge({}, wanted, list_merge, dotted)
        elif isinstance(wanted, list) and isinstance(have, list) and list_merge == "append":
            new = list(have)
            for item in wanted:
                if not _contains(new, item):
                    new.append(item)
        else:
            new = wanted
        if key not in merged or not json_equal(have, new):
            merged[key] = new
            changed.append(dotted)
    return merged, changed


def fill(current, defaults, _prefix=""):
    """Add the keys of ``defaults`` that ``current`` lacks, at every depth; keep every value ``current`` has.

    Returns ``(result, changed_keys)``; ``current`` is not modified.  A null in ``defaults`` adds nothing.
    """
    result = dict(current)
    changed = []
    for key, wanted in defaults.items():
        if wanted is None:
            continue
        dotted = _join(_prefix, key)
        if key not in result:
            if isinstance(wanted, dict):
                wanted, _unused = fill({}, wanted, dotted)
                if not wanted:
                    continue
            result[key] = wanted
            changed.append(dotted)
        elif isinstance(wanted, dict) and isinstance(result[key], dict):
            sub, sub_changed = fill(result[key], wanted, dotted)
            if sub_changed:
                result[key] = sub
                changed.extend(sub_changed)
    return result, changed


def _defaults_for(defaults, current, settings):
    """``defaults`` without ``log-opts`` when the file or the settings name a log driver other than theirs."""
    driver = defaults.get("log-driver")
    if "log-opts" not in defaults or not isinstance(driver, str):
        return defaults
    final = settings.get("log-driver") if settings.get("log-driver") is not None else current.get("log-driver", driver)
    if final == driver:
        return defaults
    return {key: value for key, value in defaults.items() if key != "log-opts"}


def removed_keys(before, after, _prefix=""):
    """Dotted paths of the keys ``before`` has and ``after`` has not (the outermost one of a removed object)."""
    out = []
    for key, value in before.items():
        dotted = _join(_prefix, key)
        if key not in after:
            out.append(dotted)
        elif isinstance(value, dict) and isinstance(after[key], dict):
            out.extend(removed_keys(value, after[key], dotted))
    return out


def remove_items(current, spec, _prefix=""):
    """Take the items ``spec`` names out of the lists in ``current``.

    Returns ``(result, changed_keys)``; ``current`` is not modified.
    """
    result = dict(current)
    changed = []
    for key, items in spec.items():
        if key not in result:
            continue
        have = result[key]
        dotted = _join(_prefix, key)
        if isinstance(items, dict):
            if isinstance(have, dict):
                sub, sub_changed = remove_items(have, items, dotted)
                if sub_changed:
                    result[key] = sub
                    changed.extend(sub_changed)
        elif isinstance(have, list):
            kept = [item for item in have if not _contains(items, item)]
            if len(kept) != len(have):
                if kept:
                    result[key] = kept
                else:
                    del result[key]
                changed.append(dotted)
    return result, changed


# --- writing -----------------------------------------------------------------------

def _json_text(value, ascii_only, **kwargs):
    text = json.dumps(value, ensure_ascii=ascii_only, **kwargs)
    if not ascii_only:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: only its \u escape is valid UTF-8
            text = json.dumps(value, ensure_ascii=True, **kwargs)
    return text


def render(doc):
    """The text of a new file: 4-space indent, keys in document order, final newline."""
    return _json_text(doc, False, indent=4) + "\n"


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Node:
    """Where one value sits in the original text; containers list their members."""

    __slots__ = ("start", "end", "members")

    def __init__(self, start, end, members=None):
        self.start = start
        self.end = end
        self.members = members  # None for scalars


class _Member:
    """An object member (``key``, the key's end) or an array item (``key`` None)."""

    __slots__ = ("key", "start", "key_end", "node")

    def __init__(self, key, start, key_end, node):
        self.key = key
        self.start = start
        self.key_end = key_end
        self.node = node


def _scan(text, start):
    """The :class:`_Node` tree of the (already validated) JSON value at ``start``."""
    opener = text[start]
    if opener not in "{[":
        return _Node(start, _DECODER.raw_decode(text, start)[1])
    closer = "}" if opener == "{" else "]"
    members = []
    index = _WS.match(text, start + 1).end()
    if text[index] == closer:
        return _Node(start, index + 1, members)
    while True:
        if opener == "{":
            key, key_end = json.decoder.scanstring(text, index + 1)
            colon = _WS.match(text, key_end).end()
            value_start = _WS.match(text, colon + 1).end()
        else:
            key, key_end, value_start = None, index, index
        node = _scan(text, value_start)
        members.append(_Member(key, index, key_end, node))
        after = _WS.match(text, node.end).end()
        if text[after] == closer:
            return _Node(start, after + 1, members)
        index = _WS.match(text, after + 1).end()


class _Style:
    """The file's layout, read from its top-level object."""

    def __init__(self, text, root):
        self.indent = "    "
        self.key_sep = ": "
        self.item_sep = ", "
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.ascii = "\\u" in text and not re.search("[^\x00-\x7f]", text)
        members = root.members
        if not members:
            return
        lead = text[root.start + 1:members[0].start]
        self.indent = lead.rsplit("\n", 1)[1] if "\n" in lead else None
        self.key_sep = text[members[0].key_end:members[0].node.start]
        if self.indent is None and len(members) > 1:
            self.item_sep = text[members[0].node.end:members[1].start]
        else:
            self.item_sep = "," + (" " if self.key_sep.endswith(" ") else "")


def _fresh(value, style, level, inline):
    """``value`` rendered from scratch, for a place ``level`` containers deep."""
    if inline or style.indent is None:
        return _json_text(value, style.ascii, separators=(style.item_sep, style.key_sep))
    text = _json_text(value, style.ascii, indent=style.indent, separators=(",", style.key_sep))
    # JSON strings never hold a raw newline: every one here is layout.
    return text.replace("\n", style.newline + style.indent * level)


def _assemble(text, node, entries, style, level, inline, brackets):
    """Join ``entries`` (original member index or None, text) into a container,
    reusing the original lead, separators and tail wherever a member stays."""
    if not entries:
        return brackets
    members = node.members
    if members:
        lead = text[node.start + 1:members[0].start]
        tail = text[members[-1].node.end:node.end - 1]
        seps = [text[members[i - 1].node.end:members[i].start] for i in range(1, len(members))]
        multiline = "\n" in lead
    else:
        multiline = not inline and style.indent is not None
        lead = style.newline + style.indent * (level + 1) if multiline else ""
        tail = style.newline + style.indent * level if multiline else ""
        seps = []
    default_sep = seps[0] if seps else ("," + lead if multiline else style.item_sep)
    parts = [brackets[0], lead]
    for position, (index, piece) in enumerate(entries):
        if position:
            parts.append(seps[index - 1] if index else default_sep)
        parts.append(piece)
    parts.extend((tail, brackets[1]))
    return "".join(parts)


def _is_multiline(text, node, style, inline):
    if node.members:
        return "\n" in text[node.start + 1:node.members[0].start]
    return not inline and style.indent is not None


def _splice_object(new, old, node, text, style, level, inline):
    members = node.members
    keys = [member.key for member in members]
    if len(set(keys)) != len(keys):
        return None  # duplicate keys: render the object afresh
    position = {key: index for index, key in enumerate(keys)}
    if [key for key in new if key in position] != [key for key in keys if key in new]:
        return None  # reordered
    child_inline = not _is_multiline(text, node, style, inline)
    key_sep = text[members[0].key_end:members[0].node.start] if members else style.key_sep
    entries = []
    for key, value in new.items():
        index = position.get(key)
        if index is None:
            head = _json_text(key, style.ascii) + key_sep
            entries.append((None, head + _fresh(value, style, level + 1, child_inline)))
        else:
            member = members[index]
            head = text[member.start:member.node.start]
            entries.append((index, head + _render(value, old[key], member.node, text, style, level + 1, child_inline)))
    return _assemble(text, node, entries, style, level, inline, "{}")


def _canonical(value):
    return json.dumps(value, sort_keys=True)


def _splice_array(new, old, node, text, style, level, inline):
    child_inline = not _is_multiline(text, node, style, inline)
    where = {}
    for index, item in enumerate(old):
        where.setdefault(_canonical(item), []).append(index)
    entries = []
    next_old = 0
    for value in new:
        candidates = where.get(_canonical(value), [])
        found = bisect.bisect_left(candidates, next_old)
        if found < len(candidates):
            index = candidates[found]
            member = node.members[index]
            entries.append((index, text[member.node.start:member.node.end]))
            next_old = index + 1
        else:
            entries.append((None, _fresh(value, style, level + 1, child_inline)))
    return _assemble(text, node, entries, style, level, inline, "[]")


def _render(new, old, node, text, style, level, inline):
    """``new`` rendered for the place where ``old`` was (``node`` in ``text``)."""
    if json_equal(new, old):
        return text[node.start:node.end]
    spliced = None
    if isinstance(new, dict) and isinstance(old, dict):
        spliced = _splice_object(new, old, node, text, style, level, inline)
    elif isinstance(new, list) and isinstance(old, list):
        spliced = _splice_array(new, old, node, text, style, level, inline)
    return spliced if spliced is not None else _fresh(new, style, level, inline)


def _render_like(text, merged, current):
    root = _scan(text, _WS.match(text).end())
    style = _Style(text, root)
    return text[:root.start] + _render(merged, current, root, text, style, 0, False) + text[root.end:]


def compute(text, settings, list_merge="append", path="daemon.json", remove=None, defaults=None):
    """Fill in the ``defaults`` the daemon.json ``text`` lacks, merge ``settings`` over them and take out the
    ``remove`` items.

    Returns ``(new_text, merged, changed_keys, warnings)``.  ``new_text`` is
    ``text`` itself (``None`` for an absent file) when the result equals the
    current document as JSON.
    """
    settings, remove = check_settings(settings, remove)
    defaults = check_defaults(defaults)
    warnings = []
    current = parse(text, path, warnings)
    filled, changed_keys = fill(current, _defaults_for(defaults, current, settings))
    merged, merged_keys = merge(filled, settings, list_merge)
    changed_keys.extend(key for key in merged_keys if key not in changed_keys)
    merged, removed_keys = remove_items(merged, remove)
    changed_keys.extend(key for key in removed_keys if key not in changed_keys)
    if json_equal(current, merged):
        return text, merged, [], warnings
    if text is None or not text.strip():
        new_text = render(merged)
    else:
        new_text = _render_like(text, merged, current)
    size = len(new_text.encode("utf-8", "surrogatepass"))
    if size > MAX_SIZE:
        raise DaemonJsonError("the merged file would be %d bytes, more than the %d-byte limit" % (size, MAX_SIZE), path=path)
    return new_text, merged, changed_keys, warnings


def restart_kind(active, changed_keys, removed_keys=(), packages=(), reload_keys=(), reload_clears_keys=()):
    """``'reload'`` when dockerd can take the change live (SIGHUP), else ``'restart'``.

    A reload needs a running engine, no engine package changed, and a change made only of top-level keys it
    re-reads (``reload_keys``; ``runtimes.nvidia`` counts as ``runtimes``); a top-level key removed from the file
    must also be one whose removal a reload applies (``reload_clears_keys``): for the others dockerd keeps the
    value it had (a registry taken out of insecure-registries stays insecure). No changed key at all is a
    restart (a package or the NVIDIA toolkit changed).
    """
    changed = [str(key).split(".", 1)[0] for key in changed_keys]
    removed = [str(key) for key in removed_keys if "." not in str(key)]
    if (active and not list(packages) and changed and all(key in reload_keys for key in changed)
            and all(key in reload_clears_keys for key in removed)):
        return "reload"
    return "restart"
