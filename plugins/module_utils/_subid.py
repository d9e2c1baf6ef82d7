# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
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


def _overlap(a_start, a_count, b_start, b_count):
    return a_start < b_start + b_count and b_start < a_start + a_count


def ensure_ranges(text, users, count=65536, start=100000):
    """Give every user in ``users`` a range of at least ``count`` ids.

    Returns ``(new_text, assigned, warnings)``: ``assigned`` maps each user to
    the ``(start, count)`` range they own afterwards (an existing one or the new
    one), ``warnings`` name overlapping ranges of different users.
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
    warnings = []
    for i, (line_a, name_a, start_a, count_a) in enumerate(ranges):
        for line_b, name_b, start_b, count_b in ranges[i + 1:]:
            if name_a != name_b and _overlap(start_a, count_a, start_b, count_b):
                warnings.append("ranges of %s (line %d) and %s (line %d) overlap" % (name_a, line_a, name_b, line_b))
    taken = [(s, c) for _line, _name, s, c in ranges]
    assigned, added = {}, []
    for user in users:
        if user in assigned:
            continue
        own = [(s, c) for _line, name, s, c in ranges if name == user and c >= count]
        if own:
            assigned[user] = own[0]
            continue
        candidate = -(-start // count) * count
        while any(_overlap(candidate, count, s, c) for s, c in taken):
            blocking_end = max(s + c for s, c in taken if _overlap(candidate, count, s, c))
            candidate = -(-blocking_end // count) * count
        if candidate + count > _ID_LIMIT:
            raise SubidError("no free range of %d ids left for %s" % (count, user))
        taken.append((candidate, count))
        assigned[user] = (candidate, count)
        added.append("%s:%d:%d\n" % (user, candidate, count))
    if not added:
        return text, assigned, warnings
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(added), assigned, warnings
