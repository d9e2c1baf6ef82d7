# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""slurm.conf model: global parameters, NodeName/PartitionName records, Include.  Pure Python.

The grammar and the lossless edits are ``_slurm_syntax``'s; this file knows what slurm.conf's lines mean:

* ``include FILE`` (any case) reads another file: kept as it is; :func:`include_targets` lists them for the
  module, which follows them (relative to slurm.conf's directory, wildcards allowed).
* A record line (``NodeName=...``, ``PartitionName=...``) names its nodes as a host list; every pair on it
  belongs to that record.  ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` lines set values for the records
  after them.
* Any other pair is a global parameter; when one is given twice the last one
  wins (Slurm says "specified more than once, latest value used").

Edits change only the lines they must; every other line (comments, blank
lines, continued lines, trailing comments) comes back byte-identical.  A value
the file already has, in any spelling Slurm reads the same, is no change.
Malformed input raises ``SlurmSyntaxError`` with the line number.

Interface (for this collection's plugins):

``set_parameters(text, settings, list_keys=("GresTypes",), keep_existing=())``
                                       ``(text, changed_keys, warnings)``
``set_records(text, kind, records, create_missing=False)``
                                       ``(text, changed_names, warnings)`` for NodeName/PartitionName
``include_targets(text)`` / ``defined_names(text, kind)``   what slurm.conf includes, what a file defines
``parameters(text)`` / ``record_attributes(text, kind, name)``   effective values
``merge_gres(current, wanted)`` / ``merge_features(current, wanted, owned)``
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_syntax import (
    SlurmSyntaxError,
    _append_pair,
    _Editor,
    _remove_pair,
    _render_value,
    _set_pair,
    check_node_name,
    check_value,
    compress_hostlist,
    expand_hostlist,
    parse,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._text_lines import excerpt

__all__ = ["set_parameters", "set_records", "parameters", "record_attributes", "merge_gres", "merge_features",
           "include_targets", "defined_names", "SET_VALUED_KEYS"]

# Keys whose value is a comma-separated set (any order, no repeats).
SET_VALUED_KEYS = ("GresTypes",)


# --- values -----------------------------------------------------------------------------------------

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
