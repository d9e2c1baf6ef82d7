# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""JUnit XML, as CI systems (Jenkins, GitLab, GitHub test reporters) read it.

A report is a list of test cases, each a dict::

    {"classname": "gpu01", "name": "Merge the daemon settings", "time": 0.0,
     "failure": {"message": "...", "text": "..."},   # or "error": {...}, or "skipped": "why", or none: passed
     "output": "..."}                                   # optional <system-out>

:func:`render` groups them by ``classname`` into one ``<testsuite>`` per class (per host), inside one
``<testsuites>``. Every text goes through the XML serialiser (real escaping); characters XML 1.0 cannot carry
(control characters, lone surrogates) become ``\\uXXXX`` first, so the file always parses.

Nothing here imports Ansible.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

# Characters outside XML 1.0's Char production.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value):
    """``value`` as text an XML document can hold; characters XML cannot carry become ``\\uXXXX``."""
    text = "" if value is None else str(value)
    return _NOT_XML.sub(lambda m: "\\u%04x" % ord(m.group(0)), text)


def _outcome(case):
    for kind in ("error", "failure"):
        if case.get(kind) is not None:
            return kind
    return "skipped" if case.get("skipped") is not None else "passed"


def render(suites_name, cases, timestamp=None):
    """The JUnit XML document (text, with an XML declaration) for ``cases``."""
    root = ET.Element("testsuites", {"name": xml_text(suites_name)})
    by_class = {}
    for case in cases:
        by_class.setdefault(str(case["classname"]), []).append(case)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for classname in sorted(by_class):
        members = by_class[classname]
        counts = {"tests": len(members), "failures": 0, "errors": 0, "skipped": 0}
        for case in members:
            outcome = _outcome(case)
            if outcome == "failure":
                counts["failures"] += 1
            elif outcome == "error":
                counts["errors"] += 1
            elif outcome == "skipped":
                counts["skipped"] += 1
        attrs = {"name": xml_text(classname)}
        attrs.update((key, str(value)) for key, value in counts.items())
        if timestamp:
            attrs["timestamp"] = xml_text(timestamp)
        suite = ET.SubElement(root, "testsuite", attrs)
        for case in members:
            element = ET.SubElement(suite, "testcase", {
                "classname": xml_text(classname), "name": xml_text(case["name"]),
                "time": "%.3f" % float(case.get("time") or 0)})
            outcome = _outcome(case)
            if outcome in ("failure", "error"):
                detail = case[outcome]
                child = ET.SubElement(element, outcome, {"message": xml_text(detail.get("message", ""))[:1000]})
                if detail.get("type"):
                    child.set("type", xml_text(detail["type"]))
                child.text = xml_text(detail.get("text") or detail.get("message") or "")
            elif outcome == "skipped":
                ET.SubElement(element, "skipped", {"message": xml_text(case["skipped"])})
            if case.get("output"):
                ET.SubElement(element, "system-out").text = xml_text(case["output"])
        for key in totals:
            totals[key] += counts[key]
    root.attrib.update((key, str(value)) for key, value in totals.items())
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
