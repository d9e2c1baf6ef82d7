# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Subordinate id ranges in ``/etc/subuid`` and ``/etc/subgid`` (shadow-utils, subuid(5)).

Grammar, one range per line::

    line  := name ":" start ":" count      (name: a login name or a numeric uid)
           | blank | "#" comment          (kept byte-identical; newuidmap skips them)

A user may own several ranges; newuidmap accepts any of them.  The model makes
each listed user own at least one range of at least ``count`` ids:

* a user who already has such a range keeps it, untouched (ids already used in
  that user's container storage must not move);
* otherwise a new range is appended, starting at the lowest multiple of
  ``count`` at or above ``start`` that overlaps no range in the file, so ranges
  of different users never share an id.

Nothing else in the file changes; lines of other users stay as they are.
Overlapping ranges of different users already in the file are reported as
warnings (they let one user's containers write another's files).
"""

from __future__ import annotations

import re

__all__ = ["SubidError", "parse", "ensure_ranges"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*\$?$")
# The kernel's id space: uid_t is 32 bits and (uid_t)-1 is reserved.
_ID_LIMIT = 2 ** 32 - 1


class SubidError(ValueError):
    """A malformed line (``line`` is 1-based) or bad input (``line`` None)."""

    def __init__(self, msg, line=None):
        self.msg = msg
        self.line = line
        super().__init__(("line %d: " % line if line else "") + msg)


def parse(text):
    """Return a list of (lineno, name, start, count) for every range line."""
    ranges = []
    for lineno, line in enumerate((text or "").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split(":")
        if len(parts) != 3 or not parts[0] or not parts[1].isdigit() or not parts[2].isdigit():
            raise SubidError("expected name:start:count, got %r" % stripped, lineno)
        ranges.append((lineno, parts[0], int(parts[1]), int(parts[2])))
    return ranges


def _overlap_warnings(ranges):
    """One sweep over the ranges sorted by start: each range that shares ids with an earlier-starting range of
    another user is reported once, against the one of them that reaches furthest."""
    warnings = []
    # The furthest-reaching range so far, and the furthest-reaching one of any other user than its owner.
    best = second = None
    for item in sorted((r for r in ranges if r[3] > 0), key=lambda r: (r[2], r[0])):
        lineno, name, start, count = item
        other = best if best is not None and best[1] != name else second
        if other is not None and other[2] + other[3] > start:
            warnings.append(tuple(sorted((other, item))))
        end = start + count
        if best is None or end > best[2] + best[3]:
            if best is not None and best[1] != name:
                second = best
            best = item
        elif name != best[1] and (second is None or end > second[2] + second[3]):
            second = item
    return ["ranges of %s (line %d) and %s (line %d) overlap" % (first[1], first[0], last[1], last[0])
            for first, last in sorted(warnings)]


def ensure_ranges(text, users, count=65536, start=100000):
    """Give every user in ``users`` a range of at least ``count`` ids.

    Returns ``(new_text, assigned, warnings)``: ``assigned`` maps each user to
    the ``(start, count)`` range they own afterwards (an existing one or the new
    one), ``warnings`` name overlapping ranges of different users.

    Linear in the file after one sort: the ranges are swept once in order of
    start, and the free-slot cursor only moves up, because every new range
    starts above the one given before it.  Empty ranges (count 0) hold no id.
    """
    if count < 1 or count > _ID_LIMIT:
        raise SubidError("count must be between 1 and %d" % _ID_LIMIT)
    if start < 1:
        raise SubidError("start must be a positive id")
    for user in users:
        if not isinstance(user, str) or not _NAME.match(user):
            raise SubidError("%r is not a valid user name" % (user,))
    text = text or ""
    ranges = parse(text)
    warnings = _overlap_warnings(ranges)
    owned = {}
    for _line, name, s, c in ranges:
        if c >= count and name not in owned:
            owned[name] = (s, c)
    taken = sorted((s, s + c) for _line, _name, s, c in ranges if c > 0)
    assigned, added = {}, []
    candidate = -(-start // count) * count
    index = 0
    for user in users:
        if user in assigned:
            continue
        if user in owned:
            assigned[user] = owned[user]
            continue
        # Every range starting below the candidate's end either ends at or below the candidate (and can never
        # block a later, higher candidate) or blocks it: move past it, to the next multiple of count.
        while index < len(taken) and taken[index][0] < candidate + count:
            if taken[index][1] > candidate:
                candidate = -(-taken[index][1] // count) * count
            index += 1
        if candidate + count > _ID_LIMIT:
            raise SubidError("no free range of %d ids left for %s" % (count, user))
        assigned[user] = (candidate, count)
        added.append("%s:%d:%d\n" % (user, candidate, count))
        candidate += count
    if not added:
        return text, assigned, warnings
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(added), assigned, warnings
