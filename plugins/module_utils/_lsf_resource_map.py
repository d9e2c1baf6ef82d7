# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Static values per host in the ResourceMap section of ``lsf.cluster.<name>``.

A host's static value of a resource can be written two ways. LSF 10.1 reads ``name=value`` in the host's
``RESOURCES`` cell (``_lsf_cluster_edit``); the OpenLava lineage (OpenLava, volclava) ignores that form with a
warning and reads only the ResourceMap, whose ``LOCATION`` holds one instance per value:

    Begin ResourceMap
    RESOURCENAME   LOCATION
    x86_64_level   (4@[gpu01 gpu02] 3@[gpu03])
    End ResourceMap

LSF 10.1 reads that form too. This module sets (``values``) and removes (``remove``) hosts' instances, keeping
every instance of a host it was not asked about, and every other row, byte for byte. A row whose LOCATION is not
made of ``value@[hosts]`` instances (``[all]``, ``[default]``, ``([default])``, an exclusion) is the site's
own kind of resource and is refused, naming its line. A file without a ResourceMap section gets one after its
Host section.

Pure Python, no Ansible.
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError, token_value
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    CLUSTER_SHAPES,
    check_not_keyword,
    gc_paused,
    parse_document,
)

__all__ = ["edit_resource_map", "parse_location", "render_location"]

INSTANCE_RE = re.compile(r"([^\s@\[\]()]+)@\[([^\[\]]*)\]")
VALUE_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
EMPTY_SECTION = ["Begin ResourceMap", "RESOURCENAME  LOCATION", "End ResourceMap"]


def parse_location(raw, lineno=None):
    """``[(value, [hosts])]`` of a LOCATION cell made of ``value@[hosts]`` instances; LsfSyntaxError otherwise."""
    inner = token_value(raw)
    instances = [(m.group(1), m.group(2).split()) for m in INSTANCE_RE.finditer(inner)]
    if INSTANCE_RE.sub("", inner).strip() or not instances:
        raise LsfSyntaxError("ResourceMap LOCATION %s is not made of value@[hosts] instances (a site's own kind of "
                             "resource); leave this resource to the site or give it another name" % raw, lineno)
    return instances


def render_location(instances):
    """A LOCATION cell from ``[(value, [hosts])]``: ``(v1@[h1 h2] v2@[h3])``."""
    return "(%s)" % " ".join("%s@[%s]" % (value, " ".join(hosts)) for value, hosts in instances)


def _check(values, remove):
    for name in list(values) + list(remove):
        if not NAME_RE.match(name):
            raise ValueError("%r is not a resource name (a letter, then letters, digits or _)" % name)
        check_not_keyword(name, "resource")
    for name, per_host in values.items():
        for host, value in per_host.items():
            if not VALUE_RE.match(str(value)):
                raise ValueError("%s of %s: %r is not a static value (letters, digits, _ . + -)" % (name, host, value))


def _set(instances, host, value):
    """The instances with ``host`` moved to ``value``'s instance (added last when there is none)."""
    key = host.lower()
    out = [(v, [h for h in hosts if h.lower() != key]) for v, hosts in instances]
    for v, hosts in out:
        if v == value:
            hosts.append(host)
            break
    else:
        out.append((value, [host]))
    return [(v, hosts) for v, hosts in out if hosts]


def _drop(instances, hosts):
    keys = {h.lower() for h in hosts}
    out = [(v, [h for h in hs if h.lower() not in keys]) for v, hs in instances]
    return [(v, hs) for v, hs in out if hs]


@gc_paused
def edit_resource_map(text, values, remove=None):
    """Set each host's value of each resource (``values``: resource -> host -> value) and take the hosts of
    ``remove`` (resource -> hosts) out of a resource's instances. A host's instance is found case-insensitively and
    moved, not duplicated; a resource left with no instance loses its row.

    Returns ``(new_text, changed_resources, warnings)``; changed_resources in the order asked.
    """
    values = {name: dict(per_host) for name, per_host in (values or {}).items()}
    remove = {name: list(hosts) for name, hosts in (remove or {}).items()}
    _check(values, remove)
    doc = parse_document(text, shapes=CLUSTER_SHAPES, default_shape="auto")
    sections = [s for s in doc.find("resourcemap") if s.header is not None]
    if not sections:
        if not any(values.values()):
            return text, [], list(doc.warnings)
        hosts = doc.find("host")
        if not hosts:
            raise LsfSyntaxError("no Host section, after which a ResourceMap section would go", None)
        doc.insert_lines(hosts[0].end.end, doc.with_eol([""] + EMPTY_SECTION))
        doc = parse_document(doc.render(), shapes=CLUSTER_SHAPES, default_shape="auto")
        sections = [s for s in doc.find("resourcemap") if s.header is not None]
    section = sections[0]
    warnings = list(doc.warnings)
    if len(sections) > 1:
        warnings.append("more than one ResourceMap section; only the one at line %d is edited" % section.lineno)
    for col in ("resourcename", "location"):
        if col not in section.column_index:
            raise LsfSyntaxError("the ResourceMap header has no %s column" % col.upper(), section.header.lineno)
    name_idx, loc_idx = section.column_index["resourcename"], section.column_index["location"]
    rows = {}
    for row in section.rows:
        rows.setdefault(row.cells[name_idx].lower(), row)

    changed = []
    for name in list(dict.fromkeys(list(values) + list(remove))):
        row = rows.get(name.lower())
        before = parse_location(row.raws()[loc_idx], row.lineno) if row is not None else []
        after = before
        for host, value in values.get(name, {}).items():
            after = _set(after, host, str(value))
        after = _drop(after, remove.get(name, []))
        if after == before:
            continue
        changed.append(name)
        if row is None:
            doc.add_row(section, [name, render_location(after)] + ["-"] * (len(section.columns) - 2))
        elif after:
            raws = row.raws()
            raws[loc_idx] = render_location(after)
            doc.set_row(section, row, raws)
        else:
            doc.delete_row(row)
    return doc.render(), changed, warnings
