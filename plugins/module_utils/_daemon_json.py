# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker's ``daemon.json``: parse, deep-merge, render.

Pure Python, text in and text out.  The rules:

* The file is one JSON object.  An absent or blank file is ``{}`` (dockerd
  treats an empty file as an empty configuration).  Anything else that is not a
  JSON object is refused with ``path:line:col``.
* ``settings`` is merged into it recursively: objects merge key by key, a
  ``None`` (JSON ``null``) deletes the key at that depth, lists are unioned in
  order (existing items first, then new ones not yet present) unless
  ``list_merge='replace'``, every other value replaces.  Keys nobody asked about
  are kept as they are, in their order.
* The merged document is compared with the current one *as JSON values*
  (``true`` is not ``1``; key order and whitespace do not count).  When they are
  equal the current text is returned unchanged, so a file formatted by another
  tool (``nvidia-ctk`` writes sorted keys and no final newline) is never
  rewritten just for its layout.  Otherwise the result is rendered with a
  4-space indent and a trailing newline.
"""

from __future__ import annotations

import json

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError

__all__ = ["LIST_MERGE_MODES", "compute", "json_equal", "merge", "parse", "render"]

LIST_MERGE_MODES = ("append", "replace")


def _duplicate_checking_hook(warnings, path):
    def hook(pairs):
        obj = {}
        for key, value in pairs:
            if key in obj:
                warnings.append("%s: key %r appears more than once; the last one wins" % (path, key))
            obj[key] = value
        return obj
    return hook


def parse(text, path="daemon.json", warnings=None):
    """Parse ``text`` into a dict; raise :class:`FileEditError` with line/column.

    ``None`` or blank text is ``{}``.  Duplicate keys are reported in
    ``warnings`` (a list) and the last one wins, as in Go's decoder.
    """
    if warnings is None:
        warnings = []
    if text is None or not text.strip():
        return {}
    try:
        doc = json.loads(text, object_pairs_hook=_duplicate_checking_hook(warnings, path))
    except json.JSONDecodeError as err:
        raise FileEditError("malformed JSON: %s" % err.msg, path=path, line=err.lineno, column=err.colno)
    if not isinstance(doc, dict):
        raise FileEditError("top level must be a JSON object, found %s" % type(doc).__name__, path=path, line=1, column=1)
    return doc


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


def render(doc):
    """The text we write: 4-space indent, keys in document order, final newline."""
    return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"


def compute(text, settings, list_merge="append", path="daemon.json"):
    """Merge ``settings`` into the daemon.json ``text``.

    Returns ``(new_text, merged, changed_keys, warnings)``.  ``new_text`` is
    ``text`` itself when the merged document equals the current one as JSON.
    """
    warnings = []
    current = parse(text, path, warnings)
    merged, changed_keys = merge(current, settings, list_merge)
    if text is not None and json_equal(current, merged):
        return text, merged, [], warnings
    return render(merged), merged, changed_keys, warnings
