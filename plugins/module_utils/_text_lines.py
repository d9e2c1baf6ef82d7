# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Format-neutral text handling shared by the LSF and Slurm models: line ends, physical lines, short
excerpts for error messages.  Pure Python.

* Physical lines end at ``\\n``; :func:`physical_lines` keeps every line with its
  own line ending (``\\n``, ``\\r\\n`` or none on the last line), so
  ``"".join(physical_lines(text)) == text`` always holds.  Editors keep this list
  and replace only the lines they change.

Interface (for this collection's plugins):

``excerpt(text)``                  ``repr`` of text shortened for an error message
``physical_lines(text)``           list of lines with their endings
``split_eol(line)``                ``(body, eol)``
``detect_eol(lines)``              the file's line ending for new lines
"""

from __future__ import annotations

__all__ = ["EXCERPT_LENGTH", "excerpt", "physical_lines", "split_eol", "detect_eol"]

# Error messages quote at most this many characters of the offending text.
EXCERPT_LENGTH = 60


def excerpt(text, limit=EXCERPT_LENGTH):
    """``repr(text)``, cut to about ``limit`` characters (a huge line must not
    make a huge error message)."""
    if len(text) <= limit:
        return repr(text)
    return "%r... (%d characters)" % (text[:limit], len(text))


def physical_lines(text):
    """Split ``text`` into lines, each keeping its line ending (lossless)."""
    if not text:
        return []
    parts = text.split("\n")
    last = parts.pop()
    lines = [p + "\n" for p in parts]
    if last:
        lines.append(last)
    return lines


def split_eol(line):
    """Return ``(body, eol)`` where eol is ``"\\r\\n"``, ``"\\n"`` or ``""``."""
    if line.endswith("\n"):
        if line.endswith("\r\n"):
            return line[:-2], "\r\n"
        return line[:-1], "\n"
    return line, ""


def detect_eol(lines):
    """The line ending new lines should use: the first line's, else ``\\n``."""
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
        if line.endswith("\n"):
            return "\n"
    return "\n"
