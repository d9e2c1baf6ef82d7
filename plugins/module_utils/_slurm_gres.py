# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""gres.conf model and Slurm's GPU naming: which GPUs each node's lines describe, lossless edits.  Pure Python.

The grammar and the lossless edits are ``_slurm_syntax``'s.  In gres.conf a line with a ``Name`` key is a
GRES record, scoped to the nodes of its ``NodeName`` key (every node reading the file when it has none);
``File`` is a host list of device files (``/dev/nvidia[0-3]`` is four GPUs).

What a node has is compared by meaning (:func:`described_gpus`): the same GPUs in any spelling are no change.
Malformed input raises ``SlurmSyntaxError`` with the line number.

Interface (for this collection's plugins):

``set_gres(text, nodes, name="gpu", per_node=None)``  ``(text, changed_nodes, warnings)`` for gres.conf,
                                       compared by meaning (:func:`described_gpus`)
``described_gpus(text, name="gpu")``   ``{node or None: [(device file, type or None)]}``
``gres_type_name(gpu_name)`` / ``gpus_in_slurm_order(gpus)`` / ``gpu_gres(gpus)``
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_syntax import (
    SlurmSyntaxError,
    _Editor,
    _insert_pair_after,
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

__all__ = ["set_gres", "described_gpus", "gres_type_name", "gpus_in_slurm_order", "gpu_gres"]


# --- gres.conf --------------------------------------------------------------------------------------

# The keys that say which GPUs a line describes; every other key on a GPU line (CPUs, Cores, Links, Flags,
# AutoDetect, MultipleFiles, a key of a later Slurm) is the site's setting for those GPUs and stays with them.
_GRES_OWNED = ("nodename", "name", "type", "file", "count")
_GRES_RECORD_KEYS = ("type", "file")


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
    GPUs gets ``gpu:0``, which ``_slurm_conf.merge_gres`` reads as "no GPU entries".
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
