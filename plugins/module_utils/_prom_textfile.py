# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Prometheus text exposition format 0.0.4, as node_exporter's textfile collector reads a ``*.prom`` file.

A metric family is ``(name, type, help, samples)``, each sample ``(labels, value)`` with ``labels`` a dict.
:func:`render` writes ``# HELP`` and ``# TYPE`` before each family's samples; help text and label values are
escaped as the format says (backslash, newline; in label values also the double quote). Names are checked: a
metric or label name the format does not allow is a ``ValueError``, not a file node_exporter refuses later.

Nothing here imports Ansible.
"""

from __future__ import annotations

import math
import re

PREFIX = "hpc_gpu_containers_"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = ("counter", "gauge", "untyped")


def escape_help(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def render(families):
    """The text of a ``*.prom`` file for ``families``; each name gets :data:`PREFIX` unless it has it."""
    lines = []
    for name, kind, help_text, samples in families:
        if not name.startswith(PREFIX):
            name = PREFIX + name
        if not _METRIC_NAME.match(name):
            raise ValueError("not a Prometheus metric name: %r" % name)
        if kind not in TYPES:
            raise ValueError("metric %s: type %r is not one of %s" % (name, kind, ", ".join(TYPES)))
        lines.append("# HELP %s %s" % (name, escape_help(help_text)))
        lines.append("# TYPE %s %s" % (name, kind))
        for labels, value in samples:
            for label in labels:
                if not _LABEL_NAME.match(label) or label.startswith("__"):
                    raise ValueError("metric %s: not a Prometheus label name: %r" % (name, label))
            text = ",".join('%s="%s"' % (label, escape_label_value(labels[label])) for label in sorted(labels))
            lines.append("%s%s %s" % (name, "{%s}" % text if text else "", format_value(value)))
    return "\n".join(lines) + "\n"
