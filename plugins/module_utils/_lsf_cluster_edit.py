# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The lsf.cluster.<name> editor: RESOURCES items of the Host section's rows.

Pure Python, no Ansible; built on the section model (``_lsf_sections``), text in, text out::

    edit_hosts(text, hosts or "all", resources, state, create_missing,
               model, host_type, server) -> (text, changed_hosts, created_hosts, warnings)
    HostPattern(cell).matches(host)   condensed HOSTNAME ranges (host[01-04] ...)
    check_host_name(name), check_host_resource(item)
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError, excerpt, token_value
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    CLUSTER_SHAPES,
    check_not_keyword,
    empty_style,
    gc_paused,
    parse_document,
)

__all__ = ["edit_hosts", "HostPattern", "check_host_name", "check_host_resource"]

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
    check_not_keyword(name, "host name")


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
        empty = empty_style(section, None)
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
